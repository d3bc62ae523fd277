/* SPDX-License-Identifier: MIT */
/* One-core AES-GCM seal and open rate: wolfSSL's calls against lib/aesgcm's VAES-512 routines. */
/*
 * Usage: bench_aesgcm [-t SECONDS] [-c CPU]
 * For AES-128 and AES-256 and the chunk sizes Shadowsocks seals (a 2-byte
 * length chunk, a 1400-byte packet, 16 KiB and 64 KiB chunks): plaintext
 * GB/s of wc_AesGcmEncrypt / wc_AesGcmDecrypt and of aesgcm_seal /
 * aesgcm_open (best of 3 runs of SECONDS, default 0.3, pinned to one core).
 */
#include <wolfssl/options.h>
#include <wolfssl/wolfcrypt/aes.h>

#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "aesgcm.h"

enum { REPEATS = 3, MAX_MSG = 65536, BATCH = 16 };

static uint8_t buf[MAX_MSG], tag[AESGCM_TAG_LEN];
static const uint8_t key[32] = {1, 2, 3, 4, 5, 6, 7, 8};
static const uint8_t iv[AESGCM_IV_LEN] = {9, 10, 11};
static Aes wolf;
static struct aesgcm_key ours;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* One call: seal (open = false) or open the len bytes in buf with wolfSSL's or our routine. */
static void once(bool ours_, bool open, size_t len)
{
	if (ours_ && !open)
		aesgcm_seal(&ours, iv, NULL, 0, buf, buf, len, tag);
	else if (ours_)
		aesgcm_open(&ours, iv, NULL, 0, buf, buf, len, tag);
	else if (!open)
		wc_AesGcmEncrypt(&wolf, buf, buf, (word32)len, iv, AESGCM_IV_LEN, tag,
		                 AESGCM_TAG_LEN, NULL, 0);
	else
		wc_AesGcmDecrypt(&wolf, buf, buf, (word32)len, iv, AESGCM_IV_LEN, tag,
		                 AESGCM_TAG_LEN, NULL, 0);
}

/* Plaintext GB/s; an open is timed on a sealed message, so its tag checks. */
static double rate(bool ours_, bool open, size_t len, double secs)
{
	double best = 0;

	for (int r = 0; r < REPEATS; r++) {
		double t0 = now(), t;
		long n = 0;

		do {
			for (int i = 0; i < BATCH; i++) {
				if (open)
					once(ours_, false, len); /* not timed apart: see below */
				once(ours_, open, len);
			}
			n += BATCH;
			t = now() - t0;
		} while (t < secs);
		if ((double)n * (double)len / t / 1e9 > best)
			best = (double)n * (double)len / t / 1e9;
	}
	return best;
}

int main(int argc, char **argv)
{
	static const size_t sizes[] = {2, 1400, 16384, 65536};
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
	printf("# AES-GCM, in place, no AAD; one core (cpu %d), best of %d x %.2f s; lib/aesgcm: "
	       "%s\n# 'seal+open' times a seal and an open of the same message (GB/s of the "
	       "message per pair)\n",
	       cpu, REPEATS, secs, aesgcm_impl());
	printf("%-8s %-10s %-10s %6s %10s\n", "key", "impl", "op", "bytes", "GB/s");
	for (size_t kn = 16; kn <= 32; kn += 16) {
		if (wc_AesInit(&wolf, NULL, INVALID_DEVID) != 0 ||
		    wc_AesGcmSetKey(&wolf, key, (word32)kn) != 0)
			return 1;
		bool have = aesgcm_init(&ours, key, kn) == 0;

		for (int impl = 0; impl < 2; impl++) {
			if (impl == 1 && !have)
				continue;
			for (int op = 0; op < 2; op++)
				for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
					printf("AES-%-4zu %-10s %-10s %6zu %10.2f\n", kn * 8,
					       impl ? "lib/aesgcm" : "wolfSSL",
					       op ? "seal+open" : "seal", sizes[s],
					       rate(impl == 1, op == 1, sizes[s], secs));
		}
		wc_AesFree(&wolf);
	}
	return 0;
}
