/* SPDX-License-Identifier: MIT */
/* The device-facing WireGuard core: identity (device keys), peers, receive and send steps. */
#ifndef SPLICED_WG_PEER_H
#define SPLICED_WG_PEER_H

/*
 * How the device drives the core (sans-I/O: no sockets, no TUN, no threads,
 * no sleeping; `now` is always CLOCK_MONOTONIC in nanoseconds):
 *
 *   Setup
 *     struct wg_identity *id = calloc(1, sizeof(*id)); wg_identity_init(id);
 *     wg_identity_set_private_key(id, priv);            // may change later
 *     wg_peer_init(peer, id, peer_public);              // peer memory is yours
 *     wg_peer_set_preshared_key(peer, psk);             // optional
 *     peer->timers.persistent_keepalive_interval = 25;  // optional
 *     wg_allowedips_insert(&id->allowedips, AF_INET, &addr, 24, peer);
 *     peer->priv = your_peer_state;   // endpoint, queue of packets, ...
 *
 *   TUN -> UDP (an IP packet to send)
 *     peer = wg_allowedips_lookup_dst(&id->allowedips, pkt, len)  (NULL: drop, EHOSTUNREACH)
 *     place the packet at buf + WG_MSG_DATA_HEADER_LEN, keeping
 *     WG_MSG_PADDING - 1 + WG_AEAD_TAG_LEN bytes of room after it, then
 *     n = wg_peer_encrypt(peer, buf, len, cap, now):
 *       n > 0      send buf[0..n) to the peer's endpoint
 *       -ENOKEY    no usable session: queue the packet (bounded) and act on
 *                  wg_peer_tick(), which asks for an initiation
 *
 *   UDP -> TUN (a datagram from src)
 *     wg_receive(id, pkt, len, src, now, &rx) and by rx.action:
 *       WG_RX_DATA   write rx.data/rx.len to the TUN (inner source already
 *                    checked against the peer's allowed IPs)
 *       WG_RX_REPLY  send rx.data/rx.len back to src (handshake response or
 *                    cookie reply)
 *       WG_RX_NONE   consumed (keepalive, cookie, ...)
 *       WG_RX_DROP   rx.err says why; counted in id->stats
 *     when rx.peer != NULL the packet authenticated: set that peer's endpoint
 *     to src (roaming), then carry out wg_peer_tick(rx.peer, now).
 *
 *   Timers and actions, per peer
 *     after events involving a peer and when wg_peer_next_deadline(peer)
 *     passes, a = wg_peer_tick(peer, now) and for each bit:
 *       WG_ACT_SEND_INITIATION  wg_peer_create_initiation(peer, buf, now),
 *                               send its 148 bytes to the endpoint (if the
 *                               peer has no endpoint yet, skip it)
 *       WG_ACT_FLUSH_QUEUE      a session is usable: encrypt and send the
 *                               queued packets
 *       WG_ACT_SEND_KEEPALIVE   wg_peer_encrypt(peer, buf, 0, cap, now), send;
 *                               skip it if this same round just sent the peer
 *                               any data (every data message is as good)
 *       WG_ACT_DROP_QUEUE       handshake gave up: free the queued packets
 *   Or call wg_identity_tick(id, now) to tick every peer, with a callback.
 *
 * Thread safety: none inside. One thread owns an identity and its peers, or
 * the device serialises calls. For parallel crypto, reserve nonces with
 * wg_peer_encrypt_prepare() under your lock and run wg_keypair_seal() (pure)
 * on any thread; keypair pointers stay valid until the next wg_receive(),
 * wg_peer_tick() or wg_peer_destroy() on that peer.
 *
 * A device receiving data on several threads uses two lock levels: a
 * shared/exclusive device lock (e.g. a rwlock) and one lock per peer. The
 * only calls allowed under the shared lock are wg_allowedips_lookup_*(),
 * wg_keypair_seal/open(), wg_receive_precheck(), wg_receive_data_open() and,
 * with the peer's lock
 * also held, wg_peer_encrypt_prepare*() and wg_receive_data_finish(); none of
 * them frees a keypair or touches the index table. Everything else
 * (handshakes, wg_peer_tick(), configuration) takes the exclusive lock.
 * Everything the core allocates is on the handshake/config path; data
 * messages are sealed and opened in place without allocation.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <time.h>

#include "allowedips.h"
#include "cookie.h"
#include "crypto.h"
#include "index.h"
#include "messages.h"
#include "noise.h"
#include "ratelimiter.h"
#include "timers.h"

enum wg_peer_action {
	WG_ACT_SEND_INITIATION = 1u << 0,
	WG_ACT_SEND_KEEPALIVE = 1u << 1,
	WG_ACT_DROP_QUEUE = 1u << 2,
	WG_ACT_FLUSH_QUEUE = 1u << 3,
	WG_ACT_KEYS_ZEROED = 1u << 4, /* informational: all sessions wiped */
};

