/* SPDX-License-Identifier: MIT */
/* Shadowsocks TCP framing: methods, keys, AEAD chunks (SIP004/SIP007), the stream code both framings share. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base64.h"
#include "blake3.h"
#include "ct.h"
#include "shadowsocks.h"
#include "shadowsocks_internal.h"
#include "strset.h"

static const struct ss_method_info methods[SS_METHOD_END] = {
        [SS_AES_128_GCM] = {"aes-128-gcm", AEAD_AES_128_GCM, 16, false},
        [SS_AES_256_GCM] = {"aes-256-gcm", AEAD_AES_256_GCM, 32, false},
        [SS_CHACHA20_IETF_POLY1305] = {"chacha20-ietf-poly1305", AEAD_CHACHA20_POLY1305, 32, false},
        [SS_XCHACHA20_IETF_POLY1305] = {"xchacha20-ietf-poly1305", AEAD_XCHACHA20_POLY1305, 32,
                                        false},
        [SS22_AES_128_GCM] = {"2022-blake3-aes-128-gcm", AEAD_AES_128_GCM, 16, true},
        [SS22_AES_256_GCM] = {"2022-blake3-aes-256-gcm", AEAD_AES_256_GCM, 32, true},
        [SS22_CHACHA20_POLY1305] = {"2022-blake3-chacha20-poly1305", AEAD_CHACHA20_POLY1305, 32,
                                    true},
};

const char ss_method_names[] = "aes-128-gcm, aes-256-gcm, chacha20-ietf-poly1305, "
                               "xchacha20-ietf-poly1305, 2022-blake3-aes-128-gcm, "
                               "2022-blake3-aes-256-gcm, 2022-blake3-chacha20-poly1305";

/* SIP004's HKDF info, SIP022's BLAKE3 context of session subkeys. */
static const char subkey_info[] = "ss-subkey";
static const char ctx_session[] = "shadowsocks 2022 session subkey";

enum ss_method ss_method_by_name(const char *name)
{
	for (int m = 1; m < SS_METHOD_END; m++) {
		if (strcmp(name, methods[m].name) == 0)
			return (enum ss_method)m;
	}
	return 0;
}

const struct ss_method_info *ss_method_info(enum ss_method m)
{
	return m > 0 && m < SS_METHOD_END ? &methods[m] : NULL;
}

/* --- keys ----------------------------------------------------------------- */

int ss_psk_decode(uint8_t *out, size_t key_len, const char *b64)
{
	uint8_t tmp[SS_SALT_MAX + 3];
	size_t n = 0;
	int ret = base64_decode_ct(tmp, sizeof(tmp), b64, strlen(b64), &n);

	if (ret == 0 && n == key_len)
		memcpy(out, tmp, key_len);
	else
		ret = -EINVAL;
	explicit_bzero(tmp, sizeof(tmp));
	return ret;
}

const char *ss_key_init(struct ss_key *k, enum ss_method m, const char *password, bool list)
{
	const struct ss_method_info *mi = ss_method_info(m);
	char part[64];

	memset(k, 0, sizeof(*k));
	k->method = m;
	if (!mi)
		return "unknown method";
	if (!*password)
		return "is empty";
	if (!mi->v2022) {
		/* SIP004 keeps OpenSSL's password derivation (aead.md, "Key Derivation"). */
		if (evp_bytes_to_key_md5(k->key, mi->key_len, password, strlen(password)) < 0)
			return "cannot be turned into a key";
		return NULL;
	}
	/* SIP022 section 2.1: base64 keys of exactly the method's length, never a derivation. */
	for (const char *s = password;;) {
		size_t n = strset_cspan(s, ":");
		bool last = s[n] == '\0';

		if (n == 0 || n >= sizeof(part))
			goto bad;
		memcpy(part, s, n);
		part[n] = '\0';
		if (last) {
			if (ss_psk_decode(k->key, mi->key_len, part) < 0)
				goto bad;
			break;
		}
		if (!list) {
			explicit_bzero(part, sizeof(part));
			return "is a list of keys; a server takes one (its identity key, with users)";
		}
		if (k->n_ipsk == SS22_IPSK_MAX) {
			explicit_bzero(part, sizeof(part));
			return "lists more than 4 identity keys";
		}
		if (ss_psk_decode(k->ipsk[k->n_ipsk++], mi->key_len, part) < 0)
			goto bad;
		s += n + 1;
	}
	explicit_bzero(part, sizeof(part));
	/* SIP023 identity headers are AES blocks: sing-box and shadowsocks-rust refuse ChaCha. */
	if (k->n_ipsk && mi->alg == AEAD_CHACHA20_POLY1305)
		return "lists identity keys, which need an AES method (SIP023)";
	return NULL;
bad:
	explicit_bzero(part, sizeof(part));
	explicit_bzero(k, sizeof(*k));
	k->method = m;
	return mi->key_len == 16
	               ? "is not base64 of a 16-byte key (openssl rand -base64 16 makes one)"
	               : "is not base64 of a 32-byte key (openssl rand -base64 32 makes one)";
}

