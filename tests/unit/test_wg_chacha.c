/* SPDX-License-Identifier: MIT */
/* The vector ChaCha20-Poly1305 of data messages against RFC 8439 and wolfSSL, every code path. */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <wolfssl/options.h>
#include <wolfssl/wolfcrypt/chacha.h>
#include <wolfssl/wolfcrypt/chacha20_poly1305.h>

#include "chacha.h"
#include "chacha_core.h"
#include "t.h"

T_SUITE("wg_chacha");

bool wg_chacha_select(int level);

static const char *level_name[] = {"reference", "avx2", "avx512vl"};

/* Back to the fastest routine (what the constructor picked). */
static void restore(void)
{
	if (!wg_chacha_select(2))
		wg_chacha_select(1);
}

static uint64_t rng = 0x243f6a8885a308d3ull;

/* wolfSSL's 96-bit IV from WireGuard's counter: 32 zero bits, then the counter little endian. */
static void iv_from_nonce(uint8_t iv[12], uint64_t nonce)
{
	memset(iv, 0, 4);
	for (int i = 0; i < 8; i++)
		iv[4 + i] = (uint8_t)(nonce >> (8 * i));
}

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
	uint8_t key[32], out[sizeof(text)];

	for (int i = 0; i < 32; i++)
		key[i] = (uint8_t)i;
	for (int level = 0; level < 3; level++) {
		if (!wg_chacha_select(level))
			continue;
		wg_chacha20_xor(out, (const uint8_t *)text, sizeof(text) - 1, key,
		                0x000000004a000000ull, 1);
		if (memcmp(out, want16, 16))
			T_FAILF("%s: RFC 8439 2.4.2 ciphertext differs", level_name[level]);
	}
	restore();
}

/* The raw stream against wolfSSL's ChaCha20 for every length up to 9 blocks and odd counters. */
static void test_stream_vs_wolfssl(void)
{
	static uint8_t in[1200], want[1200], got[1200];
	uint8_t key[32], iv[12];
	ChaCha c;

	for (int level = 0; level < 3; level++) {
		if (!wg_chacha_select(level))
			continue;
		for (size_t len = 0; len <= sizeof(in); len += (len < 600 ? 1 : 37)) {
			uint64_t nonce;
			uint32_t counter = (uint32_t)(len % 5);

			fill(key, sizeof(key));
			fill(in, len);
			fill((uint8_t *)&nonce, sizeof(nonce));
			iv_from_nonce(iv, nonce);
			wc_Chacha_SetKey(&c, key, 32);
			wc_Chacha_SetIV(&c, iv, counter);
			wc_Chacha_Process(&c, want, in, (word32)len);
			wg_chacha20_xor(got, in, len, key, nonce, counter);
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
	static const size_t lens[] = {0,    1,    15,   16,   17,   63,   64,   65,   447,
	                              448,  449,  511,  512,  513,  960,  1023, 1024, 1025,
	                              1420, 1436, 1500, 2047, 4000, 8192, 9000, 65535};
	static const size_t adlens[] = {0, 7, 32};
	static uint8_t in[65536 + 16], want[65536 + 16], got[65536 + 16], back[65536 + 16];
	uint8_t key[32], ad[32], iv[12];

	for (int level = 0; level < 3; level++) {
		if (!wg_chacha_select(level))
			continue;
		for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
			for (size_t j = 0; j < 3; j++) {
				size_t len = lens[i], adlen = adlens[j];
				uint64_t nonce;

				fill(key, 32);
				fill(ad, adlen);
				fill(in, len);
				fill((uint8_t *)&nonce, sizeof(nonce));
				iv_from_nonce(iv, nonce);
				wc_ChaCha20Poly1305_Encrypt(key, iv, ad, (word32)adlen,
				                            len ? in : ad, (word32)len, want,
				                            want + len);
				if (j == 1) {
					/* in place */
					memcpy(got, in, len);
					wg_chacha20poly1305_seal(got, got, len, ad, adlen, nonce,
					                         key);
				} else {
					wg_chacha20poly1305_seal(got, in, len, adlen ? ad : NULL,
					                         adlen, nonce, key);
				}
				if (memcmp(got, want, len + 16)) {
					T_FAILF("%s: seal len %zu ad %zu differs from wolfSSL",
					        level_name[level], len, adlen);
					continue;
				}
				T_ASSERT(wg_chacha20poly1305_open(
				        back, got, len + 16, adlen ? ad : NULL, adlen, nonce, key));
				T_ASSERT(!memcmp(back, in, len));
				/* in place open */
				T_ASSERT(wg_chacha20poly1305_open(
				        got, got, len + 16, adlen ? ad : NULL, adlen, nonce, key));
				T_ASSERT(!memcmp(got, in, len));
			}
		}
	}
	restore();
}

static void test_open_rejects(void)
{
	uint8_t key[32], ad[32], msg[1500 + 16], out[1500];
	size_t len = 1436;

	fill(key, 32);
	fill(ad, 32);
	fill(msg, len);
	wg_chacha20poly1305_seal(msg, msg, len, ad, 32, 77, key);
	T_ASSERT(wg_chacha20poly1305_open(out, msg, len + 16, ad, 32, 77, key));
	/* every flipped bit position class: ciphertext start/middle/end, tag, AD, nonce, key */
	size_t pos[] = {0, 447, 448, 1000, len - 1, len, len + 15};
	for (size_t i = 0; i < sizeof(pos) / sizeof(pos[0]); i++) {
		msg[pos[i]] ^= 0x80;
		T_ASSERT(!wg_chacha20poly1305_open(out, msg, len + 16, ad, 32, 77, key));
		msg[pos[i]] ^= 0x80;
	}
	ad[31] ^= 1;
	T_ASSERT(!wg_chacha20poly1305_open(out, msg, len + 16, ad, 32, 77, key));
	ad[31] ^= 1;
	T_ASSERT(!wg_chacha20poly1305_open(out, msg, len + 16, ad, 32, 78, key));
	key[0] ^= 1;
	T_ASSERT(!wg_chacha20poly1305_open(out, msg, len + 16, ad, 32, 77, key));
	key[0] ^= 1;
	T_ASSERT(!wg_chacha20poly1305_open(out, msg, len + 15, ad, 32, 77, key));
	T_ASSERT(!wg_chacha20poly1305_open(out, msg, 15, ad, 32, 77, key));
	T_ASSERT(wg_chacha20poly1305_open(out, msg, len + 16, ad, 32, 77, key));
}

int main(void)
{
	printf("# vector ChaCha20 in use: %s; routines tested:",
	       wg_chacha_fast() ? "yes" : "no (wolfSSL)");
	for (int level = 0; level < 3; level++)
		if (wg_chacha_select(level))
			printf(" %s", level_name[level]);
	printf("\n");
	restore();
	T_RUN(test_hchacha20_draft);
	T_RUN(test_rfc8439_stream);
	T_RUN(test_stream_vs_wolfssl);
	T_RUN(test_aead_vs_wolfssl);
	T_RUN(test_open_rejects);
	return t_finish();
}
