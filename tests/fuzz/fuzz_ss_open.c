/* SPDX-License-Identifier: MIT */
/* libFuzzer target: opening a Shadowsocks stream (a client reading its server's response), AEAD and 2022. */
#include <errno.h>

#include "aead.h"
#include "fuzz.h"
#include "shadowsocks.h"

/*
 * Input: a selector octet (bits 0-2 the method; bit 3 authentic mode; bits
 * 4-7 the cut size), then the body.
 *   raw: the body is the server's wire bytes.
 *   authentic: the body is the plaintext of a response from the server this
 *     client asked, sealed here by a real server leg (its first octet picks
 *     chunk sizes, its second may flip one wire byte): the opened plaintext
 *     must be the body exactly, unless a byte was flipped.
 * Opened whole (with small run and room limits) and cut in pieces with the
 * carried tail kept, as the pump does; both must agree.
 */
static const char psk32[] = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
static const char psk16[] = "AAECAwQFBgcICQoLDA0ODw==";

struct outcome {
	int err;
	size_t plain_len, consumed;
	uint8_t plain[FUZZ_BUF_MAX];
};

static uint8_t work[2 * FUZZ_BUF_MAX + 4096];

/* Open stream[0..n) through leg l cut every `cut` bytes (0: at once). */
static void open_all(struct ss_leg *l, const uint8_t *stream, size_t n, size_t cut, int max_iov,
                     size_t max_plain, struct outcome *o)
{
	struct xform_ctx ctx = {.unix_s = 1700000000};
	size_t have = 0, fed = 0;

	memset(o, 0, sizeof(*o));
	while (fed < n || have) {
		size_t step = cut ? cut : n, used = 0;
		struct iovec iov[64];
		int k = 0, ret;

		if (step > n - fed)
			step = n - fed;
		memcpy(work + have, stream + fed, step);
		have += step;
		fed += step;
		ret = l->x.ops->open(l, &ctx, work, have, max_plain, iov, max_iov, &k, &used);
		if (ret < 0) {
			CHECK(ret == -EBADMSG || ret == -EPROTO || ret == -ETIME);
			o->err = ret;
			return;
		}
		CHECK(used <= have);
		CHECK(k >= 0 && k <= max_iov);
		for (int i = 0; i < k; i++) {
			CHECK((uint8_t *)iov[i].iov_base >= work &&
			      (uint8_t *)iov[i].iov_base + iov[i].iov_len <= work + used);
			CHECK(o->plain_len + iov[i].iov_len <= sizeof(o->plain));
			memcpy(o->plain + o->plain_len, iov[i].iov_base, iov[i].iov_len);
			o->plain_len += iov[i].iov_len;
		}
		memmove(work, work + used, have - used);
		have -= used;
		o->consumed += used;
		if (!k && !used && fed == n)
			break; /* an incomplete tail, and nothing more to come */
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const enum ss_method ms[8] = {SS_AES_128_GCM,
	                                     SS_AES_256_GCM,
	                                     SS_CHACHA20_IETF_POLY1305,
	                                     SS_XCHACHA20_IETF_POLY1305,
	                                     SS22_AES_128_GCM,
	                                     SS22_AES_256_GCM,
	                                     SS22_CHACHA20_POLY1305,
	                                     SS_AES_256_GCM};
	static uint8_t stream[FUZZ_BUF_MAX + 8192], seal_buf[70 << 10];
	static struct outcome whole, split;
	struct xform_ctx ctx = {.unix_s = 1700000000};
	struct proto_target t = {.kind = TARGET_DOMAIN, .port = 1};
	uint8_t rnd[SS_RAND_LEN] = {3}, rrnd[SS_RAND_LEN] = {4};
	struct ss_leg cl, sl, c2;
	struct ss_server s;
	struct ss_key k;
	enum ss_method m;
	size_t n = 0, off, len, used;
	bool authentic, flipped = false;

	if (size < 1 || size > FUZZ_BUF_MAX)
		return 0;
	m = ms[data[0] & 7];
	authentic = data[0] & 8;
	strcpy(t.host, "fuzz.example");
	if (ss_key_init(&k, m,
	                ss_method_info(m)->v2022 ? (m == SS22_AES_128_GCM ? psk16 : psk32)
	                                         : "fuzz-password",
	                false) ||
	    ss_client_init(&cl, &k, &t, rnd))
		return 0;
	if (authentic && size >= 3) {
		/* a real request, a real server leg: the response it seals */
		struct iovec iov[8];

		cl.x.ops->seal_slots(&cl, seal_buf, sizeof(seal_buf), iov, 8);
		CHECK(cl.x.ops->seal(&cl, &ctx, seal_buf, 0, &off, &len) == 0);
		ss_server_init(&s, &k);
		s.now = ctx.unix_s;
		CHECK(ss_server_feed(&s, seal_buf + off, len, &used) == PROTO_REQUEST);
		CHECK(ss_server_leg(&sl, &s, rrnd) == 0);
		for (size_t done = 3, step = 1 + data[1] * 97; done < size;) {
			size_t take = 0, room;
			int kk = sl.x.ops->seal_slots(&sl, seal_buf, sizeof(seal_buf), iov, 8);

			for (int i = 0; i < kk && done + take < size; i++) {
				room = iov[i].iov_len < step ? iov[i].iov_len : step;
				if (room > size - done - take)
					room = size - done - take;
				memcpy(iov[i].iov_base, data + done + take, room);
				take += room;
				if (room < iov[i].iov_len)
					break; /* a short slot ends the batch */
			}
			CHECK(sl.x.ops->seal(&sl, &ctx, seal_buf, take, &off, &len) == 0);
			CHECK(n + len <= sizeof(stream));
			memcpy(stream + n, seal_buf + off, len);
			n += len;
			done += take;
		}
		sl.x.ops->destroy(&sl);
		ss_server_wipe(&s);
		if (data[2] & 1 && n) { /* a forged byte */
			stream[(data[2] * 131u) % n] ^= (uint8_t)(1 + (data[2] >> 1));
			flipped = true;
		}
	} else {
		n = size - 1;
		memcpy(stream, data + 1, n);
	}
	/* the client's opener, twice: whole, and cut as reads cut it */
	open_all(&cl, stream, n, 0, 64, SIZE_MAX, &whole);
	ss_client_init(&c2, &k, &t, rnd);
	open_all(&c2, stream, n, 1 + (data[0] >> 4) * 13, 1 + (data[0] >> 4) % 5,
	         1 + (size_t)(data[0] >> 4) * 1000, &split);
	CHECK(whole.err == split.err || (whole.err && split.err));
	if (!whole.err && !split.err) {
		CHECK(whole.plain_len == split.plain_len);
		CHECK(memcmp(whole.plain, split.plain, whole.plain_len) == 0);
	}
	if (authentic && size >= 3 && !flipped) {
		CHECK(whole.err == 0);
		CHECK(whole.plain_len == size - 3);
		CHECK(memcmp(whole.plain, data + 3, size - 3) == 0);
		CHECK(cl.x.ops->open_clean(&cl));
	}
	cl.x.ops->destroy(&cl);
	c2.x.ops->destroy(&c2);
	return 0;
}