void ss_key_free(struct ss_key *k)
{
	if (!k)
		return;
	explicit_bzero(k, sizeof(*k));
	free(k);
}

/* The subkey of one stream: HKDF-SHA1 (SIP004) or BLAKE3 derive_key over key | salt (SIP022). */
int ss_subkey(struct aead_key *a, enum ss_method m, const uint8_t *key, const uint8_t *salt)
{
	const struct ss_method_info *mi = ss_method_info(m);
	uint8_t sk[SS_SALT_MAX], km[2 * SS_SALT_MAX];
	size_t n = mi->key_len;
	int ret;

	if (mi->v2022) {
		memcpy(km, key, n);
		memcpy(km + n, salt, n);
		ret = blake3_derive_key(sk, n, ctx_session, km, 2 * n);
		explicit_bzero(km, sizeof(km));
	} else {
		ret = hkdf_sha1(sk, n, key, n, salt, n, (const uint8_t *)subkey_info,
		                sizeof(subkey_info) - 1);
	}
	if (ret == 0)
		ret = aead_key_init(a, mi->alg, sk);
	explicit_bzero(sk, sizeof(sk));
	return ret;
}

/* --- opening a stream ------------------------------------------------------ */

bool ss_open_next(struct ss_open *o, uint8_t *p, size_t len)
{
	bool ok = aead_open(&o->aead, o->nonce, NULL, 0, p, len, p + len);

	aead_nonce_inc(o->nonce, o->aead.nonce_len);
	return ok;
}

int ss_open_fail(struct ss_open *o, enum ss_error e)
{
	o->error = e;
	return e == SS_ERR_AUTH ? -EBADMSG : e == SS_ERR_TIME ? -ETIME : -EPROTO;
}

/*
 * Every complete chunk in buf[0..len), in place; see xform.h. Length chunks
 * are consumed as soon as they are opened (their value kept in o->want), so
 * an incomplete tail always starts at a payload chunk or a length chunk.
 */
static int open_stream(struct ss_open *o, const struct xform_ctx *ctx, uint8_t *buf, size_t len,
                       size_t max_plain, struct iovec *iov, int max_iov, int *n_iov, size_t *used)
{
	size_t off = 0, plain = 0, salt = o->salt_len;
	int n = 0;

	for (;;) {
		size_t left = len - off;
		uint8_t *p = buf + off;

		if (o->phase == OPEN_SALT) {
			if (left < salt)
				break;
			if (ss_subkey(&o->aead, o->method, o->psk, p) < 0)
				return ss_open_fail(o, SS_ERR_FORMAT);
			memset(o->nonce, 0, sizeof(o->nonce));
			off += salt;
			o->phase = o->v2022 ? OPEN_RESP_HDR : OPEN_LEN;
		} else if (o->phase == OPEN_RESP_HDR) {
			size_t hl = SS22_RESP_HDR_LEN(salt) + SS_TAG;
			int ret;

			if (left < hl)
				break;
			ret = ss22_open_response(o, ctx, p);
			if (ret < 0)
				return ret;
			off += hl;
		} else if (o->phase == OPEN_LEN) {
			if (left < SS_LEN_BLOCK)
				break;
			if (!ss_open_next(o, p, 2))
				return ss_open_fail(o, SS_ERR_AUTH);
			o->want = get_be16(p);
			/* SIP004: the top two bits are reserved, and ss-libev refuses 0 */
			if (!o->v2022 && (o->want == 0 || o->want > SS_AEAD_PAYLOAD_MAX))
				return ss_open_fail(o, SS_ERR_FORMAT);
			off += SS_LEN_BLOCK;
			o->phase = OPEN_PAYLOAD;
		} else {
			if (left < o->want + SS_TAG || n == max_iov ||
			    (n > 0 && plain + o->want > max_plain))
				break;
			if (!ss_open_next(o, p, o->want))
				return ss_open_fail(o, SS_ERR_AUTH);
			if (o->want) {
				iov[n].iov_base = p;
				iov[n++].iov_len = o->want;
				plain += o->want;
			}
			off += o->want + SS_TAG;
			o->phase = OPEN_LEN;
		}
	}
	*n_iov = n;
	*used = off;
	return 0;
}

