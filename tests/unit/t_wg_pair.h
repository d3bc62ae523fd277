/* SPDX-License-Identifier: MIT */
/* Two in-memory WireGuard cores, a and b, each with the other as its peer: for the unit tests. */
#ifndef SPLICED_TESTS_T_WG_PAIR_H
#define SPLICED_TESTS_T_WG_PAIR_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "peer.h"
#include "t.h"

#define S  1000000000ULL
#define MS 1000000ULL

struct side {
	struct wg_identity id;
	struct wg_peer peer; /* the other side */
	struct sockaddr_in addr;
	uint8_t priv[32], pub[32];
};

static struct side *a, *b;
static uint64_t now;
static time_t wall = 1700000000;

/* Each initiation must carry a newer TAI64N: the wall clock moves a second per read. */
static inline void fake_realtime(struct timespec *ts)
{
	ts->tv_sec = wall++;
	ts->tv_nsec = 0;
}

static inline void side_init(struct side *s, const char *ip, uint16_t port)
{
	memset(s, 0, sizeof(*s));
	T_EQ_INT(wg_identity_init(&s->id), 0);
	s->id.realtime = fake_realtime;
	T_EQ_INT(wg_x25519_generate(s->priv), 0);
	T_EQ_INT(wg_x25519_public(s->pub, s->priv), 0);
	T_EQ_INT(wg_identity_set_private_key(&s->id, s->priv), 0);
	s->addr.sin_family = AF_INET;
	s->addr.sin_port = htons(port);
	inet_pton(AF_INET, ip, &s->addr.sin_addr);
}

/* a is 10.0.0.1, b is 10.0.0.2; each allows the other's address through its peer. psk may be NULL. */
static inline void setup(const uint8_t *psk)
{
	uint8_t ip[4];

	a = calloc(1, sizeof(*a));
	b = calloc(1, sizeof(*b));
	now = 1000 * S;
	side_init(a, "127.0.0.1", 40001);
	side_init(b, "127.0.0.2", 40002);
	T_EQ_INT(wg_peer_init(&a->peer, &a->id, b->pub), 0);
	T_EQ_INT(wg_peer_init(&b->peer, &b->id, a->pub), 0);
	if (psk) {
		wg_peer_set_preshared_key(&a->peer, psk);
		wg_peer_set_preshared_key(&b->peer, psk);
	}
	inet_pton(AF_INET, "10.0.0.2", ip);
	T_EQ_INT(wg_allowedips_insert(&a->id.allowedips, AF_INET, ip, 32, &a->peer), 0);
	inet_pton(AF_INET, "10.0.0.1", ip);
	T_EQ_INT(wg_allowedips_insert(&b->id.allowedips, AF_INET, ip, 32, &b->peer), 0);
}

static inline void teardown(void)
{
	wg_identity_destroy(&a->id);
	wg_identity_destroy(&b->id);
	free(a);
	free(b);
}

static inline int recv_on(struct side *to, struct side *from, uint8_t *pkt, size_t len,
                          struct wg_rx *rx)
{
	return wg_receive(&to->id, pkt, len, (const struct sockaddr *)&from->addr, now, rx);
}

/* a initiates, b responds, a takes the response: b's new session waits in "next". */
static inline void handshake(void)
{
	uint8_t init[WG_MSG_INITIATION_LEN], resp[WG_MSG_RESPONSE_LEN];
	struct wg_rx rx;

	T_EQ_INT(wg_peer_create_initiation(&a->peer, init, now), 0);
	T_EQ_INT(recv_on(b, a, init, sizeof(init), &rx), 0);
	T_EQ_INT(rx.action, WG_RX_REPLY);
	if (rx.action != WG_RX_REPLY)
		return;
	T_EQ_INT(rx.len, WG_MSG_RESPONSE_LEN);
	T_ASSERT(rx.peer == &b->peer);
	memcpy(resp, rx.data, sizeof(resp));
	T_EQ_INT(recv_on(a, b, resp, sizeof(resp), &rx), 0);
	T_EQ_INT(rx.action, WG_RX_NONE);
	T_ASSERT(rx.peer == &a->peer);
}

#endif
