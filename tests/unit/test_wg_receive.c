/* SPDX-License-Identifier: MIT */
/* The receive steps a multi-threaded device runs under its shared lock: precheck, open/finish. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "peer.h"
#include "t.h"
#include "t_wg_pair.h"

T_SUITE("wg_receive");

/* A sealed IPv4 packet 10.0.0.1 -> 10.0.0.2 from a; returns the message length. */
static size_t seal_from_a(uint8_t *buf, size_t cap)
{
	uint8_t *p = buf + WG_MSG_DATA_HEADER_LEN;
	long m;

	memset(p, 0, 28);
	p[0] = 0x45;
	p[3] = 28;
	p[8] = 64;
	p[9] = 17;
	inet_pton(AF_INET, "10.0.0.1", p + 12);
	inet_pton(AF_INET, "10.0.0.2", p + 16);
	m = wg_peer_encrypt(&a->peer, buf, 28, cap, now);
	T_ASSERT(m > 0);
	return m > 0 ? (size_t)m : 0;
}

static uint64_t drops(const struct wg_stats *s)
{
	return s->rx_invalid_message + s->rx_bad_mac1 + s->rx_cookie_invalid +
	       s->rx_handshake_invalid + s->rx_unknown_index + s->rx_decrypt_failed;
}

/* What the shared pass refuses, each counted once under its reason; what it lets through. */
static void test_precheck_refuses_junk(void)
{
	uint8_t init[WG_MSG_INITIATION_LEN], buf[256], cookie[WG_MSG_COOKIE_LEN] = {3};
	struct wg_stats *st;
	size_t n;

	setup(NULL);
	st = &b->id.stats;
	/* wrong lengths and types */
	memset(buf, 0, sizeof(buf));
	T_EQ_INT(wg_receive_precheck(&b->id, buf, 0), WG_MSG_INVALID);
	T_EQ_INT(wg_receive_precheck(&b->id, buf, 1), WG_MSG_INVALID);
	buf[0] = 9;
	T_EQ_INT(wg_receive_precheck(&b->id, buf, 64), WG_MSG_INVALID);
	buf[0] = 1;
	T_EQ_INT(wg_receive_precheck(&b->id, buf, WG_MSG_INITIATION_LEN - 1), WG_MSG_INVALID);
	buf[0] = 4;
	T_EQ_INT(wg_receive_precheck(&b->id, buf, WG_MSG_DATA_MIN_LEN - 1), WG_MSG_INVALID);
	T_EQ_INT(st->rx_invalid_message, 5);
	/* a genuine initiation passes and changes nothing; one flipped bit fails MAC1 */
	T_EQ_INT(wg_peer_create_initiation(&a->peer, init, now), 0);
	T_EQ_INT(wg_receive_precheck(&b->id, init, sizeof(init)), WG_MSG_HANDSHAKE_INITIATION);
	T_EQ_INT(st->rx_handshakes, 0);
	T_ASSERT(b->peer.handshake.state == WG_HANDSHAKE_ZEROED);
	init[20] ^= 1;
	T_EQ_INT(wg_receive_precheck(&b->id, init, sizeof(init)), WG_MSG_INVALID);
	T_EQ_INT(st->rx_bad_mac1, 1);
	init[20] ^= 1;
	/* a cookie reply for no handshake of b's is refused; for a's pending one it passes */
	T_EQ_INT(wg_receive_precheck(&b->id, cookie, sizeof(cookie)), WG_MSG_INVALID);
	T_EQ_INT(st->rx_cookie_invalid, 1);
	wg_put_le32(cookie + 4, a->peer.handshake.entry.index);
	T_EQ_INT(wg_receive_precheck(&a->id, cookie, sizeof(cookie)), WG_MSG_HANDSHAKE_COOKIE);
	T_EQ_INT(a->id.stats.rx_cookie_invalid, 0);
	/* data of any index passes: wg_receive_data_open() judges it */
	T_EQ_INT(wg_receive_precheck(&b->id, buf, WG_MSG_DATA_MIN_LEN), WG_MSG_DATA);
	T_EQ_INT(drops(st), 7);
	/* after a handshake, real data passes */
	now += (WG_REKEY_TIMEOUT + 1) * S;
	handshake();
	n = seal_from_a(buf, sizeof(buf));
	T_EQ_INT(wg_receive_precheck(&b->id, buf, n), WG_MSG_DATA);
	T_EQ_INT(drops(st), 7);
	teardown();
}

/*
 * Review L1: the device opens a data message under the shared lock, then
 * (first packet on a new responder session) drops the lock and finishes
 * under the exclusive one. Meanwhile a handshake can free that session.
 * finish must notice without touching the freed keypair; under ASan the
 * code at 13687be read kp->entry.peer first (heap-use-after-free).
 */
static void test_finish_after_session_freed(void)
{
	uint8_t buf[256], init[WG_MSG_INITIATION_LEN];
	struct wg_keypair *first;
	struct wg_rx_open o;
	struct wg_rx rx;
	size_t n;

	setup(NULL);
	handshake();
	first = b->peer.keypairs.next;
	T_ASSERT(first != NULL);
	n = seal_from_a(buf, sizeof(buf));
	T_EQ_INT(wg_receive_data_open(&b->id, buf, n, now, &o, &rx), 0);
	T_ASSERT(o.kp == first);
	T_EQ_INT(wg_receive_data_finish(&b->id, buf, n, &o, false, now, &rx), -EWOULDBLOCK);
	/* the lock is dropped: a new initiation from a replaces (frees) b's "next" session */
	now += (WG_REKEY_TIMEOUT + 1) * S;
	T_EQ_INT(wg_peer_create_initiation(&a->peer, init, now), 0);
	T_EQ_INT(recv_on(b, a, init, sizeof(init), &rx), 0);
	T_ASSERT(b->peer.keypairs.next != NULL);
	/* finish under the exclusive lock refuses, counted, and reads nothing of the old kp */
	T_EQ_INT(wg_receive_data_finish(&b->id, buf, n, &o, true, now, &rx), -ENOENT);
	T_EQ_INT(rx.action, WG_RX_DROP);
	T_ASSERT(rx.peer == NULL);
	T_EQ_INT(b->id.stats.rx_unknown_index, 1);
	T_EQ_INT(b->id.stats.rx_data_packets, 0);
	teardown();
}

/* The same path when the session survives: finish under the exclusive lock confirms it. */
static void test_finish_exclusive_confirms(void)
{
	uint8_t buf[256];
	struct wg_keypair *next;
	struct wg_rx_open o;
	struct wg_rx rx;
	size_t n;

	setup(NULL);
	handshake();
	next = b->peer.keypairs.next;
	n = seal_from_a(buf, sizeof(buf));
	T_EQ_INT(wg_receive_data_open(&b->id, buf, n, now, &o, &rx), 0);
	T_EQ_INT(wg_receive_data_finish(&b->id, buf, n, &o, false, now, &rx), -EWOULDBLOCK);
	T_EQ_INT(wg_receive_data_finish(&b->id, buf, n, &o, true, now, &rx), 0);
	T_EQ_INT(rx.action, WG_RX_DATA);
	T_ASSERT(rx.peer == &b->peer);
	T_ASSERT(b->peer.keypairs.current == next && !b->peer.keypairs.next);
	teardown();
}

int main(void)
{
	T_RUN(test_precheck_refuses_junk);
	T_RUN(test_finish_after_session_freed);
	T_RUN(test_finish_exclusive_confirms);
	return t_finish();
}