/* --- sealing a stream ------------------------------------------------------ */

int ss_seal_next(struct ss_seal *s, uint8_t *p, size_t len)
{
	int ret = aead_seal(&s->aead, s->nonce, NULL, 0, p, len, p + len);

	aead_nonce_inc(s->nonce, s->aead.nonce_len);
	return ret;
}

/* A length chunk and its payload chunk at p: [len | tag][payload | tag]. */
int ss_seal_chunk(struct ss_seal *s, uint8_t *p, size_t n)
{
	put_be16(p, (uint16_t)n);
	if (ss_seal_next(s, p, 2) < 0)
		return -EINVAL;
	return ss_seal_next(s, p + SS_LEN_BLOCK, n);
}

/* Bytes in front of the first slot: what the stream's start carries. */
size_t ss_headroom(const struct ss_seal *s)
{
	size_t salt = s->salt_len;

	if (!s->owes)
		return 0;
	if (!s->v2022)
		return salt + (s->client ? SS_LEN_BLOCK + s->addr_len + SS_TAG : 0);
	if (s->client) /* room for the largest padding; the start moves by the unused part */
		return SS22_PAD_MAX + salt + SS22_EIH_LEN * s->n_eih + SS22_FIXED_LEN + SS_TAG +
		       s->addr_len + 2;
	return salt + 1 + 8 + salt + 2 + SS_TAG;
}

/* The payload room of one chunk slot at pos in a buffer of cap bytes (0: none fits). */
static size_t slot_room(size_t pos, size_t cap, size_t before, size_t max)
{
	if (pos + before + 1 + SS_TAG > cap)
		return 0;
	return cap - pos - before - SS_TAG < max ? cap - pos - before - SS_TAG : max;
}

static size_t first_max(const struct ss_seal *s)
{
	/* a 2022 request's variable header holds the address, padding length and payload */
	return s->v2022 && s->owes && s->client ? SS22_PAYLOAD_MAX - s->addr_len - 2
	                                        : SS22_PAYLOAD_MAX;
}

/*
 * The largest chunk this sender makes. SIP004 caps AEAD chunks at 0x3FFF;
 * SIP022 allows 0xFFFF, but a receiver can pass nothing on before a whole
 * chunk has arrived and been authenticated, so a 64 KiB chunk makes the
 * next hop wait for all of it (and carry a cut one across reads). 16 KiB:
 * four to a 64 KiB read, the receiver opens and forwards the first while
 * the rest are on the way, at one more length block (18 bytes) per 16 KiB.
 */
static size_t chunk_max(const struct ss_seal *s)
{
	return s->v2022 ? SS22_CHUNK : SS_AEAD_PAYLOAD_MAX;
}

/*
 * Where plaintext lands in an empty buffer of cap bytes: offsets and rooms
 * of at most max slots: as many chunks of chunk_max() as fit, each with its
 * length chunk before and tag after, so that full slots are back to back on
 * the wire. A 2022 stream's first chunk is its header's (one slot of up to
 * 64 KiB, its length in the header).
 */
static int layout(const struct ss_seal *s, size_t cap, size_t *off, size_t *room, int max)
{
	size_t pos = ss_headroom(s), r, cmax = chunk_max(s);
	int n = 0;

	if (s->v2022 && s->owes) {
		off[0] = pos;
		room[0] = slot_room(pos, cap, 0, first_max(s));
		return 1;
	}
	while (n < max && (r = slot_room(pos, cap, SS_LEN_BLOCK, cmax))) {
		off[n] = pos + SS_LEN_BLOCK;
		room[n++] = r;
		pos += SS_LEN_BLOCK + r + SS_TAG;
	}
	return n;
}

