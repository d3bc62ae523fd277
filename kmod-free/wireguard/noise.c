/* SPDX-License-Identifier: MIT */
/* Noise_IKpsk2_25519_ChaChaPoly_BLAKE2s handshake and session keys (whitepaper 5.4.2-5.4.5). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "crypto.h"
#include "noise.h"
#include "peer.h"

static const char construction[] = "Noise_IKpsk2_25519_ChaChaPoly_BLAKE2s";
static const char identifier[] = "WireGuard v1 zx2c4 Jason@zx2c4.com";

/* Ci = HASH(CONSTRUCTION); Hi = HASH(Ci || IDENTIFIER); h = HASH(Hi || S_pub_responder). */
static void handshake_init(uint8_t ck[WG_HASH_LEN], uint8_t h[WG_HASH_LEN],
                           const uint8_t responder_static[WG_KEY_LEN])
{
	wg_hash(ck, construction, sizeof(construction) - 1);
	wg_hash2(h, ck, WG_HASH_LEN, identifier, sizeof(identifier) - 1);
	wg_hash2(h, h, WG_HASH_LEN, responder_static, WG_KEY_LEN);
}

static void mix_hash(uint8_t h[WG_HASH_LEN], const void *in, size_t len)
{
	wg_hash2(h, h, WG_HASH_LEN, in, len);
}

/* ck = KDF1(ck, e_pub); h = HASH(h || e_pub): the "e" token. */
static void mix_ephemeral(uint8_t ck[WG_HASH_LEN], uint8_t h[WG_HASH_LEN],
                          const uint8_t e_pub[WG_KEY_LEN])
{
	wg_kdf(ck, NULL, NULL, ck, e_pub, WG_KEY_LEN);
	mix_hash(h, e_pub, WG_KEY_LEN);
}

/*
 * The "e" token on the sending side of both handshake messages: a fresh
 * clamped ephemeral key pair, its public half written to the message (out)
 * and mixed into ck and h. 0 or -errno.
 */
static int new_ephemeral(struct wg_identity *id, struct wg_handshake *hs, uint8_t out[WG_KEY_LEN])
{
	int ret = id->random(hs->ephemeral_private, WG_KEY_LEN);

	if (ret)
		return ret;
	wg_x25519_clamp(hs->ephemeral_private);
	ret = wg_x25519_public(out, hs->ephemeral_private);
	if (ret)
		return ret;
	mix_ephemeral(hs->chaining_key, hs->hash, out);
	return 0;
}

/* (ck, key) = KDF2(ck, DH(priv, pub)): the es/ss/ee/se tokens. key may be NULL (KDF1). */
static int mix_dh(uint8_t ck[WG_HASH_LEN], uint8_t *key, const uint8_t priv[WG_KEY_LEN],
                  const uint8_t pub[WG_KEY_LEN])
{
	uint8_t dh[WG_KEY_LEN];
	int ret = wg_x25519(dh, priv, pub);

	if (ret == 0)
		wg_kdf(ck, key, NULL, ck, dh, WG_KEY_LEN);
	wg_wipe(dh, sizeof(dh));
	return ret;
}

/* The same with a precomputed DH result (ss), rejecting the all-zero "invalid" marker. */
static int mix_precomputed(uint8_t ck[WG_HASH_LEN], uint8_t key[WG_KEY_LEN],
                           const uint8_t dh[WG_KEY_LEN])
{
	if (wg_ct_is_zero(dh, WG_KEY_LEN))
		return -EINVAL;
	wg_kdf(ck, key, NULL, ck, dh, WG_KEY_LEN);
	return 0;
}

/* msg = AEAD(key, 0, plain, h); h = HASH(h || msg). */
static void seal_and_hash(uint8_t *dst, const uint8_t *plain, size_t len,
                          const uint8_t key[WG_KEY_LEN], uint8_t h[WG_HASH_LEN])
{
	wg_aead_seal(dst, plain, len, h, WG_HASH_LEN, 0, key);
	mix_hash(h, dst, len + WG_AEAD_TAG_LEN);
}

