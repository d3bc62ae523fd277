/* SPDX-License-Identifier: MIT */
/* Poly1305 (RFC 8439 section 2.5) in radix 2^44: a scalar loop and sixteen blocks at a time with AVX-512 IFMA. */
#include "poly1305.h"

#include <string.h>

/* POLY1305_IFMA comes from meson: x86-64 and a compiler that takes -mavx512ifma. */
#if POLY1305_IFMA
#include <immintrin.h>

#define T_VEC __attribute__((target("avx2,avx512f,avx512bw,avx512vl,avx512ifma")))

/*
 * A number mod p = 2^130 - 5 is h0 + h1 2^44 + h2 2^88, limbs of 44, 44
 * and 42 bits (kept a little above between steps). In a product h * r
 * the terms of weight 2^132 and 2^176 fold back times 4 * 5 = 20 (2^130 =
 * 5 mod p), so with s1 = 20 r1, s2 = 20 r2:
 *   d0 = h0 r0 + h1 s2 + h2 s1
 *   d1 = h0 r1 + h1 r0 + h2 s2
 *   d2 = h0 r2 + h1 r1 + h2 r0
 * Bounds, kept by every step below: h0, h1 < 2^45 and h2 < 2^43 after a
 * message block is added; r0, r1 < 2^44 + 2^15, r2 < 2^42 + 2^11 (powers
 * of r are only partly reduced). Every product is then below 2^95, which
 * IFMA's 52-bit operands and 104-bit products cover.
 */
enum {
	BLOCK = 16,
	LANES = 16, /* blocks per vector step: two sets of eight lanes */
	VEC_MIN = 8 *
	          BLOCK, /* shorter inputs run the scalar loop (one vector step costs 8-9 blocks) */
};
static const uint64_t M44 = (1ull << 44) - 1, M42 = (1ull << 42) - 1;
static const uint64_t HIBIT = 1ull << 40; /* 2^128 in the top limb */

typedef unsigned __int128 u128;

static uint64_t get_le64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8); /* x86-64 is little endian */
	return v;
}

static void split(uint64_t l[3], uint64_t lo, uint64_t hi)
{
	l[0] = lo & M44;
	l[1] = (lo >> 44 | hi << 20) & M44;
	l[2] = hi >> 24;
}

/* h = h * r, limbs carried once (h0 < 2^44, h1 < 2^44 + 2^13, h2 < 2^42). */
static inline void mul_scalar(uint64_t h[3], const uint64_t r[3])
{
	uint64_t s1 = 20 * r[1], s2 = 20 * r[2], c;
	u128 d0 = (u128)h[0] * r[0] + (u128)h[1] * s2 + (u128)h[2] * s1;
	u128 d1 = (u128)h[0] * r[1] + (u128)h[1] * r[0] + (u128)h[2] * s2;
	u128 d2 = (u128)h[0] * r[2] + (u128)h[1] * r[1] + (u128)h[2] * r[0];

	d1 += (uint64_t)(d0 >> 44);
	d2 += (uint64_t)(d1 >> 44);
	c = (uint64_t)(d2 >> 42);
	h[0] = ((uint64_t)d0 & M44) + 5 * c;
	h[1] = ((uint64_t)d1 & M44) + (h[0] >> 44);
	h[0] &= M44;
	h[2] = (uint64_t)d2 & M42;
}

/* One block, the 128-bit little-endian number hi:lo (plus 2^128 when hibit), into h. */
static inline void block_scalar(uint64_t h[3], const uint64_t r[3], uint64_t lo, uint64_t hi,
                                uint64_t hibit)
{
	uint64_t m[3];

	split(m, lo, hi);
	h[0] += m[0];
	h[1] += m[1];
	h[2] += m[2] | hibit;
	mul_scalar(h, r);
}

/* One carry through the limbs, the top one folded back times 5 (2^130 = 5 mod p). */
static inline void carry(uint64_t h[3])
{
	h[1] += h[0] >> 44;
	h[0] &= M44;
	h[2] += h[1] >> 44;
	h[1] &= M44;
	h[0] += 5 * (h[2] >> 42);
	h[2] &= M42;
}

