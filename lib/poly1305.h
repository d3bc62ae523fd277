/* SPDX-License-Identifier: MIT */
/* Poly1305 (RFC 8439 section 2.5) with AVX-512 IFMA, sixteen blocks at a time. */
#ifndef SPLICED_POLY1305_H
#define SPLICED_POLY1305_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Why not wolfSSL's: 5.5.4's fastest x86-64 Poly1305 is AVX2 (radix 2^26,
 * four blocks per step, 32x32-bit multiplies); on the development machine's
 * EPYC it costs as much as the 16-block ChaCha20 beside it. Where the CPU
 * has AVX-512 IFMA (52-bit multiply-add), the accumulator is kept in radix
 * 2^44 (limbs of 44, 44 and 42 bits), sixteen blocks in two sets of eight
 * 64-bit lanes, each multiplied by r^16 per step and by r^16..r^1 at the
 * end. Short inputs run a scalar radix-2^44 loop. Elsewhere callers keep
 * using wolfSSL: the routines here exist only on x86-64.
 */

enum poly1305_sizes {
	POLY1305_KEY_LEN = 32, /* r (clamped) then s */
	POLY1305_TAG_LEN = 16,
};

/* True when this CPU runs the IFMA routines (x86-64 with AVX-512F/BW/VL/IFMA, OS-enabled). */
bool poly1305_fast(void);
/* "AVX-512 IFMA" or "none" (wolfSSL is used). */
const char *poly1305_impl(void);
/* Test and bench hook: 0 turns the routines off, 1 on; false if this CPU cannot run them. */
bool poly1305_select(int level);

/*
 * The AEAD's tag (RFC 8439 section 2.8): Poly1305 under key over ad,
 * zero padding to 16, ct, padding, then adlen and len as 64-bit little
 * endian. ad / ct may be NULL when their length is 0. Only where
 * poly1305_fast().
 */
void poly1305_aead_mac(uint8_t tag[POLY1305_TAG_LEN], const uint8_t key[POLY1305_KEY_LEN],
                       const void *ad, size_t adlen, const uint8_t *ct, size_t len);
/* Plain Poly1305 of msg[0..len) (RFC 8439 2.5.1; for tests). Only where poly1305_fast(). */
void poly1305_mac(uint8_t tag[POLY1305_TAG_LEN], const uint8_t key[POLY1305_KEY_LEN],
                  const uint8_t *msg, size_t len);

#endif
