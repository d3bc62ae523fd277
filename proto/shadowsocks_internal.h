/* SPDX-License-Identifier: MIT */
/* What shadowsocks.c (methods, keys, SIP004, the stream code) and shadowsocks_2022.c (SIP022, SIP023) share. */
#ifndef SPLICED_SHADOWSOCKS_INTERNAL_H
#define SPLICED_SHADOWSOCKS_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "shadowsocks.h"

/* SIP022 HeaderTypeClientStream / ServerStream */
enum { SS22_TYPE_REQUEST = 0, SS22_TYPE_RESPONSE = 1 };

/* A 2022 response's fixed header: type, timestamp, the request's salt, length (SIP022 3.1.3). */
#define SS22_RESP_HDR_LEN(salt) (1 + 8 + (size_t)(salt) + 2)

enum ss_open_phase {
	OPEN_SALT = 0, /* the peer's salt, then its subkey */
	OPEN_RESP_HDR, /* 2022 client: the response's fixed header (its first length chunk) */
	OPEN_LEN,      /* a length chunk */
	OPEN_PAYLOAD,  /* a payload chunk of `want` bytes */
};

enum ss_srv_phase {
	SRV_HEAD = 0, /* salt (2022: identity header, fixed header) */
	SRV_LEN,      /* AEAD: a length chunk of the address */
	SRV_CHUNK,    /* AEAD: a payload chunk holding (part of) the address */
	SRV_VAR,      /* 2022: the variable header */
	SRV_DONE,
	SRV_FAILED,
};

static inline uint16_t get_be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static inline void put_be16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static inline uint64_t get_be64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

static inline void put_be64(uint8_t *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

/* shadowsocks.c */

/* The subkey of one stream: HKDF-SHA1 (SIP004) or BLAKE3 derive_key over key | salt (SIP022). */
int ss_subkey(struct aead_key *a, enum ss_method m, const uint8_t *key, const uint8_t *salt);
/* Open (seal) len bytes at p in place, the tag after them, and step the nonce. */
bool ss_open_next(struct ss_open *o, uint8_t *p, size_t len);
int ss_seal_next(struct ss_seal *s, uint8_t *p, size_t len);
/* A length chunk and its payload chunk at p: [len | tag][payload | tag]. */
int ss_seal_chunk(struct ss_seal *s, uint8_t *p, size_t n);
/* n plaintext bytes in the slots from pos on, sealed as chunks of the stream's size; *end after the last. */
int ss_seal_chunks(struct ss_seal *s, uint8_t *buf, size_t pos, size_t n, size_t *end);
/* Record why a stream failed; the xform error for it. */
int ss_open_fail(struct ss_open *o, enum ss_error e);
/* Bytes in front of the first slot: what the stream's start carries. */
size_t ss_headroom(const struct ss_seal *s);
enum proto_res ss_srv_fail(struct ss_server *s, enum ss_error e);
enum proto_res ss_srv_request(struct ss_server *s, uint8_t *p, size_t tail, size_t *off);

/* shadowsocks_2022.c */

/* A client's SIP023 identity headers for the salt s holds, from k's identity PSKs. 0 or -EINVAL. */
int ss22_client_eih(struct ss_seal *s, const struct ss_key *k);
/* A 2022 client's opener: the response's fixed header at p (tag included). 0 or an xform error. */
int ss22_open_response(struct ss_open *o, const struct xform_ctx *ctx, uint8_t *p);
/* The 2022 sealer (xform.h's seal). */
int ss22_seal(struct ss_seal *s, const struct xform_ctx *ctx, uint8_t *buf, size_t n, size_t *off,
              size_t *len);
/* The server's 2022 handshake: the head (salt, identity header, fixed header), the variable header. */
enum proto_res ss22_srv_head(struct ss_server *s, uint8_t *p);
enum proto_res ss22_srv_var(struct ss_server *s, uint8_t *p, size_t *off);

#endif
