/* SPDX-License-Identifier: MIT */
/* Replay window (counter.c): order, duplicates, window edges, jumps, limits, and a model check. */
#include <stdint.h>
#include <string.h>

#include "counter.h"
#include "t.h"

T_SUITE("wg_counter");

static struct wg_counter c;

static void test_in_order(void)
{
	uint64_t i;

	wg_counter_init(&c);
	for (i = 0; i < 20000; i++)
		if (!wg_counter_validate(&c, i))
			T_FAILF("nonce %llu refused", (unsigned long long)i);
	T_ASSERT(!wg_counter_validate(&c, 19999));
	T_ASSERT(!wg_counter_validate(&c, 0));
}

static void test_zero_once(void)
{
	wg_counter_init(&c);
	T_ASSERT(wg_counter_validate(&c, 0));
	T_ASSERT(!wg_counter_validate(&c, 0));
}

static void test_out_of_order(void)
{
	wg_counter_init(&c);
	T_ASSERT(wg_counter_validate(&c, 5));
	T_ASSERT(wg_counter_validate(&c, 3));
	T_ASSERT(wg_counter_validate(&c, 4));
	T_ASSERT(!wg_counter_validate(&c, 3));
	T_ASSERT(wg_counter_validate(&c, 0));
	T_ASSERT(wg_counter_validate(&c, 100));
	T_ASSERT(wg_counter_validate(&c, 50));
	T_ASSERT(!wg_counter_validate(&c, 50));
	T_ASSERT(!wg_counter_validate(&c, 100));
	T_ASSERT(!wg_counter_validate(&c, 5));
}

static void test_window_edges(void)
{
	const uint64_t top = 20000, w = WG_COUNTER_WINDOW_SIZE;

	wg_counter_init(&c);
	T_ASSERT(wg_counter_validate(&c, top));
	/* Exactly WINDOW_SIZE behind the highest is the oldest still tracked. */
	T_ASSERT(!wg_counter_validate(&c, top - w - 1));
	T_ASSERT(wg_counter_validate(&c, top - w));
	T_ASSERT(!wg_counter_validate(&c, top - w));
	T_ASSERT(wg_counter_validate(&c, top - 1));
	/* Moving up by one moves the edge by one. */
	T_ASSERT(wg_counter_validate(&c, top + 1));
	T_ASSERT(!wg_counter_validate(&c, top - w));
	T_ASSERT(wg_counter_validate(&c, top + 1 - w));
	/* Word boundaries of the ring: 63/64/65 around a word start. */
	wg_counter_init(&c);
	T_ASSERT(wg_counter_validate(&c, 63));
	T_ASSERT(wg_counter_validate(&c, 64));
	T_ASSERT(wg_counter_validate(&c, 62));
	T_ASSERT(wg_counter_validate(&c, 65));
	T_ASSERT(!wg_counter_validate(&c, 64));
}

static void test_jump(void)
{
	uint64_t i;

	wg_counter_init(&c);
	for (i = 0; i < 64; i++)
		T_ASSERT(wg_counter_validate(&c, i));
	/* A jump past the whole ring must forget everything old, and not alias. */
	T_ASSERT(wg_counter_validate(&c, 8192 * 3 + 5));
	for (i = 0; i < 64; i++)
		T_ASSERT(!wg_counter_validate(&c, i)); /* too old now */
	/* Nonces that share ring slots with the old ones are new. */
	T_ASSERT(wg_counter_validate(&c, 8192 * 3 + 1));
	T_ASSERT(wg_counter_validate(&c, 8192 * 3 - 100));
	/* A jump of exactly one ring. */
	wg_counter_init(&c);
	T_ASSERT(wg_counter_validate(&c, 10));
	T_ASSERT(wg_counter_validate(&c, 10 + 8192));
	T_ASSERT(!wg_counter_validate(&c, 10));
	T_ASSERT(wg_counter_validate(&c, 10 + 8192 - 1));
}

static void test_limits(void)
{
	wg_counter_init(&c);
	T_ASSERT(!wg_counter_validate(&c, WG_REJECT_AFTER_MESSAGES));
	T_ASSERT(!wg_counter_validate(&c, UINT64_MAX));
	T_ASSERT(wg_counter_validate(&c, WG_REJECT_AFTER_MESSAGES - 1));
	/* Once the last usable nonce is seen, the session takes nothing more. */
	T_ASSERT(!wg_counter_validate(&c, WG_REJECT_AFTER_MESSAGES - 2));
	T_ASSERT(!wg_counter_validate(&c, 1));
	wg_counter_init(&c);
	T_ASSERT(wg_counter_validate(&c, WG_REJECT_AFTER_MESSAGES - 2));
	T_ASSERT(wg_counter_validate(&c, WG_REJECT_AFTER_MESSAGES - 3));
}

/* Differential test against an obviously correct model on random traffic. */
static void test_model(void)
{
	enum { N = 60000 };
	static uint8_t seen[N];
	uint64_t x = 88172645463325252ULL, n, max = 0;
	int i, have = 0, want, got, mismatches = 0;

	wg_counter_init(&c);
	memset(seen, 0, sizeof(seen));
	for (i = 0; i < 400000; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		/* Mostly near the top, sometimes far behind, rarely jumps ahead. */
		if (x % 100 < 90)
			n = max + 64 >= (x >> 8) % 200 ? max + 64 - (x >> 8) % 200 : 0;
		else if (x % 100 < 99)
			n = max > (x >> 8) % 9000 ? max - (x >> 8) % 9000 : 0;
		else
			n = max + (x >> 8) % 3000;
		if (n >= N)
			break;
		want = !seen[n] && (!have || n + WG_COUNTER_WINDOW_SIZE >= max);
		got = wg_counter_validate(&c, n);
		if (want != got && mismatches++ < 5)
			T_FAILF("nonce %llu (max %llu): got %d want %d", (unsigned long long)n,
			        (unsigned long long)max, got, want);
		if (want) {
			seen[n] = 1;
			if (!have || n > max)
				max = n;
			have = 1;
		}
	}
	T_EQ_INT(mismatches, 0);
	T_ASSERT(max > 20000); /* the walk went through several ring turns */
}

int main(void)
{
	T_RUN(test_in_order);
	T_RUN(test_zero_once);
	T_RUN(test_out_of_order);
	T_RUN(test_window_edges);
	T_RUN(test_jump);
	T_RUN(test_limits);
	T_RUN(test_model);
	return t_finish();
}