/* The first len < 16 bytes of p, zero-extended, without reading past them (masked load). */
T_VEC static void load_short(const uint8_t *p, size_t len, uint64_t *lo, uint64_t *hi)
{
	__m128i x = _mm_maskz_loadu_epi8((__mmask16)((1u << len) - 1), p);

	*lo = (uint64_t)_mm_cvtsi128_si64(x);
	*hi = (uint64_t)_mm_extract_epi64(x, 1);
}

/* The five multiplier vectors of one r (or of one r per lane). */
struct vr {
	__m512i r0, r1, r2, s1, s2;
};

/* 20 x = 16 x + 4 x (no 64-bit multiply without AVX-512DQ) */
T_VEC static inline __m512i times20(__m512i x)
{
	return _mm512_add_epi64(_mm512_slli_epi64(x, 4), _mm512_slli_epi64(x, 2));
}

T_VEC static struct vr vr_of(__m512i r0, __m512i r1, __m512i r2)
{
	return (struct vr){r0, r1, r2, times20(r1), times20(r2)};
}

#define LO(acc, a, b) _mm512_madd52lo_epu64((acc), (a), (b))
#define HI(acc, a, b) _mm512_madd52hi_epu64((acc), (a), (b))

/*
 * h = h * r in each lane. The low halves of d0..d2 land on limbs 0..2;
 * the high halves weigh 2^52 more, i.e. limb i + 1 times 2^8, and d2's
 * high half (2^140 = 2^10 * 2^130) folds into limb 0 times 5 * 2^10 =
 * 5120 (below 2^38 * 5120 < 2^52, so one IFMA multiply takes it). Then
 * one carry per limb, all three in parallel.
 */
T_VEC static inline void vmul(__m512i h[3], const struct vr *r)
{
	const __m512i z = _mm512_setzero_si512(), m44 = _mm512_set1_epi64((long long)M44);
	__m512i l0 = LO(LO(LO(z, h[0], r->r0), h[1], r->s2), h[2], r->s1);
	__m512i l1 = LO(LO(LO(z, h[0], r->r1), h[1], r->r0), h[2], r->s2);
	__m512i l2 = LO(LO(LO(z, h[0], r->r2), h[1], r->r1), h[2], r->r0);
	__m512i u0 = HI(HI(HI(z, h[0], r->r0), h[1], r->s2), h[2], r->s1);
	__m512i u1 = HI(HI(HI(z, h[0], r->r1), h[1], r->r0), h[2], r->s2);
	__m512i u2 = HI(HI(HI(z, h[0], r->r2), h[1], r->r1), h[2], r->r0);
	__m512i c0 = LO(l0, u2, _mm512_set1_epi64(5120));
	__m512i c1 = _mm512_add_epi64(l1, _mm512_slli_epi64(u0, 8));
	__m512i c2 = _mm512_add_epi64(l2, _mm512_slli_epi64(u1, 8));
	__m512i t0 = _mm512_srli_epi64(c0, 44), t1 = _mm512_srli_epi64(c1, 44);
	__m512i t2 = _mm512_srli_epi64(c2, 42);

	h[0] = _mm512_add_epi64(_mm512_and_si512(c0, m44),
	                        _mm512_add_epi64(t2, _mm512_slli_epi64(t2, 2)));
	h[1] = _mm512_add_epi64(_mm512_and_si512(c1, m44), t0);
	h[2] = _mm512_add_epi64(_mm512_and_si512(c2, _mm512_set1_epi64((long long)M42)), t1);
}

/* Eight blocks (a: blocks 0-3, b: 4-7, 128 bytes) into limbs, lane j = block j; 2^128 where hib. */
T_VEC static inline void vsplit(__m512i m[3], __m512i a, __m512i b, __mmask8 hib)
{
	const __m512i even = _mm512_setr_epi64(0, 2, 4, 6, 8, 10, 12, 14);
	const __m512i odd = _mm512_setr_epi64(1, 3, 5, 7, 9, 11, 13, 15);
	const __m512i m44 = _mm512_set1_epi64((long long)M44);
	__m512i lo = _mm512_permutex2var_epi64(a, even, b);
	__m512i hi = _mm512_permutex2var_epi64(a, odd, b);

	m[0] = _mm512_and_si512(lo, m44);
	m[1] = _mm512_and_si512(
	        _mm512_or_si512(_mm512_srli_epi64(lo, 44), _mm512_slli_epi64(hi, 20)), m44);
	m[2] = _mm512_mask_or_epi64(_mm512_srli_epi64(hi, 24), hib, _mm512_srli_epi64(hi, 24),
	                            _mm512_set1_epi64((long long)HIBIT));
}

