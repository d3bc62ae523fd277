/* SPDX-License-Identifier: MIT */
/* WireGuard wire formats and protocol constants (whitepaper section 5, wireguard.com/protocol). */
#ifndef SPLICED_WG_MESSAGES_H
#define SPLICED_WG_MESSAGES_H

#include <stddef.h>
#include <stdint.h>

/* Primitive sizes (Noise_IKpsk2_25519_ChaChaPoly_BLAKE2s). */
enum wg_sizes {
	WG_KEY_LEN = 32,          /* X25519 keys, symmetric keys, PSK */
	WG_HASH_LEN = 32,         /* BLAKE2s-256 */
	WG_AEAD_TAG_LEN = 16,     /* Poly1305 */
	WG_TAI64N_LEN = 12,       /* 8 bytes seconds + 4 bytes nanoseconds, big endian */
	WG_COOKIE_LEN = 16,       /* MAC (keyed BLAKE2s-128) output */
	WG_COOKIE_NONCE_LEN = 24, /* XChaCha20-Poly1305 nonce */
	WG_MAC_LEN = 16,
};

enum wg_message_type {
	WG_MSG_INVALID = 0,
	WG_MSG_HANDSHAKE_INITIATION = 1,
	WG_MSG_HANDSHAKE_RESPONSE = 2,
	WG_MSG_HANDSHAKE_COOKIE = 3,
	WG_MSG_DATA = 4,
};

/*
 * Protocol timing and counter limits (whitepaper 6.1 / kernel messages.h).
 * Times are in seconds; the core converts to nanoseconds where it uses them.
 */
enum wg_limits {
	WG_REKEY_AFTER_TIME = 120,
	WG_REJECT_AFTER_TIME = 180,
	WG_REKEY_ATTEMPT_TIME = 90,
	WG_REKEY_TIMEOUT = 5,
	WG_REKEY_TIMEOUT_JITTER_MAX_MS = 333,
	WG_KEEPALIVE_TIMEOUT = 10,
	WG_COOKIE_SECRET_MAX_AGE = 120,
	WG_COOKIE_SECRET_LATENCY = 5,
	/* 90 s of attempts at one every 5 s: after this many retries we give up. */
	WG_MAX_TIMER_HANDSHAKES = WG_REKEY_ATTEMPT_TIME / WG_REKEY_TIMEOUT,
	WG_MAX_ALLOWEDIPS_DEPTH = 129,
};

/* 2^60 and 2^64 - 2^13 - 1: the nonce must stay below the replay window's reach. */
#define WG_REKEY_AFTER_MESSAGES  (1ULL << 60)
#define WG_REJECT_AFTER_MESSAGES (UINT64_MAX - 8192ULL)

/* Replay window: RFC 6479 bitmap of 8192 bits, one word of which is "in flight". */
enum wg_counter_values {
	WG_COUNTER_BITS_TOTAL = 8192,
	WG_COUNTER_WORD_BITS = 64,
	WG_COUNTER_WINDOW_SIZE = WG_COUNTER_BITS_TOTAL - WG_COUNTER_WORD_BITS,
};

/*
 * All multi-byte integers on the wire are little endian. The structs are laid
 * out exactly as on the wire (every member is naturally aligned, no padding);
 * the static asserts below pin the sizes. Access the le32/le64 fields through
 * wg_le32()/wg_put_le32() etc. so the code stays correct on big endian hosts.
 */
struct wg_msg_header {
	uint32_t type; /* le32: one byte of type and three zero bytes */
};

struct wg_msg_macs {
	uint8_t mac1[WG_COOKIE_LEN];
	uint8_t mac2[WG_COOKIE_LEN];
};

struct wg_msg_initiation {
	struct wg_msg_header header;
	uint32_t sender_index; /* le32 */
	uint8_t unencrypted_ephemeral[WG_KEY_LEN];
	uint8_t encrypted_static[WG_KEY_LEN + WG_AEAD_TAG_LEN];
	uint8_t encrypted_timestamp[WG_TAI64N_LEN + WG_AEAD_TAG_LEN];
	struct wg_msg_macs macs;
};

