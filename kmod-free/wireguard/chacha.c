/* SPDX-License-Identifier: MIT */
/* ChaCha20 (RFC 8439) eight blocks at a time with AVX2 / AVX-512VL, and the AEAD for data messages. */
#include "chacha.h"

#include <string.h>

/* The vector routines are x86 (AVX2, AVX-512VL); elsewhere only the reference and wolfSSL. */
#if defined(__x86_64__) || defined(__i386__)
#define CHACHA_X86 1
#include <immintrin.h>
#else
#define CHACHA_X86 0
#endif

#include <wolfssl/options.h>
#include <wolfssl/wolfcrypt/poly1305.h>

#include "chacha_core.h"
#include "crypto.h"

enum {
	BLOCK = 64,
	BATCH = 8 * BLOCK, /* one call of the vector routine: eight blocks side by side */
	TAG = 16,
	POLY_KEY = 32,
};

static const uint8_t zeros[BATCH];

static uint32_t get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void init_state(uint32_t s[16], const uint8_t key[32], uint64_t nonce, uint32_t counter)
{
	memcpy(s, chacha_sigma, sizeof(chacha_sigma));
	for (int i = 0; i < 8; i++)
		s[4 + i] = get_le32(key + 4 * i);
	s[12] = counter;
	/* the 96-bit nonce as WireGuard lays it out: 32 zero bits, then the counter LE */
	s[13] = 0;
	s[14] = (uint32_t)nonce;
	s[15] = (uint32_t)(nonce >> 32);
}

/* The portable reference, eight blocks in a row (tests and CPUs without AVX2). */

static void blocks8_ref(const uint32_t s[16], const uint8_t *in, uint8_t *out)
{
	for (uint32_t b = 0; b < 8; b++) {
		uint32_t x[16];

		memcpy(x, s, sizeof(x));
		x[12] += b;
		chacha20_rounds(x);
		for (int i = 0; i < 16; i++) {
			uint32_t k = x[i] + s[i] + (i == 12 ? b : 0);

			for (int j = 0; j < 4; j++)
				out[64 * b + 4 * i + j] =
				        in[64 * b + 4 * i + j] ^ (uint8_t)(k >> (8 * j));
		}
		wg_wipe(x, sizeof(x));
	}
}

#if CHACHA_X86
/* AVX2 and AVX-512VL builds of the same routine. */

#define CHACHA_FN     blocks8_avx2
#define CHACHA_TARGET __attribute__((target("avx2")))
#define CHACHA_ROTL(x, n) \
	_mm256_or_si256(_mm256_slli_epi32((x), (n)), _mm256_srli_epi32((x), 32 - (n)))
#define CHACHA_ROT16(x) _mm256_shuffle_epi8((x), r16)
#define CHACHA_ROT8(x)  _mm256_shuffle_epi8((x), r8)
#include "chacha_x8.inc"
#undef CHACHA_FN
#undef CHACHA_TARGET
#undef CHACHA_ROTL
#undef CHACHA_ROT16
#undef CHACHA_ROT8

/* AVX-512VL: 32 vector registers (no spills) and one-instruction rotates. */
#define CHACHA_FN         blocks8_avx512
#define CHACHA_TARGET     __attribute__((target("avx2,avx512f,avx512vl")))
#define CHACHA_ROTL(x, n) _mm256_rol_epi32((x), (n))
#define CHACHA_ROT16(x)   _mm256_rol_epi32((x), 16)
#define CHACHA_ROT8(x)    _mm256_rol_epi32((x), 8)
#include "chacha_x8.inc"
#undef CHACHA_FN
#undef CHACHA_TARGET
#undef CHACHA_ROTL
#undef CHACHA_ROT16
#undef CHACHA_ROT8
#endif /* CHACHA_X86 */

typedef void blocks8_fn(const uint32_t s[16], const uint8_t *in, uint8_t *out);

/* Chosen once at load time from the CPU's features; never changes afterwards. */
static blocks8_fn *blocks8 = blocks8_ref;
static bool fast;

__attribute__((constructor)) static void pick(void)
{
#if CHACHA_X86
	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512f")) {
		blocks8 = blocks8_avx512;
		fast = true;
	} else if (__builtin_cpu_supports("avx2")) {
		blocks8 = blocks8_avx2;
		fast = true;
	}
#endif
}

bool wg_chacha_fast(void)
{
	return fast;
}

const char *wg_chacha_impl(void)
{
	if (!fast)
		return "wolfSSL";
#if CHACHA_X86
	return blocks8 == blocks8_avx512 ? "AVX-512VL" : "AVX2";
#else
	return "reference";
#endif
}