/* n plaintext bytes in the slots from pos on: seal them as chunks; the end of the last. */
int ss_seal_chunks(struct ss_seal *s, uint8_t *buf, size_t pos, size_t n, size_t *end)
{
	size_t cmax = chunk_max(s);

	while (n) {
		size_t k = n < cmax ? n : cmax;

		if (ss_seal_chunk(s, buf + pos, k) < 0)
			return -EINVAL;
		pos += SS_LEN_BLOCK + k + SS_TAG;
		n -= k;
	}
	*end = pos;
	return 0;
}

enum { SLOTS_MAX = 8 };

static int seal_slots(struct ss_seal *s, uint8_t *buf, size_t cap, struct iovec *iov, int max)
{
	size_t off[SLOTS_MAX], room[SLOTS_MAX];
	int n = layout(s, cap, off, room, max < SLOTS_MAX ? max : SLOTS_MAX);

	for (int i = 0; i < n; i++) {
		iov[i].iov_base = buf + off[i];
		iov[i].iov_len = room[i];
	}
	return n;
}

static size_t seal_room(const struct ss_seal *s, size_t cap)
{
	size_t off[SLOTS_MAX], room[SLOTS_MAX], total = 0;
	int n = layout(s, cap, off, room, SLOTS_MAX);

	for (int i = 0; i < n; i++)
		total += room[i];
	return total;
}

/* SIP004: [salt][address chunk (client)] then data chunks of at most 0x3FFF. */
static int seal_aead(struct ss_seal *s, uint8_t *buf, size_t n, size_t *off, size_t *len)
{
	size_t pos = ss_headroom(s), salt = s->salt_len;

	*off = 0;
	if (s->owes && (n || s->client)) {
		memcpy(buf, s->salt, salt);
		if (s->client) {
			/* The target alone in the first chunk, as ss-local sends it. */
			memcpy(buf + salt + SS_LEN_BLOCK, s->addr, s->addr_len);
			if (ss_seal_chunk(s, buf + salt, s->addr_len) < 0)
				return -EINVAL;
		}
		s->owes = false;
	} else if (s->owes) {
		*len = 0; /* a server's salt waits for its first payload */
		return 0;
	}
	return ss_seal_chunks(s, buf, pos, n, len);
}

/* --- the xform ops --------------------------------------------------------- */

static int x_seal_slots(void *st, uint8_t *buf, size_t cap, struct iovec *iov, int max)
{
	return seal_slots(&((struct ss_leg *)st)->seal, buf, cap, iov, max);
}

static size_t x_seal_room(const void *st, size_t cap)
{
	return seal_room(&((const struct ss_leg *)st)->seal, cap);
}

static int x_seal(void *st, const struct xform_ctx *ctx, uint8_t *buf, size_t n, size_t *off,
                  size_t *len)
{
	struct ss_seal *s = &((struct ss_leg *)st)->seal;

	return s->v2022 ? ss22_seal(s, ctx, buf, n, off, len) : seal_aead(s, buf, n, off, len);
}

static bool x_seal_owes(const void *st)
{
	const struct ss_seal *s = &((const struct ss_leg *)st)->seal;

	return s->owes && s->client;
}

static int x_open(void *st, const struct xform_ctx *ctx, uint8_t *buf, size_t len, size_t max_plain,
                  struct iovec *iov, int max_iov, int *n_iov, size_t *used)
{
	return open_stream(&((struct ss_leg *)st)->open, ctx, buf, len, max_plain, iov, max_iov,
	                   n_iov, used);
}

static bool x_open_clean(const void *st)
{
	const struct ss_open *o = &((const struct ss_leg *)st)->open;

	return o->phase == OPEN_SALT || o->phase == OPEN_LEN;
}

static void x_destroy(void *st)
{
	struct ss_leg *l = st;

	aead_key_wipe(&l->open.aead);
	aead_key_wipe(&l->seal.aead);
	explicit_bzero(l, sizeof(*l));
}

