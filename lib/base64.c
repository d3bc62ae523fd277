/* SPDX-License-Identifier: MIT */
/* Base64 encode and strict decode (RFC 4648 section 4), in constant time for keys and credentials. */
#include "base64.h"

#include <errno.h>

#include "ct.h"

/*
 * One codec serves both names: the character mapping is arithmetic, not a
 * table lookup or a branch on the character, so its time depends on the
 * length (and the padding, i.e. the decoded length) only. At the sizes
 * spliced codes (keys, Basic credentials) that costs nothing measurable.
 */

static const struct ct_range alphabet[] = {
        {'A', 'Z', 0}, {'a', 'z', 26}, {'0', '9', 52}, {'+', '+', 62}, {'/', '/', 63}};

/* A character's 6-bit value, or -1; every character costs the same. */
static int sextet(int c)
{
	return ct_lookup(c, alphabet, sizeof(alphabet) / sizeof(alphabet[0]));
}

/* The character for a 6-bit value: start from 'A' + v and shift each range onto its alphabet. */
static char b64_char(uint32_t v)
{
	int x = (int)(v & 63), c = 'A' + x;

	c += ct_in_range(x, 26, 51) & ('a' - 'A' - 26);
	c += ct_in_range(x, 52, 61) & ('0' - 'A' - 52);
	c += ct_in_range(x, 62, 62) & ('+' - 'A' - 62);
	c += ct_in_range(x, 63, 63) & ('/' - 'A' - 63);
	return (char)c;
}

int base64_encode_ct(char *out, size_t cap, const void *in, size_t len, size_t *out_len)
{
	const uint8_t *p = in;
	size_t need, o = 0, i = 0;

	if (len > (SIZE_MAX - 1) / 4 * 3 - 2)
		return -ENOSPC;
	need = base64_encoded_len(len);
	if (cap < need + 1)
		return -ENOSPC;
	for (; i < len; i += 3) {
		/* The last quantum may hold one or two bytes: '=' stands for what is missing. */
		size_t left = len - i;
		uint32_t v = (uint32_t)p[i] << 16;

		if (left > 1)
			v |= (uint32_t)p[i + 1] << 8;
		if (left > 2)
			v |= p[i + 2];
		out[o++] = b64_char(v >> 18);
		out[o++] = b64_char(v >> 12);
		out[o++] = left > 1 ? b64_char(v >> 6) : '=';
		out[o++] = left > 2 ? b64_char(v) : '=';
	}
	out[o] = '\0';
	*out_len = o;
	return 0;
}

int base64_decode_ct(uint8_t *out, size_t cap, const char *in, size_t len, size_t *out_len)
{
	size_t pad = 0, need, o = 0;
	int bad = 0;

	if (len % 4 != 0)
		return -EINVAL;
	/* The padding gives the decoded length, which is not secret. */
	if (len > 0 && in[len - 1] == '=')
		pad = len > 1 && in[len - 2] == '=' ? 2 : 1;
	need = len / 4 * 3 - pad;
	if (need > cap)
		return -ENOSPC;

	/* No early exit: a bad character is noted and the rest decoded all the same. */
	for (size_t i = 0; i < len; i += 4) {
		/* Only the last quantum may carry padding ('=' is a bad character elsewhere). */
		size_t qpad = i + 4 == len ? pad : 0;
		int s[4] = {0, 0, 0, 0};
		uint32_t v;

		for (size_t k = 0; k < 4 - qpad; k++) {
			s[k] = sextet((unsigned char)in[i + k]);
			bad |= s[k];
		}
		v = (uint32_t)(s[0] & 63) << 18 | (uint32_t)(s[1] & 63) << 12 |
		    (uint32_t)(s[2] & 63) << 6 | (uint32_t)(s[3] & 63);
		/* "xy==" encodes 8 bits in 12, "xyz=" 16 in 18: the rest must be 0 (one encoding). */
		if (qpad == 2)
			bad |= -(int)(v & 0xffff);
		else if (qpad == 1)
			bad |= -(int)(v & 0xff);
		out[o++] = (uint8_t)(v >> 16);
		if (qpad < 2)
			out[o++] = (uint8_t)(v >> 8);
		if (qpad < 1)
			out[o++] = (uint8_t)v;
	}
	if (bad < 0)
		return -EINVAL;
	*out_len = o;
	return 0;
}

int base64_encode(char *out, size_t cap, const void *in, size_t len, size_t *out_len)
{
	return base64_encode_ct(out, cap, in, len, out_len);
}

int base64_decode(uint8_t *out, size_t cap, const char *in, size_t len, size_t *out_len)
{
	return base64_decode_ct(out, cap, in, len, out_len);
}
