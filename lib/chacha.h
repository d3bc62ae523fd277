/* SPDX-License-Identifier: MIT */
/* ChaCha20 (RFC 8439) in vector routines, and ChaCha20-Poly1305 with lib/poly1305 or wolfSSL's Poly1305. */
#ifndef SPLICED_CHACHA_H
#define SPLICED_CHACHA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Why not wolfSSL's one-shot AEAD (what WireGuard's data path and
 * Shadowsocks' ChaCha methods run on x86-64):
 * - for a 1420-byte packet its AVX2 ChaCha20 runs 256 bytes at a time and
 *   then falls back to 2-block and 1-block code for the Poly1305 key block
 *   and the tail; profiling the tunnel showed those short paths costing more
 *   than the bulk (25 of 39 % of the ChaCha20 time). Here the key block and
 *   the first 448 bytes come from one 8-block (512-byte) call, or with the
 *   16-block routine the key block and the first 960 bytes.
 * - for long messages (Shadowsocks chunks of 16 KiB, SIP022's of 64 KiB) a
 *   16-block AVX-512F routine streams 1 KiB per call; one call costs about
 *   what an 8-block call does on the development machine's EPYC (~150 ns),
 *   so a tail takes one more 16-block call.
 * Poly1305 is lib/poly1305's (AVX-512 IFMA) where the CPU has it, else
 * wolfSSL's (AVX2). Figures: docs/crypto.md, bench/crypto/bench_chacha.
 * The construction is RFC 8439 section 2.8.
 */

enum chacha_sizes {
	CHACHA_KEY_LEN = 32,
	CHACHA_NONCE_LEN = 12, /* RFC 8439's 96-bit nonce */
	CHACHA_TAG_LEN = 16,
};

/* True when a vector routine runs (x86-64 with AVX2); otherwise callers use wolfSSL's AEAD. */
bool chacha_fast(void);
/* What runs: "AVX-512F", "AVX-512VL", "AVX2", or "reference" (for `spliced wg speed`). */
const char *chacha_impl(void);
/*
 * Test hook (tests/unit/test_chacha.c): pick the routines of a level, 0
 * reference, 1 AVX2, 2 AVX-512VL, 3 AVX-512F (16 blocks, AVX-512VL for the
 * rest); false if this CPU cannot run it. Not for production code.
 */
bool chacha_select(int level);

/* dst = src XOR the keystream from block counter on (dst == src allowed). */
void chacha_xor(uint8_t *dst, const uint8_t *src, size_t len, const uint8_t key[CHACHA_KEY_LEN],
                const uint8_t nonce[CHACHA_NONCE_LEN], uint32_t counter);

/*
 * ChaCha20-Poly1305: seal encrypts len bytes of src into dst and writes
 * the tag; open checks tag over src[0..len) first and only then decrypts
 * into dst (false and nothing written when it does not match). In place
 * (dst == src) allowed for both; ad may be NULL when adlen is 0, src and
 * dst when len is 0. Run these only where chacha_fast() says so: the
 * reference routine is for tests and is slower than wolfSSL's C.
 */
void chacha_aead_seal(uint8_t *dst, const uint8_t *src, size_t len, const void *ad, size_t adlen,
                      const uint8_t nonce[CHACHA_NONCE_LEN], const uint8_t key[CHACHA_KEY_LEN],
                      uint8_t tag[CHACHA_TAG_LEN]);
bool chacha_aead_open(uint8_t *dst, const uint8_t *src, size_t len, const void *ad, size_t adlen,
                      const uint8_t nonce[CHACHA_NONCE_LEN], const uint8_t key[CHACHA_KEY_LEN],
                      const uint8_t tag[CHACHA_TAG_LEN]);

#endif
