/* SPDX-License-Identifier: MIT */
/* wg_receive(): one UDP payload in, one decision out (reply, deliver, or drop with a reason). */
#include <errno.h>
#include <netinet/in.h>
#include <string.h>

#include "peer.h"

#define NSEC_PER_SEC 1000000000ULL

enum {
	SRC_MAX = 18, /* IPv6 address + port */
	IPV4_MIN = 20,
	IPV6_HDR = 40,
};

/* The cookie binds to the source address and port, as bytes in network order. */
static size_t src_bytes(const struct sockaddr *sa, uint8_t out[SRC_MAX])
{
	if (sa && sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const void *)sa;

		memcpy(out, &in->sin_addr, 4);
		memcpy(out + 4, &in->sin_port, 2);
		return 6;
	}
	if (sa && sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const void *)sa;

		memcpy(out, &in6->sin6_addr, 16);
		memcpy(out + 16, &in6->sin6_port, 2);
		return 18;
	}
	return 0;
}

static int drop(struct wg_rx *rx, _Atomic uint64_t *counter, int err)
{
	(*counter)++;
	rx->action = WG_RX_DROP;
	rx->err = err;
	return err;
}

/* Bookkeeping common to every authenticated handshake message (kernel receive.c). */
static void handshake_received(struct wg_peer *peer, size_t len, uint64_t now)
{
	peer->rx_bytes += len;
	peer->id->stats.rx_handshakes++;
	wg_timers_any_authenticated_packet_received(&peer->timers, now);
	wg_timers_any_authenticated_packet_traversal(&peer->timers, now);
}

static int receive_initiation(struct wg_identity *id, const uint8_t *pkt, size_t len, uint64_t now,
                              struct wg_rx *rx)
{
	const struct wg_msg_initiation *msg = (const void *)pkt;
	struct wg_msg_response *resp = (struct wg_msg_response *)rx->reply;
	struct wg_peer *peer;

	peer = wg_noise_consume_initiation(id, msg, now);
	if (!peer)
		return drop(rx, &id->stats.rx_handshake_invalid, -EBADMSG);
	handshake_received(peer, len, now);
	rx->peer = peer;
	if (wg_noise_create_response(peer, resp, now) != 0)
		return drop(rx, &id->stats.rx_handshake_invalid, -EBADMSG);
	wg_cookie_add_macs(&peer->cookie, resp, sizeof(*resp), now);
	if (wg_noise_begin_session(peer, now) != 0)
		return drop(rx, &id->stats.rx_handshake_invalid, -ENOMEM);
	/* The response is a handshake we sent: it counts against REKEY_TIMEOUT. */
	peer->last_sent_handshake = now ? now : 1;
	peer->sent_lastminute_handshake = false;
	peer->tx_bytes += sizeof(*resp);
	wg_timers_session_derived(&peer->timers, now);
	wg_timers_any_authenticated_packet_traversal(&peer->timers, now);
	wg_timers_any_authenticated_packet_sent(&peer->timers, now);
	rx->action = WG_RX_REPLY;
	rx->data = rx->reply;
	rx->len = sizeof(*resp);
	return 0;
}

static int receive_response(struct wg_identity *id, const uint8_t *pkt, size_t len, uint64_t now,
                            struct wg_rx *rx)
{
	struct wg_peer *peer;

	peer = wg_noise_consume_response(id, (const struct wg_msg_response *)pkt, now);
	if (!peer)
		return drop(rx, &id->stats.rx_handshake_invalid, -EBADMSG);
	handshake_received(peer, len, now);
	rx->peer = peer;
	if (wg_noise_begin_session(peer, now) != 0)
		return drop(rx, &id->stats.rx_handshake_invalid, -ENOMEM);
	peer->sent_lastminute_handshake = false;
	id->realtime(&peer->last_handshake_real);
	peer->handshakes++;
	wg_timers_session_derived(&peer->timers, now);
	wg_timers_handshake_complete(&peer->timers, now);
	/* Confirm the session to the responder at once: queued data, or else a keepalive. */
	peer->pending_actions |= WG_ACT_FLUSH_QUEUE | WG_ACT_SEND_KEEPALIVE;
	rx->action = WG_RX_NONE;
	return 0;
}

