/* SPDX-License-Identifier: MIT */
/* MAC1/MAC2 and cookie replies: WireGuard's answer to handshake floods (whitepaper 5.4.4, 5.4.7). */
#include <errno.h>
#include <string.h>

#include "cookie.h"
#include "crypto.h"

#define NSEC_PER_SEC 1000000000ULL

static const char mac1_label[8] = "mac1----";
static const char cookie_label[8] = "cookie--";

/* mac1 covers the message up to mac1; mac2 covers it up to mac2. */
enum {
	MACS_LEN = sizeof(struct wg_msg_macs),
	MAC2_LEN = WG_COOKIE_LEN,
};

static void derive_key(uint8_t out[WG_HASH_LEN], const char label[8], const uint8_t pub[WG_KEY_LEN])
{
	wg_hash2(out, label, 8, pub, WG_KEY_LEN);
}

void wg_cookie_checker_init(struct wg_cookie_checker *c, const uint8_t our_public[WG_KEY_LEN])
{
	wg_wipe(c, sizeof(*c));
	derive_key(c->message_mac1_key, mac1_label, our_public);
	derive_key(c->cookie_encryption_key, cookie_label, our_public);
}

void wg_cookie_init(struct wg_cookie *c, const uint8_t peer_public[WG_KEY_LEN])
{
	wg_wipe(c, sizeof(*c));
	derive_key(c->message_mac1_key, mac1_label, peer_public);
	derive_key(c->cookie_decryption_key, cookie_label, peer_public);
}

/* Cookie = MAC(Rm, A): Rm a random secret changing every two minutes, A the source address. */
static int make_cookie(struct wg_cookie_checker *c, uint8_t cookie[WG_COOKIE_LEN],
                       const uint8_t *src, size_t srclen, uint64_t now)
{
	int ret;

	if (!c->secret_birth || now - c->secret_birth > WG_COOKIE_SECRET_MAX_AGE * NSEC_PER_SEC) {
		ret = wg_random(c->secret, sizeof(c->secret));
		if (ret)
			return ret;
		c->secret_birth = now ? now : 1;
	}
	wg_mac(cookie, WG_COOKIE_LEN, c->secret, sizeof(c->secret), src, srclen);
	return 0;
}

enum wg_cookie_mac_state wg_cookie_validate(struct wg_cookie_checker *c, const void *msg,
                                            size_t len, const uint8_t *src, size_t srclen,
                                            bool check_cookie, uint64_t now)
{
	const struct wg_msg_macs *macs = (const void *)((const uint8_t *)msg + len - MACS_LEN);
	uint8_t computed[WG_COOKIE_LEN], cookie[WG_COOKIE_LEN];
	enum wg_cookie_mac_state state = WG_COOKIE_INVALID_MAC;

	if (len < MACS_LEN)
		return WG_COOKIE_INVALID_MAC;
	/* msg.mac1 = MAC(HASH(LABEL_MAC1 || S_pub_responder), msg[0:offsetof(mac1)]) */
	wg_mac(computed, WG_COOKIE_LEN, c->message_mac1_key, WG_HASH_LEN, msg, len - MACS_LEN);
	if (!wg_ct_eq(computed, macs->mac1, WG_COOKIE_LEN))
		goto out;
	state = WG_COOKIE_VALID_MAC_BUT_NO_COOKIE;
	if (!check_cookie)
		goto out;
	/* msg.mac2 = MAC(cookie, msg[0:offsetof(mac2)]) */
	if (make_cookie(c, cookie, src, srclen, now))
		goto out;
	wg_mac(computed, WG_COOKIE_LEN, cookie, WG_COOKIE_LEN, msg, len - MAC2_LEN);
	if (wg_ct_eq(computed, macs->mac2, WG_COOKIE_LEN))
		state = WG_COOKIE_VALID_MAC_WITH_COOKIE;
out:
	wg_wipe(cookie, sizeof(cookie));
	return state;
}

void wg_cookie_add_macs(struct wg_cookie *c, void *msg, size_t len, uint64_t now)
{
	struct wg_msg_macs *macs = (void *)((uint8_t *)msg + len - MACS_LEN);

	wg_mac(macs->mac1, WG_COOKIE_LEN, c->message_mac1_key, WG_HASH_LEN, msg, len - MACS_LEN);
	memcpy(c->last_mac1_sent, macs->mac1, WG_COOKIE_LEN);
	c->have_sent_mac1 = true;
	/* Use the cookie only while the responder surely still has the secret it came from. */
	if (c->is_valid &&
	    now - c->birth < (WG_COOKIE_SECRET_MAX_AGE - WG_COOKIE_SECRET_LATENCY) * NSEC_PER_SEC)
		wg_mac(macs->mac2, WG_COOKIE_LEN, c->cookie, WG_COOKIE_LEN, msg, len - MAC2_LEN);
	else
		memset(macs->mac2, 0, WG_COOKIE_LEN);
}

int wg_cookie_create_reply(struct wg_cookie_checker *c, struct wg_msg_cookie *out, const void *msg,
                           size_t len, uint32_t sender_index_le, const uint8_t *src, size_t srclen,
                           uint64_t now)
{
	const struct wg_msg_macs *macs = (const void *)((const uint8_t *)msg + len - MACS_LEN);
	uint8_t cookie[WG_COOKIE_LEN];
	int ret;

	if (len < MACS_LEN)
		return -EINVAL;
	wg_put_le32(&out->header.type, WG_MSG_HANDSHAKE_COOKIE);
	wg_put_le32(&out->receiver_index, sender_index_le);
	ret = wg_random(out->nonce, sizeof(out->nonce));
	if (ret)
		return ret;
	ret = make_cookie(c, cookie, src, srclen, now);
	if (ret)
		return ret;
	/* encrypted_cookie = XAEAD(HASH(LABEL_COOKIE || S_pub_responder), nonce, cookie, msg.mac1) */
	wg_xaead_seal(out->encrypted_cookie, cookie, WG_COOKIE_LEN, macs->mac1, WG_COOKIE_LEN,
	              out->nonce, c->cookie_encryption_key);
	wg_wipe(cookie, sizeof(cookie));
	return 0;
}

int wg_cookie_consume_reply(struct wg_cookie *c, const struct wg_msg_cookie *msg, uint64_t now)
{
	uint8_t cookie[WG_COOKIE_LEN];

	/* Only a reply bound to the mac1 we last sent is accepted (the AD below). */
	if (!c->have_sent_mac1)
		return -EINVAL;
	if (!wg_xaead_open(cookie, msg->encrypted_cookie, sizeof(msg->encrypted_cookie),
	                   c->last_mac1_sent, WG_COOKIE_LEN, msg->nonce,
	                   c->cookie_decryption_key)) {
		wg_wipe(cookie, sizeof(cookie));
		return -EBADMSG;
	}
	memcpy(c->cookie, cookie, WG_COOKIE_LEN);
	c->birth = now;
	c->is_valid = true;
	c->have_sent_mac1 = false;
	wg_wipe(cookie, sizeof(cookie));
	return 0;
}
