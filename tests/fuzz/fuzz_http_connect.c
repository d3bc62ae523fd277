/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the HTTP CONNECT request parser and Basic auth over arbitrary bytes. */
#include "fuzz.h"
#include "http_connect.h"

/*
 * Input: one selector octet (bit 7 require_auth, bit 6 accept the
 * credentials, bits 0-3 chunk size), then the client's byte stream. Run whole
 * and in chunks; both runs must agree exactly.
 */
struct outcome {
	enum proto_res last;
	struct http_connect h;
	size_t used; /* octets of the head */
	size_t left;
};

static bool ends_with(const uint8_t *p, size_t n, const char *s)
{
	size_t k = strlen(s);

	return n >= k && !memcmp(p + n - k, s, k);
}

static void check_reply(const struct http_connect *h)
{
	static const char *const ok = "HTTP/1.1 200 Connection established\r\n\r\n";

	CHECK(h->reply_len <= PROTO_REPLY_MAX);
	if (h->reply_len == 0)
		return;
	CHECK(h->reply_len > 9 && !memcmp(h->reply, "HTTP/1.1 ", 9));
	CHECK(ends_with(h->reply, h->reply_len, "\r\n\r\n"));
	if (h->reply_len == strlen(ok) && !memcmp(h->reply, ok, h->reply_len))
		return;
	CHECK(memmem(h->reply, h->reply_len, "\r\nContent-Length: 0\r\n", 21));
	CHECK(ends_with(h->reply, h->reply_len, "\r\nConnection: close\r\n\r\n"));
}

static void check_domain(const struct proto_target *t)
{
	if (t->kind != TARGET_DOMAIN)
		return;
	for (const char *p = t->host; *p; p++)
		CHECK((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') ||
		      (*p >= 'A' && *p <= 'Z') || *p == '-' || *p == '.' || *p == '_');
}

static void run(struct outcome *o, bool require_auth, bool auth_ok, const uint8_t *in, size_t len,
                size_t chunk)
{
	size_t have = 0;

	memset(o, 0, sizeof(*o));
	http_connect_init(&o->h, require_auth);
	o->last = PROTO_NEED_MORE;
	/* nothing is consumed before the end, so the buffer is a growing prefix of `in` */
	while (have < len) {
		size_t used = 0xdead;
		enum proto_res res;

		have += len - have < chunk ? len - have : chunk;
		res = http_connect_feed(&o->h, in, have, &used);
		CHECK(used <= have);
		/* the head search looks at each octet once, however the input is cut (L3) */
		CHECK(o->h.examined <= have && o->h.examined <= HTTP_HEADER_MAX);
		check_reply(&o->h);
		CHECK(o->h.user_len <= PROTO_CRED_MAX && o->h.pass_len <= PROTO_CRED_MAX);
		if (res == PROTO_NEED_MORE) {
			CHECK(used == 0 && o->h.reply_len == 0 && o->h.state == HTTP_S_HEAD);
			CHECK(have < HTTP_HEADER_MAX);
			continue;
		}
		CHECK(used <= HTTP_HEADER_MAX);
		if (res == PROTO_AUTH) {
			/* a request to forward keeps its head in the buffer (h.fwd.head_len) */
			CHECK(require_auth && o->h.state == HTTP_S_AUTH_CHECK);
			CHECK(o->h.forward ? used == 0 && o->h.fwd.head_len > 0 : used > 0);
			CHECK(strlen(o->h.user) == o->h.user_len);
			CHECK(strlen(o->h.pass) == o->h.pass_len);
			fuzz_check_target(&o->h.target);
			res = http_connect_auth_result(&o->h, auth_ok);
			CHECK(fuzz_all_zero(o->h.pass, sizeof(o->h.pass)));
			CHECK(res == (auth_ok ? PROTO_REQUEST : PROTO_FAIL));
			check_reply(&o->h);
		}
		if (res == PROTO_REQUEST) {
			CHECK(o->h.done && o->h.state == HTTP_S_DONE && o->h.reply_len == 0);
			CHECK(o->h.forward ? used == 0 && o->h.fwd.head_len > 0 : used > 0);
			CHECK(o->h.target.port != 0);
			fuzz_check_target(&o->h.target);
			check_domain(&o->h.target);
		} else {
			CHECK(res == PROTO_FAIL && o->h.state == HTTP_S_FAILED);
			CHECK(o->h.reply_len > 0 && !o->h.done);
		}
		o->last = res;
		o->used = used;
		o->left = len - used;
		return;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct outcome whole, split;
	bool require_auth, auth_ok;

	if (size < 1 || size - 1 > FUZZ_BUF_MAX / 2)
		return 0;
	require_auth = data[0] & 0x80;
	auth_ok = data[0] & 0x40;
	run(&whole, require_auth, auth_ok, data + 1, size - 1, size - 1);
	run(&split, require_auth, auth_ok, data + 1, size - 1, fuzz_chunk(data[0], size - 1));
	CHECK(whole.last == split.last && whole.used == split.used && whole.left == split.left);
	CHECK(whole.h.error == split.h.error);
	CHECK(whole.h.reply_len == split.h.reply_len &&
	      !memcmp(whole.h.reply, split.h.reply, whole.h.reply_len));
	if (whole.last == PROTO_REQUEST) {
		CHECK(!memcmp(&whole.h.target, &split.h.target, sizeof(whole.h.target)));
		for (int r = CONNECT_OK; r <= CONNECT_TIMEOUT; r++) {
			http_connect_reply(&whole.h, (enum proto_connect_result)r);
			check_reply(&whole.h);
		}
	}
	return 0;
}
