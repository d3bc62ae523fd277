/* SPDX-License-Identifier: MIT */
/* Unit tests for lib/base64.c: RFC 4648 vectors, strictness, bounds, for the plain and _ct names. */
#include "t.h"

#include "base64.h"

#include <errno.h>

T_SUITE("base64");

/* Every test runs against both names: the plain codec and the constant-time one. */
static const struct codec {
	const char *name;
	int (*encode)(char *out, size_t cap, const void *in, size_t len, size_t *out_len);
	int (*decode)(uint8_t *out, size_t cap, const char *in, size_t len, size_t *out_len);
} codecs[] = {
        {"plain", base64_encode, base64_decode},
        {"ct", base64_encode_ct, base64_decode_ct},
};

static const struct {
	const char *raw, *b64;
} vectors[] = {
        /* RFC 4648 section 10 */
        {"", ""},
        {"f", "Zg=="},
        {"fo", "Zm8="},
        {"foo", "Zm9v"},
        {"foob", "Zm9vYg=="},
        {"fooba", "Zm9vYmE="},
        {"foobar", "Zm9vYmFy"},
        /* RFC 7617 section 2 example */
        {"Aladdin:open sesame", "QWxhZGRpbjpvcGVuIHNlc2FtZQ=="},
};

static void test_rfc4648_encode_with(const struct codec *c)
{
	char out[64];
	size_t n;

	for (size_t i = 0; i < sizeof(vectors) / sizeof(vectors[0]); i++) {
		memset(out, 'X', sizeof(out));
		T_EQ_INT(c->encode(out, sizeof(out), vectors[i].raw, strlen(vectors[i].raw), &n),
		         0);
		T_EQ_INT(n, strlen(vectors[i].b64));
		T_EQ_STR(out, vectors[i].b64);
		T_EQ_INT(base64_encoded_len(strlen(vectors[i].raw)), n);
	}
}

static void test_rfc4648_decode_with(const struct codec *c)
{
	uint8_t out[64];
	size_t n;

	for (size_t i = 0; i < sizeof(vectors) / sizeof(vectors[0]); i++) {
		const char *b = vectors[i].b64;

		T_EQ_INT(c->decode(out, sizeof(out), b, strlen(b), &n), 0);
		T_EQ_INT(n, strlen(vectors[i].raw));
		T_EQ_MEM(out, vectors[i].raw, n);
		T_ASSERT(n <= base64_decoded_max(strlen(b)));
	}
}

static void test_decode_strict_with(const struct codec *c)
{
	static const char *bad[] = {
	        "Zg",                 /* no padding */
	        "Zg=",                /* short */
	        "Zm9vY",              /* length not a multiple of 4 */
	        "Zg=a",               /* '=' not at the end */
	        "Z===",               /* three pads */
	        "====",               /* only pads */
	        "=Zm9",               /* leading pad */
	        "Zg==Zm9v",           /* pad in the middle */
	        "Zh==",               /* non-zero bits after the last octet */
	        "Zm9=",               /* ditto, one pad */
	        "Zm9v YmFy",          /* whitespace */
	        "Zm9v\nYmF",          /* newline */
	        "Zm9-",               /* URL-safe alphabet */
	        "Zm9_",      "Zm\0v", /* NUL */
	};
	uint8_t out[64];
	size_t n;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		size_t len = strlen(bad[i]);

		if (i == sizeof(bad) / sizeof(bad[0]) - 1)
			len = 4;
		if (c->decode(out, sizeof(out), bad[i], len, &n) != -EINVAL)
			T_FAILF("%s accepted \"%s\"", c->name, bad[i]);
	}
	/* every byte value outside the alphabet, in each position */
	for (int ch = 0; ch < 256; ch++) {
		char in[4] = {'Z', 'm', '9', 'v'};

		if ((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
		    (ch >= '0' && ch <= '9') || ch == '+' || ch == '/')
			continue;
		for (int pos = 0; pos < 4; pos++) {
			memcpy(in, "Zm9v", 4);
			in[pos] = (char)ch;
			if (ch == '=' && pos == 3)
				continue; /* "Zm9=" is checked above (non-zero bits) */
			if (c->decode(out, sizeof(out), in, 4, &n) != -EINVAL)
				T_FAILF("%s accepted byte 0x%02x at %d", c->name, ch, pos);
		}
	}
}

static void test_bounds_with(const struct codec *c)
{
	uint8_t out[8];
	char enc[8];
	size_t n = 99;

	/* "foobar" needs 8 + NUL */
	T_EQ_INT(c->encode(enc, 8, "foobar", 6, &n), -ENOSPC);
	T_EQ_INT(c->encode(enc, 9 - 1, "fooba", 5, &n), -ENOSPC);
	T_EQ_INT(c->encode(enc, 0, "", 0, &n), -ENOSPC);
	T_EQ_INT(c->encode(enc, 1, "", 0, &n), 0);
	T_EQ_INT(n, 0);
	T_EQ_STR(enc, "");

	/* decode: exactly enough, and one short */
	T_EQ_INT(c->decode(out, 6, "Zm9vYmFy", 8, &n), 0);
	T_EQ_INT(c->decode(out, 5, "Zm9vYmFy", 8, &n), -ENOSPC);
	T_EQ_INT(c->decode(out, 5, "Zm9vYmE=", 8, &n), 0);
	T_EQ_INT(n, 5);
	T_EQ_INT(c->decode(out, 4, "Zm9vYmE=", 8, &n), -ENOSPC);
	T_EQ_INT(c->decode(out, 0, "", 0, &n), 0);
	T_EQ_INT(n, 0);
}

