/* SPDX-License-Identifier: MIT */
/* The monotonic clock every layer reads: milliseconds for deadlines, nanoseconds for protocol timers. */
#ifndef SPLICED_CLOCK_H
#define SPLICED_CLOCK_H

#include <stdint.h>
#include <time.h>

/* CLOCK_MONOTONIC in nanoseconds (WireGuard's timers, rate limits). */
static inline uint64_t clock_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * CLOCK_MONOTONIC_COARSE in milliseconds: the relay's deadlines are kept to
 * the millisecond at best, and the coarse clock is read from the vDSO without
 * touching the clock source (a few ns, once per loop turn).
 */
static inline uint64_t clock_coarse_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

#endif
