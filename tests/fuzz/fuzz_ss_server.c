/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the Shadowsocks server's handshake (AEAD and 2022) over hostile and authentic-but-malformed bytes. */
#include "aead.h"
#include "blake3.h"
#include "fuzz.h"
#include "shadowsocks.h"

/*
 * Input: a selector octet (bits 0-2 the method, 7: 2022 with an identity
 * header; bit 3 authentic mode; bits 4-7 the chunk size of the split
 * delivery), then the body.
 *   raw: the body is the client's wire bytes, fed as they are.
 *   authentic: the body is plaintext, encrypted here with the server's key
 *     into a stream that authenticates: AEAD, chunks of the body's own
 *     lengths (first octet: chunk size); 2022, the body as the variable
 *     header (its first two octets shift the timestamp and pick the length),
 *     so that everything behind the tags (addresses, padding, lengths) is
 *     what the fuzzer chose.
 * Fed whole, then in chunks the way conn_hs.c feeds it (consumed bytes removed,
 * the buffer grown to want()); both runs must agree.
 */
static const char psk32[] = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
static const char psk16[] = "AAECAwQFBgcICQoLDA0ODw==";
static const char upsk[] = "ICEiIyQlJicoKSorLC0uLzAxMjM0NTY3ODk6Ozw9Pj8=";

struct outcome {
	enum proto_res res;
	enum ss_error err;
	struct proto_target t;
	uint32_t early;
	uint8_t rest[FUZZ_BUF_MAX + 128]; /* [early plaintext][wire] after the request */
	size_t rest_len;
};

static uint8_t buf[2 * FUZZ_BUF_MAX + 1024];

static void run(const struct ss_key *k, const struct ss_users *u, const uint8_t *in, size_t len,
                size_t chunk, uint64_t now, struct outcome *o)
{
	struct ss_server s;
	size_t have = 0, fed = 0, used;
	enum proto_res r = PROTO_NEED_MORE;

	memset(o, 0, sizeof(*o));
	ss_server_init(&s, k);
	for (;;) {
		if (r == PROTO_NEED_MORE) { /* PROTO_REPLY: the same bytes again */
			size_t step = chunk ? chunk : len;

			if (fed == len)
				break;
			if (step > len - fed)
				step = len - fed;
			memcpy(buf + have, in + fed, step);
			have += step;
			fed += step;
		}
		s.users = u;
		s.now = now;
		r = ss_server_feed(&s, buf, have, &used);
		CHECK(used <= have);
		if (r == PROTO_AUTH) {
			CHECK(u && s.user);
			r = ss_server_auth_result(&s, true);
			CHECK(r == PROTO_REPLY);
		}
		if (r == PROTO_FAIL) {
			CHECK(used == 0);
			CHECK(s.error != SS_OK);
			break;
		}
		CHECK(r == PROTO_NEED_MORE || r == PROTO_REPLY || r == PROTO_REQUEST);
		memmove(buf, buf + used, have - used);
		have -= used;
		if (r == PROTO_REQUEST)
			break;
		/* what it asks for is bounded, and asked only once authentic bytes say so */
		CHECK(ss_server_want(&s) <= ss_server_buf_max(k->method) + 64 + 32 + 16);
		CHECK(ss_server_want(&s) > have || r == PROTO_REPLY);
	}
	o->res = r;
	o->err = s.error;
	if (r == PROTO_REQUEST) {
		fuzz_check_target(&s.target);
		CHECK(s.early <= have);
		o->t = s.target;
		o->early = s.early;
		memcpy(o->rest, buf, have);
		memcpy(o->rest + have, in + fed, len - fed);
		o->rest_len = have + len - fed;
	}
	ss_server_wipe(&s);
	CHECK(fuzz_all_zero(&s, sizeof(s)));
}