/* Every length 0..300 and every byte value round-trips. */
static void test_roundtrip_with(const struct codec *c)
{
	uint8_t raw[300], back[300];
	char enc[410];
	uint32_t x = 12345;

	for (size_t len = 0; len <= sizeof(raw); len++) {
		size_t n, m;

		for (size_t i = 0; i < len; i++) {
			x = x * 1103515245 + 12345;
			raw[i] = len == 256 ? (uint8_t)i : (uint8_t)(x >> 16);
		}
		if (c->encode(enc, sizeof(enc), raw, len, &n) != 0 ||
		    n != base64_encoded_len(len) || strlen(enc) != n) {
			T_FAILF("%s: encode len %zu", c->name, len);
			return;
		}
		if (c->decode(back, sizeof(back), enc, n, &m) != 0 || m != len ||
		    memcmp(raw, back, len) != 0) {
			T_FAILF("%s: decode len %zu", c->name, len);
			return;
		}
	}
}

/*
 * The constant-time decode has no early exit: a bad first character is
 * noted and the rest still decoded (what a branch-free decode does; an
 * early return would leave the output untouched). It still refuses.
 */
static void test_ct_decodes_past_a_bad_character(void)
{
	uint8_t out[6];
	size_t n = 99;

	memset(out, 'X', sizeof(out));
	T_EQ_INT(base64_decode_ct(out, sizeof(out), "!m9vYmFy", 8, &n), -EINVAL);
	T_EQ_INT(n, 99);
	T_EQ_MEM(out + 3, "bar", 3);
	memset(out, 'X', sizeof(out));
	T_EQ_INT(base64_decode_ct(out, sizeof(out), "Zm9vYmF!", 8, &n), -EINVAL);
	T_EQ_MEM(out, "foo", 3);
}

/* A WireGuard key: 32 bytes, 44 characters with one '='; wg(8)'s own example pair. */
static void test_ct_key(void)
{
	static const char *b64 = "YFBQhzqFx5FMIqSNqH3DW7nYFxpCGB0qXa4ePaOX5kM=";
	static const uint8_t raw[32] = {0x60, 0x50, 0x50, 0x87, 0x3a, 0x85, 0xc7, 0x91,
	                                0x4c, 0x22, 0xa4, 0x8d, 0xa8, 0x7d, 0xc3, 0x5b,
	                                0xb9, 0xd8, 0x17, 0x1a, 0x42, 0x18, 0x1d, 0x2a,
	                                0x5d, 0xae, 0x1e, 0x3d, 0xa3, 0x97, 0xe6, 0x43};
	uint8_t k[32];
	char enc[45];
	size_t n;

	T_EQ_INT(base64_decode_ct(k, sizeof(k), b64, 44, &n), 0);
	T_EQ_INT(n, 32);
	T_EQ_MEM(k, raw, 32);
	T_EQ_INT(base64_encode_ct(enc, sizeof(enc), raw, 32, &n), 0);
	T_EQ_INT(n, 44);
	T_EQ_STR(enc, b64);
	T_EQ_INT(base64_encode_ct(enc, 44, raw, 32, &n), -ENOSPC);
	/* non-canonical: the two bits after the last octet set ('N' instead of 'M') */
	T_EQ_INT(base64_decode_ct(k, sizeof(k), "YFBQhzqFx5FMIqSNqH3DW7nYFxpCGB0qXa4ePaOX5kN=", 44,
	                          &n),
	         -EINVAL);
	T_EQ_INT(base64_decode_ct(k, 31, b64, 44, &n), -ENOSPC);
}

/* T_RUN for a test taking a codec: one PASS/FAIL line per codec, "base64/NAME/plain". */
#define RUN_BOTH(fn)                                                                    \
	for (size_t i_ = 0; i_ < sizeof(codecs) / sizeof(codecs[0]); i_++) {            \
		t_failed_case = 0;                                                      \
		fn##_with(&codecs[i_]);                                                 \
		t_failed_case ? t_fail++ : t_pass++;                                    \
		printf("%s: %s/%s/%s\n", t_failed_case ? "FAIL" : "PASS", t_suite, #fn, \
		       codecs[i_].name);                                                \
		fflush(stdout);                                                         \
	}

int main(void)
{
	RUN_BOTH(test_rfc4648_encode);
	RUN_BOTH(test_rfc4648_decode);
	RUN_BOTH(test_decode_strict);
	RUN_BOTH(test_bounds);
	RUN_BOTH(test_roundtrip);
	T_RUN(test_ct_decodes_past_a_bad_character);
	T_RUN(test_ct_key);
	return t_finish();
}
