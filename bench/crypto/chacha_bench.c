/* SPDX-License-Identifier: MIT */
/* One-core ChaCha20-Poly1305 seal rate: wolfSSL's one-shot call against lib/chacha's routines. */
/*
 * Usage: bench_chacha [-t SECONDS] [-c CPU]
 * For the message sizes Shadowsocks and WireGuard seal (a 2-byte length
 * chunk, a 1400-byte packet, SIP004's 16383-byte and SIP022's 65535-byte
 * chunks): plaintext Gbit/s of wc_ChaCha20Poly1305_Encrypt and of
 * chacha_aead_seal at every routine level this CPU runs, with lib/poly1305
 * where the CPU has IFMA, and the fastest level again with wolfSSL's
 * Poly1305 (best of 3 runs of SECONDS, default 0.3, pinned to one core).
 */
#include <wolfssl/options.h>
#include <wolfssl/wolfcrypt/chacha20_poly1305.h>

#include <stdint.h>

#include "bench_harness.h"
#include "chacha.h"
#include "poly1305.h"

enum { MAX_MSG = 65535 };

static uint8_t buf[MAX_MSG], tag[CHACHA_TAG_LEN];
static const uint8_t key[CHACHA_KEY_LEN] = {1, 2, 3, 4, 5, 6, 7, 8};
static const uint8_t nonce[CHACHA_NONCE_LEN] = {9, 10, 11};
static const char *const level_name[] = {"reference", "AVX2", "AVX-512VL", "AVX-512F"};

struct job {
	int level; /* < 0: wolfSSL's one-shot call */
	size_t len;
};

static void seal(void *arg)
{
	const struct job *j = arg;

	if (j->level < 0)
		wc_ChaCha20Poly1305_Encrypt(key, nonce, NULL, 0, buf, (word32)j->len, buf, tag);
	else
		chacha_aead_seal(buf, buf, j->len, NULL, 0, nonce, key, tag);
}

/* Plaintext Gbit/s sealing len bytes in place; level < 0: wolfSSL's one-shot call. */
static double rate(int level, size_t len, double secs)
{
	struct job j = {level, len};

	return bench_rate(secs, seal, &j) * (double)len * 8 / 1e9;
}

/* One row per message size. */
static void rows(const char *name, int level, double secs)
{
	static const size_t sizes[] = {2, 1400, 16383, 65535};

	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		double g = rate(level, sizes[s], secs);

		printf("%-30s %6zu %12.2f %10.0f\n", name, sizes[s], g, (double)sizes[s] * 8 / g);
	}
}

int main(int argc, char **argv)
{
	double secs;
	int cpu, top = 3, rc = bench_args(argc, argv, &secs, &cpu);

	if (rc)
		return rc;
	printf("# ChaCha20-Poly1305 seal, in place, no AD; one core (cpu %d), best of %d x %.2f s; "
	       "lib/chacha picks %s, Poly1305 %s\n",
	       cpu, BENCH_REPEATS, secs, chacha_impl(),
	       poly1305_fast() ? poly1305_impl() : "wolfSSL's");
	printf("%-30s %6s %12s %10s\n", "implementation", "bytes", "Gbit/s", "ns/seal");
	while (top > 0 && !chacha_select(top))
		top--;
	for (int level = -1; level < 4; level++)
		if (level < 0 || chacha_select(level))
			rows(level < 0 ? "wolfSSL one-shot" : level_name[level], level, secs);
	/* the fastest routines again with wolfSSL's Poly1305: what lib/poly1305 buys */
	if (poly1305_fast() && chacha_select(top) && poly1305_select(0)) {
		char name[64];

		snprintf(name, sizeof(name), "%s + wolfSSL Poly1305", level_name[top]);
		rows(name, top, secs);
	}
	return 0;
}
