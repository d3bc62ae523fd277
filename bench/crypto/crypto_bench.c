/* SPDX-License-Identifier: MIT */
/* One-core throughput of the wolfSSL primitives spliced uses, for the wolfSSL this binary links. */
/*
 * Built twice (bench/crypto/meson.build): bench_crypto links the wolfSSL
 * spliced uses (the bundled assembly build by default), bench_crypto_system
 * the distribution's. bench/crypto/run.sh runs both and prints the ratios.
 *
 * Usage: bench_crypto [-t SECONDS] [-c CPU]
 * Each figure is the best of REPEATS runs of SECONDS (default 0.3) on one
 * pinned core; AEAD figures count plaintext bytes sealed (tag included in the
 * work, not in the count), as a relay leg would.
 */
#include <wolfssl/options.h>
#include <wolfssl/wolfcrypt/aes.h>
#include <wolfssl/wolfcrypt/blake2.h>
#include <wolfssl/wolfcrypt/chacha20_poly1305.h>
#include <wolfssl/wolfcrypt/curve25519.h>

#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "crypto_info.h"

enum {
	REPEATS = 3,
	MAX_MSG = 16384, /* 16 KiB: a full TLS record */
	MTU_MSG = 1400,  /* a packet-sized message (WireGuard, QUIC-like framing) */
	TAG_LEN = 16,
	CHECK_EVERY = 8, /* iterations between clock reads */
};

enum alg { AES128_GCM, AES256_GCM, CHACHA_POLY, XCHACHA_POLY, BLAKE2S, ALG_N };

static const char *const alg_names[ALG_N] = {"AES-128-GCM", "AES-256-GCM", "ChaCha20-Poly1305",
                                             "XChaCha20-Poly1305", "BLAKE2s"};

static uint8_t msg[MAX_MSG], out[MAX_MSG + TAG_LEN];
static const uint8_t key[32] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
static const uint8_t nonce[24] = {0xa0, 0xa1, 0xa2};
static const uint8_t aad[13] = {0xc0};
static Aes aes128, aes256;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* One operation of alg over len bytes; 0 or a wolfSSL error. */
static int one(enum alg a, size_t len)
{
	Blake2s b;
	int ret;

	switch (a) {
	case AES128_GCM:
		return wc_AesGcmEncrypt(&aes128, out, msg, (word32)len, nonce, 12, out + len,
		                        TAG_LEN, aad, sizeof(aad));
	case AES256_GCM:
		return wc_AesGcmEncrypt(&aes256, out, msg, (word32)len, nonce, 12, out + len,
		                        TAG_LEN, aad, sizeof(aad));
	case CHACHA_POLY:
		return wc_ChaCha20Poly1305_Encrypt(key, nonce, aad, sizeof(aad), msg, (word32)len,
		                                   out, out + len);
	case XCHACHA_POLY:
#ifdef HAVE_XCHACHA
		return wc_XChaCha20Poly1305_Encrypt(out, len + TAG_LEN, msg, len, aad, sizeof(aad),
		                                    nonce, 24, key, 32);
#else
		return -ENOTSUP; /* wolfSSL 5.5.4 with WOLFSSL_ARMASM has no XChaCha */
#endif
	case BLAKE2S:
		ret = wc_InitBlake2s(&b, 32);
		if (ret == 0)
			ret = wc_Blake2sUpdate(&b, msg, (word32)len);
		if (ret == 0)
			ret = wc_Blake2sFinal(&b, out, 32);
		return ret;
	default:
		return -EINVAL;
	}
}

/* Operations per second of fn over `secs`, best of REPEATS; negative on error. */
static double rate(int (*fn)(void *), void *arg, double secs)
{
	double best = 0;

	for (int r = 0; r < REPEATS; r++) {
		double t0 = now(), t;
		long n = 0;

		do {
			for (int i = 0; i < CHECK_EVERY; i++)
				if (fn(arg) != 0)
					return -1;
			n += CHECK_EVERY;
			t = now() - t0;
		} while (t < secs);
		if (n / t > best)
			best = n / t;
	}
	return best;
}

