/* SPDX-License-Identifier: MIT */
/* The ChaCha20 permutation and HChaCha20, portable C: shared by WireGuard's cookies and XChaCha AEADs. */
#ifndef SPLICED_CHACHA_CORE_H
#define SPLICED_CHACHA_CORE_H

#include <stdint.h>

/* "expand 32-byte k", the first four words of every ChaCha20 state. */
extern const uint32_t chacha_sigma[4];

/* The 20 rounds (10 double rounds, RFC 8439 section 2.3) on x, without the final addition. */
void chacha20_rounds(uint32_t x[16]);

/*
 * HChaCha20 (draft-irtf-cfrg-xchacha-03 section 2.2): a 32-byte subkey from
 * key and the first 16 bytes of an XChaCha20 nonce.
 */
void hchacha20(uint8_t out[32], const uint8_t key[32], const uint8_t nonce[16]);

#endif