/* Bytes i of a 64-byte load at offset off (from the message start) with 0 <= off + i < len. */
static inline __mmask64 byte_mask(ptrdiff_t off, size_t len)
{
	ptrdiff_t lo = off < 0 ? -off : 0, hi = (ptrdiff_t)len - off;
	uint64_t below_hi = hi >= 64 ? ~0ull : hi <= 0 ? 0 : (1ull << hi) - 1;
	uint64_t below_lo = lo >= 64 ? ~0ull : (1ull << lo) - 1;

	return below_hi & ~below_lo;
}

/*
 * The powers r^1..r^16 as the per-lane multipliers of the last step (set
 * a: lane j = r^(16-j), set b: r^(8-j)) and r^16 in every lane: r^2..r^4
 * scalar, then [r..r^4, r..r^4] times [1, 1, 1, 1, r^4 x 4] = r^1..r^8,
 * and that times r^8 = r^9..r^16.
 */
T_VEC static void powers(const uint64_t r[3], struct vr *last_a, struct vr *last_b, struct vr *step)
{
	uint64_t p[4][3];
	__m512i v[3], w[3], one = _mm512_set1_epi64(1);
	const __m512i rev = _mm512_setr_epi64(7, 6, 5, 4, 3, 2, 1, 0);

	memcpy(p[0], r, sizeof(p[0]));
	memcpy(p[1], r, sizeof(p[1]));
	mul_scalar(p[1], r);
	memcpy(p[2], p[1], sizeof(p[2]));
	mul_scalar(p[2], r);
	memcpy(p[3], p[1], sizeof(p[3]));
	mul_scalar(p[3], p[1]);
	for (int i = 0; i < 3; i++) {
		v[i] = _mm512_setr_epi64((long long)p[0][i], (long long)p[1][i], (long long)p[2][i],
		                         (long long)p[3][i], (long long)p[0][i], (long long)p[1][i],
		                         (long long)p[2][i], (long long)p[3][i]);
		w[i] = _mm512_mask_set1_epi64(i ? _mm512_setzero_si512() : one, 0xf0,
		                              (long long)p[3][i]);
	}
	struct vr by = vr_of(w[0], w[1], w[2]);
	vmul(v, &by); /* lane j: r^(j+1) */
	for (int i = 0; i < 3; i++)
		w[i] = _mm512_permutexvar_epi64(_mm512_set1_epi64(7), v[i]);
	by = vr_of(w[0], w[1], w[2]);
	for (int i = 0; i < 3; i++)
		w[i] = v[i];
	vmul(w, &by); /* lane j: r^(j+9) */
	*last_b = vr_of(_mm512_permutexvar_epi64(rev, v[0]), _mm512_permutexvar_epi64(rev, v[1]),
	                _mm512_permutexvar_epi64(rev, v[2]));
	*last_a = vr_of(_mm512_permutexvar_epi64(rev, w[0]), _mm512_permutexvar_epi64(rev, w[1]),
	                _mm512_permutexvar_epi64(rev, w[2]));
	for (int i = 0; i < 3; i++)
		w[i] = _mm512_permutexvar_epi64(_mm512_set1_epi64(7), w[i]);
	*step = vr_of(w[0], w[1], w[2]);
	explicit_bzero(p, sizeof(p));
}

/*
 * h = Horner's rule over the ceil(len / 16) blocks of p, the last one
 * zero-padded, each with 2^128 (the AEAD's padded input). Lane j of a
 * step holds block j of sixteen; z zero blocks are put in front so the
 * count is a multiple of 16 (they change nothing: h starts in lane z).
 * The first and last steps load with byte masks (masked-off bytes are
 * neither read nor faulted); the last step multiplies lane j by r^(16-j)
 * and the lanes are summed.
 */
