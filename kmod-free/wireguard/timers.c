/* SPDX-License-Identifier: MIT */
/* The whitepaper's per-peer timers (section 6) as deadline arithmetic; the device owns the clock. */
#include <string.h>

#include "messages.h"
#include "timers.h"

#define NSEC_PER_SEC  1000000000ULL
#define NSEC_PER_MSEC 1000000ULL

/* Deadlines use 0 for "not armed", so a deadline that computes to 0 is nudged to 1 ns. */
static void arm(uint64_t *deadline, uint64_t when)
{
	*deadline = when ? when : 1;
}

static int due(uint64_t deadline, uint64_t now)
{
	return deadline && deadline <= now;
}

/* Uniform in [0, REKEY_TIMEOUT_JITTER_MAX_MS) ms: spreads retries of many peers apart. */
static uint64_t jitter(struct wg_timers *t)
{
	uint64_t x = t->jitter_state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	t->jitter_state = x;
	return x % (WG_REKEY_TIMEOUT_JITTER_MAX_MS * NSEC_PER_MSEC);
}

void wg_timers_init(struct wg_timers *t, uint64_t seed)
{
	memset(t, 0, sizeof(*t));
	t->jitter_state = seed ? seed : 0x9e3779b97f4a7c15ULL;
}

void wg_timers_stop(struct wg_timers *t)
{
	t->retransmit_handshake = t->send_keepalive = t->new_handshake = 0;
	t->zero_key_material = t->persistent_keepalive = 0;
	t->need_another_keepalive = false;
}

/* Data sent and nothing heard back for KEEPALIVE + REKEY_TIMEOUT: the session may be dead. */
void wg_timers_data_sent(struct wg_timers *t, uint64_t now)
{
	if (!t->new_handshake)
		arm(&t->new_handshake,
		    now + (WG_KEEPALIVE_TIMEOUT + WG_REKEY_TIMEOUT) * NSEC_PER_SEC + jitter(t));
}

/* Data received: answer within KEEPALIVE_TIMEOUT so the sender's new_handshake stays quiet. */
void wg_timers_data_received(struct wg_timers *t, uint64_t now)
{
	if (!t->send_keepalive)
		arm(&t->send_keepalive, now + WG_KEEPALIVE_TIMEOUT * NSEC_PER_SEC);
	else
		t->need_another_keepalive = true;
}

/* Anything we send is as good as a keepalive. */
void wg_timers_any_authenticated_packet_sent(struct wg_timers *t, uint64_t now)
{
	(void)now;
	t->send_keepalive = 0;
}

/* Anything authenticated from the peer proves the session is alive. */
void wg_timers_any_authenticated_packet_received(struct wg_timers *t, uint64_t now)
{
	(void)now;
	t->new_handshake = 0;
}

void wg_timers_any_authenticated_packet_traversal(struct wg_timers *t, uint64_t now)
{
	if (t->persistent_keepalive_interval)
		arm(&t->persistent_keepalive,
		    now + (uint64_t)t->persistent_keepalive_interval * NSEC_PER_SEC);
}

void wg_timers_handshake_initiated(struct wg_timers *t, uint64_t now)
{
	arm(&t->retransmit_handshake, now + WG_REKEY_TIMEOUT * NSEC_PER_SEC + jitter(t));
}

void wg_timers_handshake_complete(struct wg_timers *t, uint64_t now)
{
	(void)now;
	t->retransmit_handshake = 0;
	t->handshake_attempts = 0;
	t->retry = false;
}

/* Keys older than 3 * REJECT_AFTER_TIME cannot be used any more: wipe them. */
void wg_timers_session_derived(struct wg_timers *t, uint64_t now)
{
	arm(&t->zero_key_material, now + 3ULL * WG_REJECT_AFTER_TIME * NSEC_PER_SEC);
}

static unsigned expired_retransmit(struct wg_timers *t, uint64_t now)
{
	t->retransmit_handshake = 0;
	if (t->handshake_attempts > WG_MAX_TIMER_HANDSHAKES) {
		/* REKEY_ATTEMPT_TIME spent: stop trying until new data asks again. */
		t->send_keepalive = 0;
		if (!t->zero_key_material)
			arm(&t->zero_key_material,
			    now + 3ULL * WG_REJECT_AFTER_TIME * NSEC_PER_SEC);
		return WG_TIMER_GIVE_UP;
	}
	t->handshake_attempts++;
	t->retry = true;
	return WG_TIMER_SEND_INITIATION;
}

unsigned wg_timers_tick(struct wg_timers *t, uint64_t now)
{
	unsigned actions = 0;

	if (due(t->retransmit_handshake, now))
		actions |= expired_retransmit(t, now);
	if (due(t->send_keepalive, now)) {
		t->send_keepalive = 0;
		actions |= WG_TIMER_SEND_KEEPALIVE;
		if (t->need_another_keepalive) {
			t->need_another_keepalive = false;
			arm(&t->send_keepalive, now + WG_KEEPALIVE_TIMEOUT * NSEC_PER_SEC);
		}
	}
	if (due(t->new_handshake, now)) {
		/* A fresh attempt, not a retransmission: the attempt count restarts. */
		t->new_handshake = 0;
		t->retry = false;
		actions |= WG_TIMER_SEND_INITIATION;
	}
	if (due(t->zero_key_material, now)) {
		t->zero_key_material = 0;
		actions |= WG_TIMER_ZERO_KEYS;
	}
	if (due(t->persistent_keepalive, now)) {
		t->persistent_keepalive = 0;
		if (t->persistent_keepalive_interval)
			actions |= WG_TIMER_SEND_KEEPALIVE;
	}
	return actions;
}

static uint64_t earliest(uint64_t a, uint64_t b)
{
	if (!b)
		return a;
	return b < a ? b : a;
}

uint64_t wg_timers_next_deadline(const struct wg_timers *t)
{
	uint64_t d = UINT64_MAX;

	d = earliest(d, t->retransmit_handshake);
	d = earliest(d, t->send_keepalive);
	d = earliest(d, t->new_handshake);
	d = earliest(d, t->zero_key_material);
	d = earliest(d, t->persistent_keepalive);
	return d;
}
