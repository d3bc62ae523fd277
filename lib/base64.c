/* SPDX-License-Identifier: MIT */
/* Base64 encode and strict decode (RFC 4648 section 4) for HTTP Basic credentials. */
#include "base64.h"

#include <errno.h>

static const char alphabet[64] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

enum { BAD = 0xff };

/* One character to its 6-bit value, or BAD. Branches on the character are fine:
 * Basic credentials travel in clear text anyway, so timing hides nothing. */
static uint8_t sextet(char ch)
{
	unsigned char c = (unsigned char)ch;

	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return BAD;
}

int base64_encode(char *out, size_t cap, const void *in, size_t len, size_t *out_len)
{
	const uint8_t *p = in;
	size_t need, o = 0, i = 0;

	if (len > (SIZE_MAX - 1) / 4 * 3 - 2)
		return -ENOSPC;
	need = base64_encoded_len(len);
	if (cap < need + 1)
		return -ENOSPC;
	for (; i + 3 <= len; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];

		out[o++] = alphabet[v >> 18];
		out[o++] = alphabet[(v >> 12) & 63];
		out[o++] = alphabet[(v >> 6) & 63];
		out[o++] = alphabet[v & 63];
	}
	if (len - i == 1) {
		uint32_t v = (uint32_t)p[i] << 16;

		out[o++] = alphabet[v >> 18];
		out[o++] = alphabet[(v >> 12) & 63];
		out[o++] = '=';
		out[o++] = '=';
	} else if (len - i == 2) {
		uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8;

		out[o++] = alphabet[v >> 18];
		out[o++] = alphabet[(v >> 12) & 63];
		out[o++] = alphabet[(v >> 6) & 63];
		out[o++] = '=';
	}
	out[o] = '\0';
	*out_len = o;
	return 0;
}

int base64_decode(uint8_t *out, size_t cap, const char *in, size_t len, size_t *out_len)
{
	size_t pad = 0, need, o = 0;

	if (len % 4 != 0)
		return -EINVAL;
	if (len > 0 && in[len - 1] == '=')
		pad = len > 1 && in[len - 2] == '=' ? 2 : 1;
	need = len / 4 * 3 - pad;
	if (need > cap)
		return -ENOSPC;

	for (size_t i = 0; i < len; i += 4) {
		/* Only the last quantum may carry padding ('=' is BAD elsewhere). */
		size_t qpad = i + 4 == len ? pad : 0;
		uint8_t s[4] = {0, 0, 0, 0};
		uint32_t v;

		for (size_t k = 0; k < 4 - qpad; k++) {
			s[k] = sextet(in[i + k]);
			if (s[k] == BAD)
				return -EINVAL;
		}
		v = (uint32_t)s[0] << 18 | (uint32_t)s[1] << 12 | (uint32_t)s[2] << 6 | s[3];
		/* "xy==" encodes 8 bits in 12, "xyz=" 16 in 18: the rest must be 0. */
		if ((qpad == 2 && (v & 0xffff)) || (qpad == 1 && (v & 0xff)))
			return -EINVAL;
		out[o++] = v >> 16;
		if (qpad < 2)
			out[o++] = (v >> 8) & 0xff;
		if (qpad < 1)
			out[o++] = v & 0xff;
	}
	*out_len = o;
	return 0;
}
