/* SPDX-License-Identifier: MIT */
/* Base64 (RFC 4648 section 4, standard alphabet, padded): strict decode and encode, constant-time variants. */
#ifndef SPLICED_BASE64_H
#define SPLICED_BASE64_H

#include <stddef.h>
#include <stdint.h>

/* Characters base64_encode() writes for n input bytes, not counting the NUL. */
static inline size_t base64_encoded_len(size_t n)
{
	return (n + 2) / 3 * 4;
}

/* Upper bound of the bytes base64_decode() writes for len input characters. */
static inline size_t base64_decoded_max(size_t len)
{
	return len / 4 * 3;
}

/*
 * Encode `len` bytes of `in` into `out` (capacity `cap`) and NUL-terminate it.
 * Returns 0 and sets *out_len (without the NUL), or -ENOSPC when
 * cap < base64_encoded_len(len) + 1 (nothing useful is written then).
 */
int base64_encode(char *out, size_t cap, const void *in, size_t len, size_t *out_len);

/*
 * Decode exactly `len` characters of `in`. Strict: the length is a multiple
 * of 4, only the RFC 4648 alphabet, '=' only as one or two final characters,
 * and the unused bits before the padding are zero (one encoding per value).
 * No whitespace. Returns 0 and sets *out_len, -EINVAL on malformed input, or
 * -ENOSPC when the result would exceed `cap`. Never reads or writes out of
 * bounds; on error `out` may hold a partial result (wipe it if secret).
 */
int base64_decode(uint8_t *out, size_t cap, const char *in, size_t len, size_t *out_len);

/*
 * The same, for secrets (keys, passwords): the time taken depends on len and
 * the padding (so on the decoded length) only, never on the other bytes; a
 * bad character does not end the decode early. The plain functions above
 * share this implementation today; code handling a secret calls these, so
 * that a faster plain codec can never leak one.
 */
int base64_encode_ct(char *out, size_t cap, const void *in, size_t len, size_t *out_len);
int base64_decode_ct(uint8_t *out, size_t cap, const char *in, size_t len, size_t *out_len);

#endif
