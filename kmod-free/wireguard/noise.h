/* SPDX-License-Identifier: MIT */
/* The Noise_IKpsk2 handshake of WireGuard and the keypairs it yields (whitepaper 5.4). */
#ifndef SPLICED_WG_NOISE_H
#define SPLICED_WG_NOISE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "counter.h"
#include "index.h"
#include "messages.h"

struct wg_peer;
struct wg_identity;

enum wg_handshake_state {
	WG_HANDSHAKE_ZEROED,
	WG_HANDSHAKE_CREATED_INITIATION,
	WG_HANDSHAKE_CONSUMED_INITIATION,
	WG_HANDSHAKE_CREATED_RESPONSE,
	WG_HANDSHAKE_CONSUMED_RESPONSE,
};

/* One per peer: the in-progress handshake and the long-term per-peer secrets. */
struct wg_handshake {
	struct wg_index_entry entry; /* our sender index while a handshake is in flight */
	enum wg_handshake_state state;
	uint32_t remote_index; /* host order (wg_le32() of the wire field) */
	uint8_t hash[WG_HASH_LEN];
	uint8_t chaining_key[WG_HASH_LEN];
	uint8_t ephemeral_private[WG_KEY_LEN];
	uint8_t remote_ephemeral[WG_KEY_LEN];
	uint8_t remote_static[WG_KEY_LEN];
	uint8_t precomputed_static_static
	        [WG_KEY_LEN]; /* DH(S_priv_ours, S_pub_peer); zero if invalid */
	uint8_t preshared_key[WG_KEY_LEN];
	uint8_t latest_timestamp[WG_TAI64N_LEN]; /* greatest TAI64N accepted from this peer */
	uint64_t last_initiation_consumption;    /* monotonic ns, for the per-peer flood limit */
};

/*
 * A session: keys derived at the end of a handshake. Allocated when the
 * session begins (handshake path), freed when it rotates out; the data path
 * only reads keys and bumps counters.
 */
struct wg_keypair {
	struct wg_index_entry entry; /* our receiver index for this session */
	uint32_t remote_index;       /* host order: goes in our data messages */
	bool initiator;
	uint64_t birth; /* monotonic ns */
	uint64_t send_counter;
	uint8_t send_key[WG_KEY_LEN];
	uint8_t recv_key[WG_KEY_LEN];
	struct wg_counter replay;
};

/* current: used to send; previous: still accepted on receive; next: responder's unconfirmed. */
struct wg_keypairs {
	struct wg_keypair *current;
	struct wg_keypair *previous;
	struct wg_keypair *next;
};

/* Recompute DH(S_priv, S_pub_peer) after the device key or the peer changed. */
void wg_noise_precompute_static_static(struct wg_peer *peer);
/* Handshake messages without MACs (the cookie module adds those). 0 or -errno. */
int wg_noise_create_initiation(struct wg_peer *peer, struct wg_msg_initiation *msg, uint64_t now);
struct wg_peer *wg_noise_consume_initiation(struct wg_identity *id,
                                            const struct wg_msg_initiation *msg, uint64_t now);
int wg_noise_create_response(struct wg_peer *peer, struct wg_msg_response *msg, uint64_t now);
struct wg_peer *wg_noise_consume_response(struct wg_identity *id, const struct wg_msg_response *msg,
                                          uint64_t now);
/* Derive the transport keys from a finished handshake and rotate them in. */
int wg_noise_begin_session(struct wg_peer *peer, uint64_t now);
void wg_noise_handshake_clear(struct wg_peer *peer);
void wg_noise_keypairs_clear(struct wg_peer *peer);
/* The initiator confirmed the responder's session by using it: next becomes current. */
bool wg_noise_received_with_keypair(struct wg_peer *peer, struct wg_keypair *kp);

/*
 * Data messages (in place, no allocation). seal: the plaintext is at
 * buf + WG_MSG_DATA_HEADER_LEN, len bytes; it is zero padded to a multiple of
 * 16 (not past mtu when mtu != 0) and sealed with nonce counter; the header
 * is written at buf. cap is the size of buf. Returns the message length or
 * -EMSGSIZE. open: msg/len is a whole data message; on success returns the
 * (padded) plaintext length, plaintext at msg + WG_MSG_DATA_HEADER_LEN.
 * Both are pure in the keypair (no counters touched), so a device may run
 * them on several threads once it has reserved the nonces.
 */
/* Plaintext length after padding: a multiple of 16, capped at mtu (0 = no cap). */
size_t wg_data_padded_len(size_t len, size_t mtu);
long wg_keypair_seal(const struct wg_keypair *kp, uint64_t counter, uint8_t *buf, size_t len,
                     size_t cap, size_t mtu);
long wg_keypair_open(const struct wg_keypair *kp, uint8_t *msg, size_t len);

#endif
