/* SPDX-License-Identifier: MIT */
/* Constant-time comparison of secrets (passwords, keys, MACs). */
#include <stdint.h>

#include "ct.h"

/*
 * Every byte of the shorter-or-equal length is visited whatever the contents;
 * with unequal lengths `a` is compared with itself so the time still depends
 * on alen only. The accumulator is volatile so the compiler cannot turn the
 * loop into an early-exit memcmp.
 */
bool ct_equal(const void *a, size_t alen, const void *b, size_t blen)
{
	const volatile uint8_t *pa = a;
	const volatile uint8_t *pb = alen == blen ? b : a;
	volatile uint8_t acc = alen == blen ? 0 : 1;

	for (size_t i = 0; i < alen; i++)
		acc |= pa[i] ^ pb[i];
	return acc == 0;
}