/* Test hook (tests/unit/test_wg_chacha.c): 0 reference, 1 AVX2, 2 AVX-512VL; false if unsupported. */
bool wg_chacha_select(int level);
bool wg_chacha_select(int level)
{
#if CHACHA_X86
	__builtin_cpu_init();
	if (level == 2 && __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512f"))
		blocks8 = blocks8_avx512;
	else if (level == 1 && __builtin_cpu_supports("avx2"))
		blocks8 = blocks8_avx2;
	else if (level == 0)
		blocks8 = blocks8_ref;
	else
		return false;
#else
	if (level != 0)
		return false;
	blocks8 = blocks8_ref;
#endif
	return true;
}

static void xor_bytes(uint8_t *dst, const uint8_t *a, const uint8_t *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		dst[i] = a[i] ^ b[i];
}

/* dst = src XOR keystream from block s[12] on; s[12] is advanced. ks: BATCH bytes of scratch. */
static void stream(uint8_t *dst, const uint8_t *src, size_t len, uint32_t s[16], uint8_t *ks)
{
	while (len >= BATCH) {
		blocks8(s, src, dst);
		s[12] += 8;
		src += BATCH;
		dst += BATCH;
		len -= BATCH;
	}
	if (len) {
		blocks8(s, zeros, ks);
		s[12] += 8;
		xor_bytes(dst, src, ks, len);
	}
}

void wg_chacha20_xor(uint8_t *dst, const uint8_t *src, size_t len, const uint8_t key[32],
                     uint64_t nonce, uint32_t counter)
{
	uint32_t s[16];
	uint8_t ks[BATCH];

	init_state(s, key, nonce, counter);
	stream(dst, src, len, s, ks);
	wg_wipe(s, sizeof(s));
	wg_wipe(ks, sizeof(ks));
}

/* RFC 8439 2.8: Poly1305 over AD, pad16, ciphertext, pad16, both lengths (64-bit LE). */
static void mac(uint8_t tag[TAG], const uint8_t key[POLY_KEY], const void *ad, size_t adlen,
                const uint8_t *ct, size_t len)
{
	Poly1305 p;

	/* wolfSSL wants a non-NULL input pointer even for zero bytes */
	wc_Poly1305SetKey(&p, key, POLY_KEY);
	wc_Poly1305_MAC(&p, ad, (word32)adlen, len ? ct : zeros, (word32)len, tag, TAG);
	wg_wipe(&p, sizeof(p));
}

/*
 * The first call of the vector routine yields the Poly1305 key (block 0)
 * and the keystream for the first 448 bytes (blocks 1-7); the rest of the
 * message streams from block 8 on.
 */
void wg_chacha20poly1305_seal(uint8_t *dst, const uint8_t *src, size_t len, const void *ad,
                              size_t adlen, uint64_t nonce, const uint8_t key[32])
{
	uint32_t s[16];
	uint8_t ks[BATCH], poly_key[POLY_KEY];
	size_t first = len < BATCH - BLOCK ? len : BATCH - BLOCK;

	init_state(s, key, nonce, 0);
	blocks8(s, zeros, ks);
	s[12] += 8;
	memcpy(poly_key, ks, POLY_KEY);
	xor_bytes(dst, src, ks + BLOCK, first);
	/* (the handshake seals nothing with src == NULL: no pointer arithmetic on it) */
	if (len > first)
		stream(dst + first, src + first, len - first, s, ks);
	mac(dst + len, poly_key, ad, adlen, dst, len);
	wg_wipe(s, sizeof(s));
	wg_wipe(ks, sizeof(ks));
	wg_wipe(poly_key, sizeof(poly_key));
}

bool wg_chacha20poly1305_open(uint8_t *dst, const uint8_t *src, size_t len, const void *ad,
                              size_t adlen, uint64_t nonce, const uint8_t key[32])
{
	uint32_t s[16];
	uint8_t ks[BATCH], tag[TAG];
	size_t plen, first;
	bool ok;

	if (len < TAG)
		return false;
	plen = len - TAG;
	first = plen < BATCH - BLOCK ? plen : BATCH - BLOCK;
	init_state(s, key, nonce, 0);
	blocks8(s, zeros, ks);
	s[12] += 8;
	/* authenticate before decrypting: a forgery costs one MAC and no plaintext is written */
	mac(tag, ks, ad, adlen, src, plen);
	ok = wg_ct_eq(tag, src + plen, TAG);
	if (ok) {
		xor_bytes(dst, src, ks + BLOCK, first);
		if (plen > first) /* dst may be NULL for an empty plaintext */
			stream(dst + first, src + first, plen - first, s, ks);
	}
	wg_wipe(s, sizeof(s));
	wg_wipe(ks, sizeof(ks));
	wg_wipe(tag, sizeof(tag));
	return ok;
}
