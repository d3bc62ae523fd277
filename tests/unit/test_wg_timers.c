/* SPDX-License-Identifier: MIT */
/* Timers (timers.c): given events at given times, the right actions come out at the right times. */
#include <stdint.h>

#include "messages.h"
#include "timers.h"
#include "t.h"

T_SUITE("wg_timers");

#define S  1000000000ULL
#define MS 1000000ULL

static struct wg_timers t;

static void test_idle(void)
{
	wg_timers_init(&t, 1);
	T_EQ_INT(wg_timers_next_deadline(&t) == UINT64_MAX, 1);
	T_EQ_INT(wg_timers_tick(&t, 1000 * S), 0);
}

static void test_retransmit_with_jitter(void)
{
	uint64_t now = 100 * S, d;

	wg_timers_init(&t, 7);
	wg_timers_handshake_initiated(&t, now);
	d = wg_timers_next_deadline(&t);
	T_ASSERT(d >= now + 5 * S && d < now + 5 * S + 333 * MS);
	T_EQ_INT(wg_timers_tick(&t, d - 1), 0);
	T_EQ_INT(wg_timers_tick(&t, d), WG_TIMER_SEND_INITIATION);
	T_ASSERT(t.retry);
	T_EQ_INT(t.handshake_attempts, 1);
	T_EQ_INT(wg_timers_next_deadline(&t) == UINT64_MAX, 1); /* until the retry is sent */
	/* A completed handshake stops the retries. */
	wg_timers_handshake_initiated(&t, d);
	wg_timers_handshake_complete(&t, d + S);
	T_EQ_INT(wg_timers_tick(&t, d + 10 * S), 0);
	T_EQ_INT(t.handshake_attempts, 0);
}

/* Retrying every REKEY_TIMEOUT, the peer gives up after REKEY_ATTEMPT_TIME. */
static void test_give_up(void)
{
	uint64_t now = 0, start = 0;
	unsigned a, sent = 1;
	int guard = 0;

	wg_timers_init(&t, 99);
	wg_timers_handshake_initiated(&t, now);
	for (;;) {
		now = wg_timers_next_deadline(&t);
		a = wg_timers_tick(&t, now);
		if (a & WG_TIMER_GIVE_UP)
			break;
		T_EQ_INT(a, WG_TIMER_SEND_INITIATION);
		sent++;
		wg_timers_handshake_initiated(&t, now);
		if (++guard > 100)
			break;
	}
	/* 1 initial + 19 retries ~ 100 s: REKEY_ATTEMPT_TIME (90 s) plus the last timeout. */
	T_EQ_INT(sent, WG_MAX_TIMER_HANDSHAKES + 2);
	T_ASSERT(now - start >= (uint64_t)WG_REKEY_ATTEMPT_TIME * S);
	T_ASSERT(now - start < (uint64_t)(WG_REKEY_ATTEMPT_TIME + 3 * WG_REKEY_TIMEOUT) * S);
	/* After giving up, the keys are wiped 3 * REJECT_AFTER_TIME later. */
	T_EQ_INT(wg_timers_next_deadline(&t), now + 3ULL * WG_REJECT_AFTER_TIME * S);
	T_EQ_INT(wg_timers_tick(&t, now + 3ULL * WG_REJECT_AFTER_TIME * S), WG_TIMER_ZERO_KEYS);
}

static void test_keepalive_after_data_received(void)
{
	wg_timers_init(&t, 3);
	wg_timers_data_received(&t, 10 * S);
	T_EQ_INT(wg_timers_next_deadline(&t), 20 * S);
	T_EQ_INT(wg_timers_tick(&t, 19 * S), 0);
	T_EQ_INT(wg_timers_tick(&t, 20 * S), WG_TIMER_SEND_KEEPALIVE);
	/* But if we send anything in the meantime, no keepalive is needed. */
	wg_timers_data_received(&t, 30 * S);
	wg_timers_any_authenticated_packet_sent(&t, 31 * S);
	T_EQ_INT(wg_timers_tick(&t, 45 * S), 0);
	/* More data while one is pending asks for another one after it. */
	wg_timers_data_received(&t, 50 * S);
	wg_timers_data_received(&t, 55 * S);
	T_EQ_INT(wg_timers_tick(&t, 60 * S), WG_TIMER_SEND_KEEPALIVE);
	T_EQ_INT(wg_timers_next_deadline(&t), 70 * S);
}

static void test_new_handshake_after_unanswered_data(void)
{
	uint64_t d;

	wg_timers_init(&t, 5);
	wg_timers_data_sent(&t, 0);
	d = wg_timers_next_deadline(&t);
	T_ASSERT(d >= 15 * S && d < 15 * S + 333 * MS);
	wg_timers_data_sent(&t, 3 * S); /* does not push the deadline */
	T_EQ_INT(wg_timers_next_deadline(&t), d);
	T_EQ_INT(wg_timers_tick(&t, d), WG_TIMER_SEND_INITIATION);
	T_ASSERT(!t.retry);
	/* An answer cancels it. */
	wg_timers_data_sent(&t, 100 * S);
	wg_timers_any_authenticated_packet_received(&t, 101 * S);
	T_EQ_INT(wg_timers_tick(&t, 200 * S), 0);
}

static void test_persistent_keepalive(void)
{
	wg_timers_init(&t, 11);
	wg_timers_any_authenticated_packet_traversal(&t, 0);
	T_EQ_INT(wg_timers_next_deadline(&t) == UINT64_MAX, 1); /* off by default */
	t.persistent_keepalive_interval = 25;
	wg_timers_any_authenticated_packet_traversal(&t, 5 * S);
	T_EQ_INT(wg_timers_next_deadline(&t), 30 * S);
	wg_timers_any_authenticated_packet_traversal(&t, 20 * S); /* pushed back by traffic */
	T_EQ_INT(wg_timers_tick(&t, 30 * S), 0);
	T_EQ_INT(wg_timers_tick(&t, 45 * S), WG_TIMER_SEND_KEEPALIVE);
}

static void test_zero_keys(void)
{
	wg_timers_init(&t, 13);
	wg_timers_session_derived(&t, 1 * S);
	T_EQ_INT(wg_timers_next_deadline(&t), 541 * S);
	wg_timers_session_derived(&t, 2 * S); /* a newer session pushes it */
	T_EQ_INT(wg_timers_tick(&t, 541 * S), 0);
	T_EQ_INT(wg_timers_tick(&t, 542 * S), WG_TIMER_ZERO_KEYS);
	wg_timers_session_derived(&t, 600 * S);
	wg_timers_stop(&t);
	T_EQ_INT(wg_timers_next_deadline(&t) == UINT64_MAX, 1);
}

/* Several timers due in one tick report all their actions at once. */
static void test_combined(void)
{
	wg_timers_init(&t, 17);
	wg_timers_data_received(&t, 0);
	wg_timers_session_derived(&t, 0);
	wg_timers_handshake_initiated(&t, 0);
	T_EQ_INT(wg_timers_tick(&t, 600 * S),
	         WG_TIMER_SEND_INITIATION | WG_TIMER_SEND_KEEPALIVE | WG_TIMER_ZERO_KEYS);
}

int main(void)
{
	T_RUN(test_idle);
	T_RUN(test_retransmit_with_jitter);
	T_RUN(test_give_up);
	T_RUN(test_keepalive_after_data_received);
	T_RUN(test_new_handshake_after_unanswered_data);
	T_RUN(test_persistent_keepalive);
	T_RUN(test_zero_keys);
	T_RUN(test_combined);
	return t_finish();
}
