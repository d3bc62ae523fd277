/* SPDX-License-Identifier: MIT */
/* AES-GCM (NIST SP 800-38D) sixteen blocks at a time with VAES-512 and VPCLMULQDQ-512. */
#include "aesgcm.h"

#include <string.h>

#include "ct.h"

/* AESGCM_VAES comes from meson: x86-64 and a compiler that takes -mvaes -mvpclmulqdq. */
#if AESGCM_VAES
#include <immintrin.h>

#define T_KEY __attribute__((target("sse4.1,aes,pclmul")))
#define T_VEC                                                                          \
	__attribute__((target("sse4.1,aes,pclmul,avx2,avx512f,avx512bw,avx512vl,vaes," \
	                      "vpclmulqdq")))

/* Key expansion (FIPS-197 5.2) with AESKEYGENASSIST. */

T_KEY static __m128i prefix_xor(__m128i k)
{
	k = _mm_xor_si128(k, _mm_slli_si128(k, 4));
	k = _mm_xor_si128(k, _mm_slli_si128(k, 4));
	return _mm_xor_si128(k, _mm_slli_si128(k, 4));
}

/* w = prefix_xor(prev) ^ the chosen word of AESKEYGENASSIST(src) in every lane */
#define EXPAND(prev, src, rcon, sel)    \
	_mm_xor_si128(prefix_xor(prev), \
	              _mm_shuffle_epi32(_mm_aeskeygenassist_si128((src), (rcon)), (sel)))

T_KEY static void expand128(__m128i rk[11], const uint8_t *key)
{
	rk[0] = _mm_loadu_si128((const __m128i *)key);
	rk[1] = EXPAND(rk[0], rk[0], 0x01, 0xff);
	rk[2] = EXPAND(rk[1], rk[1], 0x02, 0xff);
	rk[3] = EXPAND(rk[2], rk[2], 0x04, 0xff);
	rk[4] = EXPAND(rk[3], rk[3], 0x08, 0xff);
	rk[5] = EXPAND(rk[4], rk[4], 0x10, 0xff);
	rk[6] = EXPAND(rk[5], rk[5], 0x20, 0xff);
	rk[7] = EXPAND(rk[6], rk[6], 0x40, 0xff);
	rk[8] = EXPAND(rk[7], rk[7], 0x80, 0xff);
	rk[9] = EXPAND(rk[8], rk[8], 0x1b, 0xff);
	rk[10] = EXPAND(rk[9], rk[9], 0x36, 0xff);
}

/* AES-256: even keys take RotWord+SubWord+Rcon of the last word, odd ones SubWord only. */
T_KEY static void expand256(__m128i rk[15], const uint8_t *key)
{
	rk[0] = _mm_loadu_si128((const __m128i *)key);
	rk[1] = _mm_loadu_si128((const __m128i *)(key + 16));
#define PAIR(i, rcon)                                       \
	rk[i] = EXPAND(rk[(i)-2], rk[(i)-1], (rcon), 0xff); \
	if ((i) + 1 < 15)                                   \
	rk[(i) + 1] = EXPAND(rk[(i)-1], rk[i], 0, 0xaa)
	PAIR(2, 0x01);
	PAIR(4, 0x02);
	PAIR(6, 0x04);
	PAIR(8, 0x08);
	PAIR(10, 0x10);
	PAIR(12, 0x20);
	rk[14] = EXPAND(rk[12], rk[13], 0x40, 0xff);
#undef PAIR
}

T_KEY static __m128i encrypt1(const struct aesgcm_key *k, __m128i x)
{
	x = _mm_xor_si128(x, _mm_loadu_si128((const __m128i *)k->rk[0]));
	for (int r = 1; r < k->rounds; r++)
		x = _mm_aesenc_si128(x, _mm_loadu_si128((const __m128i *)k->rk[r]));
	return _mm_aesenclast_si128(x, _mm_loadu_si128((const __m128i *)k->rk[k->rounds]));
}

/*
 * GHASH arithmetic. A block is byte-reversed on load, so the 128-bit
 * integer's bit j is the coefficient of x^(127-j) (GCM numbers bits from the
 * first byte's most significant one). The carry-less product of two such
 * integers has bit k for x^(254-k); shifted left by one, bit k is x^(255-k):
 * the high 128 bits are then the degrees 127..0 and the low 128 bits the
 * degrees 255..128, which fold back with x^128 = x^7 + x^2 + x + 1.
 */

