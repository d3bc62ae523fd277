/* SPDX-License-Identifier: MIT */
/* lib/aesgcm: the VAES-512 AES-GCM against the GCM spec's test cases and wolfSSL. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <wolfssl/options.h>
#include <wolfssl/wolfcrypt/aes.h>

#include "aesgcm.h"
#include "gcm_vectors.h"
#include "t.h"

T_SUITE("aesgcm");

static uint64_t rng = 0x13198a2e03707344ull;

static void fill(uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		rng = rng * 6364136223846793005ull + 1442695040888963407ull;
		p[i] = (uint8_t)(rng >> 56);
	}
}

static void test_spec_vectors(void)
{
	for (size_t i = 0; i < sizeof(gcm_vecs) / sizeof(gcm_vecs[0]); i++) {
		const struct gcm_vec *v = &gcm_vecs[i];
		uint8_t k[32], iv[12], p[64], a[20], c[64], want_c[64], t[16], want_t[16], back[64];
		size_t kn = t_unhex(k, sizeof(k), v->k), pn = t_unhex(p, sizeof(p), v->p);
		size_t an = t_unhex(a, sizeof(a), v->a);
		struct aesgcm_key key;

		t_unhex(iv, sizeof(iv), v->iv);
		t_unhex(want_c, sizeof(want_c), v->c);
		t_unhex(want_t, sizeof(want_t), v->t);
		T_EQ_INT(aesgcm_init(&key, k, kn), 0);
		aesgcm_seal(&key, iv, an ? a : NULL, an, c, pn ? p : NULL, pn, t);
		if (memcmp(c, want_c, pn) || memcmp(t, want_t, 16))
			T_FAILF("%s: ciphertext or tag differs", v->name);
		memset(back, 0xaa, sizeof(back));
		T_ASSERT(aesgcm_open(&key, iv, an ? a : NULL, an, back, c, pn, t));
		T_EQ_MEM(back, p, pn);
		/* in place */
		memcpy(back, p, pn);
		aesgcm_seal(&key, iv, a, an, back, back, pn, t);
		T_EQ_MEM(back, want_c, pn);
		T_ASSERT(aesgcm_open(&key, iv, a, an, back, back, pn, t));
		T_EQ_MEM(back, p, pn);
		aesgcm_wipe(&key);
	}
}

/* wolfSSL's answer for the same key, IV, AAD and plaintext. */
static void wolf_seal(const uint8_t *k, size_t kn, const uint8_t *iv, const uint8_t *a, size_t an,
                      uint8_t *c, const uint8_t *p, size_t n, uint8_t *t)
{
	static const uint8_t one[1];
	Aes aes;

	T_EQ_INT(wc_AesInit(&aes, NULL, INVALID_DEVID), 0);
	T_EQ_INT(wc_AesGcmSetKey(&aes, k, (word32)kn), 0);
	T_EQ_INT(wc_AesGcmEncrypt(&aes, n ? c : (uint8_t *)one, n ? p : one, (word32)n, iv, 12, t,
	                          16, an ? a : one, (word32)an),
	         0);
	wc_AesFree(&aes);
}

/*
 * One message both ways against wolfSSL, then one flipped bit in the
 * ciphertext, the tag and the AAD must each be refused with dst untouched.
 */
static void cross_one(size_t kn, size_t n, size_t an, uint8_t *buf)
{
	uint8_t k[32], iv[12], a[40], t[16], wt[16];
	uint8_t *p = buf, *c = buf + n + 64, *wc = c + n + 64, *back = wc + n + 64;
	struct aesgcm_key key;

	fill(k, kn);
	fill(iv, 12);
	fill(a, an);
	fill(p, n);
	T_EQ_INT(aesgcm_init(&key, k, kn), 0);
	aesgcm_seal(&key, iv, a, an, c, p, n, t);
	wolf_seal(k, kn, iv, a, an, wc, p, n, wt);
	if (memcmp(c, wc, n) || memcmp(t, wt, 16)) {
		T_FAILF("AES-%zu seal of %zu bytes, %zu AAD differs from wolfSSL", kn * 8, n, an);
		return;
	}
	memset(back, 0x5c, n + 1);
	if (!aesgcm_open(&key, iv, a, an, back, c, n, t) || memcmp(back, p, n) || back[n] != 0x5c) {
		T_FAILF("AES-%zu open of %zu bytes, %zu AAD", kn * 8, n, an);
		return;
	}
	memset(back, 0x5c, n);
	if (n) {
		size_t bit = (size_t)(rng >> 8) % (8 * n);

		c[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		T_ASSERT(!aesgcm_open(&key, iv, a, an, back, c, n, t));
		c[bit / 8] ^= (uint8_t)(1u << (bit % 8));
	}
	t[n % 16] ^= 0x80;
	T_ASSERT(!aesgcm_open(&key, iv, a, an, back, c, n, t));
	t[n % 16] ^= 0x80;
	if (an) {
		a[n % an] ^= 1;
		T_ASSERT(!aesgcm_open(&key, iv, a, an, back, c, n, t));
		a[n % an] ^= 1;
	}
	for (size_t i = 0; i < n; i++)
		if (back[i] != 0x5c) {
			T_FAILF("a refused open of %zu bytes wrote plaintext", n);
			break;
		}
	/* in place */
	memcpy(back, c, n);
	T_ASSERT(aesgcm_open(&key, iv, a, an, back, back, n, t));
	T_EQ_MEM(back, p, n);
	aesgcm_wipe(&key);
}

static void test_vs_wolfssl(void)
{
	static const size_t big[] = {16384, 16383, 65535, 65536, 65537};
	uint8_t *buf = malloc(4 * (65537 + 64));

	T_ASSERT(buf != NULL);
	for (size_t kn = 16; kn <= 32 && buf; kn += 16) {
		for (size_t n = 0; n <= 1100 && !t_failed_case; n++)
			cross_one(kn, n, (size_t)(rng >> 20) % 41, buf);
		for (size_t i = 0; i < sizeof(big) / sizeof(big[0]) && !t_failed_case; i++)
			cross_one(kn, big[i], (size_t)(rng >> 20) % 41, buf);
	}
	free(buf);
}

static void test_bad_key_len(void)
{
	struct aesgcm_key key;
	uint8_t k[32] = {0};

	T_EQ_INT(aesgcm_init(&key, k, 24), -1);
	T_EQ_INT(aesgcm_init(&key, k, 0), -1);
}

/* Without the routines (other CPUs, or turned off) a key is refused, so aead.c takes wolfSSL. */
static void test_refused_when_off(void)
{
	struct aesgcm_key key;
	bool was = aesgcm_fast();

	T_ASSERT(aesgcm_select(0));
	T_ASSERT(!aesgcm_fast());
	T_EQ_INT(aesgcm_init(&key, (const uint8_t[16]){0}, 16), -1);
	if (was)
		T_ASSERT(aesgcm_select(1));
}

int main(void)
{
	printf("# VAES-512 AES-GCM in use: %s\n", aesgcm_impl());
	T_RUN(test_refused_when_off);
	if (!aesgcm_fast()) {
		printf("# this CPU or compiler has no VAES-512 routine: Shadowsocks uses wolfSSL\n");
		return t_finish();
	}
	T_RUN(test_spec_vectors);
	T_RUN(test_vs_wolfssl);
	T_RUN(test_bad_key_len);
	return t_finish();
}
