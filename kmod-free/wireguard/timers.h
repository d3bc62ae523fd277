/* SPDX-License-Identifier: MIT */
/* Per-peer protocol timers as pure state: events in, deadlines and actions out. */
#ifndef SPLICED_WG_TIMERS_H
#define SPLICED_WG_TIMERS_H

#include <stdbool.h>
#include <stdint.h>

/*
 * The five timers of the whitepaper (section 6) / kernel timers.c, kept as
 * absolute deadlines in nanoseconds of a monotonic clock (0 = not armed):
 *   retransmit_handshake  REKEY_TIMEOUT + jitter after an initiation is sent;
 *                          retries until REKEY_ATTEMPT_TIME, then gives up
 *   send_keepalive        KEEPALIVE_TIMEOUT after data received, if we sent nothing back
 *   new_handshake         KEEPALIVE + REKEY_TIMEOUT + jitter after data sent with no answer
 *   zero_key_material     3 * REJECT_AFTER_TIME after the last session was derived
 *   persistent_keepalive  the configured interval after any authenticated packet
 * Nothing here sleeps or sends: wg_timers_tick() reports what fell due.
 */
enum wg_timer_action {
	WG_TIMER_SEND_INITIATION = 1u << 0, /* a (re)try of the handshake is due */
	WG_TIMER_SEND_KEEPALIVE = 1u << 1,  /* send an empty data message */
	WG_TIMER_ZERO_KEYS = 1u << 2,       /* wipe all keypairs and the handshake */
	WG_TIMER_GIVE_UP = 1u << 3, /* handshake failed for REKEY_ATTEMPT_TIME: drop queue */
};

struct wg_timers {
	uint64_t retransmit_handshake;
	uint64_t send_keepalive;
	uint64_t new_handshake;
	uint64_t zero_key_material;
	uint64_t persistent_keepalive;
	uint64_t jitter_state; /* xorshift64 state for REKEY_TIMEOUT jitter (not a secret) */
	unsigned handshake_attempts;
	uint16_t persistent_keepalive_interval; /* seconds, 0 = off */
	bool need_another_keepalive;
	bool retry; /* the next initiation is a retransmission: keep handshake_attempts */
};

/* seed: any value (0 is replaced); jitter only needs to differ between peers. */
void wg_timers_init(struct wg_timers *t, uint64_t seed);
void wg_timers_stop(struct wg_timers *t);

/* Events, named as in the kernel (timers.h); now is CLOCK_MONOTONIC in ns. */
void wg_timers_data_sent(struct wg_timers *t, uint64_t now);
void wg_timers_data_received(struct wg_timers *t, uint64_t now);
void wg_timers_any_authenticated_packet_sent(struct wg_timers *t, uint64_t now);
void wg_timers_any_authenticated_packet_received(struct wg_timers *t, uint64_t now);
void wg_timers_any_authenticated_packet_traversal(struct wg_timers *t, uint64_t now);
void wg_timers_handshake_initiated(struct wg_timers *t, uint64_t now);
void wg_timers_handshake_complete(struct wg_timers *t, uint64_t now);
void wg_timers_session_derived(struct wg_timers *t, uint64_t now);

/* Fire every timer whose deadline is <= now; returns a WG_TIMER_* mask. */
unsigned wg_timers_tick(struct wg_timers *t, uint64_t now);
/* Earliest armed deadline, or UINT64_MAX when none is armed. */
uint64_t wg_timers_next_deadline(const struct wg_timers *t);

#endif