static void put_be16(uint8_t *p, size_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

/* Seal p[0..n) at out with the counter nonce; returns bytes written. */
static size_t seal(struct aead_key *a, uint8_t *nonce, const uint8_t *p, size_t n, uint8_t *out)
{
	memcpy(out, p, n);
	aead_seal(a, nonce, NULL, 0, out, n, out + n);
	aead_nonce_inc(nonce, a->nonce_len);
	return n + 16;
}

/* The body as an authentic request stream (see the top); 0 when it cannot be one. */
static size_t authentic(const struct ss_key *k, bool eih, const uint8_t *body, size_t n,
                        uint8_t *out, uint64_t *now)
{
	const struct ss_method_info *mi = ss_method_info(k->method);
	size_t kl = mi->key_len, off = 0;
	uint8_t salt[32], sk[32], km[64], nonce[24] = {0}, hdr[16], len2[2];
	struct aead_key a;

	for (size_t i = 0; i < kl; i++)
		salt[i] = (uint8_t)(0xa0 + i);
	memcpy(out, salt, kl);
	off = kl;
	if (!mi->v2022) {
		size_t step;

		if (n < 1)
			return 0;
		step = 1 + body[0] % 200;
		hkdf_sha1(sk, kl, k->key, kl, salt, kl, (const uint8_t *)"ss-subkey", 9);
		aead_key_init(&a, mi->alg, sk);
		for (size_t i = 1; i < n; i += step) {
			size_t c = n - i < step ? n - i : step;

			put_be16(len2, c);
			off += seal(&a, nonce, len2, 2, out + off);
			off += seal(&a, nonce, body + i, c, out + off);
		}
		aead_key_wipe(&a);
		return off;
	}
	if (n < 2)
		return 0;
	const uint8_t *psk = k->key;
	uint8_t user_key[32];
	if (eih) { /* one identity header naming the user upsk */
		uint8_t isk[32], h[16];

		ss_psk_decode(user_key, kl, upsk);
		memcpy(km, k->key, kl);
		memcpy(km + kl, salt, kl);
		blake3_derive_key(isk, kl, "shadowsocks 2022 identity subkey", km, 2 * kl);
		blake3_hash(h, 16, user_key, kl);
		aes_block_encrypt(isk, kl, h, out + off);
		off += 16;
		psk = user_key;
	}
	memcpy(km, psk, kl);
	memcpy(km + kl, salt, kl);
	blake3_derive_key(sk, kl, "shadowsocks 2022 session subkey", km, 2 * kl);
	aead_key_init(&a, mi->alg, sk);
	/* the timestamp 1700000000 + (body[0] - 128) against now 1700000000 */
	*now = 1700000000;
	hdr[0] = body[1] & 0x80 ? 1 : 0; /* now and then a response's type */
	for (int i = 0; i < 8; i++)
		hdr[1 + i] = (uint8_t)((1700000000ull + body[0] - 128) >> (56 - 8 * i));
	/* the length: the body's, or (rarely) whatever body[1] says */
	put_be16(hdr + 9, body[1] & 0x40 ? (size_t)(body[1] & 0x3f) : n - 2);
	off += seal(&a, nonce, hdr, 11, out + off);
	off += seal(&a, nonce, body + 2, n - 2, out + off);
	aead_key_wipe(&a);
	return off;
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
	                                     SS22_AES_256_GCM};
	static uint8_t stream[FUZZ_BUF_MAX + 4096];
	static struct outcome whole, split;
	struct ss_key k;
	struct ss_users users = {0};
	enum ss_method m;
	uint64_t now = 1700000000;
	size_t n;
	bool eih;

	if (size < 1 || size > FUZZ_BUF_MAX)
		return 0;
	m = ms[data[0] & 7];
	eih = (data[0] & 7) == 7;
	if (ss_key_init(&k, m,
	                ss_method_info(m)->v2022 ? (m == SS22_AES_128_GCM ? psk16 : psk32)
	                                         : "fuzz-password",
	                false))
		return 0;
	if (eih) {
		CHECK(ss_users_add(&users, "u", upsk, 32) == 0);
		CHECK(ss_users_finish(&users) == 0);
	}
	if (data[0] & 8) {
		n = authentic(&k, eih, data + 1, size - 1, stream, &now);
	} else {
		n = size - 1;
		memcpy(stream, data + 1, n);
	}
	run(&k, eih ? &users : NULL, stream, n, 0, now, &whole);
	run(&k, eih ? &users : NULL, stream, n, 1 + (data[0] >> 4) * 7, now, &split);
	CHECK(whole.res == split.res);
	CHECK(whole.err == split.err);
	if (whole.res == PROTO_REQUEST) {
		CHECK(whole.early == split.early);
		CHECK(whole.rest_len == split.rest_len);
		CHECK(memcmp(whole.rest, split.rest, whole.rest_len) == 0);
		CHECK(strcmp(whole.t.host, split.t.host) == 0 && whole.t.port == split.t.port);
	}
	ss_users_free(&users);
	return 0;
}
