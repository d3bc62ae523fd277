/* SPDX-License-Identifier: MIT */
/* lib/chacha: the vector ChaCha20 and ChaCha20-Poly1305 against RFC 8439 and wolfSSL, every routine. */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <wolfssl/options.h>
#include <wolfssl/wolfcrypt/chacha.h>
#include <wolfssl/wolfcrypt/chacha20_poly1305.h>

#include "chacha.h"
#include "chacha_core.h"
#include "t.h"

T_SUITE("chacha");

enum { LEVELS = 4 };
static const char *level_name[LEVELS] = {"reference", "avx2", "avx512vl", "avx512f"};

/* Back to the fastest routine (what the constructor picked). */
static void restore(void)
{
	for (int level = LEVELS - 1; level > 0 && !chacha_select(level); level--)
		;
}

static uint64_t rng = 0x243f6a8885a308d3ull;

static void fill(uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		rng = rng * 6364136223846793005ull + 1442695040888963407ull;
		p[i] = (uint8_t)(rng >> 56);
	}
}

/* draft-irtf-cfrg-xchacha-03 2.2.1: key 00..1f, nonce 00000009 0000004a 00000000 31415927. */
static void test_hchacha20_draft(void)
{
	static const uint8_t nonce[16] = {0, 0, 0, 0x09, 0,    0,    0,    0x4a,
	                                  0, 0, 0, 0,    0x31, 0x41, 0x59, 0x27};
	static const uint8_t want[32] = {
	        0x82, 0x41, 0x3b, 0x42, 0x27, 0xb2, 0x7b, 0xfe, 0xd3, 0x0e, 0x42,
	        0x50, 0x8a, 0x87, 0x7d, 0x73, 0xa0, 0xf9, 0xe4, 0xd5, 0x8a, 0x74,
	        0xa8, 0x53, 0xc1, 0x2e, 0xc4, 0x13, 0x26, 0xd3, 0xec, 0xdc,
	};
	uint8_t key[32], out[32];

	for (int i = 0; i < 32; i++)
		key[i] = (uint8_t)i;
	hchacha20(out, key, nonce);
	T_EQ_MEM(out, want, 32);
}

/* RFC 8439 2.4.2: key 00..1f, nonce 00:00:00:00 00:00:00:4a 00:00:00:00, counter 1. */
static void test_rfc8439_stream(void)
{
	static const char text[] = "Ladies and Gentlemen of the class of '99: If I could offer you "
	                           "only one tip for the future, sunscreen would be it.";
	static const uint8_t want16[16] = {0x6e, 0x2e, 0x35, 0x9a, 0x25, 0x68, 0xf9, 0x80,
	                                   0x41, 0xba, 0x07, 0x28, 0xdd, 0x0d, 0x69, 0x81};
	static const uint8_t nonce[12] = {0, 0, 0, 0, 0, 0, 0, 0x4a, 0, 0, 0, 0};
	uint8_t key[32], out[sizeof(text)];

	for (int i = 0; i < 32; i++)
		key[i] = (uint8_t)i;
	for (int level = 0; level < LEVELS; level++) {
		if (!chacha_select(level))
			continue;
		chacha_xor(out, (const uint8_t *)text, sizeof(text) - 1, key, nonce, 1);
		if (memcmp(out, want16, 16))
			T_FAILF("%s: RFC 8439 2.4.2 ciphertext differs", level_name[level]);
	}
	restore();
}

/*
 * The raw stream against wolfSSL's ChaCha20 for every length up to 9 blocks,
 * then past two 16-block calls (every routine and tail), odd counters.
 */