static bool open_and_hash(uint8_t *dst, const uint8_t *src, size_t len,
                          const uint8_t key[WG_KEY_LEN], uint8_t h[WG_HASH_LEN])
{
	if (!wg_aead_open(dst, src, len, h, WG_HASH_LEN, 0, key))
		return false;
	mix_hash(h, src, len);
	return true;
}

void wg_noise_precompute_static_static(struct wg_peer *peer)
{
	struct wg_handshake *hs = &peer->handshake;

	if (!peer->id->has_private_key ||
	    wg_x25519(hs->precomputed_static_static, peer->id->static_private, hs->remote_static))
		memset(hs->precomputed_static_static, 0, WG_KEY_LEN);
}

void wg_noise_handshake_clear(struct wg_peer *peer)
{
	struct wg_handshake *hs = &peer->handshake;

	wg_index_remove(&peer->id->index, &hs->entry);
	wg_wipe(hs->hash, sizeof(hs->hash));
	wg_wipe(hs->chaining_key, sizeof(hs->chaining_key));
	wg_wipe(hs->ephemeral_private, sizeof(hs->ephemeral_private));
	wg_wipe(hs->remote_ephemeral, sizeof(hs->remote_ephemeral));
	hs->remote_index = 0;
	hs->state = WG_HANDSHAKE_ZEROED;
}

int wg_noise_create_initiation(struct wg_peer *peer, struct wg_msg_initiation *msg, uint64_t now)
{
	struct wg_identity *id = peer->id;
	struct wg_handshake *hs = &peer->handshake;
	uint8_t key[WG_KEY_LEN], ts[WG_TAI64N_LEN];
	struct timespec rt;
	int ret;

	(void)now;
	if (!id->has_private_key || wg_ct_is_zero(hs->precomputed_static_static, WG_KEY_LEN))
		return -ENOKEY;
	wg_noise_handshake_clear(peer);
	handshake_init(hs->chaining_key, hs->hash, hs->remote_static);
	wg_put_le32(&msg->header.type, WG_MSG_HANDSHAKE_INITIATION);

	/* e: a fresh ephemeral, sent in the clear */
	ret = new_ephemeral(id, hs, msg->unencrypted_ephemeral);
	if (ret)
		goto out;

	/* es: DH(E_priv_i, S_pub_r) */
	ret = mix_dh(hs->chaining_key, key, hs->ephemeral_private, hs->remote_static);
	if (ret)
		goto out;
	/* s: our static public key, encrypted */
	seal_and_hash(msg->encrypted_static, id->static_public, WG_KEY_LEN, key, hs->hash);

	/* ss: DH(S_priv_i, S_pub_r), precomputed */
	ret = mix_precomputed(hs->chaining_key, key, hs->precomputed_static_static);
	if (ret)
		goto out;
	/* {t}: TAI64N timestamp, so the responder can refuse replays */
	id->realtime(&rt);
	wg_tai64n(ts, &rt);
	seal_and_hash(msg->encrypted_timestamp, ts, WG_TAI64N_LEN, key, hs->hash);

	hs->entry.peer = peer;
	hs->entry.type = WG_INDEX_HANDSHAKE;
	ret = wg_index_insert(&id->index, &hs->entry);
	if (ret)
		goto out;
	wg_put_le32(&msg->sender_index, hs->entry.index);
	hs->state = WG_HANDSHAKE_CREATED_INITIATION;
out:
	if (ret)
		wg_noise_handshake_clear(peer);
	wg_wipe(key, sizeof(key));
	return ret;
}

