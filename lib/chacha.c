/* SPDX-License-Identifier: MIT */
/* ChaCha20 (RFC 8439) eight and sixteen blocks at a time with AVX2 / AVX-512, and ChaCha20-Poly1305. */
#include "chacha.h"

#include <string.h>

/* The vector routines are x86 (AVX2, AVX-512); elsewhere only the reference and wolfSSL. */
#if defined(__x86_64__) || defined(__i386__)
#define CHACHA_X86 1
#include <immintrin.h>
#else
#define CHACHA_X86 0
#endif

#include <wolfssl/options.h>
#include <wolfssl/wolfcrypt/poly1305.h>

#include "chacha_core.h"
#include "ct.h"
#include "poly1305.h"

enum {
	BLOCK = 64,
	BATCH = 8 * BLOCK,    /* one call of the 8-block routine */
	BATCH16 = 16 * BLOCK, /* one call of the 16-block routine */
	POLY_KEY = 32,
};

static const uint8_t zeros[BATCH16];

static uint32_t get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* RFC 8439 2.3: constants, key, block counter, the 96-bit nonce as three little-endian words. */
static void init_state(uint32_t s[16], const uint8_t key[CHACHA_KEY_LEN],
                       const uint8_t nonce[CHACHA_NONCE_LEN], uint32_t counter)
{
	memcpy(s, chacha_sigma, sizeof(chacha_sigma));
	for (int i = 0; i < 8; i++)
		s[4 + i] = get_le32(key + 4 * i);
	s[12] = counter;
	for (int i = 0; i < 3; i++)
		s[13 + i] = get_le32(nonce + 4 * i);
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
		explicit_bzero(x, sizeof(x));
	}
}

/* Sixteen blocks as two runs of eight (the levels without a 16-block routine). */
static void blocks16_ref(const uint32_t s[16], const uint8_t *in, uint8_t *out)
{
	uint32_t t[16];

	memcpy(t, s, sizeof(t));
	blocks8_ref(t, in, out);
	t[12] += 8;
	blocks8_ref(t, in + BATCH, out + BATCH);
	explicit_bzero(t, sizeof(t));
}

#if CHACHA_X86
/* AVX2 and AVX-512VL builds of the 8-block routine, AVX-512F of the 16-block one. */

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

#include "chacha_x16.inc" /* blocks16_avx512 */

/* dst = a XOR b, 64 bytes a step, the last step masked. */
__attribute__((target("avx512f,avx512bw"))) static void xor_avx512(uint8_t *dst, const uint8_t *a,
                                                                   const uint8_t *b, size_t n)
{
	for (; n >= 64; n -= 64, dst += 64, a += 64, b += 64)
		_mm512_storeu_si512(dst,
		                    _mm512_xor_si512(_mm512_loadu_si512(a), _mm512_loadu_si512(b)));
	if (n) {
		__mmask64 m = (1ull << n) - 1;

		_mm512_mask_storeu_epi8(dst, m,
		                        _mm512_xor_si512(_mm512_maskz_loadu_epi8(m, a),
		                                         _mm512_maskz_loadu_epi8(m, b)));
	}
}
#endif /* CHACHA_X86 */

typedef void blocks_fn(const uint32_t s[16], const uint8_t *in, uint8_t *out);
typedef void xor_fn(uint8_t *dst, const uint8_t *a, const uint8_t *b, size_t n);

static void xor_bytes(uint8_t *dst, const uint8_t *a, const uint8_t *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		dst[i] = a[i] ^ b[i];
}

/* Chosen once at load time from the CPU's features; never changes afterwards (but in tests). */
static blocks_fn *blocks8 = blocks8_ref;
static blocks_fn *blocks16 = blocks16_ref;
static xor_fn *xor_ks = xor_bytes; /* keystream from a scratch buffer onto the message */
static int level_in_use;

bool chacha_select(int level)
{
#if CHACHA_X86
	__builtin_cpu_init();
	bool avx512 = __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512f");

	xor_ks = xor_bytes;
	if (level == 3 && avx512) {
		blocks8 = blocks8_avx512;
		blocks16 = blocks16_avx512;
		if (__builtin_cpu_supports("avx512bw"))
			xor_ks = xor_avx512;
	} else if (level == 2 && avx512) {
		blocks8 = blocks8_avx512;
		blocks16 = NULL;
	} else if (level == 1 && __builtin_cpu_supports("avx2")) {
		blocks8 = blocks8_avx2;
		blocks16 = NULL;
	} else if (level == 0) {
		blocks8 = blocks8_ref;
		blocks16 = blocks16_ref;
	} else {
		return false;
	}
#else
	if (level != 0)
		return false;
	blocks8 = blocks8_ref;
	blocks16 = blocks16_ref;
#endif
	level_in_use = level;
	return true;
}

__attribute__((constructor)) static void pick(void)
{
	for (int level = 3; level > 0; level--)
		if (chacha_select(level))
			return;
}

bool chacha_fast(void)
{
	return level_in_use > 0;
}

const char *chacha_impl(void)
{
	static const char *const names[] = {"reference", "AVX2", "AVX-512VL", "AVX-512F"};

	return names[level_in_use];
}

/*
 * dst = src XOR keystream from block s[12] on; s[12] is advanced. ks:
 * BATCH16 bytes of scratch. With the 16-block routine a tail of any length
 * takes one more 16-block call: on the development machine's EPYC one call
 * of either routine takes about 150 ns (the 8-block one is bound by the
 * latency of its rounds, the 16-block one by throughput).
 */
