/* SPDX-License-Identifier: MIT */
/* Unit tests for lib/base64.c: RFC 4648 vectors, strictness, bounds. */
#include "t.h"

#include "base64.h"

#include <errno.h>

T_SUITE("base64");

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

static void test_rfc4648_encode(void)
{
	char out[64];
	size_t n;

	for (size_t i = 0; i < sizeof(vectors) / sizeof(vectors[0]); i++) {
		memset(out, 'X', sizeof(out));
		T_EQ_INT(
		        base64_encode(out, sizeof(out), vectors[i].raw, strlen(vectors[i].raw), &n),
		        0);
		T_EQ_INT(n, strlen(vectors[i].b64));
		T_EQ_STR(out, vectors[i].b64);
		T_EQ_INT(base64_encoded_len(strlen(vectors[i].raw)), n);
	}
}

static void test_rfc4648_decode(void)
{
	uint8_t out[64];
	size_t n;

	for (size_t i = 0; i < sizeof(vectors) / sizeof(vectors[0]); i++) {
		const char *b = vectors[i].b64;

		T_EQ_INT(base64_decode(out, sizeof(out), b, strlen(b), &n), 0);
		T_EQ_INT(n, strlen(vectors[i].raw));
		T_EQ_MEM(out, vectors[i].raw, n);
		T_ASSERT(n <= base64_decoded_max(strlen(b)));
	}
}

static void test_decode_strict(void)
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
		if (base64_decode(out, sizeof(out), bad[i], len, &n) != -EINVAL)
			T_FAILF("accepted \"%s\"", bad[i]);
	}
	/* every byte value outside the alphabet, in each position */
	for (int c = 0; c < 256; c++) {
		char in[4] = {'Z', 'm', '9', 'v'};

		if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		    c == '+' || c == '/')
			continue;
		for (int pos = 0; pos < 4; pos++) {
			memcpy(in, "Zm9v", 4);
			in[pos] = (char)c;
			if (c == '=' && pos == 3)
				continue; /* "Zm9=" is checked above (non-zero bits) */
			if (base64_decode(out, sizeof(out), in, 4, &n) != -EINVAL)
				T_FAILF("accepted byte 0x%02x at %d", c, pos);
		}
	}
}

static void test_bounds(void)
{
	uint8_t out[8];
	char enc[8];
	size_t n = 99;

	/* "foobar" needs 8 + NUL */
	T_EQ_INT(base64_encode(enc, 8, "foobar", 6, &n), -ENOSPC);
	T_EQ_INT(base64_encode(enc, 9 - 1, "fooba", 5, &n), -ENOSPC);
	T_EQ_INT(base64_encode(enc, 0, "", 0, &n), -ENOSPC);
	T_EQ_INT(base64_encode(enc, 1, "", 0, &n), 0);
	T_EQ_INT(n, 0);
	T_EQ_STR(enc, "");

	/* decode: exactly enough, and one short */
	T_EQ_INT(base64_decode(out, 6, "Zm9vYmFy", 8, &n), 0);
	T_EQ_INT(base64_decode(out, 5, "Zm9vYmFy", 8, &n), -ENOSPC);
	T_EQ_INT(base64_decode(out, 5, "Zm9vYmE=", 8, &n), 0);
	T_EQ_INT(n, 5);
	T_EQ_INT(base64_decode(out, 4, "Zm9vYmE=", 8, &n), -ENOSPC);
	T_EQ_INT(base64_decode(out, 0, "", 0, &n), 0);
	T_EQ_INT(n, 0);
}

/* Every length 0..300 and every byte value round-trips. */
static void test_roundtrip(void)
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
		if (base64_encode(enc, sizeof(enc), raw, len, &n) != 0 ||
		    n != base64_encoded_len(len) || strlen(enc) != n) {
			T_FAILF("encode len %zu", len);
			return;
		}
		if (base64_decode(back, sizeof(back), enc, n, &m) != 0 || m != len ||
		    memcmp(raw, back, len) != 0) {
			T_FAILF("decode len %zu", len);
			return;
		}
	}
}

int main(void)
{
	T_RUN(test_rfc4648_encode);
	T_RUN(test_rfc4648_decode);
	T_RUN(test_decode_strict);
	T_RUN(test_bounds);
	T_RUN(test_roundtrip);
	return t_finish();
}