/* 128-bit shifts of the whole register. */
#define SHR128(v, s) \
	_mm_or_si128(_mm_srli_epi64((v), (s)), _mm_srli_si128(_mm_slli_epi64((v), 64 - (s)), 8))

T_KEY static __m128i reduce(__m128i lo, __m128i mid, __m128i hi)
{
	__m128i l = _mm_xor_si128(lo, _mm_slli_si128(mid, 8));
	__m128i h = _mm_xor_si128(hi, _mm_srli_si128(mid, 8));

	/* shift the 256-bit [h:l] left by one */
	h = _mm_or_si128(
	        _mm_or_si128(_mm_slli_epi64(h, 1), _mm_slli_si128(_mm_srli_epi64(h, 63), 8)),
	        _mm_srli_si128(_mm_srli_epi64(l, 63), 8));
	l = _mm_or_si128(_mm_slli_epi64(l, 1), _mm_slli_si128(_mm_srli_epi64(l, 63), 8));
	/*
	 * Bit k of l (x^(255-k)) lands on bits 128+k, 127+k, 126+k, 121+k; the
	 * ones below 128 (from l's bits 0..6) are folded once more first.
	 */
	__m128i t = _mm_xor_si128(_mm_xor_si128(_mm_slli_epi64(l, 63), _mm_slli_epi64(l, 62)),
	                          _mm_slli_epi64(l, 57));
	l = _mm_xor_si128(l, _mm_slli_si128(t, 8));
	return _mm_xor_si128(
	        _mm_xor_si128(h, l),
	        _mm_xor_si128(_mm_xor_si128(SHR128(l, 1), SHR128(l, 2)), SHR128(l, 7)));
}

T_KEY static __m128i gmul(__m128i a, __m128i b)
{
	__m128i mid =
	        _mm_xor_si128(_mm_clmulepi64_si128(a, b, 0x01), _mm_clmulepi64_si128(a, b, 0x10));

	return reduce(_mm_clmulepi64_si128(a, b, 0x00), mid, _mm_clmulepi64_si128(a, b, 0x11));
}

T_KEY static __m128i bswap128(__m128i x)
{
	return _mm_shuffle_epi8(x,
	                        _mm_set_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
}

T_KEY static int init_x86(struct aesgcm_key *k, const uint8_t *key, size_t key_len)
{
	__m128i rk[15], h, p;

	if (key_len == 16) {
		expand128(rk, key);
		k->rounds = 10;
	} else {
		expand256(rk, key);
		k->rounds = 14;
	}
	for (int r = 0; r <= k->rounds; r++)
		_mm_storeu_si128((__m128i *)k->rk[r], rk[r]);
	h = bswap128(encrypt1(k, _mm_setzero_si128()));
	p = h;
	for (int i = 1; i <= AESGCM_POWERS; i++) {
		_mm_storeu_si128((__m128i *)k->h[AESGCM_POWERS - i], p);
		p = gmul(p, h);
	}
	memset(k->h[AESGCM_POWERS], 0, sizeof(k->h) - AESGCM_POWERS * sizeof(k->h[0]));
	explicit_bzero(rk, sizeof(rk));
	return 0;
}

/* The bulk routines. */

static inline __mmask64 bytes_mask(size_t n)
{
	return n >= 64 ? ~(__mmask64)0 : ((__mmask64)1 << n) - 1;
}

T_VEC static inline __m512i bswap512(__m512i x)
{
	const __m512i m = _mm512_broadcast_i32x4(
	        _mm_set_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));

	return _mm512_shuffle_epi8(x, m);
}

/*
 * Y = GHASH state after len more bytes of p (the last block zero-padded):
 * 16 blocks (or the m < 16 left) per step, block i times H^(m-i), lanes
 * summed, one reduction.
 */
