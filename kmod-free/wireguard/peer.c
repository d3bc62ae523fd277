/* SPDX-License-Identifier: MIT */
/* Device-facing core: identity and peers, the receive dispatcher and the send path. */
#include <errno.h>
#include <netinet/in.h>
#include <string.h>

#include "peer.h"

#define NSEC_PER_SEC 1000000000ULL

static void default_realtime(struct timespec *ts)
{
	clock_gettime(CLOCK_REALTIME, ts);
}

int wg_identity_init(struct wg_identity *id)
{
	int ret;

	memset(id, 0, sizeof(*id));
	id->random = wg_random;
	id->realtime = default_realtime;
	wg_allowedips_init(&id->allowedips);
	ret = wg_index_table_init(&id->index);
	if (ret)
		return ret;
	ret = wg_ratelimiter_init(&id->ratelimiter);
	if (ret)
		return ret;
	return wg_random(id->peer_hash_key, sizeof(id->peer_hash_key));
}

void wg_identity_destroy(struct wg_identity *id)
{
	while (id->peers)
		wg_peer_destroy(id->peers);
	wg_allowedips_free(&id->allowedips);
	wg_wipe(id, sizeof(*id));
}

/* Keyed so that peers cannot be chosen to pile up in one bucket. */
static unsigned peer_bucket(const struct wg_identity *id, const uint8_t pub[WG_KEY_LEN])
{
	uint8_t h[4];

	wg_mac(h, sizeof(h), id->peer_hash_key, sizeof(id->peer_hash_key), pub, WG_KEY_LEN);
	return wg_le32(h) & (WG_PEER_BUCKETS - 1);
}

struct wg_peer *wg_identity_lookup_peer(const struct wg_identity *id, const uint8_t pub[WG_KEY_LEN])
{
	struct wg_peer *p;

	for (p = id->peer_buckets[peer_bucket(id, pub)]; p; p = p->hash_next)
		if (wg_ct_eq(p->public_key, pub, WG_KEY_LEN))
			return p;
	return NULL;
}

int wg_identity_set_private_key(struct wg_identity *id, const uint8_t priv[WG_KEY_LEN])
{
	uint8_t pub[WG_KEY_LEN];
	struct wg_peer *p;
	int ret;

	if (!priv || wg_ct_is_zero(priv, WG_KEY_LEN)) {
		id->has_private_key = false;
		wg_wipe(id->static_private, WG_KEY_LEN);
		memset(id->static_public, 0, WG_KEY_LEN);
		goto peers;
	}
	ret = wg_x25519_public(pub, priv);
	if (ret)
		return ret;
	if (wg_identity_lookup_peer(id, pub))
		return -EEXIST; /* a peer with our own key would talk to itself */
	memcpy(id->static_private, priv, WG_KEY_LEN);
	wg_x25519_clamp(id->static_private);
	memcpy(id->static_public, pub, WG_KEY_LEN);
	id->has_private_key = true;
peers:
	wg_cookie_checker_init(&id->cookie_checker, id->static_public);
	/* Sessions made with the old key are no longer ours: start over. */
	for (p = id->peers; p; p = p->list_next) {
		wg_noise_precompute_static_static(p);
		wg_noise_handshake_clear(p);
		wg_noise_keypairs_clear(p);
	}
	return 0;
}

/*
 * Under load when the device says so, or when more than
 * WG_UNDER_LOAD_HANDSHAKES_PER_SEC handshake messages arrived within the
 * current one-second window; the state then lasts one more second (the
 * kernel keeps it for a second after its queue drains too).
 */
bool wg_identity_under_load(struct wg_identity *id, uint64_t now)
{
	if (now - id->load_window_start >= NSEC_PER_SEC || !id->load_window_start) {
		id->load_window_start = now ? now : 1;
		id->load_window_count = 0;
	}
	if (++id->load_window_count > WG_UNDER_LOAD_HANDSHAKES_PER_SEC)
		id->under_load_until = now + NSEC_PER_SEC;
	return id->force_under_load || now < id->under_load_until;
}