struct wg_msg_response {
	struct wg_msg_header header;
	uint32_t sender_index;   /* le32 */
	uint32_t receiver_index; /* le32 */
	uint8_t unencrypted_ephemeral[WG_KEY_LEN];
	uint8_t encrypted_nothing[WG_AEAD_TAG_LEN];
	struct wg_msg_macs macs;
};

struct wg_msg_cookie {
	struct wg_msg_header header;
	uint32_t receiver_index; /* le32 */
	uint8_t nonce[WG_COOKIE_NONCE_LEN];
	uint8_t encrypted_cookie[WG_COOKIE_LEN + WG_AEAD_TAG_LEN];
};

struct wg_msg_data {
	struct wg_msg_header header;
	uint32_t receiver_index; /* le32 */
	uint64_t counter;        /* le64 */
	uint8_t encrypted_data[];
};

enum wg_message_sizes {
	WG_MSG_INITIATION_LEN = 148,
	WG_MSG_RESPONSE_LEN = 92,
	WG_MSG_COOKIE_LEN = 64,
	WG_MSG_DATA_HEADER_LEN = 16,
	WG_MSG_DATA_MIN_LEN = WG_MSG_DATA_HEADER_LEN + WG_AEAD_TAG_LEN, /* a keepalive */
	WG_MSG_PADDING = 16, /* plaintext is zero padded to a multiple of this */
	/* Room a data message needs beyond the plaintext: header, padding, tag. */
	WG_MSG_DATA_OVERHEAD = WG_MSG_DATA_HEADER_LEN + WG_MSG_PADDING - 1 + WG_AEAD_TAG_LEN,
	WG_MSG_MAX_HANDSHAKE_LEN = WG_MSG_INITIATION_LEN,
};

_Static_assert(sizeof(struct wg_msg_initiation) == WG_MSG_INITIATION_LEN, "initiation size");
_Static_assert(sizeof(struct wg_msg_response) == WG_MSG_RESPONSE_LEN, "response size");
_Static_assert(sizeof(struct wg_msg_cookie) == WG_MSG_COOKIE_LEN, "cookie size");
_Static_assert(sizeof(struct wg_msg_data) == WG_MSG_DATA_HEADER_LEN, "data header size");

static inline uint32_t wg_le32(const void *p)
{
	const uint8_t *b = p;
	return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

static inline uint64_t wg_le64(const void *p)
{
	const uint8_t *b = p;
	return (uint64_t)wg_le32(b) | (uint64_t)wg_le32(b + 4) << 32;
}

static inline void wg_put_le32(void *p, uint32_t v)
{
	uint8_t *b = p;
	b[0] = (uint8_t)v;
	b[1] = (uint8_t)(v >> 8);
	b[2] = (uint8_t)(v >> 16);
	b[3] = (uint8_t)(v >> 24);
}

static inline void wg_put_le64(void *p, uint64_t v)
{
	wg_put_le32(p, (uint32_t)v);
	wg_put_le32((uint8_t *)p + 4, (uint32_t)(v >> 32));
}

/*
 * The message type of a UDP payload if its length is valid for that type
 * (exact for handshakes, at least a keepalive for data), else WG_MSG_INVALID.
 * The three reserved bytes must be zero.
 */
static inline enum wg_message_type wg_message_type(const void *pkt, size_t len)
{
	uint32_t t;

	if (len < sizeof(struct wg_msg_header))
		return WG_MSG_INVALID;
	t = wg_le32(pkt);
	if (t == WG_MSG_HANDSHAKE_INITIATION && len == WG_MSG_INITIATION_LEN)
		return WG_MSG_HANDSHAKE_INITIATION;
	if (t == WG_MSG_HANDSHAKE_RESPONSE && len == WG_MSG_RESPONSE_LEN)
		return WG_MSG_HANDSHAKE_RESPONSE;
	if (t == WG_MSG_HANDSHAKE_COOKIE && len == WG_MSG_COOKIE_LEN)
		return WG_MSG_HANDSHAKE_COOKIE;
	if (t == WG_MSG_DATA && len >= WG_MSG_DATA_MIN_LEN)
		return WG_MSG_DATA;
	return WG_MSG_INVALID;
}

#endif
