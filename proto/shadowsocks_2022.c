/* SPDX-License-Identifier: MIT */
/* Shadowsocks 2022 (SIP022): its headers, timestamps and padding; SIP023 identity headers and users. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "blake3.h"
#include "ct.h"
#include "shadowsocks.h"
#include "shadowsocks_internal.h"

/* SIP023's BLAKE3 context of identity subkeys. */
static const char ctx_identity[] = "shadowsocks 2022 identity subkey";

static bool time_ok(uint64_t ts, uint64_t now)
{
	return ts <= now + SS22_TIME_WINDOW && now <= ts + SS22_TIME_WINDOW;
}

/* SIP023: the identity subkey of ipsk for this salt, the key of its identity header. */
static int identity_subkey(uint8_t *out, size_t n, const uint8_t *ipsk, const uint8_t *salt)
{
	uint8_t km[2 * SS_SALT_MAX];
	int ret;

	memcpy(km, ipsk, n);
	memcpy(km + n, salt, n);
	ret = blake3_derive_key(out, n, ctx_identity, km, 2 * n);
	explicit_bzero(km, sizeof(km));
	return ret;
}

int ss22_client_eih(struct ss_seal *s, const struct ss_key *k)
{
	size_t n = s->salt_len;

	/* SIP023: header i carries BLAKE3(next PSK)[0..16] under iPSK i's identity subkey. */
	for (unsigned i = 0; i < k->n_ipsk; i++) {
		const uint8_t *next = i + 1 < k->n_ipsk ? k->ipsk[i + 1] : k->key;
		uint8_t isk[SS_SALT_MAX], h[16];
		int ret = identity_subkey(isk, n, k->ipsk[i], s->salt);

		if (ret == 0)
			ret = blake3_hash(h, sizeof(h), next, n);
		if (ret == 0)
			ret = aes_block_encrypt(isk, n, h, s->eih[i]);
		explicit_bzero(isk, sizeof(isk));
		if (ret < 0)
			return -EINVAL;
	}
	s->n_eih = k->n_ipsk;
	return 0;
}

/* --- users of a multi-user server ------------------------------------------ */

int ss_users_add(struct ss_users *u, const char *name, const char *b64, size_t key_len)
{
	struct ss_user *v, e = {.name = name, .pass = b64};

	if (ss_psk_decode(e.psk, key_len, b64) < 0 ||
	    blake3_hash(e.id, sizeof(e.id), e.psk, key_len))
		return -EINVAL;
	v = realloc(u->v, (u->n + 1) * sizeof(*v));
	if (!v) {
		explicit_bzero(&e, sizeof(e));
		return -ENOMEM;
	}
	u->v = v;
	u->v[u->n++] = e;
	explicit_bzero(&e, sizeof(e));
	return 0;
}

static int cmp_id(const void *a, const void *b)
{
	return memcmp(((const struct ss_user *)a)->id, ((const struct ss_user *)b)->id, 16);
}

int ss_users_finish(struct ss_users *u)
{
	if (u->n)
		qsort(u->v, u->n, sizeof(*u->v), cmp_id);
	for (size_t i = 1; i < u->n; i++) {
		if (cmp_id(&u->v[i - 1], &u->v[i]) == 0)
			return -EEXIST;
	}
	return 0;
}

/*
 * Binary search on the decrypted identity: an attacker without the identity
 * key cannot choose it, so the comparisons it makes leak nothing useful.
 */
const struct ss_user *ss_users_find(const struct ss_users *u, const uint8_t id[16])
{
	size_t lo = 0, hi = u ? u->n : 0;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = memcmp(id, u->v[mid].id, 16);

		if (c == 0)
			return &u->v[mid];
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return NULL;
}

void ss_users_free(struct ss_users *u)
{
	if (u->v)
		explicit_bzero(u->v, u->n * sizeof(*u->v));
	free(u->v);
	u->v = NULL;
	u->n = 0;
}

/* --- the streams' headers -------------------------------------------------- */

/* SIP022 3.1.3: type 1, timestamp, request salt, length: the response's first length chunk. */
int ss22_open_response(struct ss_open *o, const struct xform_ctx *ctx, uint8_t *p)
{
	size_t salt = o->salt_len, hl = SS22_RESP_HDR_LEN(salt);

	if (!ss_open_next(o, p, hl))
		return ss_open_fail(o, SS_ERR_AUTH);
	if (p[0] != SS22_TYPE_RESPONSE || !ct_equal(p + 9, salt, o->req_salt, salt))
		return ss_open_fail(o, SS_ERR_FORMAT);
	if (!time_ok(get_be64(p + 1), ctx->unix_s))
		return ss_open_fail(o, SS_ERR_TIME);
	o->want = get_be16(p + 9 + salt);
	o->phase = OPEN_PAYLOAD;
	return 0;
}

/*
 * SIP022 3.1: a request starts [salt][EIH...][fixed header][variable header:
 * address, padding length, padding, first payload], built backwards from
 * the payload, which was received in place; a response [salt][type 1,
 * timestamp, request salt, length][payload]; then [length][payload] chunks.
 */
