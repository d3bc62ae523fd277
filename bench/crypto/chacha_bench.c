/* SPDX-License-Identifier: MIT */
/* One-core ChaCha20-Poly1305 seal rate: wolfSSL's one-shot call against lib/chacha's routines. */
/*
 * Usage: bench_chacha [-t SECONDS] [-c CPU]
 * For the message sizes Shadowsocks and WireGuard seal (a 2-byte length
 * chunk, a 1400-byte packet, SIP004's 16383-byte and SIP022's 65535-byte
 * chunks): plaintext Gbit/s of wc_ChaCha20Poly1305_Encrypt and of
 * chacha_aead_seal at every routine level this CPU runs (best of 3 runs of
 * SECONDS, default 0.3, pinned to one core).
 */
#include <wolfssl/options.h>
#include <wolfssl/wolfcrypt/chacha20_poly1305.h>

#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "chacha.h"

enum { REPEATS = 3, MAX_MSG = 65535, BATCH = 16 };

static uint8_t buf[MAX_MSG], tag[CHACHA_TAG_LEN];
static const uint8_t key[CHACHA_KEY_LEN] = {1, 2, 3, 4, 5, 6, 7, 8};
static const uint8_t nonce[CHACHA_NONCE_LEN] = {9, 10, 11};
static const char *const level_name[] = {"reference", "AVX2", "AVX-512VL", "AVX-512F"};

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Plaintext Gbit/s sealing len bytes in place; level < 0: wolfSSL's one-shot call. */
static double rate(int level, size_t len, double secs)
{
	double best = 0;

	for (int r = 0; r < REPEATS; r++) {
		double t0 = now(), t;
		long n = 0;

		do {
			for (int i = 0; i < BATCH; i++) {
				if (level < 0)
					wc_ChaCha20Poly1305_Encrypt(key, nonce, NULL, 0, buf,
					                            (word32)len, buf, tag);
				else
					chacha_aead_seal(buf, buf, len, NULL, 0, nonce, key, tag);
			}
			n += BATCH;
			t = now() - t0;
		} while (t < secs);
		if ((double)n * (double)len * 8 / t / 1e9 > best)
			best = (double)n * (double)len * 8 / t / 1e9;
	}
	return best;
}

int main(int argc, char **argv)
{
	static const size_t sizes[] = {2, 1400, 16383, 65535};
	double secs = 0.3;
	int cpu = -1, opt;
	cpu_set_t set;

	while ((opt = getopt(argc, argv, "t:c:")) != -1) {
		if (opt == 't')
			secs = atof(optarg);
		else if (opt == 'c')
			cpu = atoi(optarg);
		else {
			fprintf(stderr, "usage: %s [-t SECONDS] [-c CPU]\n", argv[0]);
			return 2;
		}
	}
	if (cpu < 0)
		cpu = sched_getcpu();
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (cpu < 0 || sched_setaffinity(0, sizeof(set), &set) != 0) {
		fprintf(stderr, "cannot pin to one CPU: %s\n", strerror(errno));
		return 1;
	}
	printf("# ChaCha20-Poly1305 seal, in place, no AD; one core (cpu %d), best of %d x %.2f s; "
	       "lib/chacha picks %s\n",
	       cpu, REPEATS, secs, chacha_impl());
	printf("%-22s %6s %12s %10s\n", "implementation", "bytes", "Gbit/s", "ns/seal");
	for (int level = -1; level < 4; level++) {
		if (level >= 0 && !chacha_select(level))
			continue;
		for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
			double g = rate(level, sizes[s], secs);

			printf("%-22s %6zu %12.2f %10.0f\n",
			       level < 0 ? "wolfSSL one-shot" : level_name[level], sizes[s], g,
			       (double)sizes[s] * 8 / g);
		}
	}
	return 0;
}