static void stream(uint8_t *dst, const uint8_t *src, size_t len, uint32_t s[16], uint8_t *ks)
{
	if (blocks16) {
		while (len >= BATCH16) {
			blocks16(s, src, dst);
			s[12] += 16;
			src += BATCH16;
			dst += BATCH16;
			len -= BATCH16;
		}
		if (len) {
			blocks16(s, zeros, ks);
			s[12] += 16;
			xor_ks(dst, src, ks, len);
		}
		return;
	}
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
		xor_ks(dst, src, ks, len);
	}
}

/*
 * The first call of a message: block 0 (the Poly1305 key) and the
 * keystream of the first 448 (8-block routine) or 960 bytes (16-block,
 * for longer messages: the 8-block one is some 15 ns faster for a length
 * chunk) into ks; returns how many message bytes that keystream covers.
 */
static size_t first_call(uint32_t s[16], uint8_t *ks, size_t len)
{
	bool wide = blocks16 && len > BATCH - BLOCK;
	size_t n = wide ? BATCH16 : BATCH;

	if (wide)
		blocks16(s, zeros, ks);
	else
		blocks8(s, zeros, ks);
	s[12] += (uint32_t)(n / BLOCK);
	return len < n - BLOCK ? len : n - BLOCK;
}

void chacha_xor(uint8_t *dst, const uint8_t *src, size_t len, const uint8_t key[CHACHA_KEY_LEN],
                const uint8_t nonce[CHACHA_NONCE_LEN], uint32_t counter)
{
	uint32_t s[16];
	uint8_t ks[BATCH16];

	init_state(s, key, nonce, counter);
	stream(dst, src, len, s, ks);
	explicit_bzero(s, sizeof(s));
	explicit_bzero(ks, sizeof(ks));
}

/* RFC 8439 2.8: Poly1305 over AD, pad16, ciphertext, pad16, both lengths (64-bit LE). */
static void mac(uint8_t tag[CHACHA_TAG_LEN], const uint8_t key[POLY_KEY], const void *ad,
                size_t adlen, const uint8_t *ct, size_t len)
{
	Poly1305 p;

	/*
	 * lib/poly1305's AVX-512 IFMA routines; under 128 bytes (a length
	 * chunk) wolfSSL's scalar code is some 8 ns faster (31 ns against 39).
	 */
	if (poly1305_fast() && adlen + len >= 128) {
		poly1305_aead_mac(tag, key, ad, adlen, ct, len);
		return;
	}
	/* wolfSSL wants non-NULL pointers even for zero bytes */
	wc_Poly1305SetKey(&p, key, POLY_KEY);
	wc_Poly1305_MAC(&p, adlen ? ad : zeros, (word32)adlen, len ? ct : zeros, (word32)len, tag,
	                CHACHA_TAG_LEN);
	explicit_bzero(&p, sizeof(p));
}

/*
 * The first call yields the Poly1305 key (block 0) and the keystream of the
 * first 448 or 960 bytes; the rest of the message streams from there on.
 */
void chacha_aead_seal(uint8_t *dst, const uint8_t *src, size_t len, const void *ad, size_t adlen,
                      const uint8_t nonce[CHACHA_NONCE_LEN], const uint8_t key[CHACHA_KEY_LEN],
                      uint8_t tag[CHACHA_TAG_LEN])
{
	uint32_t s[16];
	uint8_t ks[BATCH16], poly_key[POLY_KEY];
	size_t first;

	init_state(s, key, nonce, 0);
	first = first_call(s, ks, len);
	memcpy(poly_key, ks, POLY_KEY);
	xor_ks(dst, src, ks + BLOCK, first);
	/* (nothing is sealed with src == NULL but the empty message: no pointer arithmetic on it) */
	if (len > first)
		stream(dst + first, src + first, len - first, s, ks);
	mac(tag, poly_key, ad, adlen, dst, len);
	explicit_bzero(s, sizeof(s));
	explicit_bzero(ks, sizeof(ks));
	explicit_bzero(poly_key, sizeof(poly_key));
}

bool chacha_aead_open(uint8_t *dst, const uint8_t *src, size_t len, const void *ad, size_t adlen,
                      const uint8_t nonce[CHACHA_NONCE_LEN], const uint8_t key[CHACHA_KEY_LEN],
                      const uint8_t tag[CHACHA_TAG_LEN])
{
	uint32_t s[16];
	uint8_t ks[BATCH16], want[CHACHA_TAG_LEN];
	size_t first;
	bool ok;

	init_state(s, key, nonce, 0);
	first = first_call(s, ks, len);
	/* authenticate before decrypting: a forgery costs one MAC and no plaintext is written */
	mac(want, ks, ad, adlen, src, len);
	ok = ct_equal(want, CHACHA_TAG_LEN, tag, CHACHA_TAG_LEN);
	if (ok) {
		xor_ks(dst, src, ks + BLOCK, first);
		if (len > first) /* dst may be NULL for an empty plaintext */
			stream(dst + first, src + first, len - first, s, ks);
	}
	explicit_bzero(s, sizeof(s));
	explicit_bzero(ks, sizeof(ks));
	explicit_bzero(want, sizeof(want));
	return ok;
}