uint64_t wg_identity_tick(struct wg_identity *id, uint64_t now,
                          void (*fn)(void *ctx, struct wg_peer *peer, unsigned actions), void *ctx)
{
	uint64_t next = UINT64_MAX, d;
	struct wg_peer *p, *n;
	unsigned a;

	for (p = id->peers; p; p = n) {
		n = p->list_next; /* fn may destroy p */
		a = wg_peer_tick(p, now);
		d = wg_peer_next_deadline(p);
		if (a && fn)
			fn(ctx, p, a);
		if (d < next)
			next = d;
	}
	return next;
}

int wg_peer_init(struct wg_peer *peer, struct wg_identity *id, const uint8_t pub[WG_KEY_LEN])
{
	uint64_t seed;
	unsigned b;
	int ret;

	memset(peer, 0, sizeof(*peer));
	if (id->has_private_key && wg_ct_eq(pub, id->static_public, WG_KEY_LEN))
		return -EINVAL;
	if (wg_identity_lookup_peer(id, pub))
		return -EEXIST;
	ret = wg_random(&seed, sizeof(seed));
	if (ret)
		return ret;
	peer->id = id;
	memcpy(peer->public_key, pub, WG_KEY_LEN);
	memcpy(peer->handshake.remote_static, pub, WG_KEY_LEN);
	peer->handshake.entry.peer = peer;
	peer->handshake.entry.type = WG_INDEX_HANDSHAKE;
	wg_noise_precompute_static_static(peer);
	wg_cookie_init(&peer->cookie, pub);
	wg_timers_init(&peer->timers, seed);

	b = peer_bucket(id, pub);
	peer->hash_next = id->peer_buckets[b];
	id->peer_buckets[b] = peer;
	peer->list_next = id->peers;
	if (id->peers)
		id->peers->list_prev = peer;
	id->peers = peer;
	id->npeers++;
	return 0;
}

void wg_peer_destroy(struct wg_peer *peer)
{
	struct wg_identity *id = peer->id;
	struct wg_peer **pp;

	if (!id)
		return;
	wg_noise_handshake_clear(peer);
	wg_noise_keypairs_clear(peer);
	wg_allowedips_remove_by_peer(&id->allowedips, peer);
	for (pp = &id->peer_buckets[peer_bucket(id, peer->public_key)]; *pp;
	     pp = &(*pp)->hash_next) {
		if (*pp == peer) {
			*pp = peer->hash_next;
			break;
		}
	}
	if (peer->list_prev)
		peer->list_prev->list_next = peer->list_next;
	else
		id->peers = peer->list_next;
	if (peer->list_next)
		peer->list_next->list_prev = peer->list_prev;
	id->npeers--;
	wg_wipe(peer, sizeof(*peer));
}

void wg_peer_set_preshared_key(struct wg_peer *peer, const uint8_t psk[WG_KEY_LEN])
{
	if (psk)
		memcpy(peer->handshake.preshared_key, psk, WG_KEY_LEN);
	else
		wg_wipe(peer->handshake.preshared_key, WG_KEY_LEN);
}

int wg_peer_create_initiation(struct wg_peer *peer, uint8_t out[WG_MSG_INITIATION_LEN],
                              uint64_t now)
{
	struct wg_msg_initiation *msg = (struct wg_msg_initiation *)out;
	int ret;

	/* At most one initiation per REKEY_TIMEOUT (retries come exactly that far apart). */
	if (peer->last_sent_handshake &&
	    now < peer->last_sent_handshake + WG_REKEY_TIMEOUT * NSEC_PER_SEC)
		return -EALREADY;
	if (!peer->timers.retry)
		peer->timers.handshake_attempts = 0;
	peer->timers.retry = false;
	ret = wg_noise_create_initiation(peer, msg, now);
	if (ret)
		return ret;
	wg_cookie_add_macs(&peer->cookie, msg, sizeof(*msg), now);
	peer->last_sent_handshake = now ? now : 1;
	peer->tx_bytes += sizeof(*msg);
	wg_timers_any_authenticated_packet_traversal(&peer->timers, now);
	wg_timers_any_authenticated_packet_sent(&peer->timers, now);
	wg_timers_handshake_initiated(&peer->timers, now);
	return 0;
}

