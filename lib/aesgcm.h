/* SPDX-License-Identifier: MIT */
/* AES-128/256-GCM (NIST SP 800-38D, 96-bit IV, 16-byte tag) with VAES-512 and VPCLMULQDQ-512. */
#ifndef SPLICED_AESGCM_H
#define SPLICED_AESGCM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Why not wolfSSL's: 5.5.4's fastest x86-64 path is AVX2 (AES-NI on one
 * 128-bit block per instruction, PCLMULQDQ on 128 bits). Where the CPU has
 * VAES, VPCLMULQDQ and AVX-512F/BW/VL, CTR runs 16 blocks per step in four
 * 512-bit registers (4 blocks per AESENC) and GHASH multiplies 16 blocks by
 * H^16..H^1 (precomputed per key) with one reduction per 256 bytes. Two
 * passes over the message (CTR, then GHASH, or GHASH first when opening so
 * a forgery never writes plaintext). Elsewhere callers keep using wolfSSL:
 * there is no portable fallback here.
 */

enum aesgcm_sizes {
	AESGCM_IV_LEN = 12,
	AESGCM_TAG_LEN = 16,
	AESGCM_POWERS = 16, /* H^1..H^16 */
};

/* The expanded key and the powers of H; set once per key, read-only afterwards. */
struct aesgcm_key {
	_Alignas(16) uint8_t rk[15][16]; /* encryption round keys */
	_Alignas(16)
	        uint8_t h[AESGCM_POWERS + 4][16]; /* h[j] = H^(16-j) byte-reflected, then zeros */
	int rounds;                               /* 10 or 14 */
};

/* True when this CPU runs the routines (x86-64 with VAES, VPCLMULQDQ, AVX-512F/BW/VL, AES-NI). */
bool aesgcm_fast(void);
/* "VAES-512" or "none" (wolfSSL is used). */
const char *aesgcm_impl(void);
/* Test and bench hook: 0 turns the routines off, 1 on; false if this CPU cannot run them. */
bool aesgcm_select(int level);

/* Expand a 16- or 32-byte key; 0, or -1 (other length, or !aesgcm_fast()). */
int aesgcm_init(struct aesgcm_key *k, const uint8_t *key, size_t key_len);
void aesgcm_wipe(struct aesgcm_key *k);

/*
 * seal encrypts len bytes of src into dst and writes the tag; open checks
 * the tag over src[0..len) first and only then decrypts into dst (false and
 * nothing written when it does not match). dst == src allowed; ad may be
 * NULL when adlen is 0, src and dst when len is 0. Only where aesgcm_fast().
 */
void aesgcm_seal(const struct aesgcm_key *k, const uint8_t iv[AESGCM_IV_LEN], const void *ad,
                 size_t adlen, uint8_t *dst, const uint8_t *src, size_t len,
                 uint8_t tag[AESGCM_TAG_LEN]);
bool aesgcm_open(const struct aesgcm_key *k, const uint8_t iv[AESGCM_IV_LEN], const void *ad,
                 size_t adlen, uint8_t *dst, const uint8_t *src, size_t len,
                 const uint8_t tag[AESGCM_TAG_LEN]);

#endif