const struct xform_ops ss_xform_ops = {
        .name = "shadowsocks",
        .seal_slots = x_seal_slots,
        .seal_room = x_seal_room,
        .seal = x_seal,
        .seal_owes = x_seal_owes,
        .open = x_open,
        .open_clean = x_open_clean,
        .destroy = x_destroy,
};

/* A sealer for a new stream keyed by key (the master key or PSK) and rnd's salt. */
static int seal_init(struct ss_seal *s, enum ss_method m, const uint8_t *key,
                     const uint8_t rnd[SS_RAND_LEN])
{
	const struct ss_method_info *mi = ss_method_info(m);

	memset(s, 0, sizeof(*s));
	s->salt_len = mi->key_len;
	s->v2022 = mi->v2022;
	s->owes = true;
	memcpy(s->salt, rnd, s->salt_len);
	/* 1..900: never zero, so a request without payload is still valid (SIP022 3.1.4) */
	s->pad = (uint16_t)(1 + (rnd[SS_SALT_MAX] | rnd[SS_SALT_MAX + 1] << 8) % SS22_PAD_MAX);
	return ss_subkey(&s->aead, m, key, s->salt);
}

int ss_client_init(struct ss_leg *l, const struct ss_key *k, const struct proto_target *t,
                   const uint8_t rnd[SS_RAND_LEN])
{
	const struct ss_method_info *mi = ss_method_info(k->method);
	struct ss_seal *s = &l->seal;
	struct ss_open *o = &l->open;
	size_t n;

	memset(l, 0, sizeof(*l));
	if (!mi)
		return -EINVAL;
	l->x.ops = &ss_xform_ops;
	if (seal_init(s, k->method, k->key, rnd) < 0)
		goto fail;
	s->client = true;
	s->addr_len = (uint16_t)socks5_addr_put_target(s->addr, t);
	n = mi->key_len;
	if (k->n_ipsk && ss22_client_eih(s, k) < 0)
		goto fail;
	o->method = k->method;
	o->salt_len = mi->key_len;
	o->v2022 = mi->v2022;
	o->phase = OPEN_SALT;
	memcpy(o->psk, k->key, n);
	memcpy(o->req_salt, s->salt, n);
	return 0;
fail:
	x_destroy(l);
	return -EINVAL;
}

/* --- the server's handshake ------------------------------------------------ */

void ss_server_init(struct ss_server *s, const struct ss_key *k)
{
	const struct ss_method_info *mi = ss_method_info(k->method);

	memset(s, 0, sizeof(*s));
	s->key = k;
	s->in.method = k->method;
	s->in.salt_len = mi->key_len;
	s->in.v2022 = mi->v2022;
	s->in.phase = OPEN_LEN;
}

void ss_server_wipe(struct ss_server *s)
{
	aead_key_wipe(&s->in.aead);
	explicit_bzero(s, sizeof(*s));
}

size_t ss_server_want(const struct ss_server *s)
{
	size_t salt = s->in.salt_len;

	switch (s->phase) {
	case SRV_HEAD:
		if (!s->in.v2022)
			return salt;
		return salt + (s->users ? SS22_EIH_LEN : 0) + SS22_FIXED_LEN + SS_TAG;
	case SRV_LEN:
		return SS_LEN_BLOCK;
	case SRV_CHUNK:
	case SRV_VAR:
		return s->in.want + SS_TAG;
	default:
		return 0;
	}
}

size_t ss_server_buf_max(enum ss_method m)
{
	const struct ss_method_info *mi = ss_method_info(m);

	return mi && mi->v2022 ? SS22_PAYLOAD_MAX + SS_TAG : SS_AEAD_PAYLOAD_MAX + SS_TAG;
}

enum proto_res ss_srv_fail(struct ss_server *s, enum ss_error e)
{
	s->error = e;
	s->phase = SRV_FAILED;
	return PROTO_FAIL;
}

/*
 * The address is complete in s->addr: decode it, and leave the chunk's
 * plaintext after it (tail bytes at p) just before the wire bytes that
 * follow the chunk's tag, so that [early plaintext][wire bytes] is what the
 * caller has after *used.
 */
enum proto_res ss_srv_request(struct ss_server *s, uint8_t *p, size_t tail, size_t *off)
{
	if (socks5_addr_get(s->addr, &s->target) < 0)
		return ss_srv_fail(s, SS_ERR_FORMAT);
	memmove(p + SS_TAG, p, tail);
	*off += SS_TAG;
	s->early = (uint32_t)tail;
	s->phase = SRV_DONE;
	return PROTO_REQUEST;
}