static bool keypair_can_send(const struct wg_keypair *kp, uint64_t now)
{
	return kp && now < kp->birth + WG_REJECT_AFTER_TIME * NSEC_PER_SEC &&
	       kp->send_counter < WG_REJECT_AFTER_MESSAGES;
}

bool wg_peer_has_session(const struct wg_peer *peer, uint64_t now)
{
	return keypair_can_send(peer->keypairs.current, now);
}

/* Rekey as initiator after REKEY_AFTER_TIME, or after REKEY_AFTER_MESSAGES either way. */
static void keep_key_fresh_send(struct wg_peer *peer, uint64_t now)
{
	const struct wg_keypair *kp = peer->keypairs.current;

	if (kp && (kp->send_counter > WG_REKEY_AFTER_MESSAGES ||
	           (kp->initiator && now >= kp->birth + WG_REKEY_AFTER_TIME * NSEC_PER_SEC)))
		peer->pending_actions |= WG_ACT_SEND_INITIATION;
}

static int prepare(struct wg_peer *peer, uint64_t now, unsigned n, bool data,
                   struct wg_keypair **kp_out, uint64_t *counter)
{
	struct wg_keypair *kp = peer->keypairs.current;

	if (!keypair_can_send(kp, now) || WG_REJECT_AFTER_MESSAGES - kp->send_counter < n) {
		peer->pending_actions |= WG_ACT_SEND_INITIATION;
		return -ENOKEY;
	}
	*counter = kp->send_counter;
	kp->send_counter += n;
	*kp_out = kp;
	wg_timers_any_authenticated_packet_traversal(&peer->timers, now);
	wg_timers_any_authenticated_packet_sent(&peer->timers, now);
	if (data)
		wg_timers_data_sent(&peer->timers, now);
	keep_key_fresh_send(peer, now);
	return 0;
}

int wg_peer_encrypt_prepare(struct wg_peer *peer, uint64_t now, struct wg_keypair **kp,
                            uint64_t *counter)
{
	return prepare(peer, now, 1, true, kp, counter);
}

int wg_peer_encrypt_prepare_n(struct wg_peer *peer, uint64_t now, unsigned n,
                              struct wg_keypair **kp, uint64_t *first_counter)
{
	return prepare(peer, now, n, true, kp, first_counter);
}

long wg_peer_encrypt(struct wg_peer *peer, uint8_t *buf, size_t len, size_t cap, uint64_t now)
{
	struct wg_keypair *kp;
	uint64_t counter;
	long n;
	int ret;

	/* Check room before reserving a nonce. */
	if (cap < WG_MSG_DATA_HEADER_LEN + wg_data_padded_len(len, peer->id->mtu) + WG_AEAD_TAG_LEN)
		return -EMSGSIZE;
	ret = prepare(peer, now, 1, len != 0, &kp, &counter);
	if (ret)
		return ret;
	n = wg_keypair_seal(kp, counter, buf, len, cap, peer->id->mtu);
	if (n > 0) {
		peer->tx_bytes += (uint64_t)n;
		peer->id->stats.tx_data_packets++;
	}
	return n;
}

unsigned wg_peer_tick(struct wg_peer *peer, uint64_t now)
{
	unsigned t = wg_timers_tick(&peer->timers, now), a = peer->pending_actions;

	peer->pending_actions = 0;
	if (t & WG_TIMER_ZERO_KEYS) {
		wg_noise_handshake_clear(peer);
		wg_noise_keypairs_clear(peer);
		a |= WG_ACT_KEYS_ZEROED;
	}
	if (t & WG_TIMER_SEND_INITIATION)
		a |= WG_ACT_SEND_INITIATION;
	if (t & WG_TIMER_SEND_KEEPALIVE)
		a |= WG_ACT_SEND_KEEPALIVE;
	if (t & WG_TIMER_GIVE_UP)
		a |= WG_ACT_DROP_QUEUE;
	return a;
}

uint64_t wg_peer_next_deadline(const struct wg_peer *peer)
{
	return peer->pending_actions ? 0 : wg_timers_next_deadline(&peer->timers);
}