T_VEC static void blocks_vec(uint64_t h[3], const uint64_t r[3], const uint8_t *p, size_t len)
{
	size_t n = (len + BLOCK - 1) / BLOCK, z = (LANES - n % LANES) % LANES;
	size_t steps = (n + z) / LANES;
	struct vr last_a, last_b, step;
	__m512i ha[3], hb[3], ma[3], mb[3], x[4];

	powers(r, &last_a, &last_b, &step);
	for (int i = 0; i < 3; i++) {
		__m512i hv = _mm512_set1_epi64((long long)h[i]), zero = _mm512_setzero_si512();

		ha[i] = z < 8 ? _mm512_mask_mov_epi64(zero, (__mmask8)(1u << z), hv) : zero;
		hb[i] = z < 8 ? zero : _mm512_mask_mov_epi64(zero, (__mmask8)(1u << (z - 8)), hv);
	}
	for (size_t s = 0; s < steps; s++) {
		ptrdiff_t off = (ptrdiff_t)(s * LANES * BLOCK) - (ptrdiff_t)(z * BLOCK);
		const uint8_t *q = (const uint8_t *)((uintptr_t)p + (uintptr_t)off);
		__mmask16 hib = 0xffff;

		if (s == 0 || s == steps - 1) {
			for (int k = 0; k < 4; k++)
				x[k] = _mm512_maskz_loadu_epi8(byte_mask(off + 64 * k, len),
				                               q + 64 * k);
			if (s == 0)
				hib = (__mmask16)(0xffffu << z);
		} else {
			for (int k = 0; k < 4; k++)
				x[k] = _mm512_loadu_si512(q + 64 * k);
		}
		vsplit(ma, x[0], x[1], (__mmask8)hib);
		vsplit(mb, x[2], x[3], (__mmask8)(hib >> 8));
		for (int i = 0; i < 3; i++) {
			ha[i] = _mm512_add_epi64(ha[i], ma[i]);
			hb[i] = _mm512_add_epi64(hb[i], mb[i]);
		}
		vmul(ha, s == steps - 1 ? &last_a : &step);
		vmul(hb, s == steps - 1 ? &last_b : &step);
	}
	/* 16 lanes of < 2^45: the sums stay below 2^49; one scalar carry brings them back in bounds */
	for (int i = 0; i < 3; i++)
		h[i] = (uint64_t)_mm512_reduce_add_epi64(_mm512_add_epi64(ha[i], hb[i]));
	carry(h);
}

/* The AEAD's padded input: whole blocks, the last one zero-padded. */
static void absorb_padded(uint64_t h[3], const uint64_t r[3], const uint8_t *p, size_t len)
{
	uint64_t lo, hi;

	if (len >= VEC_MIN) {
		blocks_vec(h, r, p, len);
		return;
	}
	for (; len >= BLOCK; p += BLOCK, len -= BLOCK)
		block_scalar(h, r, get_le64(p), get_le64(p + 8), HIBIT);
	if (len) {
		load_short(p, len, &lo, &hi);
		block_scalar(h, r, lo, hi, HIBIT);
	}
}

static void key_r(uint64_t r[3], const uint8_t key[POLY1305_KEY_LEN])
{
	/* RFC 8439 2.5: clamp r */
	split(r, get_le64(key) & 0x0ffffffc0fffffffull, get_le64(key + 8) & 0x0ffffffc0ffffffcull);
}

/* tag = (h mod p) + s mod 2^128 (RFC 8439 2.5.1). */
static void finish(uint8_t tag[POLY1305_TAG_LEN], uint64_t h[3], const uint8_t *s)
{
	uint64_t g[3], c, keep, lo, hi;
	u128 t;

	/*
	 * Carry fully. h comes from mul_scalar or blocks_vec: h0 < 2^45, h1 <
	 * 2^44 + 2^13, h2 < 2^42; after this h0 < 2^44, h1 <= 2^44, h2 < 2^42,
	 * so h < 2^130 + 2^44.
	 */
	carry(h);
	h[1] += h[0] >> 44;
	h[0] &= M44;
	/* g = h - p = h + 5 - 2^130; take it when it is not negative (one subtraction suffices) */
	g[0] = h[0] + 5;
	c = g[0] >> 44;
	g[0] &= M44;
	g[1] = h[1] + c;
	c = g[1] >> 44;
	g[1] &= M44;
	g[2] = h[2] + c - (1ull << 42);
	keep = (g[2] >> 63) - 1; /* all ones: g >= 0 */
	for (int i = 0; i < 3; i++)
		h[i] = (h[i] & ~keep) | (g[i] & keep);
	t = (u128)h[0] + ((u128)h[1] << 44) + ((u128)h[2] << 88);
	t += (u128)get_le64(s) | (u128)get_le64(s + 8) << 64;
	lo = (uint64_t)t;
	hi = (uint64_t)(t >> 64);
	memcpy(tag, &lo, 8);
	memcpy(tag + 8, &hi, 8);
}

