/* SPDX-License-Identifier: MIT */
/* The ChaCha20 permutation and HChaCha20 (portable; the vector code lives with its users). */
#include <string.h>

#include "chacha_core.h"

const uint32_t chacha_sigma[4] = {0x61707865, 0x3320646e, 0x79622d32, 0x6b206574};

static uint32_t rotl32(uint32_t v, int n)
{
	return v << n | v >> (32 - n);
}

static uint32_t get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void put_le32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

#define QR(a, b, c, d)                 \
	do {                           \
		a += b;                \
		d = rotl32(d ^ a, 16); \
		c += d;                \
		b = rotl32(b ^ c, 12); \
		a += b;                \
		d = rotl32(d ^ a, 8);  \
		c += d;                \
		b = rotl32(b ^ c, 7);  \
	} while (0)

void chacha20_rounds(uint32_t x[16])
{
	for (int r = 0; r < 10; r++) {
		QR(x[0], x[4], x[8], x[12]);
		QR(x[1], x[5], x[9], x[13]);
		QR(x[2], x[6], x[10], x[14]);
		QR(x[3], x[7], x[11], x[15]);
		QR(x[0], x[5], x[10], x[15]);
		QR(x[1], x[6], x[11], x[12]);
		QR(x[2], x[7], x[8], x[13]);
		QR(x[3], x[4], x[9], x[14]);
	}
}

#undef QR

/*
 * The ChaCha20 state with a 128-bit nonce in words 12..15, 20 rounds, no
 * final addition; the subkey is words 0..3 and 12..15, little endian.
 */
void hchacha20(uint8_t out[32], const uint8_t key[32], const uint8_t nonce[16])
{
	uint32_t x[16];

	memcpy(x, chacha_sigma, sizeof(chacha_sigma));
	for (int i = 0; i < 8; i++)
		x[4 + i] = get_le32(key + 4 * i);
	for (int i = 0; i < 4; i++)
		x[12 + i] = get_le32(nonce + 4 * i);
	chacha20_rounds(x);
	for (int i = 0; i < 4; i++) {
		put_le32(out + 4 * i, x[i]);
		put_le32(out + 16 + 4 * i, x[12 + i]);
	}
	explicit_bzero(x, sizeof(x));
}