static int receive_handshake(struct wg_identity *id, uint8_t *pkt, size_t len,
                             enum wg_message_type type, const struct sockaddr *src, uint64_t now,
                             struct wg_rx *rx)
{
	uint8_t addr[SRC_MAX];
	size_t addrlen = src_bytes(src, addr);
	bool under_load = wg_identity_under_load(id, now);
	enum wg_cookie_mac_state mac;
	uint32_t sender;

	mac = wg_cookie_validate(&id->cookie_checker, pkt, len, addr, addrlen, under_load, now);
	if (mac == WG_COOKIE_INVALID_MAC)
		return drop(rx, &id->stats.rx_bad_mac1, -EBADMSG);
	if (under_load && mac != WG_COOKIE_VALID_MAC_WITH_COOKIE) {
		/*
		 * Under load, DH work is only spent on senders proving they
		 * own their address: answer with a cookie for them to retry with.
		 */
		sender = wg_le32(pkt + offsetof(struct wg_msg_initiation, sender_index));
		if (wg_cookie_create_reply(&id->cookie_checker, (struct wg_msg_cookie *)rx->reply,
		                           pkt, len, sender, addr, addrlen, now) != 0)
			return drop(rx, &id->stats.rx_cookie_sent, -EIO);
		id->stats.rx_cookie_sent++;
		rx->action = WG_RX_REPLY;
		rx->data = rx->reply;
		rx->len = WG_MSG_COOKIE_LEN;
		return 0;
	}
	/* A proven address still gets only its share of handshake work while under load. */
	if (under_load &&
	    !wg_ratelimiter_allow(&id->ratelimiter, addr, addrlen ? addrlen - 2 : 0, now))
		return drop(rx, &id->stats.rx_ratelimited, -EBUSY);
	if (type == WG_MSG_HANDSHAKE_INITIATION)
		return receive_initiation(id, pkt, len, now, rx);
	return receive_response(id, pkt, len, now, rx);
}

static int receive_cookie(struct wg_identity *id, const uint8_t *pkt, uint64_t now,
                          struct wg_rx *rx)
{
	const struct wg_msg_cookie *msg = (const void *)pkt;
	struct wg_index_entry *e;

	e = wg_index_lookup(&id->index, wg_le32(&msg->receiver_index),
	                    WG_INDEX_HANDSHAKE | WG_INDEX_KEYPAIR);
	if (!e || wg_cookie_consume_reply(&e->peer->cookie, msg, now) != 0)
		return drop(rx, &id->stats.rx_cookie_invalid, -EBADMSG);
	/* The retransmit timer resends the initiation, now with a MAC2. */
	rx->action = WG_RX_NONE;
	return 0;
}

static uint16_t be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

/* Length of the IP packet at p (padding stripped), or 0 if it is not a sane IPv4/IPv6 packet. */
static size_t inner_len(const uint8_t *p, size_t plen)
{
	size_t tot;

	if (plen >= IPV4_MIN && p[0] >> 4 == 4) {
		tot = be16(p + 2);
		if ((p[0] & 0xf) * 4u < IPV4_MIN || tot < (p[0] & 0xf) * 4u || tot > plen)
			return 0;
		return tot;
	}
	if (plen >= IPV6_HDR && p[0] >> 4 == 6) {
		tot = IPV6_HDR + (size_t)be16(p + 4);
		return tot <= plen ? tot : 0;
	}
	return 0;
}

