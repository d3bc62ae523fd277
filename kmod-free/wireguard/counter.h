/* SPDX-License-Identifier: MIT */
/* Receive-side replay protection: an RFC 6479 sliding window of 8192 bits. */
#ifndef SPLICED_WG_COUNTER_H
#define SPLICED_WG_COUNTER_H

#include <stdbool.h>
#include <stdint.h>

#include "messages.h"

/*
 * The window tracks "counter + 1" values so that 0 means "nothing seen yet".
 * The bitmap is a ring of 64-bit words; advancing the window clears only the
 * words it moves over, so validate is O(1) amortised (at most 128 words).
 * Not thread-safe: the owner serialises validate calls for one keypair.
 */
struct wg_counter {
	uint64_t counter; /* highest accepted nonce + 1 */
	uint64_t bitmap[WG_COUNTER_BITS_TOTAL / WG_COUNTER_WORD_BITS];
};

void wg_counter_init(struct wg_counter *c);
/*
 * Accept nonce n once: true if n is new and inside the window (and then it is
 * marked seen), false for a duplicate, a nonce older than the window, or a
 * nonce at or past WG_REJECT_AFTER_MESSAGES. Call only after the packet
 * authenticated, so forged packets cannot move the window.
 */
bool wg_counter_validate(struct wg_counter *c, uint64_t n);

#endif