struct wg_peer *wg_noise_consume_initiation(struct wg_identity *id,
                                            const struct wg_msg_initiation *msg, uint64_t now)
{
	uint8_t ck[WG_HASH_LEN], h[WG_HASH_LEN], key[WG_KEY_LEN];
	uint8_t s[WG_KEY_LEN], t[WG_TAI64N_LEN];
	struct wg_peer *peer = NULL, *found;
	struct wg_handshake *hs;
	bool replay, flood;

	if (!id->has_private_key)
		return NULL;
	handshake_init(ck, h, id->static_public);

	/* e */
	mix_ephemeral(ck, h, msg->unencrypted_ephemeral);
	/* es: DH(S_priv_r, E_pub_i) */
	if (mix_dh(ck, key, id->static_private, msg->unencrypted_ephemeral))
		goto out;
	/* s */
	if (!open_and_hash(s, msg->encrypted_static, sizeof(msg->encrypted_static), key, h))
		goto out;
	found = wg_identity_lookup_peer(id, s);
	if (!found)
		goto out;
	hs = &found->handshake;
	/* ss */
	if (mix_precomputed(ck, key, hs->precomputed_static_static))
		goto out;
	/* {t} */
	if (!open_and_hash(t, msg->encrypted_timestamp, sizeof(msg->encrypted_timestamp), key, h))
		goto out;

	/*
	 * An initiation must carry a timestamp newer than any before (else it
	 * is a replay, which could otherwise make us drop a live session), and
	 * one peer gets at most INITIATIONS_PER_SECOND of our DH work. Both
	 * values are public, so plain comparisons are fine here.
	 */
	replay = memcmp(t, hs->latest_timestamp, WG_TAI64N_LEN) <= 0;
	flood = hs->last_initiation_consumption &&
	        now < hs->last_initiation_consumption + 1000000000ULL / WG_INITIATIONS_PER_SECOND;
	if (replay || flood)
		goto out;

	wg_noise_handshake_clear(found);
	memcpy(hs->remote_ephemeral, msg->unencrypted_ephemeral, WG_KEY_LEN);
	memcpy(hs->latest_timestamp, t, WG_TAI64N_LEN);
	memcpy(hs->hash, h, WG_HASH_LEN);
	memcpy(hs->chaining_key, ck, WG_HASH_LEN);
	hs->remote_index = wg_le32(&msg->sender_index);
	hs->last_initiation_consumption = now ? now : 1;
	hs->state = WG_HANDSHAKE_CONSUMED_INITIATION;
	peer = found;
out:
	wg_wipe(ck, sizeof(ck));
	wg_wipe(h, sizeof(h));
	wg_wipe(key, sizeof(key));
	wg_wipe(s, sizeof(s));
	return peer;
}

int wg_noise_create_response(struct wg_peer *peer, struct wg_msg_response *msg, uint64_t now)
{
	struct wg_handshake *hs = &peer->handshake;
	uint8_t key[WG_KEY_LEN], tau[WG_HASH_LEN];
	int ret = -EINVAL;

	(void)now;
	if (hs->state != WG_HANDSHAKE_CONSUMED_INITIATION)
		return -EINVAL;
	wg_put_le32(&msg->header.type, WG_MSG_HANDSHAKE_RESPONSE);
	wg_put_le32(&msg->receiver_index, hs->remote_index);

	/* e */
	ret = new_ephemeral(peer->id, hs, msg->unencrypted_ephemeral);
	if (ret)
		goto out;
	/* ee: DH(E_priv_r, E_pub_i) */
	ret = mix_dh(hs->chaining_key, NULL, hs->ephemeral_private, hs->remote_ephemeral);
	if (ret)
		goto out;
	/* se: DH(E_priv_r, S_pub_i) */
	ret = mix_dh(hs->chaining_key, NULL, hs->ephemeral_private, hs->remote_static);
	if (ret)
		goto out;
	/* psk: (ck, tau, key) = KDF3(ck, Q); h = HASH(h || tau) */
	wg_kdf(hs->chaining_key, tau, key, hs->chaining_key, hs->preshared_key, WG_KEY_LEN);
	mix_hash(hs->hash, tau, WG_HASH_LEN);
	/* {}: an empty AEAD proving we hold every key so far */
	seal_and_hash(msg->encrypted_nothing, NULL, 0, key, hs->hash);

	hs->entry.peer = peer;
	hs->entry.type = WG_INDEX_HANDSHAKE;
	ret = wg_index_insert(&peer->id->index, &hs->entry);
	if (ret)
		goto out;
	wg_put_le32(&msg->sender_index, hs->entry.index);
	hs->state = WG_HANDSHAKE_CREATED_RESPONSE;
out:
	if (ret)
		wg_noise_handshake_clear(peer);
	wg_wipe(key, sizeof(key));
	wg_wipe(tau, sizeof(tau));
	return ret;
}

