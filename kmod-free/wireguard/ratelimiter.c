/* SPDX-License-Identifier: MIT */
/* Token buckets per source address for handshake messages under load. */
#include <string.h>

#include "crypto.h"
#include "ratelimiter.h"

#define NSEC_PER_SEC 1000000000ULL

enum {
	PACKET_COST = NSEC_PER_SEC / WG_RATELIMIT_PACKETS_PER_SEC,
	IPV6_PREFIX = 8, /* bytes of an IPv6 source that identify a host (/64) */
};

#define TOKEN_MAX ((uint64_t)PACKET_COST * WG_RATELIMIT_BURST)

int wg_ratelimiter_init(struct wg_ratelimiter *rl)
{
	memset(rl, 0, sizeof(*rl));
	return wg_random(rl->key, sizeof(rl->key));
}

bool wg_ratelimiter_allow(struct wg_ratelimiter *rl, const uint8_t *addr, size_t len, uint64_t now)
{
	uint8_t h[4];
	uint64_t elapsed;
	unsigned i;

	if (len == 16)
		len = IPV6_PREFIX;
	/* Keyed so that a sender cannot aim at someone else's bucket. */
	wg_mac(h, sizeof(h), rl->key, sizeof(rl->key), addr, len);
	i = (h[0] | (unsigned)h[1] << 8 | (unsigned)h[2] << 16) & (WG_RATELIMIT_SLOTS - 1);
	if (!rl->last[i]) {
		rl->tokens[i] = TOKEN_MAX; /* a new source starts with a full burst */
	} else {
		elapsed = now - rl->last[i];
		rl->tokens[i] = elapsed >= TOKEN_MAX || rl->tokens[i] + elapsed >= TOKEN_MAX
		                        ? TOKEN_MAX
		                        : rl->tokens[i] + elapsed;
	}
	rl->last[i] = now ? now : 1;
	if (rl->tokens[i] < PACKET_COST)
		return false;
	rl->tokens[i] -= PACKET_COST;
	return true;
}
