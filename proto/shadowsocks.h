/* SPDX-License-Identifier: MIT */
/* Shadowsocks over TCP: AEAD (SIP004/SIP007) and 2022 (SIP022, SIP023 identity headers), sans-I/O. */
#ifndef SPLICED_SHADOWSOCKS_H
#define SPLICED_SHADOWSOCKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "aead.h"
#include "proto.h"
#include "socks5_addr.h"
#include "xform.h"

enum ss_method {
	SS_AES_128_GCM = 1,
	SS_AES_256_GCM,
	SS_CHACHA20_IETF_POLY1305,
	SS_XCHACHA20_IETF_POLY1305,
	SS22_AES_128_GCM, /* 2022-blake3-aes-128-gcm */
	SS22_AES_256_GCM,
	SS22_CHACHA20_POLY1305,
	SS_METHOD_END,
};

struct ss_method_info {
	const char *name;
	enum aead_alg alg;
	uint8_t key_len; /* = salt length */
	bool v2022;
};

enum ss_limits {
	SS_SALT_MAX = 32,
	SS_TAG = AEAD_TAG_LEN,
	SS_LEN_BLOCK = 2 + SS_TAG, /* an encrypted length chunk */
	SS_CHUNK_OVERHEAD = 2 * SS_TAG + 2,
	SS_AEAD_PAYLOAD_MAX = 0x3FFF,  /* SIP004: the top two length bits are reserved */
	SS22_PAYLOAD_MAX = 0xFFFF,     /* SIP022 section 3.1.2 */
	SS22_CHUNK = 16 << 10,         /* the 2022 chunks spliced makes after the first */
	SS22_PAD_MAX = 900,            /* SIP022 section 3.1.3 MaxPaddingLength */
	SS22_FIXED_LEN = 1 + 8 + 2,    /* request fixed header: type, timestamp, length */
	SS22_TIME_WINDOW = 30,         /* seconds: an older or newer header is a replay */
	SS22_IPSK_MAX = 4,             /* identity PSKs a client chains (SIP023) */
	SS22_EIH_LEN = 16,             /* one identity header: an AES block */
	SS_ADDR_MAX = SOCKS5_ADDR_MAX, /* the target, as SOCKS5 spells it */
	/* the salt and the (padding length) randomness a new stream takes from its caller */
	SS_RAND_LEN = SS_SALT_MAX + 2,
};

/* Why a server refused a stream (the relay counts each). */
enum ss_error {
	SS_OK = 0,
	SS_ERR_AUTH,   /* a tag did not match: a wrong key, or not Shadowsocks at all */
	SS_ERR_USER,   /* 2022 identity header of no known user */
	SS_ERR_TIME,   /* 2022 timestamp more than 30 s off */
	SS_ERR_FORMAT, /* authentic but malformed: bad length, type, address, padding */
};

/* The method by its name ("aes-128-gcm", "2022-blake3-aes-256-gcm", ...), or 0. */
enum ss_method ss_method_by_name(const char *name);
const struct ss_method_info *ss_method_info(enum ss_method m);
/* Every method name, comma separated, for messages. */
extern const char ss_method_names[];

/*
 * The keying of an inbound or outbound, immutable once built. AEAD: the
 * master key from the password (EVP_BytesToKey). 2022: base64 PSKs of the
 * method's key length; a client may give a list "iPSK:...:uPSK" (SIP023),
 * a server its one PSK (with users: its identity PSK).
 */
struct ss_key {
	enum ss_method method;
	uint8_t key[SS_SALT_MAX];                 /* master key, or the (user) PSK */
	uint8_t ipsk[SS22_IPSK_MAX][SS_SALT_MAX]; /* a 2022 client's identity PSKs, in order */
	uint8_t n_ipsk;
};

/*
 * Build k from a password. NULL, or why not (for a config message; the
 * password itself is never echoed). `list`: a 2022 password may be an
 * identity PSK list (clients).
 */
const char *ss_key_init(struct ss_key *k, enum ss_method m, const char *password, bool list);
/* Wipe and free a key made with malloc (NULL is fine). */
void ss_key_free(struct ss_key *k);
/* A 2022 PSK in base64: 0 with out filled (key_len bytes), or -EINVAL. */
int ss_psk_decode(uint8_t *out, size_t key_len, const char *b64);

/* A SIP023 user of a multi-user 2022 server: its PSK and the hash its identity header carries. */
struct ss_user {
	uint8_t id[16]; /* BLAKE3(uPSK)[0..16] */
	uint8_t psk[SS_SALT_MAX];
	const char *name, *pass; /* the users table's strings (pass: the PSK in base64) */
};
struct ss_users {
	struct ss_user *v; /* sorted by id */
	size_t n;
};
/* Add a user whose password is a base64 PSK of key_len bytes: 0, -EINVAL or -ENOMEM. */
int ss_users_add(struct ss_users *u, const char *name, const char *b64, size_t key_len);
/* Sort once every user is in (ss_users_find() needs it); -EEXIST when two share a PSK. */
int ss_users_finish(struct ss_users *u);
const struct ss_user *ss_users_find(const struct ss_users *u, const uint8_t id[16]);
void ss_users_free(struct ss_users *u);