/* A session the initiator keeps using is about to expire: rekey once, a bit early. */
static void keep_key_fresh_receive(struct wg_peer *peer, uint64_t now)
{
	const struct wg_keypair *kp = peer->keypairs.current;
	const uint64_t limit =
	        (WG_REJECT_AFTER_TIME - WG_KEEPALIVE_TIMEOUT - WG_REKEY_TIMEOUT) * NSEC_PER_SEC;

	if (kp && kp->initiator && now >= kp->birth + limit && !peer->sent_lastminute_handshake) {
		peer->sent_lastminute_handshake = true;
		peer->pending_actions |= WG_ACT_SEND_INITIATION;
	}
}

static void rx_reset(struct wg_rx *rx)
{
	rx->action = WG_RX_DROP;
	rx->err = 0;
	rx->peer = NULL;
	rx->data = NULL;
	rx->len = 0;
}

/* The session a data message names, or NULL. */
static struct wg_keypair *data_keypair(struct wg_identity *id, const uint8_t *pkt)
{
	struct wg_index_entry *e;

	/* byte offsets: a message inside a GRO train may be misaligned for the struct */
	e = wg_index_lookup(&id->index, wg_le32(pkt + offsetof(struct wg_msg_data, receiver_index)),
	                    WG_INDEX_KEYPAIR);
	return e ? (struct wg_keypair *)((uint8_t *)e - offsetof(struct wg_keypair, entry)) : NULL;
}

int wg_receive_data_open(struct wg_identity *id, uint8_t *pkt, size_t len, uint64_t now,
                         struct wg_rx_open *o, struct wg_rx *rx)
{
	struct wg_keypair *kp;

	rx_reset(rx);
	o->kp = NULL;
	kp = data_keypair(id, pkt);
	if (!kp)
		return drop(rx, &id->stats.rx_unknown_index, -ENOENT);
	/*
	 * replay.counter is only advanced under the peer's lock; a stale read
	 * here can only let an over-limit packet reach finish, whose
	 * wg_counter_validate() refuses nonces at or past REJECT_AFTER_MESSAGES.
	 */
	if (now >= kp->birth + WG_REJECT_AFTER_TIME * NSEC_PER_SEC ||
	    __atomic_load_n(&kp->replay.counter, __ATOMIC_RELAXED) >= WG_REJECT_AFTER_MESSAGES)
		return drop(rx, &id->stats.rx_expired_key, -EKEYEXPIRED);
	o->plen = wg_keypair_open(kp, pkt, len);
	if (o->plen < 0)
		return drop(rx, &id->stats.rx_decrypt_failed, -EBADMSG);
	o->kp = kp;
	return 0;
}

int wg_receive_data_finish(struct wg_identity *id, uint8_t *pkt, size_t len,
                           const struct wg_rx_open *o, bool exclusive, uint64_t now,
                           struct wg_rx *rx)
{
	struct wg_keypair *kp = o->kp;
	struct wg_peer *peer;
	size_t ilen;

	rx_reset(rx);
	/*
	 * The lock was dropped since open: the session may have been freed
	 * (a handshake, a timer, a peer removal), so nothing of kp is read
	 * before it is found again.
	 */
	if (exclusive && data_keypair(id, pkt) != kp)
		return drop(rx, &id->stats.rx_unknown_index, -ENOENT);
	peer = kp->entry.peer;
	if (!exclusive && kp == peer->keypairs.next)
		return -EWOULDBLOCK;
	/* Only an authentic packet may move the replay window. */
	if (!wg_counter_validate(&kp->replay, wg_le64(pkt + offsetof(struct wg_msg_data, counter))))
		return drop(rx, &id->stats.rx_replay, -EALREADY);