T_VEC static __m128i ghash(const struct aesgcm_key *k, __m128i y, const uint8_t *p, size_t len)
{
	while (len) {
		size_t n = len < 256 ? len : 256, m = (n + 15) / 16;
		__m512i lo = _mm512_setzero_si512(), mid = lo, hi = lo;

		for (size_t g = 0; 16 * 4 * g < n; g++) {
			__m512i d = bswap512(
			        _mm512_maskz_loadu_epi8(bytes_mask(n - 64 * g), p + 64 * g));
			__m512i hp =
			        _mm512_loadu_si512((const void *)k->h[AESGCM_POWERS - m + 4 * g]);

			if (g == 0)
				d = _mm512_xor_si512(
				        d, _mm512_inserti32x4(_mm512_setzero_si512(), y, 0));
			lo = _mm512_xor_si512(lo, _mm512_clmulepi64_epi128(d, hp, 0x00));
			hi = _mm512_xor_si512(hi, _mm512_clmulepi64_epi128(d, hp, 0x11));
			mid = _mm512_xor_si512(mid, _mm512_clmulepi64_epi128(d, hp, 0x01));
			mid = _mm512_xor_si512(mid, _mm512_clmulepi64_epi128(d, hp, 0x10));
		}
#define FOLD4(z)                                                        \
	_mm_xor_si128(_mm_xor_si128(_mm512_extracti32x4_epi32((z), 0),  \
	                            _mm512_extracti32x4_epi32((z), 1)), \
	              _mm_xor_si128(_mm512_extracti32x4_epi32((z), 2),  \
	                            _mm512_extracti32x4_epi32((z), 3)))
		y = reduce(FOLD4(lo), FOLD4(mid), FOLD4(hi));
#undef FOLD4
		p += n;
		len -= n;
	}
	return y;
}

/* One AES of four registers (16 blocks) under the round keys in kr[0..rounds]. */
#define AES4(x, kr, rounds)                                                        \
	do {                                                                       \
		for (int i_ = 0; i_ < 4; i_++)                                     \
			(x)[i_] = _mm512_xor_si512((x)[i_], (kr)[0]);              \
		for (int r_ = 1; r_ < (rounds); r_++)                              \
			for (int i_ = 0; i_ < 4; i_++)                             \
				(x)[i_] = _mm512_aesenc_epi128((x)[i_], (kr)[r_]); \
		for (int i_ = 0; i_ < 4; i_++)                                     \
			(x)[i_] = _mm512_aesenclast_epi128((x)[i_], (kr)[rounds]); \
	} while (0)

/*
 * dst = src XOR AES(IV || ctr) from ctr = 2 on (SP 800-38D 7.1: inc32 of
 * J0 = IV || 1), 16 blocks per step; the counter word is kept native and
 * byte-swapped into place per block.
 */
T_VEC static inline __attribute__((always_inline)) void ctr_rounds(const struct aesgcm_key *k,
                                                                   const uint8_t *iv, uint8_t *dst,
                                                                   const uint8_t *src, size_t len,
                                                                   const int rounds)
{
	const __m512i to_be = _mm512_broadcast_i32x4(
	        _mm_set_epi8(12, 13, 14, 15, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0));
	const __m512i four = _mm512_set_epi32(4, 0, 0, 0, 4, 0, 0, 0, 4, 0, 0, 0, 4, 0, 0, 0);
	uint32_t w[3];
	__m512i kr[15], ctr, x[4];

	for (int r = 0; r <= rounds; r++)
		kr[r] = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)k->rk[r]));
	memcpy(w, iv, 12);
	ctr = _mm512_set_epi32(5, (int)w[2], (int)w[1], (int)w[0], 4, (int)w[2], (int)w[1],
	                       (int)w[0], 3, (int)w[2], (int)w[1], (int)w[0], 2, (int)w[2],
	                       (int)w[1], (int)w[0]);
	while (len) {
		size_t n = len < 256 ? len : 256;

		for (int i = 0; i < 4; i++) {
			x[i] = _mm512_shuffle_epi8(ctr, to_be);
			ctr = _mm512_add_epi32(ctr, four);
		}
		AES4(x, kr, rounds);
		if (n == 256) {
			for (int i = 0; i < 4; i++)
				_mm512_storeu_si512(
				        dst + 64 * i,
				        _mm512_xor_si512(x[i], _mm512_loadu_si512(src + 64 * i)));
		} else {
			for (size_t i = 0; 64 * i < n; i++) {
				__mmask64 mk = bytes_mask(n - 64 * i);

				_mm512_mask_storeu_epi8(
				        dst + 64 * i, mk,
				        _mm512_xor_si512(
				                x[i], _mm512_maskz_loadu_epi8(mk, src + 64 * i)));
			}
		}
		src += n;
		dst += n;
		len -= n;
	}
}

T_VEC static void ctr(const struct aesgcm_key *k, const uint8_t *iv, uint8_t *dst,
                      const uint8_t *src, size_t len)
{
	if (k->rounds == 10)
		ctr_rounds(k, iv, dst, src, len, 10);
	else
		ctr_rounds(k, iv, dst, src, len, 14);
}