enum wg_identity_limits {
	WG_PEER_BUCKETS = 1u << 8,
	/* Handshake messages per second above which we ask for cookies (under load). */
	WG_UNDER_LOAD_HANDSHAKES_PER_SEC = 512,
	/* Initiations from one peer closer together than this are dropped (50/s, as the kernel). */
	WG_INITIATIONS_PER_SECOND = 50,
};

struct wg_peer {
	struct wg_identity *id;
	void *priv; /* the device's per-peer state (endpoint, queue); the core never reads it */
	uint8_t public_key[WG_KEY_LEN];
	struct wg_handshake handshake;
	struct wg_keypairs keypairs;
	struct wg_cookie cookie;
	struct wg_timers timers;
	uint64_t last_sent_handshake;        /* monotonic ns; 0 = never */
	struct timespec last_handshake_real; /* CLOCK_REALTIME of the last completed handshake */
	uint64_t rx_bytes, tx_bytes;         /* UDP payload bytes, for `wg show transfer` */
	uint64_t handshakes;      /* completed handshakes (sessions confirmed), /metrics */
	unsigned pending_actions; /* WG_ACT_* raised outside wg_peer_tick() */
	bool sent_lastminute_handshake;
	/* allowedips.c: this peer's trie nodes, in insertion order (tail NULL = empty) */
	struct wg_aip_node *aip_head, **aip_tail;
	struct wg_peer *hash_next; /* identity's public-key table */
	struct wg_peer *list_prev, *list_next;
};

/*
 * Drop reasons, one counter each (attacker-triggerable, so never logged per
 * packet). Atomic: the data path of a multi-threaded device counts from
 * several threads under a shared lock (see wg_receive_data_open()).
 */
struct wg_stats {
	_Atomic uint64_t rx_invalid_message; /* bad type or length */
	_Atomic uint64_t rx_bad_mac1;        /* handshake with a wrong MAC1 */
	_Atomic uint64_t rx_cookie_sent;     /* under load, answered with a cookie reply */
	_Atomic uint64_t rx_ratelimited;     /* under load, valid MAC2 but over the rate */
	_Atomic uint64_t
	        rx_handshake_invalid; /* unknown peer, failed DH/AEAD, replayed timestamp, flood */
	_Atomic uint64_t
	        rx_cookie_invalid;         /* cookie reply for no handshake or failing to decrypt */
	_Atomic uint64_t rx_unknown_index; /* data for no session we know */
	_Atomic uint64_t rx_expired_key;   /* data on a session past REJECT_AFTER_TIME/MESSAGES */
	_Atomic uint64_t rx_decrypt_failed;  /* data failing authentication */
	_Atomic uint64_t rx_replay;          /* data nonce duplicate or too old */
	_Atomic uint64_t rx_bad_inner;       /* decrypted but not a well-formed IPv4/IPv6 packet */
	_Atomic uint64_t rx_src_not_allowed; /* inner source not in the peer's allowed IPs */
	_Atomic uint64_t rx_handshakes;      /* handshake messages accepted */
	_Atomic uint64_t rx_data_packets;
	_Atomic uint64_t tx_data_packets;
};

/* The device-level state the core needs: our static key and everything keyed by the wire. */
struct wg_identity {
	bool has_private_key;
	uint8_t static_private[WG_KEY_LEN];
	uint8_t static_public[WG_KEY_LEN];
	struct wg_cookie_checker cookie_checker;
	struct wg_index_table index;
	struct wg_allowedips allowedips;
	struct wg_peer *peer_buckets[WG_PEER_BUCKETS];
	struct wg_peer *peers; /* list of all peers, for iteration */
	unsigned npeers;
	uint8_t peer_hash_key[16];
	size_t mtu; /* the tunnel MTU; padding never grows a packet past it (0 = no cap) */
	/* Under-load detection: set force_under_load from the device's own backlog, or rely on the rate. */
	bool force_under_load;
	uint64_t load_window_start;
	unsigned load_window_count;
	uint64_t under_load_until;
	struct wg_ratelimiter ratelimiter; /* per-source handshake budget, applied under load */
	struct wg_stats stats;
	/* Hooks for deterministic tests; default to wg_random() and CLOCK_REALTIME. */
	int (*random)(void *buf, size_t len);
	void (*realtime)(struct timespec *ts);
};

/* wg_identity_init: 0 or -errno (getrandom failing). destroy destroys every peer still linked. */
int wg_identity_init(struct wg_identity *id);
void wg_identity_destroy(struct wg_identity *id);
/* Set (or change) the device private key; clamped copy kept. Peers whose key equals ours are not allowed. */
int wg_identity_set_private_key(struct wg_identity *id, const uint8_t priv[WG_KEY_LEN]);
struct wg_peer *wg_identity_lookup_peer(const struct wg_identity *id,
                                        const uint8_t pub[WG_KEY_LEN]);
bool wg_identity_under_load(struct wg_identity *id, uint64_t now);
/* Tick all peers; fn(ctx, peer, actions) for those with actions. Returns the earliest next deadline. */
uint64_t wg_identity_tick(struct wg_identity *id, uint64_t now,
                          void (*fn)(void *ctx, struct wg_peer *peer, unsigned actions), void *ctx);