	rx->peer = peer;
	peer->rx_bytes += len;
	if (wg_noise_received_with_keypair(peer, kp)) {
		/* The initiator used our new session: it is confirmed, send what waited. */
		id->realtime(&peer->last_handshake_real);
		peer->handshakes++;
		wg_timers_handshake_complete(&peer->timers, now);
		peer->pending_actions |= WG_ACT_FLUSH_QUEUE;
	}
	keep_key_fresh_receive(peer, now);
	wg_timers_any_authenticated_packet_received(&peer->timers, now);
	wg_timers_any_authenticated_packet_traversal(&peer->timers, now);
	if (o->plen == 0) {
		rx->action = WG_RX_NONE; /* keepalive */
		return 0;
	}
	wg_timers_data_received(&peer->timers, now);
	ilen = inner_len(pkt + WG_MSG_DATA_HEADER_LEN, (size_t)o->plen);
	if (!ilen)
		return drop(rx, &id->stats.rx_bad_inner, -EPROTO);
	/* Cryptokey routing: the sender must own the inner source address. */
	if (wg_allowedips_lookup_src(&id->allowedips, pkt + WG_MSG_DATA_HEADER_LEN, ilen) != peer)
		return drop(rx, &id->stats.rx_src_not_allowed, -EPERM);
	id->stats.rx_data_packets++;
	rx->action = WG_RX_DATA;
	rx->data = pkt + WG_MSG_DATA_HEADER_LEN;
	rx->len = ilen;
	return 0;
}

static int receive_data(struct wg_identity *id, uint8_t *pkt, size_t len, uint64_t now,
                        struct wg_rx *rx)
{
	struct wg_rx_open o;
	int ret = wg_receive_data_open(id, pkt, len, now, &o, rx);

	/* Single-threaded caller: it holds everything, so finish in one go. */
	return ret ? ret : wg_receive_data_finish(id, pkt, len, &o, true, now, rx);
}

enum wg_message_type wg_receive_precheck(struct wg_identity *id, const uint8_t *pkt, size_t len)
{
	enum wg_message_type type = wg_message_type(pkt, len);
	struct wg_index_entry *e;

	switch (type) {
	case WG_MSG_HANDSHAKE_INITIATION:
	case WG_MSG_HANDSHAKE_RESPONSE:
		/*
		 * MAC1 needs only our public key (message_mac1_key changes under
		 * the exclusive lock only). MAC2 and the load check write state:
		 * they stay in receive_handshake(), which checks MAC1 again.
		 */
		if (wg_cookie_validate(&id->cookie_checker, pkt, len, NULL, 0, false, 0) ==
		    WG_COOKIE_INVALID_MAC) {
			id->stats.rx_bad_mac1++;
			return WG_MSG_INVALID;
		}
		return type;
	case WG_MSG_HANDSHAKE_COOKIE:
		/* Only a reply to a handshake or session of ours can be consumed. */
		e = wg_index_lookup(&id->index,
		                    wg_le32(pkt + offsetof(struct wg_msg_cookie, receiver_index)),
		                    WG_INDEX_HANDSHAKE | WG_INDEX_KEYPAIR);
		if (!e) {
			id->stats.rx_cookie_invalid++;
			return WG_MSG_INVALID;
		}
		return type;
	case WG_MSG_DATA:
		return type;
	default:
		id->stats.rx_invalid_message++;
		return WG_MSG_INVALID;
	}
}

int wg_receive(struct wg_identity *id, uint8_t *pkt, size_t len, const struct sockaddr *src,
               uint64_t now, struct wg_rx *rx)
{
	enum wg_message_type type = wg_message_type(pkt, len);

	rx_reset(rx);
	switch (type) {
	case WG_MSG_HANDSHAKE_INITIATION:
	case WG_MSG_HANDSHAKE_RESPONSE:
		return receive_handshake(id, pkt, len, type, src, now, rx);
	case WG_MSG_HANDSHAKE_COOKIE:
		return receive_cookie(id, pkt, now, rx);
	case WG_MSG_DATA:
		return receive_data(id, pkt, len, now, rx);
	default:
		return drop(rx, &id->stats.rx_invalid_message, -EINVAL);
	}
}
