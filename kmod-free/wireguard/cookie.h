/* SPDX-License-Identifier: MIT */
/* DoS mitigation: MAC1/MAC2 on handshake messages and the cookie reply (whitepaper 5.4.4, 5.4.7). */
#ifndef SPLICED_WG_COOKIE_H
#define SPLICED_WG_COOKIE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "messages.h"

/* Responder side: one per device (keys derived from our own static public key). */
struct wg_cookie_checker {
	uint8_t secret[WG_HASH_LEN]; /* Rm of the whitepaper, rotated every COOKIE_SECRET_MAX_AGE */
	uint64_t secret_birth;       /* monotonic ns; 0 = no secret yet */
	uint8_t message_mac1_key[WG_HASH_LEN];      /* HASH("mac1----" || S_pub_ours) */
	uint8_t cookie_encryption_key[WG_HASH_LEN]; /* HASH("cookie--" || S_pub_ours) */
};

/* Initiator side: one per peer (keys derived from the peer's static public key). */
struct wg_cookie {
	uint64_t birth; /* when the cookie was received, monotonic ns */
	bool is_valid;
	bool have_sent_mac1;
	uint8_t cookie[WG_COOKIE_LEN];
	uint8_t last_mac1_sent[WG_COOKIE_LEN];
	uint8_t cookie_decryption_key[WG_HASH_LEN];
	uint8_t message_mac1_key[WG_HASH_LEN];
};

enum wg_cookie_mac_state {
	WG_COOKIE_INVALID_MAC,
	WG_COOKIE_VALID_MAC_BUT_NO_COOKIE,
	WG_COOKIE_VALID_MAC_WITH_COOKIE,
};

void wg_cookie_checker_init(struct wg_cookie_checker *c, const uint8_t our_public[WG_KEY_LEN]);
void wg_cookie_init(struct wg_cookie *c, const uint8_t peer_public[WG_KEY_LEN]);

/*
 * Check MAC1 of a handshake message (msg/len: the whole initiation or
 * response), and MAC2 against the cookie for src (the sender's address bytes
 * then its port, network order) when check_cookie is set.
 */
enum wg_cookie_mac_state wg_cookie_validate(struct wg_cookie_checker *c, const void *msg,
                                            size_t len, const uint8_t *src, size_t srclen,
                                            bool check_cookie, uint64_t now);
/* Fill mac1 (and mac2 if we hold a fresh cookie) of an outgoing handshake message. */
void wg_cookie_add_macs(struct wg_cookie *c, void *msg, size_t len, uint64_t now);
/* Build the cookie reply to msg, whose sender_index (host order) it is addressed to. */
int wg_cookie_create_reply(struct wg_cookie_checker *c, struct wg_msg_cookie *out, const void *msg,
                           size_t len, uint32_t sender_index_le, const uint8_t *src, size_t srclen,
                           uint64_t now);
/* Decrypt a cookie reply for a handshake we sent; 0, -EINVAL (no MAC1 sent) or -EBADMSG. */
int wg_cookie_consume_reply(struct wg_cookie *c, const struct wg_msg_cookie *msg, uint64_t now);

#endif
