/* SPDX-License-Identifier: MIT */
/* RFC 6479 anti-replay window over 8192 bits (whitepaper 5.4.6). */
#include <string.h>

#include "counter.h"

enum {
	WORDS = WG_COUNTER_BITS_TOTAL / WG_COUNTER_WORD_BITS,
	WORD_SHIFT = 6, /* log2(WG_COUNTER_WORD_BITS) */
	WORD_MASK = WORDS - 1,
	BIT_MASK = WG_COUNTER_WORD_BITS - 1,
};

_Static_assert((WORDS & (WORDS - 1)) == 0, "ring of words must be a power of two");

void wg_counter_init(struct wg_counter *c)
{
	memset(c, 0, sizeof(*c));
}

bool wg_counter_validate(struct wg_counter *c, uint64_t n)
{
	uint64_t index, current, top, i;

	if (c->counter >= WG_REJECT_AFTER_MESSAGES || n >= WG_REJECT_AFTER_MESSAGES)
		return false;
	/* Work in n + 1 so that a zeroed window has seen nothing, not nonce 0. */
	n++;
	if (n + WG_COUNTER_WINDOW_SIZE < c->counter)
		return false; /* older than the window */
	index = n >> WORD_SHIFT;
	if (n > c->counter) {
		/*
		 * The window moves forward: clear the words between the old top
		 * and the new one (at most all of them), as RFC 6479 does, so the
		 * cost is bounded by the ring size whatever the jump.
		 */
		current = c->counter >> WORD_SHIFT;
		top = index - current;
		if (top > WORDS)
			top = WORDS;
		for (i = 1; i <= top; i++)
			c->bitmap[(current + i) & WORD_MASK] = 0;
		c->counter = n;
	}
	index &= WORD_MASK;
	if (c->bitmap[index] & (1ULL << (n & BIT_MASK)))
		return false; /* duplicate */
	c->bitmap[index] |= 1ULL << (n & BIT_MASK);
	return true;
}
