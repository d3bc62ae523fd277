/* SPDX-License-Identifier: MIT */
/* Constant-time helpers for secrets: comparisons whose time depends on lengths only. */
#ifndef SPLICED_CT_H
#define SPLICED_CT_H

#include <stdbool.h>
#include <stddef.h>

/* Two byte strings equal? The length leaks, the content does not. */
bool ct_equal(const void *a, size_t alen, const void *b, size_t blen);

/*
 * -1 (every bit set) when lo <= c <= hi, else 0, with no branch on c: for
 * mapping the characters of a secret (base64, hex). c, lo and hi in 0..255.
 */
static inline int ct_in_range(int c, int lo, int hi)
{
	return ((lo - 1 - c) & (c - hi - 1)) >> 8;
}

/* A run of characters lo..hi that stands for the values first, first + 1, ... */
struct ct_range {
	int lo, hi, first;
};

/*
 * The value of character c in an alphabet made of n ranges, or -1 when c is
 * in none. Every range is tested whatever c is: no branch or table index
 * depends on it.
 */
static inline int ct_lookup(int c, const struct ct_range *r, size_t n)
{
	int v = 0, ok = 0;

	for (size_t i = 0; i < n; i++) {
		int m = ct_in_range(c, r[i].lo, r[i].hi);

		v |= m & (c - r[i].lo + r[i].first);
		ok |= m;
	}
	return v | ~ok;
}

#endif
