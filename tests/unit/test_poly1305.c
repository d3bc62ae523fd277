/* SPDX-License-Identifier: MIT */
/* lib/poly1305: the IFMA Poly1305 against RFC 8439 and wolfSSL, every length class and alignment. */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <wolfssl/options.h>
#include <wolfssl/wolfcrypt/chacha20_poly1305.h>
#include <wolfssl/wolfcrypt/poly1305.h>

#include "chacha.h"
#include "poly1305.h"
#include "t.h"

T_SUITE("poly1305");

enum { BIG = 70000 };

static uint64_t rng = 0x13198a2e03707344ull;

static uint64_t next(void)
{
	rng = rng * 6364136223846793005ull + 1442695040888963407ull;
	return rng >> 16;
}

static void fill(uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(next() >> 24);
}

static uint8_t pool[BIG + 128], want[BIG + 16], got[BIG + 16];

static void wolf_mac(uint8_t tag[16], const uint8_t key[32], const uint8_t *m, size_t len)
{
	Poly1305 p;

	wc_Poly1305SetKey(&p, key, 32);
	wc_Poly1305Update(&p, len ? m : key, (word32)len);
	wc_Poly1305Final(&p, tag);
}

/* RFC 8439 2.5.2 and A.3 test vector #1 (all zero). */
static void test_rfc8439(void)
{
	static const uint8_t key[32] = {0x85, 0xd6, 0xbe, 0x78, 0x57, 0x55, 0x6d, 0x33,
	                                0x7f, 0x44, 0x52, 0xfe, 0x42, 0xd5, 0x06, 0xa8,
	                                0x01, 0x03, 0x80, 0x8a, 0xfb, 0x0d, 0xb2, 0xfd,
	                                0x4a, 0xbf, 0xf6, 0xaf, 0x41, 0x49, 0xf5, 0x1b};
	static const uint8_t tag252[16] = {0xa8, 0x06, 0x1d, 0xc1, 0x30, 0x51, 0x36, 0xc6,
	                                   0xc2, 0x2b, 0x8b, 0xaf, 0x0c, 0x01, 0x27, 0xa9};
	static const char text[] = "Cryptographic Forum Research Group";
	uint8_t zero[64] = {0}, tag[16];

	poly1305_mac(tag, key, (const uint8_t *)text, sizeof(text) - 1);
	T_EQ_MEM(tag, tag252, 16);
	poly1305_mac(tag, zero, zero, sizeof(zero));
	T_EQ_MEM(tag, zero, 16);
}

/*
 * RFC 8439 A.3's edge cases with r = 2: h = (2^128 - 1 + 2^128) * 2 =
 * 2^130 - 2 >= p reduces to 3 (#5); h = (2 + 2^128) * 2 < p, plus s =
 * 2^128 - 1 wraps to 3 (#6); h = (2^128 - 3 + 2^128) * 2 = p - 1 stays,
 * 2^128 - 6 mod 2^128 (#9).
 */
static void test_rfc8439_edges(void)
{
	uint8_t key[32] = {2}, m[16], tag[16], want[16] = {3};

	memset(m, 0xff, 16);
	poly1305_mac(tag, key, m, 16);
	T_EQ_MEM(tag, want, 16);
	memset(key + 16, 0xff, 16);
	memset(m, 0, 16);
	m[0] = 2;
	poly1305_mac(tag, key, m, 16);
	T_EQ_MEM(tag, want, 16);
	memset(key + 16, 0, 16);
	memset(m, 0xff, 16);
	m[0] = 0xfd;
	memset(want, 0xff, 16);
	want[0] = 0xfa;
	poly1305_mac(tag, key, m, 16);
	T_EQ_MEM(tag, want, 16);
}

/*
 * Plain Poly1305 against wolfSSL: every length to 2100 (the scalar loop, the
 * switch to the vector one, every count of leading zero lanes), then random
 * lengths to 70000, the message at every alignment 0..63 in turn.
 */
static void test_vs_wolfssl(void)
{
	uint8_t key[32], a[16], b[16];
	int bad = 0;

	for (size_t i = 0; i < 2100 + 400 && bad < 5; i++) {
		size_t len = i < 2100 ? i : next() % (BIG + 1), off = i % 64;

		fill(key, 32);
		fill(pool + off, len);
		wolf_mac(a, key, pool + off, len);
		poly1305_mac(b, key, pool + off, len);
		if (memcmp(a, b, 16)) {
			T_FAILF("length %zu at offset %zu differs from wolfSSL", len, off);
			bad++;
		}
	}
}

/*
 * Values that stress the carries: r and s all ones (after clamping), the
 * message all 0xff or all zero but the last byte; the tags go through the
 * final reduction's both branches.
 */
