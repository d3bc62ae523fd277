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

#include <stdbool.h>
#include <stdint.h>

#include "aesgcm.h"
#include "bench_harness.h"

enum { MAX_MSG = 65536 };

static uint8_t buf[MAX_MSG], tag[AESGCM_TAG_LEN];
static const uint8_t key[32] = {1, 2, 3, 4, 5, 6, 7, 8};
static const uint8_t iv[AESGCM_IV_LEN] = {9, 10, 11};
static Aes wolf;
static struct aesgcm_key ours;

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

struct job {
	bool ours, open;
	size_t len;
};

/* One timed step; an open is timed on a message just sealed, so its tag checks. */
static void step(void *arg)
{
	const struct job *j = arg;

	if (j->open)
		once(j->ours, false, j->len);
	once(j->ours, j->open, j->len);
}

/* Plaintext GB/s (of the message, per seal or per seal+open pair). */
static double rate(bool ours_, bool open, size_t len, double secs)
{
	struct job j = {ours_, open, len};

	return bench_rate(secs, step, &j) * (double)len / 1e9;
}

int main(int argc, char **argv)
{
	static const size_t sizes[] = {2, 1400, 16384, 65536};
	double secs;
	int cpu, rc = bench_args(argc, argv, &secs, &cpu);

	if (rc)
		return rc;
	printf("# AES-GCM, in place, no AAD; one core (cpu %d), best of %d x %.2f s; lib/aesgcm: "
	       "%s\n# 'seal+open' times a seal and an open of the same message (GB/s of the "
	       "message per pair)\n",
	       cpu, BENCH_REPEATS, secs, aesgcm_impl());
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
