/* SPDX-License-Identifier: MIT */
/* BLAKE3 for one chunk: the compression function, chunk and root flags, the two KDF phases (BLAKE3 paper, section 2). */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "blake3.h"

enum {
	BLOCK_LEN = 64,
	CHUNK_START = 1 << 0,
	CHUNK_END = 1 << 1,
	ROOT = 1 << 3,
	DERIVE_KEY_CONTEXT = 1 << 5,
	DERIVE_KEY_MATERIAL = 1 << 6,
};

/* SHA-256's initial hash value, BLAKE3's IV. */
static const uint32_t iv[8] = {0x6A09E667, 0xBB67AE85, 0x3C6EF372, 0xA54FF53A,
                               0x510E527F, 0x9B05688C, 0x1F83D9AB, 0x5BE0CD19};
/* The message word permutation applied between rounds. */
static const uint8_t perm[16] = {2, 6, 3, 10, 7, 0, 4, 13, 1, 11, 12, 5, 9, 14, 15, 8};

static uint32_t rotr32(uint32_t v, int n)
{
	return v >> n | v << (32 - n);
}

static uint32_t get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void g(uint32_t s[16], int a, int b, int c, int d, uint32_t mx, uint32_t my)
{
	s[a] = s[a] + s[b] + mx;
	s[d] = rotr32(s[d] ^ s[a], 16);
	s[c] = s[c] + s[d];
	s[b] = rotr32(s[b] ^ s[c], 12);
	s[a] = s[a] + s[b] + my;
	s[d] = rotr32(s[d] ^ s[a], 8);
	s[c] = s[c] + s[d];
	s[b] = rotr32(s[b] ^ s[c], 7);
}

/* The compression function; the chunk counter is always 0 here (one chunk, one output block). */
static void compress(uint32_t out[16], const uint32_t cv[8], const uint8_t block[BLOCK_LEN],
                     uint32_t block_len, uint32_t flags)
{
	uint32_t m[16], t[16], s[16];

	for (int i = 0; i < 16; i++)
		m[i] = get_le32(block + 4 * i);
	memcpy(s, cv, 8 * sizeof(*s));
	memcpy(s + 8, iv, 4 * sizeof(*s));
	s[12] = s[13] = 0;
	s[14] = block_len;
	s[15] = flags;
	for (int r = 0; r < 7; r++) {
		g(s, 0, 4, 8, 12, m[0], m[1]);
		g(s, 1, 5, 9, 13, m[2], m[3]);
		g(s, 2, 6, 10, 14, m[4], m[5]);
		g(s, 3, 7, 11, 15, m[6], m[7]);
		g(s, 0, 5, 10, 15, m[8], m[9]);
		g(s, 1, 6, 11, 12, m[10], m[11]);
		g(s, 2, 7, 8, 13, m[12], m[13]);
		g(s, 3, 4, 9, 14, m[14], m[15]);
		for (int i = 0; i < 16; i++)
			t[i] = m[perm[i]];
		memcpy(m, t, sizeof(m));
	}
	for (int i = 0; i < 8; i++) {
		out[i] = s[i] ^ s[i + 8];
		out[i + 8] = s[i + 8] ^ cv[i];
	}
	explicit_bzero(m, sizeof(m));
	explicit_bzero(t, sizeof(t));
	explicit_bzero(s, sizeof(s));
}

/*
 * One chunk (chunk counter 0) keyed by key, as the root: its blocks chained
 * through the chaining value, CHUNK_START on the first, CHUNK_END and ROOT
 * on the last (an empty input is one empty block). The root compression's
 * 16 words are the first 64 output bytes.
 */
static void chunk_root(uint32_t out[16], const uint32_t key[8], const uint8_t *in, size_t len,
                       uint32_t mode)
{
	uint8_t block[BLOCK_LEN];
	uint32_t cv[8], next[16];
	size_t off = 0;

	memcpy(cv, key, sizeof(cv));
	for (;;) {
		size_t n = len - off > BLOCK_LEN ? BLOCK_LEN : len - off;
		uint32_t flags = mode | (off == 0 ? CHUNK_START : 0);
		bool last = off + n == len;

		memset(block, 0, sizeof(block));
		if (n)
			memcpy(block, in + off, n);
		if (last) {
			compress(out, cv, block, (uint32_t)n, flags | CHUNK_END | ROOT);
			break;
		}
		compress(next, cv, block, (uint32_t)n, flags);
		memcpy(cv, next, sizeof(cv));
		off += n;
	}
	explicit_bzero(block, sizeof(block));
	explicit_bzero(cv, sizeof(cv));
	explicit_bzero(next, sizeof(next));
}

static void put_words(uint8_t *out, size_t len, const uint32_t w[16])
{
	for (size_t i = 0; i < len; i++)
		out[i] = (uint8_t)(w[i / 4] >> (8 * (i % 4)));
}

int blake3_hash(uint8_t *out, size_t out_len, const void *in, size_t in_len)
{
	uint32_t r[16];

	if (in_len > BLAKE3_CHUNK_LEN || out_len > BLAKE3_OUT_MAX)
		return -EINVAL;
	chunk_root(r, iv, in, in_len, 0);
	put_words(out, out_len, r);
	explicit_bzero(r, sizeof(r));
	return 0;
}

int blake3_derive_key(uint8_t *out, size_t out_len, const char *context, const void *material,
                      size_t material_len)
{
	size_t clen = strlen(context);
	uint32_t ckey[16], r[16];

	if (clen > BLAKE3_CHUNK_LEN || material_len > BLAKE3_CHUNK_LEN || out_len > BLAKE3_OUT_MAX)
		return -EINVAL;
	/* The context key is the 32-byte hash of the context string; its words key the material. */
	chunk_root(ckey, iv, (const uint8_t *)context, clen, DERIVE_KEY_CONTEXT);
	chunk_root(r, ckey, material, material_len, DERIVE_KEY_MATERIAL);
	put_words(out, out_len, r);
	explicit_bzero(ckey, sizeof(ckey));
	explicit_bzero(r, sizeof(r));
	return 0;
}