/* GHASH(A, C) with the length block, XOR E(J0): the tag. */
T_VEC static void tag_of(const struct aesgcm_key *k, const uint8_t *iv, const void *ad,
                         size_t adlen, const uint8_t *c, size_t len, uint8_t tag[AESGCM_TAG_LEN])
{
	uint8_t j0[16];
	__m128i y = _mm_setzero_si128(),
	        h1 = _mm_loadu_si128((const __m128i *)k->h[AESGCM_POWERS - 1]);

	if (adlen)
		y = ghash(k, y, ad, adlen);
	if (len)
		y = ghash(k, y, c, len);
	y = gmul(_mm_xor_si128(y, _mm_set_epi64x((long long)(adlen * 8), (long long)(len * 8))),
	         h1);
	memcpy(j0, iv, 12);
	j0[12] = j0[13] = j0[14] = 0;
	j0[15] = 1;
	y = _mm_xor_si128(bswap128(y), encrypt1(k, _mm_loadu_si128((const __m128i *)j0)));
	_mm_storeu_si128((__m128i *)tag, y);
}

T_VEC static void seal_x86(const struct aesgcm_key *k, const uint8_t *iv, const void *ad,
                           size_t adlen, uint8_t *dst, const uint8_t *src, size_t len, uint8_t *tag)
{
	if (len)
		ctr(k, iv, dst, src, len);
	tag_of(k, iv, ad, adlen, dst, len, tag);
}

T_VEC static bool open_x86(const struct aesgcm_key *k, const uint8_t *iv, const void *ad,
                           size_t adlen, uint8_t *dst, const uint8_t *src, size_t len,
                           const uint8_t *tag)
{
	uint8_t want[AESGCM_TAG_LEN];
	bool ok;

	tag_of(k, iv, ad, adlen, src, len, want);
	ok = ct_equal(want, sizeof(want), tag, AESGCM_TAG_LEN);
	if (ok && len)
		ctr(k, iv, dst, src, len);
	explicit_bzero(want, sizeof(want));
	return ok;
}
#endif /* AESGCM_VAES */

static int level_in_use;

#if AESGCM_VAES
#include "x86_cpu.h"

/* AVX-512F/BW/VL (x86_cpu_avx512), leaf 1: AES-NI, PCLMULQDQ; leaf 7: VAES (ecx 9), VPCLMULQDQ (10). */
static bool cpu_has_vaes512(void)
{
	unsigned c1, b7, c7;

	return x86_cpu_avx512(&c1, &b7, &c7) && (c1 & bit_AES) && (c1 & bit_PCLMUL) &&
	       (c7 & (1u << 9)) && (c7 & (1u << 10));
}
#endif

bool aesgcm_select(int level)
{
	if (level == 0) {
		level_in_use = 0;
		return true;
	}
#if AESGCM_VAES
	if (level == 1 && cpu_has_vaes512()) {
		level_in_use = 1;
		return true;
	}
#endif
	return false;
}

__attribute__((constructor)) static void pick(void)
{
	aesgcm_select(1);
}

bool aesgcm_fast(void)
{
	return level_in_use > 0;
}

const char *aesgcm_impl(void)
{
	return level_in_use ? "VAES-512" : "none";
}

int aesgcm_init(struct aesgcm_key *k, const uint8_t *key, size_t key_len)
{
	memset(k, 0, sizeof(*k));
	if ((key_len != 16 && key_len != 32) || !aesgcm_fast())
		return -1;
#if AESGCM_VAES
	return init_x86(k, key, key_len);
#else
	(void)key;
	return -1;
#endif
}

void aesgcm_wipe(struct aesgcm_key *k)
{
	explicit_bzero(k, sizeof(*k));
}

void aesgcm_seal(const struct aesgcm_key *k, const uint8_t iv[AESGCM_IV_LEN], const void *ad,
                 size_t adlen, uint8_t *dst, const uint8_t *src, size_t len,
                 uint8_t tag[AESGCM_TAG_LEN])
{
#if AESGCM_VAES
	seal_x86(k, iv, ad, adlen, dst, src, len, tag);
#else
	(void)k, (void)iv, (void)ad, (void)adlen, (void)dst, (void)src, (void)len;
	memset(tag, 0, AESGCM_TAG_LEN);
#endif
}

bool aesgcm_open(const struct aesgcm_key *k, const uint8_t iv[AESGCM_IV_LEN], const void *ad,
                 size_t adlen, uint8_t *dst, const uint8_t *src, size_t len,
                 const uint8_t tag[AESGCM_TAG_LEN])
{
#if AESGCM_VAES
	return open_x86(k, iv, ad, adlen, dst, src, len, tag);
#else
	(void)k, (void)iv, (void)ad, (void)adlen, (void)dst, (void)src, (void)len, (void)tag;
	return false;
#endif
}
