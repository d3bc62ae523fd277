/* SPDX-License-Identifier: MIT */
/* Per-source token buckets limiting handshake work while under load (kernel ratelimiter.c idea). */
#ifndef SPLICED_WG_RATELIMITER_H
#define SPLICED_WG_RATELIMITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum wg_ratelimiter_limits {
	WG_RATELIMIT_PACKETS_PER_SEC = 20, /* handshakes per source address, as the kernel */
	WG_RATELIMIT_BURST = 5,
	WG_RATELIMIT_SLOTS = 1u << 12,
};

/*
 * A fixed table of buckets indexed by a keyed hash of the source address
 * (without the port: one host cannot multiply its budget with ports; IPv6
 * sources are taken by their /64 for the same reason). Sources that collide
 * share a bucket, which only ever limits more, never less; no allocation,
 * no garbage collection. Tokens are kept in nanoseconds of budget.
 */
struct wg_ratelimiter {
	uint64_t tokens[WG_RATELIMIT_SLOTS];
	uint64_t last[WG_RATELIMIT_SLOTS];
	uint8_t key[16];
};

int wg_ratelimiter_init(struct wg_ratelimiter *rl);
/* addr: 4 (IPv4) or 16 (IPv6) bytes in network order. True if this packet may be processed. */
bool wg_ratelimiter_allow(struct wg_ratelimiter *rl, const uint8_t *addr, size_t len, uint64_t now);

#endif