struct wg_peer *wg_noise_consume_response(struct wg_identity *id, const struct wg_msg_response *msg,
                                          uint64_t now)
{
	uint8_t ck[WG_HASH_LEN], h[WG_HASH_LEN], key[WG_KEY_LEN], tau[WG_HASH_LEN];
	struct wg_index_entry *e;
	struct wg_handshake *hs;
	struct wg_peer *peer = NULL;

	(void)now;
	e = wg_index_lookup(&id->index, wg_le32(&msg->receiver_index), WG_INDEX_HANDSHAKE);
	if (!e)
		return NULL;
	hs = &e->peer->handshake;
	if (hs->state != WG_HANDSHAKE_CREATED_INITIATION)
		return NULL;
	/* Work on copies: a forged response must not disturb the pending handshake. */
	memcpy(ck, hs->chaining_key, WG_HASH_LEN);
	memcpy(h, hs->hash, WG_HASH_LEN);

	/* e */
	mix_ephemeral(ck, h, msg->unencrypted_ephemeral);
	/* ee: DH(E_priv_i, E_pub_r) */
	if (mix_dh(ck, NULL, hs->ephemeral_private, msg->unencrypted_ephemeral))
		goto out;
	/* se: DH(S_priv_i, E_pub_r) */
	if (mix_dh(ck, NULL, id->static_private, msg->unencrypted_ephemeral))
		goto out;
	/* psk */
	wg_kdf(ck, tau, key, ck, hs->preshared_key, WG_KEY_LEN);
	mix_hash(h, tau, WG_HASH_LEN);
	/* {} */
	if (!open_and_hash(NULL, msg->encrypted_nothing, sizeof(msg->encrypted_nothing), key, h))
		goto out;

	memcpy(hs->remote_ephemeral, msg->unencrypted_ephemeral, WG_KEY_LEN);
	memcpy(hs->hash, h, WG_HASH_LEN);
	memcpy(hs->chaining_key, ck, WG_HASH_LEN);
	hs->remote_index = wg_le32(&msg->sender_index);
	hs->state = WG_HANDSHAKE_CONSUMED_RESPONSE;
	peer = e->peer;
out:
	wg_wipe(ck, sizeof(ck));
	wg_wipe(h, sizeof(h));
	wg_wipe(key, sizeof(key));
	wg_wipe(tau, sizeof(tau));
	return peer;
}

static void keypair_free(struct wg_peer *peer, struct wg_keypair *kp)
{
	if (!kp)
		return;
	wg_index_remove(&peer->id->index, &kp->entry);
	wg_wipe(kp, sizeof(*kp));
	free(kp);
}

void wg_noise_keypairs_clear(struct wg_peer *peer)
{
	struct wg_keypairs *k = &peer->keypairs;

	keypair_free(peer, k->previous);
	keypair_free(peer, k->current);
	keypair_free(peer, k->next);
	k->previous = k->current = k->next = NULL;
}

/*
 * The initiator may use a new session at once (the response proved the
 * responder has it). The responder must wait for the initiator's first data
 * message on it, so its new session waits in "next".
 */
static void add_new_keypair(struct wg_peer *peer, struct wg_keypair *kp)
{
	struct wg_keypairs *k = &peer->keypairs;

	if (kp->initiator) {
		if (k->next) {
			/* An unconfirmed responder session is kept as previous, like the kernel. */
			keypair_free(peer, k->previous);
			keypair_free(peer, k->current);
			k->previous = k->next;
			k->next = NULL;
		} else {
			keypair_free(peer, k->previous);
			k->previous = k->current;
		}
		k->current = kp;
	} else {
		keypair_free(peer, k->next);
		keypair_free(peer, k->previous);
		k->previous = NULL;
		k->next = kp;
	}
}