int ss22_seal(struct ss_seal *s, const struct xform_ctx *ctx, uint8_t *buf, size_t n, size_t *off,
              size_t *len)
{
	size_t h = ss_headroom(s), salt = s->salt_len;

	*off = 0;
	*len = 0;
	if (!s->owes)
		return ss_seal_chunks(s, buf, 0, n, len);
	if (!s->client) {
		uint8_t *p = buf + salt;

		if (!n) /* the response header always goes with payload */
			return 0;
		memcpy(buf, s->salt, salt);
		p[0] = SS22_TYPE_RESPONSE;
		put_be64(p + 1, ctx->unix_s);
		memcpy(p + 9, s->req_salt, salt);
		put_be16(p + 9 + salt, (uint16_t)n);
		if (ss_seal_next(s, p, SS22_RESP_HDR_LEN(salt)) < 0 ||
		    ss_seal_next(s, buf + h, n) < 0)
			return -EINVAL;
		s->owes = false;
		*len = h + n + SS_TAG;
		return 0;
	}
	/* Pad a short first payload (SIP022 3.1.4: with none, padding is a must). */
	size_t pad = n < SS22_PAD_MAX ? s->pad : 0;
	size_t vlen = s->addr_len + 2 + pad + n;
	uint8_t *var = buf + h - pad - 2 - s->addr_len;
	uint8_t *fixed = var - SS22_FIXED_LEN - SS_TAG;
	uint8_t *start = fixed - SS22_EIH_LEN * s->n_eih - salt;

	memcpy(var, s->addr, s->addr_len);
	put_be16(var + s->addr_len, (uint16_t)pad);
	memset(var + s->addr_len + 2, 0, pad);
	fixed[0] = SS22_TYPE_REQUEST;
	put_be64(fixed + 1, ctx->unix_s);
	put_be16(fixed + 9, (uint16_t)vlen);
	if (ss_seal_next(s, fixed, SS22_FIXED_LEN) < 0 || ss_seal_next(s, var, vlen) < 0)
		return -EINVAL;
	memcpy(start, s->salt, salt);
	memcpy(start + salt, s->eih, SS22_EIH_LEN * s->n_eih);
	s->owes = false;
	*off = (size_t)(start - buf);
	*len = h + n + SS_TAG - *off;
	return 0;
}

/* --- the server's handshake ------------------------------------------------ */

/* 2022: salt, identity header (with users), fixed header, all at the front of buf. */
enum proto_res ss22_srv_head(struct ss_server *s, uint8_t *p)
{
	size_t salt = s->in.salt_len, eih = s->users ? SS22_EIH_LEN : 0;
	uint8_t *fixed = p + salt + eih;

	memcpy(s->salt, p, salt);
	memcpy(s->psk, s->key->key, salt);
	if (s->users) {
		uint8_t isk[SS_SALT_MAX], id[16];
		int ret = identity_subkey(isk, salt, s->key->key, s->salt);

		if (ret == 0)
			ret = aes_block_decrypt(isk, salt, p + salt, id);
		explicit_bzero(isk, sizeof(isk));
		s->user = ret == 0 ? ss_users_find(s->users, id) : NULL;
		if (!s->user)
			return ss_srv_fail(s, SS_ERR_USER);
		memcpy(s->psk, s->user->psk, salt);
	}
	if (ss_subkey(&s->in.aead, s->in.method, s->psk, s->salt) < 0)
		return ss_srv_fail(s, SS_ERR_FORMAT);
	memset(s->in.nonce, 0, sizeof(s->in.nonce));
	if (!ss_open_next(&s->in, fixed, SS22_FIXED_LEN))
		return ss_srv_fail(s, SS_ERR_AUTH);
	if (fixed[0] != SS22_TYPE_REQUEST)
		return ss_srv_fail(s, SS_ERR_FORMAT); /* a response reflected back at us */
	if (!time_ok(get_be64(fixed + 1), s->now))
		return ss_srv_fail(s, SS_ERR_TIME);
	s->in.want = get_be16(fixed + 9);
	/* the variable header holds at least an IPv4 target and the padding length */
	if (s->in.want < SOCKS5_ADDR_MIN + 2)
		return ss_srv_fail(s, SS_ERR_FORMAT);
	s->phase = SRV_VAR;
	return s->users ? PROTO_AUTH : PROTO_NEED_MORE;
}

/* 2022: the variable header: target, padding length, padding, first payload. */
enum proto_res ss22_srv_var(struct ss_server *s, uint8_t *p, size_t *off)
{
	size_t vlen = s->in.want, pad;
	long alen;

	if (!ss_open_next(&s->in, p, vlen))
		return ss_srv_fail(s, SS_ERR_AUTH);
	alen = socks5_addr_len(p, vlen);
	/* SIP022 3.1.4: the header (padding included) ends within the header chunk */
	if (alen <= 0 || (size_t)alen + 2 > vlen)
		return ss_srv_fail(s, SS_ERR_FORMAT);
	pad = get_be16(p + alen);
	if (pad > SS22_PAD_MAX || (size_t)alen + 2 + pad > vlen)
		return ss_srv_fail(s, SS_ERR_FORMAT);
	/* ... and carries payload or padding */
	if (pad == 0 && (size_t)alen + 2 == vlen)
		return ss_srv_fail(s, SS_ERR_FORMAT);
	memcpy(s->addr, p, (size_t)alen);
	s->addr_len = (uint16_t)alen;
	*off += (size_t)alen + 2 + pad;
	return ss_srv_request(s, p + alen + 2 + pad, vlen - (size_t)alen - 2 - pad, off);
}
