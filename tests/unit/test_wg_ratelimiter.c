/* SPDX-License-Identifier: MIT */
/* Handshake rate limiting per source (ratelimiter.c): burst, refill, independence, IPv6 /64. */
#include <arpa/inet.h>
#include <stdint.h>
#include <stdlib.h>

#include "ratelimiter.h"
#include "t.h"

T_SUITE("wg_ratelimiter");

#define MS 1000000ULL

static struct wg_ratelimiter *rl;

static int burst(const uint8_t *a, size_t len, uint64_t now)
{
	int n = 0;

	while (n < 100 && wg_ratelimiter_allow(rl, a, len, now))
		n++;
	return n;
}

static void test_burst_and_refill(void)
{
	uint8_t a[4] = {192, 0, 2, 1};
	uint64_t now = 1000 * MS;

	T_EQ_INT(burst(a, 4, now), WG_RATELIMIT_BURST);
	/* 50 ms buys one more (20 per second), 49 ms does not. */
	T_ASSERT(!wg_ratelimiter_allow(rl, a, 4, now + 49 * MS));
	T_ASSERT(wg_ratelimiter_allow(rl, a, 4, now + 50 * MS));
	T_ASSERT(!wg_ratelimiter_allow(rl, a, 4, now + 60 * MS));
	T_ASSERT(wg_ratelimiter_allow(rl, a, 4, now + 100 * MS));
	T_ASSERT(!wg_ratelimiter_allow(rl, a, 4, now + 100 * MS));
	/* A long pause refills to the burst, never beyond it. */
	T_EQ_INT(burst(a, 4, now + 100000 * MS), WG_RATELIMIT_BURST);
	/* Sustained: one per 50 ms forever. */
	now += 200000 * MS;
	burst(a, 4, now);
	for (int i = 1; i <= 40; i++)
		T_ASSERT(wg_ratelimiter_allow(rl, a, 4, now + (uint64_t)i * 50 * MS));
}

static void test_sources_independent(void)
{
	uint8_t a[4] = {198, 51, 100, 7}, b[4] = {198, 51, 100, 8};
	uint64_t now = 5000000 * MS;

	T_EQ_INT(burst(a, 4, now), WG_RATELIMIT_BURST);
	/* Another address has its own budget (unless the keyed hash collides: 1/4096). */
	T_EQ_INT(burst(b, 4, now), WG_RATELIMIT_BURST);
}

static void test_ipv6_by_prefix(void)
{
	uint8_t a[16], b[16], c[16];
	uint64_t now = 9000000 * MS;

	inet_pton(AF_INET6, "2001:db8:1:2::1", a);
	inet_pton(AF_INET6, "2001:db8:1:2::ffff", b); /* same /64: same host budget */
	inet_pton(AF_INET6, "2001:db8:1:3::1", c);
	T_EQ_INT(burst(a, 16, now), WG_RATELIMIT_BURST);
	T_EQ_INT(burst(b, 16, now), 0);
	T_EQ_INT(burst(c, 16, now), WG_RATELIMIT_BURST);
}

int main(void)
{
	rl = malloc(sizeof(*rl));
	if (!rl || wg_ratelimiter_init(rl) != 0)
		return 1;
	T_RUN(test_burst_and_refill);
	T_RUN(test_sources_independent);
	T_RUN(test_ipv6_by_prefix);
	free(rl);
	return t_finish();
}