bool wg_noise_received_with_keypair(struct wg_peer *peer, struct wg_keypair *kp)
{
	struct wg_keypairs *k = &peer->keypairs;

	if (!kp || k->next != kp)
		return false;
	keypair_free(peer, k->previous);
	k->previous = k->current;
	k->current = kp;
	k->next = NULL;
	return true;
}

int wg_noise_begin_session(struct wg_peer *peer, uint64_t now)
{
	struct wg_handshake *hs = &peer->handshake;
	struct wg_keypair *kp;
	bool initiator;

	if (hs->state == WG_HANDSHAKE_CONSUMED_RESPONSE)
		initiator = true;
	else if (hs->state == WG_HANDSHAKE_CREATED_RESPONSE)
		initiator = false;
	else
		return -EINVAL;
	kp = calloc(1, sizeof(*kp));
	if (!kp)
		return -ENOMEM;
	/* (T_send_i = T_recv_r, T_recv_i = T_send_r) = KDF2(ck, empty) */
	if (initiator)
		wg_kdf(kp->send_key, kp->recv_key, NULL, hs->chaining_key, NULL, 0);
	else
		wg_kdf(kp->recv_key, kp->send_key, NULL, hs->chaining_key, NULL, 0);
	kp->initiator = initiator;
	kp->birth = now;
	kp->remote_index = hs->remote_index;
	wg_counter_init(&kp->replay);
	kp->entry.peer = peer;
	kp->entry.type = WG_INDEX_KEYPAIR;
	/* The session keeps the index we announced during the handshake. */
	wg_index_replace(&peer->id->index, &hs->entry, &kp->entry);
	wg_noise_handshake_clear(peer);
	add_new_keypair(peer, kp);
	return 0;
}

size_t wg_data_padded_len(size_t len, size_t mtu)
{
	size_t padded = (len + WG_MSG_PADDING - 1) & ~(size_t)(WG_MSG_PADDING - 1);

	/* Pad to 16 to blur lengths, but never past the MTU (the kernel's rule). */
	if (mtu && padded > mtu)
		padded = len > mtu ? len : mtu;
	return padded;
}

long wg_keypair_seal(const struct wg_keypair *kp, uint64_t counter, uint8_t *buf, size_t len,
                     size_t cap, size_t mtu)
{
	/*
	 * Byte offsets, not struct members: inside a UDP GRO train a message
	 * starts wherever the previous one ended (1452 bytes at MTU 1420 is not
	 * a multiple of 8), so struct wg_msg_data may be misaligned.
	 */
	uint8_t *data = buf + WG_MSG_DATA_HEADER_LEN;
	size_t padded = wg_data_padded_len(len, mtu);

	if (cap < WG_MSG_DATA_HEADER_LEN + padded + WG_AEAD_TAG_LEN)
		return -EMSGSIZE;
	memset(data + len, 0, padded - len);
	wg_put_le32(buf + offsetof(struct wg_msg_data, header.type), WG_MSG_DATA);
	wg_put_le32(buf + offsetof(struct wg_msg_data, receiver_index), kp->remote_index);
	wg_put_le64(buf + offsetof(struct wg_msg_data, counter), counter);
	wg_aead_seal(data, data, padded, NULL, 0, counter, kp->send_key);
	return (long)(WG_MSG_DATA_HEADER_LEN + padded + WG_AEAD_TAG_LEN);
}

long wg_keypair_open(const struct wg_keypair *kp, uint8_t *msg, size_t len)
{
	uint8_t *data = msg + WG_MSG_DATA_HEADER_LEN;

	if (len < WG_MSG_DATA_MIN_LEN)
		return -EINVAL;
	if (!wg_aead_open(data, data, len - WG_MSG_DATA_HEADER_LEN, NULL, 0,
	                  wg_le64(msg + offsetof(struct wg_msg_data, counter)), kp->recv_key))
		return -EBADMSG;
	return (long)(len - WG_MSG_DATA_MIN_LEN);
}