/* AEAD: a payload chunk; its bytes go to the address until that is complete. */
static enum proto_res srv_chunk_aead(struct ss_server *s, uint8_t *p, size_t *off)
{
	size_t n = s->in.want, take = SS_ADDR_MAX - s->addr_len;
	long need;

	if (!ss_open_next(&s->in, p, n))
		return ss_srv_fail(s, SS_ERR_AUTH);
	if (take > n)
		take = n;
	memcpy(s->addr + s->addr_len, p, take);
	/* the length as soon as it is known, which may be before the bytes are all here */
	need = socks5_addr_len(s->addr, s->addr_len + take);
	if (need < 0)
		return ss_srv_fail(s, SS_ERR_FORMAT);
	if (need > 0 && (size_t)need <= s->addr_len + take) {
		/* complete: need - addr_len of this chunk's bytes were address */
		size_t mine = (size_t)need - s->addr_len;

		s->addr_len = (uint16_t)need;
		*off += mine;
		return ss_srv_request(s, p + mine, n - mine, off);
	}
	s->addr_len = (uint16_t)(s->addr_len + take);
	*off += n + SS_TAG;
	s->phase = SRV_LEN;
	return PROTO_NEED_MORE;
}

enum proto_res ss_server_feed(struct ss_server *s, uint8_t *buf, size_t len, size_t *used)
{
	size_t off = 0;
	enum proto_res r = PROTO_NEED_MORE;

	while (r == PROTO_NEED_MORE && s->phase < SRV_DONE && len - off >= ss_server_want(s)) {
		uint8_t *p = buf + off;
		size_t want = ss_server_want(s);

		switch (s->phase) {
		case SRV_HEAD:
			if (s->in.v2022) {
				r = ss22_srv_head(s, p);
			} else {
				memcpy(s->salt, p, want);
				if (ss_subkey(&s->in.aead, s->in.method, s->key->key, s->salt) < 0)
					r = ss_srv_fail(s, SS_ERR_FORMAT);
				memset(s->in.nonce, 0, sizeof(s->in.nonce));
				s->phase = SRV_LEN;
			}
			break;
		case SRV_LEN:
			if (!ss_open_next(&s->in, p, 2)) {
				r = ss_srv_fail(s, SS_ERR_AUTH);
				break;
			}
			s->in.want = get_be16(p);
			if (s->in.want == 0 || s->in.want > SS_AEAD_PAYLOAD_MAX)
				r = ss_srv_fail(s, SS_ERR_FORMAT);
			s->phase = SRV_CHUNK;
			break;
		case SRV_CHUNK:
			r = srv_chunk_aead(s, p, &off);
			want = 0;
			break;
		case SRV_VAR:
			r = ss22_srv_var(s, p, &off);
			want = 0;
			break;
		}
		if (r != PROTO_FAIL)
			off += want;
	}
	if (s->phase == SRV_FAILED)
		r = PROTO_FAIL;
	*used = r == PROTO_FAIL ? 0 : off;
	return r;
}

enum proto_res ss_server_auth_result(struct ss_server *s, bool ok)
{
	if (!ok)
		return ss_srv_fail(s, SS_ERR_USER);
	return PROTO_REPLY; /* nothing to send: feed again */
}

int ss_server_leg(struct ss_leg *l, struct ss_server *s, const uint8_t rnd[SS_RAND_LEN])
{
	const uint8_t *key = s->in.v2022 ? s->psk : s->key->key;

	memset(l, 0, sizeof(*l));
	if (s->phase != SRV_DONE)
		return -EINVAL;
	l->x.ops = &ss_xform_ops;
	if (seal_init(&l->seal, s->in.method, key, rnd) < 0) {
		x_destroy(l);
		return -EINVAL;
	}
	memcpy(l->seal.req_salt, s->salt, s->in.salt_len);
	/* The request stream goes on where the handshake left it: the next length chunk. */
	l->open = s->in;
	l->open.phase = OPEN_LEN;
	explicit_bzero(&s->in, sizeof(s->in)); /* moved, not copied: one owner of the key */
	return 0;
}