struct aead_arg {
	enum alg a;
	size_t len;
};

static int aead_op(void *p)
{
	struct aead_arg *x = p;

	return one(x->a, x->len);
}

static uint8_t x_priv[32], x_pub[32], x_shared[32];

static int x25519_op(void *p)
{
	(void)p;
	return wc_curve25519_generic(32, x_shared, 32, x_priv, 32, x_pub);
}

static int pin(int cpu)
{
	cpu_set_t set;

	if (cpu < 0)
		cpu = sched_getcpu();
	if (cpu < 0)
		return -errno;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set) != 0)
		return -errno;
	return cpu;
}

int main(int argc, char **argv)
{
	double secs = 0.3;
	int cpu = -1, opt;

	while ((opt = getopt(argc, argv, "t:c:")) != -1) {
		switch (opt) {
		case 't':
			secs = atof(optarg);
			break;
		case 'c':
			cpu = atoi(optarg);
			break;
		default:
			fprintf(stderr, "usage: %s [-t SECONDS] [-c CPU]\n", argv[0]);
			return 2;
		}
	}
	cpu = pin(cpu);
	if (cpu < 0) {
		fprintf(stderr, "cannot pin to one CPU: %s\n", strerror(-cpu));
		return 1;
	}
	if (wolfCrypt_Init() != 0 || wc_AesInit(&aes128, NULL, INVALID_DEVID) != 0 ||
	    wc_AesInit(&aes256, NULL, INVALID_DEVID) != 0 ||
	    wc_AesGcmSetKey(&aes128, key, 16) != 0 || wc_AesGcmSetKey(&aes256, key, 32) != 0) {
		fprintf(stderr, "wolfCrypt init failed\n");
		return 1;
	}
	for (size_t i = 0; i < sizeof(msg); i++)
		msg[i] = (uint8_t)(i * 31 + 7);
	for (int i = 0; i < 32; i++)
		x_priv[i] = x_pub[i] = (uint8_t)(i * 7 + 3);
	x_priv[0] &= 248; /* wolfSSL wants a clamped scalar and a u below 2^255 */
	x_priv[31] = (uint8_t)((x_priv[31] & 127) | 64);
	x_pub[31] &= 127;

	{
		struct crypto_info ci;

		crypto_info_get(&ci);
		printf("# wolfSSL %s, %s (%s)\n", ci.version, ci.backend, ci.origin);
		printf("# asm: AES-NI %s, AVX2 %s, ARMv8 %s; one core (cpu %d), best of %d x %.2f s\n",
		       ci.asm_aesni ? "yes" : "no", ci.asm_avx2 ? "yes" : "no",
		       ci.asm_armv8 ? "yes" : "no", cpu, REPEATS, secs);
	}
	printf("%-20s %6s %12s %s\n", "primitive", "bytes", "rate", "unit");
	for (int a = 0; a < ALG_N; a++) {
		static const size_t sizes[] = {MTU_MSG, MAX_MSG};

#ifndef HAVE_XCHACHA
		if (a == XCHACHA_POLY) {
			printf("%-20s %6s %12s (not in this wolfSSL build)\n", alg_names[a], "-",
			       "-");
			continue;
		}
#endif
		for (int s = 0; s < 2; s++) {
			struct aead_arg x = {(enum alg)a, sizes[s]};
			double r = rate(aead_op, &x, secs);

			if (r < 0) {
				fprintf(stderr, "%s failed\n", alg_names[a]);
				return 1;
			}
			printf("%-20s %6zu %12.2f Gbit/s\n", alg_names[a], sizes[s],
			       r * (double)sizes[s] * 8 / 1e9);
			fflush(stdout);
		}
	}
	{
		double r = rate(x25519_op, NULL, secs);

		if (r < 0) {
			fprintf(stderr, "X25519 failed\n");
			return 1;
		}
		printf("%-20s %6s %12.0f ops/s\n", "X25519", "-", r);
	}
	wc_AesFree(&aes128);
	wc_AesFree(&aes256);
	wolfCrypt_Cleanup();
	return 0;
}