static void test_stream_vs_wolfssl(void)
{
	static uint8_t in[2700], want[2700], got[2700];
	uint8_t key[32], iv[12];
	ChaCha c;

	for (int level = 0; level < LEVELS; level++) {
		if (!chacha_select(level))
			continue;
		for (size_t len = 0; len <= sizeof(in); len += (len < 600 ? 1 : 37)) {
			uint32_t counter = (uint32_t)(len % 5);

			fill(key, sizeof(key));
			fill(in, len);
			fill(iv, sizeof(iv));
			wc_Chacha_SetKey(&c, key, 32);
			wc_Chacha_SetIV(&c, iv, counter);
			wc_Chacha_Process(&c, want, in, (word32)len);
			chacha_xor(got, in, len, key, iv, counter);
			if (memcmp(got, want, len)) {
				T_FAILF("%s: length %zu differs from wolfSSL", level_name[level],
				        len);
				break;
			}
		}
	}
	restore();
}

/* Whole AEAD vs wolfSSL's one-shot, in and out of place, with and without AD; then open. */
static void test_aead_vs_wolfssl(void)
{
	static const size_t lens[] = {0,    1,    15,   16,   17,    63,    64,   65,   447,
	                              448,  449,  511,  512,  513,   960,   1023, 1024, 1025,
	                              1420, 1436, 1472, 1473, 1500,  1983,  1984, 1985, 2047,
	                              2496, 4000, 8192, 9000, 16383, 16384, 65535};
	static const size_t adlens[] = {0, 7, 32};
	static uint8_t in[65536 + 16], want[65536 + 16], got[65536 + 16], back[65536 + 16];
	uint8_t key[32], ad[32], iv[12];

	for (int level = 0; level < LEVELS; level++) {
		if (!chacha_select(level))
			continue;
		for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
			for (size_t j = 0; j < 3; j++) {
				size_t len = lens[i], adlen = adlens[j];

				fill(key, 32);
				fill(ad, adlen);
				fill(in, len);
				fill(iv, sizeof(iv));
				wc_ChaCha20Poly1305_Encrypt(key, iv, ad, (word32)adlen,
				                            len ? in : ad, (word32)len, want,
				                            want + len);
				if (j == 1) {
					/* in place */
					memcpy(got, in, len);
					chacha_aead_seal(got, got, len, ad, adlen, iv, key,
					                 got + len);
				} else {
					chacha_aead_seal(got, in, len, adlen ? ad : NULL, adlen, iv,
					                 key, got + len);
				}
				if (memcmp(got, want, len + 16)) {
					T_FAILF("%s: seal len %zu ad %zu differs from wolfSSL",
					        level_name[level], len, adlen);
					continue;
				}
				T_ASSERT(chacha_aead_open(back, got, len, adlen ? ad : NULL, adlen,
				                          iv, key, got + len));
				T_ASSERT(!memcmp(back, in, len));
				/* in place open */
				T_ASSERT(chacha_aead_open(got, got, len, adlen ? ad : NULL, adlen,
				                          iv, key, got + len));
				T_ASSERT(!memcmp(got, in, len));
			}
		}
	}
	restore();
}

static void test_open_rejects(void)
{
	uint8_t key[32], ad[32], iv[12], msg[1500 + 16], out[1500];
	size_t len = 1436;

	fill(key, 32);
	fill(ad, 32);
	fill(iv, 12);
	fill(msg, len);
	chacha_aead_seal(msg, msg, len, ad, 32, iv, key, msg + len);
	T_ASSERT(chacha_aead_open(out, msg, len, ad, 32, iv, key, msg + len));
	/* every flipped bit position class: ciphertext start/middle/end, tag, AD, nonce, key */
	size_t pos[] = {0, 447, 448, 1000, len - 1, len, len + 15};
	for (size_t i = 0; i < sizeof(pos) / sizeof(pos[0]); i++) {
		msg[pos[i]] ^= 0x80;
		memset(out, 0xee, sizeof(out));
		T_ASSERT(!chacha_aead_open(out, msg, len, ad, 32, iv, key, msg + len));
		/* a forgery writes no plaintext */
		T_ASSERT(out[0] == 0xee && out[len - 1] == 0xee);
		msg[pos[i]] ^= 0x80;
	}
	ad[31] ^= 1;
	T_ASSERT(!chacha_aead_open(out, msg, len, ad, 32, iv, key, msg + len));
	ad[31] ^= 1;
	iv[11] ^= 1;
	T_ASSERT(!chacha_aead_open(out, msg, len, ad, 32, iv, key, msg + len));
	iv[11] ^= 1;
	key[0] ^= 1;
	T_ASSERT(!chacha_aead_open(out, msg, len, ad, 32, iv, key, msg + len));
	key[0] ^= 1;
	T_ASSERT(!chacha_aead_open(out, msg, len - 1, ad, 32, iv, key, msg + len));
	T_ASSERT(!chacha_aead_open(out, msg, len, ad, 31, iv, key, msg + len));
	T_ASSERT(chacha_aead_open(out, msg, len, ad, 32, iv, key, msg + len));
}