/* 0, -EEXIST (public key already a peer), -EINVAL (our own key). */
int wg_peer_init(struct wg_peer *peer, struct wg_identity *id, const uint8_t pub[WG_KEY_LEN]);
/* Unlink from every table (allowed IPs included) and wipe. The memory stays the caller's. */
void wg_peer_destroy(struct wg_peer *peer);
/* NULL or all-zero clears it. */
void wg_peer_set_preshared_key(struct wg_peer *peer, const uint8_t psk[WG_KEY_LEN]);

/*
 * Build a handshake initiation (MACs included) into out; 0 on success,
 * -EALREADY if one was sent less than REKEY_TIMEOUT ago, -ENOKEY if the
 * device has no private key or the peer's key gives a zero DH.
 */
int wg_peer_create_initiation(struct wg_peer *peer, uint8_t out[WG_MSG_INITIATION_LEN],
                              uint64_t now);
/*
 * Seal one IP packet (see the layout above); len 0 makes a keepalive.
 * Returns the message length, -ENOKEY (no usable session), or -EMSGSIZE.
 */
long wg_peer_encrypt(struct wg_peer *peer, uint8_t *buf, size_t len, size_t cap, uint64_t now);
/*
 * The first half of wg_peer_encrypt: choose the session and reserve one nonce
 * (or n consecutive ones with the _n variant), updating timers as a send.
 * 0 or -ENOKEY.
 */
int wg_peer_encrypt_prepare(struct wg_peer *peer, uint64_t now, struct wg_keypair **kp,
                            uint64_t *counter);
int wg_peer_encrypt_prepare_n(struct wg_peer *peer, uint64_t now, unsigned n,
                              struct wg_keypair **kp, uint64_t *first_counter);
/* Fire due timers and collect pending actions (WG_ACT_* mask); see the top of this file. */
unsigned wg_peer_tick(struct wg_peer *peer, uint64_t now);
/* When wg_peer_tick() next needs calling: 0 if actions are pending, UINT64_MAX if never. */
uint64_t wg_peer_next_deadline(const struct wg_peer *peer);
/* True if a session can send now (no handshake needed before sending). */
bool wg_peer_has_session(const struct wg_peer *peer, uint64_t now);

enum wg_rx_action {
	WG_RX_DROP,
	WG_RX_NONE,
	WG_RX_REPLY,
	WG_RX_DATA,
};

struct wg_rx {
	enum wg_rx_action action;
	int err;              /* WG_RX_DROP: -errno reason */
	struct wg_peer *peer; /* the authenticated sender, or NULL */
	uint8_t *data;        /* WG_RX_DATA: inner packet (in the caller's buffer); REPLY: reply */
	size_t len;
	uint8_t reply[WG_MSG_MAX_HANDSHAKE_LEN]; /* storage WG_RX_REPLY points into */
};

/*
 * Process one UDP payload received from src (its IPv4/IPv6 address and
 * port feed the cookie). Data messages are decrypted in place. Returns 0,
 * or -errno with rx->action == WG_RX_DROP.
 */
int wg_receive(struct wg_identity *id, uint8_t *pkt, size_t len, const struct sockaddr *src,
               uint64_t now, struct wg_rx *rx);

/*
 * The part of wg_receive() that needs no exclusive lock, for a device that
 * takes it only when it must: drops and counts (as wg_receive() would) a
 * payload of no valid type or length, a handshake whose MAC1 is wrong and a
 * cookie reply naming no handshake or session of ours, returning
 * WG_MSG_INVALID; otherwise returns the message type, and the payload still
 * goes through wg_receive() (or, for data, wg_receive_data_open/finish).
 */
enum wg_message_type wg_receive_precheck(struct wg_identity *id, const uint8_t *pkt, size_t len);

/* A data message between wg_receive_data_open() and wg_receive_data_finish(). */
struct wg_rx_open {
	struct wg_keypair *kp;
	long plen; /* padded plaintext length */
};

/*
 * The data-message half of wg_receive() split for parallel receive (see
 * "Thread safety" above). open, under the shared device lock: find the
 * session, check its age, authenticate and decrypt in place (the expensive
 * part, no per-peer state touched). finish, with the peer's lock
 * (o->kp->entry.peer) also held: replay window, timers, cryptokey routing;
 * fills rx as wg_receive() does. finish returns -EWOULDBLOCK, changing
 * nothing, when the packet is the first on a new responder session (that
 * rotates and frees keypairs): call it again under the exclusive lock with
 * exclusive = true, which first checks that the session still exists.
 * pkt must be a message wg_message_type() calls WG_MSG_DATA.
 */
int wg_receive_data_open(struct wg_identity *id, uint8_t *pkt, size_t len, uint64_t now,
                         struct wg_rx_open *o, struct wg_rx *rx);
int wg_receive_data_finish(struct wg_identity *id, uint8_t *pkt, size_t len,
                           const struct wg_rx_open *o, bool exclusive, uint64_t now,
                           struct wg_rx *rx);

#endif