static void aead_mac_x86(uint8_t tag[POLY1305_TAG_LEN], const uint8_t key[POLY1305_KEY_LEN],
                         const void *ad, size_t adlen, const uint8_t *ct, size_t len)
{
	uint64_t r[3], h[3] = {0, 0, 0};

	key_r(r, key);
	if (adlen)
		absorb_padded(h, r, ad, adlen);
	if (len)
		absorb_padded(h, r, ct, len);
	block_scalar(h, r, (uint64_t)adlen, (uint64_t)len, HIBIT);
	finish(tag, h, key + 16);
	explicit_bzero(r, sizeof(r));
	explicit_bzero(h, sizeof(h));
}

static void mac_x86(uint8_t tag[POLY1305_TAG_LEN], const uint8_t key[POLY1305_KEY_LEN],
                    const uint8_t *msg, size_t len)
{
	uint64_t r[3], h[3] = {0, 0, 0};
	size_t whole = len & ~(size_t)(BLOCK - 1);
	uint8_t last[BLOCK] = {0};

	key_r(r, key);
	if (whole)
		absorb_padded(h, r, msg, whole);
	if (len > whole) {
		/* RFC 8439 2.5.1: a short last block gets a 1 byte after it, and no 2^128 */
		memcpy(last, msg + whole, len - whole);
		last[len - whole] = 1;
		block_scalar(h, r, get_le64(last), get_le64(last + 8), 0);
	}
	finish(tag, h, key + 16);
	explicit_bzero(r, sizeof(r));
	explicit_bzero(h, sizeof(h));
}

#include "x86_cpu.h"

/* AVX-512F/BW/VL (x86_cpu_avx512) and leaf 7's IFMA (ebx 21). */
static bool cpu_has_ifma(void)
{
	unsigned c1, b7, c7;

	return x86_cpu_avx512(&c1, &b7, &c7) && (b7 & (1u << 21));
}
#endif /* POLY1305_IFMA */

static int level_in_use;

bool poly1305_select(int level)
{
	if (level == 0) {
		level_in_use = 0;
		return true;
	}
#if POLY1305_IFMA
	if (level == 1 && cpu_has_ifma()) {
		level_in_use = 1;
		return true;
	}
#endif
	return false;
}

__attribute__((constructor)) static void pick(void)
{
	poly1305_select(1);
}

bool poly1305_fast(void)
{
	return level_in_use > 0;
}

const char *poly1305_impl(void)
{
	return level_in_use ? "AVX-512 IFMA" : "none";
}

void poly1305_aead_mac(uint8_t tag[POLY1305_TAG_LEN], const uint8_t key[POLY1305_KEY_LEN],
                       const void *ad, size_t adlen, const uint8_t *ct, size_t len)
{
#if POLY1305_IFMA
	aead_mac_x86(tag, key, ad, adlen, ct, len);
#else
	(void)key, (void)ad, (void)adlen, (void)ct, (void)len;
	memset(tag, 0, POLY1305_TAG_LEN);
#endif
}

void poly1305_mac(uint8_t tag[POLY1305_TAG_LEN], const uint8_t key[POLY1305_KEY_LEN],
                  const uint8_t *msg, size_t len)
{
#if POLY1305_IFMA
	mac_x86(tag, key, msg, len);
#else
	(void)key, (void)msg, (void)len;
	memset(tag, 0, POLY1305_TAG_LEN);
#endif
}