/* RFC 8439 section 2.8.2 (AEAD_CHACHA20_POLY1305) with every routine: seal, open, a forgery. */
static void test_rfc8439_aead(void)
{
	static const char text[] = "Ladies and Gentlemen of the class of '99: If I could offer you "
	                           "only one tip for the future, sunscreen would be it.";
	static const uint8_t nonce[12] = {0x07, 0,    0,    0,    0x40, 0x41,
	                                  0x42, 0x43, 0x44, 0x45, 0x46, 0x47};
	static const uint8_t aad[12] = {0x50, 0x51, 0x52, 0x53, 0xc0, 0xc1,
	                                0xc2, 0xc3, 0xc4, 0xc5, 0xc6, 0xc7};
	static const uint8_t want_ct[16] = {0xd3, 0x1a, 0x8d, 0x34, 0x64, 0x8e, 0x60, 0xdb,
	                                    0x7b, 0x86, 0xaf, 0xbc, 0x53, 0xef, 0x7e, 0xc2};
	static const uint8_t want_last[4] = {0x86, 0xce, 0xc6, 0x4b}; /* ...61 16 end the text */
	static const uint8_t want_tag[16] = {0x1a, 0xe1, 0x0b, 0x59, 0x4f, 0x09, 0xe2, 0x6a,
	                                     0x7e, 0x90, 0x2e, 0xcb, 0xd0, 0x60, 0x06, 0x91};
	const size_t n = sizeof(text) - 1;
	uint8_t key[32], ct[sizeof(text)], tag[16];

	for (int i = 0; i < 32; i++)
		key[i] = (uint8_t)(0x80 + i);
	for (int level = 0; level < LEVELS; level++) {
		if (!chacha_select(level))
			continue;
		chacha_aead_seal(ct, (const uint8_t *)text, n, aad, sizeof(aad), nonce, key, tag);
		if (memcmp(ct, want_ct, 16) || memcmp(ct + n - 6, want_last, 4) ||
		    memcmp(tag, want_tag, 16)) {
			T_FAILF("%s: RFC 8439 2.8.2 differs", level_name[level]);
			continue;
		}
		T_ASSERT(chacha_aead_open(ct, ct, n, aad, sizeof(aad), nonce, key, tag));
		T_ASSERT(!memcmp(ct, text, n));
		tag[0] ^= 1;
		T_ASSERT(!chacha_aead_open(ct, ct, n, aad, sizeof(aad), nonce, key, tag));
	}
	restore();
}

int main(void)
{
	printf("# vector ChaCha20 in use: %s (%s); routines tested:", chacha_fast() ? "yes" : "no",
	       chacha_impl());
	for (int level = 0; level < LEVELS; level++)
		if (chacha_select(level))
			printf(" %s", level_name[level]);
	printf("\n");
	restore();
	T_RUN(test_hchacha20_draft);
	T_RUN(test_rfc8439_stream);
	T_RUN(test_rfc8439_aead);
	T_RUN(test_stream_vs_wolfssl);
	T_RUN(test_aead_vs_wolfssl);
	T_RUN(test_open_rejects);
	return t_finish();
}