/* --- one direction of a stream ------------------------------------------ */

/* Opening a stream: wire bytes → plaintext. */
struct ss_open {
	struct aead_key aead;
	uint8_t nonce[AEAD_NONCE_MAX];
	uint8_t phase; /* enum in shadowsocks.c */
	uint8_t salt_len;
	bool v2022;
	uint32_t want;                 /* the payload length of the chunk being read */
	uint8_t psk[SS_SALT_MAX];      /* client: derives the response stream's key */
	uint8_t req_salt[SS_SALT_MAX]; /* 2022 client: the salt the response must echo */
	enum ss_method method;
	enum ss_error error;
};

/* Sealing a stream: plaintext → wire bytes. */
struct ss_seal {
	struct aead_key aead;
	uint8_t nonce[AEAD_NONCE_MAX];
	uint8_t salt[SS_SALT_MAX];
	uint8_t salt_len;
	bool v2022, client;
	bool owes;     /* the salt (and a request header) is not out yet */
	uint16_t pad;  /* 2022 request: padding when the first payload is short */
	uint8_t n_eih; /* 2022 request: identity headers */
	uint8_t eih[SS22_IPSK_MAX][SS22_EIH_LEN];
	uint16_t addr_len; /* request: the target, SOCKS5-encoded */
	uint8_t addr[SS_ADDR_MAX];
	uint8_t req_salt[SS_SALT_MAX]; /* 2022 response: the request's salt, echoed */
};

/* Both halves of a Shadowsocks leg, as the pump drives it (ss_xform_ops). */
struct ss_leg {
	struct xform x;
	struct ss_open open;
	struct ss_seal seal;
};
extern const struct xform_ops ss_xform_ops;

/*
 * A client's leg to a Shadowsocks server for target t: the request stream
 * keyed with rnd's salt (SS_RAND_LEN random bytes: salt, then the padding
 * choice), its header owed until the first payload or a flush. 0 or -EINVAL.
 */
int ss_client_init(struct ss_leg *l, const struct ss_key *k, const struct proto_target *t,
                   const uint8_t rnd[SS_RAND_LEN]);

/* --- the server's handshake: salt, identity, headers, target ------------ */

struct ss_server {
	const struct ss_key *key;
	const struct ss_users *users; /* set before each feed (multi-user 2022), else NULL */
	uint64_t now;                 /* wall-clock seconds, set before each feed */
	uint8_t phase;
	struct ss_open in;          /* the request stream */
	uint8_t salt[SS_SALT_MAX];  /* the request's salt: replay filter, 2022 response echo */
	uint8_t psk[SS_SALT_MAX];   /* 2022: the PSK the stream uses (the user's, with users) */
	const struct ss_user *user; /* 2022 with users: who (valid during the feed that found it) */
	uint16_t addr_len;          /* address bytes gathered so far (AEAD may split them) */
	uint8_t addr[SS_ADDR_MAX];
	uint32_t early; /* after PROTO_REQUEST: plaintext bytes at the unconsumed front */
	struct proto_target target;
	enum ss_error error;
};

/* A fresh handshake for an inbound keyed by k. */
void ss_server_init(struct ss_server *s, const struct ss_key *k);
/*
 * The proto.h feed, except that buf is decrypted in place (a chunk
 * consumed is plaintext afterwards). PROTO_NEED_MORE (ss_server_want()
 * says how many bytes it needs at the front), PROTO_AUTH (2022 with users:
 * s->user names who; continue with ss_server_auth_result()), PROTO_REQUEST
 * (s->target; of the bytes after *used the first s->early are plaintext for
 * the target, the rest are still the client's wire bytes), or PROTO_FAIL
 * (s->error says why; nothing is ever sent back).
 */
enum proto_res ss_server_feed(struct ss_server *s, uint8_t *buf, size_t len, size_t *used);
enum proto_res ss_server_auth_result(struct ss_server *s, bool ok);
size_t ss_server_want(const struct ss_server *s);
/* The longest buffer ss_server_want() can ask for (a whole chunk and what precedes it). */
size_t ss_server_buf_max(enum ss_method m);
/*
 * After PROTO_REQUEST: the server's leg, its opener taken over from s (s's
 * keys are wiped), its response stream keyed with rnd's salt. 0 or -EINVAL.
 */
int ss_server_leg(struct ss_leg *l, struct ss_server *s, const uint8_t rnd[SS_RAND_LEN]);
/* Wipe what s holds (keys, PSK, address). */
void ss_server_wipe(struct ss_server *s);

#endif
