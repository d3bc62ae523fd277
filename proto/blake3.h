/* SPDX-License-Identifier: MIT */
/* BLAKE3 hash and derive_key for inputs of one chunk (at most 1024 bytes), as Shadowsocks 2022 needs. */
#ifndef SPLICED_BLAKE3_H
#define SPLICED_BLAKE3_H

#include <stddef.h>
#include <stdint.h>

/*
 * Only the single-chunk case of BLAKE3 (the compression function, chunk
 * flags, the root output): every input SIP022 and SIP023 hash is at most 64
 * bytes (a PSK and a salt), and the context strings are shorter than a
 * block. No tree, no SIMD. Debian ships no BLAKE3 library; b3sum is the test
 * oracle (tests/unit/test_blake3.c).
 */
enum blake3_limits {
	BLAKE3_CHUNK_LEN = 1024, /* longest input these functions take */
	BLAKE3_OUT_MAX = 64,     /* longest output: one root compression */
};

/* BLAKE3(in) truncated to out_len bytes. -EINVAL when in_len or out_len is too long. */
int blake3_hash(uint8_t *out, size_t out_len, const void *in, size_t in_len);
/*
 * BLAKE3 derive_key (the KDF mode): the context string hashed into a key,
 * which then hashes the key material. -EINVAL when an input or out_len is
 * too long.
 */
int blake3_derive_key(uint8_t *out, size_t out_len, const char *context, const void *material,
                      size_t material_len);

#endif
