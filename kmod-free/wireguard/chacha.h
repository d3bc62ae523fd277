/* SPDX-License-Identifier: MIT */
/* ChaCha20-Poly1305 for data messages: an 8-block AVX2 ChaCha20 with wolfSSL's Poly1305. */
#ifndef SPLICED_WG_CHACHA_H
#define SPLICED_WG_CHACHA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Why not wolfSSL's one-shot AEAD: for a 1420-byte packet its AVX2 ChaCha20
 * runs 256 bytes at a time and then falls back to 2-block and 1-block code
 * for the Poly1305 key block and the tail; profiling the tunnel showed those
 * short paths costing more than the bulk (25 of 39 % of the ChaCha20 time).
 * Here the key block and the whole packet go through one 8-block (512-byte)
 * AVX2 routine: 1436 bytes + the key block are exactly 3 rounds of it.
 * Poly1305 stays wolfSSL's (AVX2). The construction is RFC 8439 section 2.8
 * with WireGuard's nonce (32 zero bits, then the 64-bit counter little endian).
 */

/* True when the CPU has AVX2; otherwise callers use wolfSSL's AEAD. */
bool wg_chacha_fast(void);
/* What wg_aead_seal/open run: "AVX-512VL", "AVX2" or "wolfSSL" (for `spliced wg speed`). */
const char *wg_chacha_impl(void);

/* Same contract as wg_aead_seal/open in crypto.h (in place allowed). */
void wg_chacha20poly1305_seal(uint8_t *dst, const uint8_t *src, size_t len, const void *ad,
                              size_t adlen, uint64_t nonce, const uint8_t key[32]);
bool wg_chacha20poly1305_open(uint8_t *dst, const uint8_t *src, size_t len, const void *ad,
                              size_t adlen, uint64_t nonce, const uint8_t key[32]);

/* The raw stream cipher from block `counter` on (exposed for the unit test). */
void wg_chacha20_xor(uint8_t *dst, const uint8_t *src, size_t len, const uint8_t key[32],
                     uint64_t nonce, uint32_t counter);

#endif
