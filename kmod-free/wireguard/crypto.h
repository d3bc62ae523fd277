/* SPDX-License-Identifier: MIT */
/* WireGuard's primitives as thin wrappers over wolfSSL's public wc_* API. */
#ifndef SPLICED_WG_CRYPTO_H
#define SPLICED_WG_CRYPTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "messages.h"

/*
 * All functions are pure computations on caller memory (no allocation).
 * Functions returning int return 0 or -errno; the AEAD "open" functions return
 * a bool (authentic or not), as the kernel module does.
 */

/* HASH(in): BLAKE2s-256. */
void wg_hash(uint8_t out[WG_HASH_LEN], const void *in, size_t len);
/* HASH(a || b), the Noise MixHash step without a temporary buffer. */
void wg_hash2(uint8_t out[WG_HASH_LEN], const void *a, size_t alen, const void *b, size_t blen);
/* MAC(key, in): keyed BLAKE2s with an outlen-byte digest (16 for WireGuard's MAC). */
void wg_mac(uint8_t *out, size_t outlen, const uint8_t *key, size_t keylen, const void *in,
            size_t len);
/* HMAC(key, in) with BLAKE2s-256 (RFC 2104, 64-byte block). */
void wg_hmac(uint8_t out[WG_HASH_LEN], const uint8_t *key, size_t keylen, const void *in,
             size_t len);
/*
 * KDF_n(key, in) of the whitepaper: t0 = HMAC(key, in); t1 = HMAC(t0, 0x1);
 * t2 = HMAC(t0, t1 || 0x2); t3 = HMAC(t0, t2 || 0x3). Pass NULL for the outputs
 * not wanted (KDF1 = t1 only, KDF2 = t1,t2, KDF3 = all three).
 */
void wg_kdf(uint8_t *t1, uint8_t *t2, uint8_t *t3, const uint8_t key[WG_HASH_LEN], const void *in,
            size_t len);

/* Clamp a private key per RFC 7748 section 5. */
void wg_x25519_clamp(uint8_t key[WG_KEY_LEN]);
/* out = X25519(priv, pub); -EINVAL when the result is all zero (low order point). */
int wg_x25519(uint8_t out[WG_KEY_LEN], const uint8_t priv[WG_KEY_LEN],
              const uint8_t pub[WG_KEY_LEN]);
/* pub = X25519(priv, 9). priv need not be clamped (X25519 clamps internally). */
int wg_x25519_public(uint8_t pub[WG_KEY_LEN], const uint8_t priv[WG_KEY_LEN]);
/* A fresh clamped private key from wg_random(). */
int wg_x25519_generate(uint8_t priv[WG_KEY_LEN]);

/*
 * ChaCha20-Poly1305 (RFC 8439) with WireGuard's nonce: 32 zero bits then the
 * 64-bit counter little endian. seal writes len bytes of ciphertext then the
 * 16-byte tag to dst; open reads len bytes (tag included) from src and writes
 * len - 16 bytes of plaintext. dst == src (in place) is allowed for both.
 * On a failed open, dst holds garbage and must be discarded.
 */
void wg_aead_seal(uint8_t *dst, const uint8_t *src, size_t len, const void *ad, size_t adlen,
                  uint64_t nonce, const uint8_t key[WG_KEY_LEN]);
bool wg_aead_open(uint8_t *dst, const uint8_t *src, size_t len, const void *ad, size_t adlen,
                  uint64_t nonce, const uint8_t key[WG_KEY_LEN]);
/* XChaCha20-Poly1305 (draft-irtf-cfrg-xchacha), same layout, 24-byte nonce. */
void wg_xaead_seal(uint8_t *dst, const uint8_t *src, size_t len, const void *ad, size_t adlen,
                   const uint8_t nonce[WG_COOKIE_NONCE_LEN], const uint8_t key[WG_KEY_LEN]);
bool wg_xaead_open(uint8_t *dst, const uint8_t *src, size_t len, const void *ad, size_t adlen,
                   const uint8_t nonce[WG_COOKIE_NONCE_LEN], const uint8_t key[WG_KEY_LEN]);

/*
 * TAI64N label of a CLOCK_REALTIME time: big endian 2^62 + 10 + seconds, then
 * nanoseconds. The nanoseconds are rounded down to a multiple of 2^24 ns
 * (~16.8 ms) so the timestamp is not a fine-grained clock oracle, as the
 * kernel module does; initiations are still strictly ordered at that pace.
 */
void wg_tai64n(uint8_t out[WG_TAI64N_LEN], const struct timespec *realtime);

/* Constant-time equality and all-zero tests (for secrets, MACs, tags). */
bool wg_ct_eq(const void *a, const void *b, size_t n);
bool wg_ct_is_zero(const void *a, size_t n);
/* Overwrite a secret so the compiler cannot elide the store. */
void wg_wipe(void *p, size_t n);
/* Cryptographically secure random bytes (getrandom(2)); 0 or -errno. */
int wg_random(void *buf, size_t len);

#endif