static void test_extremes(void)
{
	static const size_t lens[] = {1,   15,  16,  17,   127,   128,   129,
	                              255, 256, 257, 1024, 16383, 16384, 65535};
	uint8_t key[32], a[16], b[16];

	for (int k = 0; k < 4; k++) {
		memset(key, k & 1 ? 0xff : 0, 16);
		memset(key + 16, k & 2 ? 0xff : 0, 16);
		key[0] |= 1;
		for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
			for (int fillv = 0; fillv < 2; fillv++) {
				memset(pool, fillv ? 0xff : 0, lens[i]);
				pool[lens[i] - 1] = 0xff;
				wolf_mac(a, key, pool, lens[i]);
				poly1305_mac(b, key, pool, lens[i]);
				if (memcmp(a, b, 16))
					T_FAILF("key class %d len %zu fill %d differs", k, lens[i],
					        fillv);
			}
		}
	}
}

/* The AEAD's padded MAC (RFC 8439 2.8) against wolfSSL's, with AD of 0..300 bytes. */
static void test_aead_mac_vs_wolfssl(void)
{
	uint8_t key[32], ad[300], a[16], b[16];
	int bad = 0;

	for (size_t i = 0; i < 1500 && bad < 5; i++) {
		size_t len = i < 1000 ? i * 3 : next() % (BIG + 1),
		       adlen = next() % 4 ? 0 : i % 300;
		size_t off = i % 64;
		Poly1305 p;

		fill(key, 32);
		fill(ad, adlen);
		fill(pool + off, len);
		wc_Poly1305SetKey(&p, key, 32);
		wc_Poly1305_MAC(&p, adlen ? ad : key, (word32)adlen, len ? pool + off : key,
		                (word32)len, a, 16);
		poly1305_aead_mac(b, key, adlen ? ad : NULL, adlen, len ? pool + off : NULL, len);
		if (memcmp(a, b, 16)) {
			T_FAILF("len %zu ad %zu offset %zu differs from wolfSSL", len, adlen, off);
			bad++;
		}
	}
}

/*
 * The whole AEAD (lib/chacha with this Poly1305) against wolfSSL's one-shot
 * call: random lengths to 70000, every alignment, sealed in place, opened.
 */
static void test_chacha_aead_vs_wolfssl(void)
{
	uint8_t key[32], iv[12], ad[13];
	int bad = 0;

	for (size_t i = 0; i < 300 && bad < 5; i++) {
		size_t len = next() % (BIG + 1), off = i % 64, adlen = i % 3 ? 0 : 13;
		uint8_t *m = pool + off;

		fill(key, 32);
		fill(iv, 12);
		fill(ad, adlen);
		fill(m, len);
		wc_ChaCha20Poly1305_Encrypt(key, iv, ad, (word32)adlen, len ? m : key, (word32)len,
		                            want, want + len);
		memcpy(got, m, len);
		chacha_aead_seal(m, m, len, adlen ? ad : NULL, adlen, iv, key, m + len);
		if (memcmp(m, want, len + 16)) {
			T_FAILF("seal len %zu offset %zu differs from wolfSSL", len, off);
			bad++;
			continue;
		}
		T_ASSERT(
		        chacha_aead_open(m, m, len, adlen ? ad : NULL, adlen, iv, key, want + len));
		T_ASSERT(!memcmp(m, got, len));
	}
}

/*
 * The vector loop's masked loads neither read nor fault outside the
 * message: messages that end at a page followed by an inaccessible one,
 * and that start right after one.
 */
static void test_page_edges(void)
{
	long page = sysconf(_SC_PAGESIZE);
	uint8_t *map = mmap(NULL, (size_t)page * 4, PROT_READ | PROT_WRITE,
	                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint8_t key[32], a[16], b[16];

	T_ASSERT(map != MAP_FAILED);
	if (map == MAP_FAILED)
		return;
	T_ASSERT(mprotect(map, (size_t)page, PROT_NONE) == 0);
	T_ASSERT(mprotect(map + 3 * page, (size_t)page, PROT_NONE) == 0);
	fill(key, 32);
	for (size_t len = 120; len < 700; len += 29) {
		uint8_t *end = map + 3 * page - len, *start = map + page;

		Poly1305 p;

		fill(end, len);
		wc_Poly1305SetKey(&p, key, 32);
		wc_Poly1305_MAC(&p, key, 0, end, (word32)len, a, 16);
		poly1305_aead_mac(b, key, NULL, 0, end, len);
		if (memcmp(a, b, 16))
			T_FAILF("len %zu at the end of a page differs", len);
		memmove(start, end, len);
		poly1305_aead_mac(b, key, NULL, 0, start, len);
		if (memcmp(a, b, 16))
			T_FAILF("len %zu at the start of a page differs", len);
	}
	munmap(map, (size_t)page * 4);
}

int main(void)
{
	printf("# Poly1305: %s\n", poly1305_impl());
	if (!poly1305_fast()) {
		printf("SKIP: poly1305/all (no AVX-512 IFMA on this CPU or build)\n");
		return t_finish();
	}
	T_RUN(test_rfc8439);
	T_RUN(test_rfc8439_edges);
	T_RUN(test_vs_wolfssl);
	T_RUN(test_extremes);
	T_RUN(test_aead_mac_vs_wolfssl);
	T_RUN(test_chacha_aead_vs_wolfssl);
	T_RUN(test_page_edges);
	return t_finish();
}
