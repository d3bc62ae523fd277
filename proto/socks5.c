/* SPDX-License-Identifier: MIT */
/* SOCKS5 (RFC 1928) + username/password (RFC 1929) handshakes as byte-buffer state machines. */
#include "socks5.h"

#include <errno.h>
#include <string.h>

#include "socks5_addr.h"

/*
 * Choices where the RFCs leave room (the relay only sees proto_res values):
 *  - A wrong VER in the greeting or the RFC 1929 request fails with an empty
 *    reply: the peer does not speak the protocol, no reply would be understood.
 *    A wrong VER in the CONNECT request gets "05 01" (the peer already
 *    negotiated SOCKS5 with us, so it can read a reply).
 *  - NMETHODS == 0 is answered 05 FF, like an offer with no acceptable method.
 *  - Without require_auth only method 00 is accepted (an offer of 02 alone gets
 *    05 FF): the caller has no user table to check credentials against.
 *  - Length fields are honoured before contents are judged: an empty UNAME or
 *    PASSWD, a NUL in them, an unsupported CMD and a bad domain are rejected
 *    only once the whole message has arrived, so the reply is not lost to the
 *    RST that closing a socket with unread bytes causes. A bad VER, RSV or
 *    ATYP leaves no way to know the length and fails at once.
 *  - Checks in the request: VER, RSV, ATYP (REP 08), then CMD (REP 07), then
 *    the domain (REP 01). CONNECT is always taken; UDP ASSOCIATE and FWD UDP
 *    only when the caller allowed them (socks5_server_allow()).
 *  - Bytes pipelined by the client after a message are left unconsumed; the
 *    feed convention hands them back on the next call.
 */

enum {
	GREETING_HDR = 2, /* VER NMETHODS */
	AUTH_HDR = 2,     /* VER ULEN */
	ADDR_OFF = 3,     /* VER CMD RSV, then ATYP ADDR PORT (reply: VER REP RSV) */
	AUTH_OK = 0x00,
	AUTH_FAIL = 0x01,
};

/* ---- server ---- */

static enum proto_res server_fail(struct socks5_server *s, enum socks5_error err, const uint8_t *r,
                                  size_t rlen)
{
	if (rlen)
		memcpy(s->reply, r, rlen);
	s->reply_len = rlen;
	s->error = err;
	s->state = SOCKS5_S_FAILED;
	return PROTO_FAIL;
}

static enum proto_res server_fail_rep(struct socks5_server *s, enum socks5_error err,
                                      enum socks5_rep rep)
{
	socks5_server_reply(s, rep, NULL);
	s->error = err;
	s->state = SOCKS5_S_FAILED;
	return PROTO_FAIL;
}

void socks5_server_init(struct socks5_server *s, bool require_auth)
{
	memset(s, 0, sizeof(*s));
	s->state = SOCKS5_S_GREETING;
	s->require_auth = require_auth;
}

void socks5_server_allow(struct socks5_server *s, bool udp, bool fwd_udp)
{
	s->allow_udp = udp;
	s->allow_fwd_udp = fwd_udp;
}

/* RFC 1928 section 3: VER NMETHODS METHODS[NMETHODS] → VER METHOD. */
static enum proto_res greeting(struct socks5_server *s, const uint8_t *buf, size_t len,
                               size_t *consumed)
{
	uint8_t want = s->require_auth ? SOCKS5_METHOD_USERPASS : SOCKS5_METHOD_NONE;
	static const uint8_t none[2] = {SOCKS5_VERSION, SOCKS5_METHOD_NO_ACCEPTABLE};
	size_t n;

	if (len < GREETING_HDR)
		return PROTO_NEED_MORE;
	if (buf[0] != SOCKS5_VERSION)
		return server_fail(s, SOCKS5_ERR_VERSION, NULL, 0);
	n = buf[1];
	if (n == 0) {
		*consumed = GREETING_HDR;
		return server_fail(s, SOCKS5_ERR_NO_METHODS, none, sizeof(none));
	}
	if (len < GREETING_HDR + n)
		return PROTO_NEED_MORE;
	*consumed = GREETING_HDR + n;
	if (!memchr(buf + GREETING_HDR, want, n))
		return server_fail(s, SOCKS5_ERR_NO_ACCEPTABLE, none, sizeof(none));
	s->reply[0] = SOCKS5_VERSION;
	s->reply[1] = want;
	s->reply_len = 2;
	s->state = want == SOCKS5_METHOD_USERPASS ? SOCKS5_S_AUTH : SOCKS5_S_REQUEST;
	return PROTO_REPLY;
}

/* RFC 1929 section 2: VER ULEN UNAME PLEN PASSWD; the verdict comes from the caller. */
static enum proto_res auth(struct socks5_server *s, const uint8_t *buf, size_t len,
                           size_t *consumed)
{
	static const uint8_t fail[2] = {SOCKS5_AUTH_VERSION, AUTH_FAIL};
	size_t ulen, plen;
	const uint8_t *user, *pass;

	if (len < AUTH_HDR)
		return PROTO_NEED_MORE;
	if (buf[0] != SOCKS5_AUTH_VERSION)
		return server_fail(s, SOCKS5_ERR_VERSION, NULL, 0);
	ulen = buf[1];
	if (len < AUTH_HDR + ulen + 1)
		return PROTO_NEED_MORE;
	plen = buf[AUTH_HDR + ulen];
	if (len < AUTH_HDR + ulen + 1 + plen)
		return PROTO_NEED_MORE;
	*consumed = AUTH_HDR + ulen + 1 + plen;
	user = buf + AUTH_HDR;
	pass = user + ulen + 1;
	if (ulen == 0 || plen == 0)
		return server_fail(s, SOCKS5_ERR_AUTH_FORMAT, fail, sizeof(fail));
	/* A NUL would let "name\0junk" match "name" in any C-string lookup. */
	if (memchr(user, 0, ulen) || memchr(pass, 0, plen))
		return server_fail(s, SOCKS5_ERR_AUTH_NUL, fail, sizeof(fail));
	memcpy(s->user, user, ulen);
	s->user[ulen] = '\0';
	s->user_len = ulen;
	memcpy(s->pass, pass, plen);
	s->pass[plen] = '\0';
	s->pass_len = plen;
	s->state = SOCKS5_S_AUTH_CHECK;
	return PROTO_AUTH;
}

enum proto_res socks5_server_auth_result(struct socks5_server *s, bool ok)
{
	explicit_bzero(s->pass, sizeof(s->pass));
	s->pass_len = 0;
	if (s->state != SOCKS5_S_AUTH_CHECK)
		return server_fail(s, s->error, NULL, 0); /* caller bug: fail closed */
	s->reply[0] = SOCKS5_AUTH_VERSION;
	if (!ok) {
		s->reply[1] = AUTH_FAIL;
		s->reply_len = 2;
		s->error = SOCKS5_ERR_AUTH_FAILED;
		s->state = SOCKS5_S_FAILED;
		return PROTO_FAIL;
	}
	s->reply[1] = AUTH_OK;
	s->reply_len = 2;
	s->state = SOCKS5_S_REQUEST;
	return PROTO_REPLY;
}

/* DST.ADDR DST.PORT of a CONNECT into s->target; `a` points at ATYP. */
static enum proto_res set_target(struct socks5_server *s, const uint8_t *a)
{
	if (socks5_addr_get(a, &s->target) < 0) /* the ATYP was checked: an empty or NUL name */
		return server_fail_rep(s, SOCKS5_ERR_DOMAIN, SOCKS5_REP_GENERAL_FAILURE);
	s->state = SOCKS5_S_DONE;
	return PROTO_REQUEST;
}

/* RFC 1928 section 4: VER CMD RSV ATYP DST.ADDR DST.PORT. */
static enum proto_res request(struct socks5_server *s, const uint8_t *buf, size_t len,
                              size_t *consumed)
{
	long alen;

	if (len < ADDR_OFF + 1)
		return PROTO_NEED_MORE;
	if (buf[0] != SOCKS5_VERSION)
		return server_fail_rep(s, SOCKS5_ERR_VERSION, SOCKS5_REP_GENERAL_FAILURE);
	if (buf[2] != 0)
		return server_fail_rep(s, SOCKS5_ERR_RESERVED, SOCKS5_REP_GENERAL_FAILURE);
	alen = socks5_addr_len(buf + ADDR_OFF, len - ADDR_OFF);
	if (alen < 0)
		return server_fail_rep(s, SOCKS5_ERR_ATYP, SOCKS5_REP_ATYP_NOT_SUPPORTED);
	if (alen == 0 || len < ADDR_OFF + (size_t)alen)
		return PROTO_NEED_MORE;
	*consumed = ADDR_OFF + (size_t)alen;
	s->cmd = buf[1];
	if (s->cmd != SOCKS5_CMD_CONNECT && !(s->cmd == SOCKS5_CMD_UDP_ASSOCIATE && s->allow_udp) &&
	    !(s->cmd == SOCKS5_CMD_FWD_UDP && s->allow_fwd_udp))
		return server_fail_rep(s, SOCKS5_ERR_COMMAND, SOCKS5_REP_CMD_NOT_SUPPORTED);
	return set_target(s, buf + ADDR_OFF);
}

enum proto_res socks5_server_feed(struct socks5_server *s, const uint8_t *buf, size_t len,
                                  size_t *consumed)
{
	enum proto_res res;
	size_t used = 0;

	switch (s->state) {
	case SOCKS5_S_GREETING:
		s->reply_len = 0;
		res = greeting(s, buf, len, &used);
		break;
	case SOCKS5_S_AUTH:
		s->reply_len = 0;
		res = auth(s, buf, len, &used);
		break;
	case SOCKS5_S_REQUEST:
		s->reply_len = 0;
		res = request(s, buf, len, &used);
		break;
	case SOCKS5_S_AUTH_CHECK: /* waiting for socks5_server_auth_result() */
	case SOCKS5_S_DONE:       /* later bytes are payload, not ours */
		res = PROTO_NEED_MORE;
		break;
	default: /* SOCKS5_S_FAILED: the reply was already handed out once */
		s->reply_len = 0;
		res = PROTO_FAIL;
		break;
	}
	/* NEED_MORE consumes nothing, whatever a step looked at. */
	*consumed = res == PROTO_NEED_MORE ? 0 : used;
	return res;
}

void socks5_server_reply(struct socks5_server *s, enum socks5_rep rep, const struct sockaddr *bound)
{
	s->reply[0] = SOCKS5_VERSION;
	s->reply[1] = rep;
	s->reply[2] = 0;
	s->reply_len = ADDR_OFF + socks5_addr_put_sockaddr(s->reply + ADDR_OFF, bound);
	if (rep != SOCKS5_REP_SUCCEEDED)
		s->state = SOCKS5_S_FAILED;
}

enum socks5_rep socks5_rep_from_connect(enum proto_connect_result r)
{
	switch (r) {
	case CONNECT_OK:
		return SOCKS5_REP_SUCCEEDED;
	case CONNECT_NOT_ALLOWED:
		return SOCKS5_REP_NOT_ALLOWED;
	case CONNECT_NET_UNREACHABLE:
		return SOCKS5_REP_NET_UNREACHABLE;
	case CONNECT_HOST_UNREACHABLE:
		return SOCKS5_REP_HOST_UNREACHABLE;
	case CONNECT_REFUSED:
		return SOCKS5_REP_CONN_REFUSED;
	case CONNECT_TIMEOUT:
		return SOCKS5_REP_TTL_EXPIRED; /* closest REP RFC 1928 has for a timeout */
	case CONNECT_CMD_UNSUPPORTED:
		return SOCKS5_REP_CMD_NOT_SUPPORTED;
	case CONNECT_ATYP_UNSUPPORTED:
		return SOCKS5_REP_ATYP_NOT_SUPPORTED;
	default:
		return SOCKS5_REP_GENERAL_FAILURE;
	}
}

/* The inverse, for an upstream's REP: socks5_rep_from_connect() gives every REP back unchanged. */
enum proto_connect_result socks5_connect_result_from_rep(enum socks5_rep rep)
{
	switch (rep) {
	case SOCKS5_REP_SUCCEEDED:
		return CONNECT_OK;
	case SOCKS5_REP_NOT_ALLOWED:
		return CONNECT_NOT_ALLOWED;
	case SOCKS5_REP_NET_UNREACHABLE:
		return CONNECT_NET_UNREACHABLE;
	case SOCKS5_REP_HOST_UNREACHABLE:
		return CONNECT_HOST_UNREACHABLE;
	case SOCKS5_REP_CONN_REFUSED:
		return CONNECT_REFUSED;
	case SOCKS5_REP_TTL_EXPIRED:
		return CONNECT_TIMEOUT;
	case SOCKS5_REP_CMD_NOT_SUPPORTED:
		return CONNECT_CMD_UNSUPPORTED;
	case SOCKS5_REP_ATYP_NOT_SUPPORTED:
		return CONNECT_ATYP_UNSUPPORTED;
	default:
		return CONNECT_GENERAL_FAILURE;
	}
}

/* ---- client ---- */

static enum proto_res client_fail(struct socks5_client *c, enum socks5_error err,
                                  enum socks5_rep rep)
{
	explicit_bzero(c->out, sizeof(c->out));
	explicit_bzero(c->pass, sizeof(c->pass));
	c->out_len = 0;
	c->rep = rep;
	c->error = err;
	c->state = SOCKS5_C_FAILED;
	return PROTO_FAIL;
}

static enum proto_res client_send_request(struct socks5_client *c)
{
	explicit_bzero(c->out, sizeof(c->out));
	c->out[0] = SOCKS5_VERSION;
	c->out[1] = c->cmd;
	c->out[2] = 0;
	c->out_len = ADDR_OFF + socks5_addr_put_target(c->out + ADDR_OFF, &c->target);
	c->state = SOCKS5_C_REPLY;
	return PROTO_REPLY;
}

int socks5_client_init(struct socks5_client *c, const struct proto_target *target, const char *user,
                       const char *pass)
{
	size_t ulen = 0, plen = 0, n;

	memset(c, 0, sizeof(*c));
	c->state = SOCKS5_C_FAILED;
	c->rep = SOCKS5_REP_GENERAL_FAILURE;
	if (!target)
		return -EINVAL;
	if (target->kind == TARGET_DOMAIN) {
		n = strnlen(target->host, sizeof(target->host));
		if (n == 0 || n > PROTO_HOST_MAX)
			return -EINVAL;
	} else if (target->kind == TARGET_IP) {
		if (target->addr.ss_family != AF_INET && target->addr.ss_family != AF_INET6)
			return -EINVAL;
	} else {
		return -EINVAL;
	}
	if (user) {
		/* RFC 1929: ULEN and PLEN are 1..255. */
		ulen = strnlen(user, PROTO_CRED_MAX + 1);
		plen = pass ? strnlen(pass, PROTO_CRED_MAX + 1) : 0;
		if (ulen == 0 || ulen > PROTO_CRED_MAX || plen == 0 || plen > PROTO_CRED_MAX)
			return -EINVAL;
		memcpy(c->user, user, ulen);
		memcpy(c->pass, pass, plen);
		c->have_auth = true;
	}
	c->target = *target;
	c->out[0] = SOCKS5_VERSION;
	if (c->have_auth) {
		c->out[1] = 2;
		c->out[2] = SOCKS5_METHOD_NONE;
		c->out[3] = SOCKS5_METHOD_USERPASS;
		c->out_len = 4;
	} else {
		c->out[1] = 1;
		c->out[2] = SOCKS5_METHOD_NONE;
		c->out_len = 3;
	}
	c->cmd = SOCKS5_CMD_CONNECT;
	c->rep = SOCKS5_REP_SUCCEEDED;
	c->state = SOCKS5_C_METHOD;
	return 0;
}

int socks5_client_command(struct socks5_client *c, uint8_t cmd)
{
	if (c->state != SOCKS5_C_METHOD ||
	    (cmd != SOCKS5_CMD_CONNECT && cmd != SOCKS5_CMD_UDP_ASSOCIATE &&
	     cmd != SOCKS5_CMD_FWD_UDP))
		return -EINVAL;
	c->cmd = cmd;
	return 0;
}

/* RFC 1928 section 3 answer: VER METHOD. */
static enum proto_res client_method(struct socks5_client *c, const uint8_t *buf, size_t len,
                                    size_t *consumed)
{
	size_t ulen, plen;

	if (len < 2)
		return PROTO_NEED_MORE;
	if (buf[0] != SOCKS5_VERSION)
		return client_fail(c, SOCKS5_ERR_VERSION, SOCKS5_REP_GENERAL_FAILURE);
	*consumed = 2;
	if (buf[1] == SOCKS5_METHOD_NONE)
		return client_send_request(c);
	if (buf[1] != SOCKS5_METHOD_USERPASS || !c->have_auth)
		return client_fail(c, SOCKS5_ERR_NO_ACCEPTABLE, SOCKS5_REP_GENERAL_FAILURE);
	ulen = strlen(c->user);
	plen = strlen(c->pass);
	c->out[0] = SOCKS5_AUTH_VERSION;
	c->out[1] = (uint8_t)ulen;
	memcpy(c->out + 2, c->user, ulen);
	c->out[2 + ulen] = (uint8_t)plen;
	memcpy(c->out + 3 + ulen, c->pass, plen);
	c->out_len = 3 + ulen + plen;
	explicit_bzero(c->pass, sizeof(c->pass)); /* only c->out holds it now */
	c->state = SOCKS5_C_AUTH;
	return PROTO_REPLY;
}

/* RFC 1929 answer: VER STATUS. Some servers answer VER 5 here; accept it. */
static enum proto_res client_auth(struct socks5_client *c, const uint8_t *buf, size_t len,
                                  size_t *consumed)
{
	if (len < 2)
		return PROTO_NEED_MORE;
	if (buf[0] != SOCKS5_AUTH_VERSION && buf[0] != SOCKS5_VERSION)
		return client_fail(c, SOCKS5_ERR_VERSION, SOCKS5_REP_GENERAL_FAILURE);
	*consumed = 2;
	if (buf[1] != AUTH_OK)
		return client_fail(c, SOCKS5_ERR_AUTH_FAILED, SOCKS5_REP_GENERAL_FAILURE);
	return client_send_request(c);
}

/*
 * RFC 1928 section 6: VER REP RSV ATYP BND.ADDR BND.PORT. A failure is final
 * as soon as REP is known (servers often close right after a short error).
 * REP values RFC 1928 does not define become GENERAL_FAILURE.
 */
static enum proto_res client_reply(struct socks5_client *c, const uint8_t *buf, size_t len,
                                   size_t *consumed)
{
	struct proto_target bnd;
	long alen;

	if (len < 2)
		return PROTO_NEED_MORE;
	if (buf[0] != SOCKS5_VERSION)
		return client_fail(c, SOCKS5_ERR_VERSION, SOCKS5_REP_GENERAL_FAILURE);
	if (buf[1] != SOCKS5_REP_SUCCEEDED) {
		*consumed = 2;
		return client_fail(c, SOCKS5_ERR_UPSTREAM_REP,
		                   buf[1] <= SOCKS5_REP_ATYP_NOT_SUPPORTED
		                           ? (enum socks5_rep)buf[1]
		                           : SOCKS5_REP_GENERAL_FAILURE);
	}
	if (len < ADDR_OFF)
		return PROTO_NEED_MORE;
	alen = socks5_addr_len(buf + ADDR_OFF, len - ADDR_OFF);
	if (alen < 0)
		return client_fail(c, SOCKS5_ERR_ATYP, SOCKS5_REP_GENERAL_FAILURE);
	if (alen == 0 || len < ADDR_OFF + (size_t)alen)
		return PROTO_NEED_MORE;
	*consumed = ADDR_OFF + (size_t)alen;
	memset(&c->bound, 0, sizeof(c->bound)); /* a domain BND stays AF_UNSPEC */
	if (buf[ADDR_OFF] != SOCKS5_ATYP_DOMAIN && socks5_addr_get(buf + ADDR_OFF, &bnd) == 0)
		c->bound = bnd.addr;
	explicit_bzero(c->out, sizeof(c->out));
	c->out_len = 0;
	c->rep = SOCKS5_REP_SUCCEEDED;
	c->state = SOCKS5_C_DONE;
	return PROTO_REQUEST;
}

enum proto_res socks5_client_feed(struct socks5_client *c, const uint8_t *buf, size_t len,
                                  size_t *consumed)
{
	enum proto_res res;
	size_t used = 0;

	switch (c->state) {
	case SOCKS5_C_METHOD:
		res = client_method(c, buf, len, &used);
		break;
	case SOCKS5_C_AUTH:
		res = client_auth(c, buf, len, &used);
		break;
	case SOCKS5_C_REPLY:
		res = client_reply(c, buf, len, &used);
		break;
	case SOCKS5_C_DONE: /* later bytes are payload, not ours */
		res = PROTO_NEED_MORE;
		break;
	default:
		c->out_len = 0;
		res = PROTO_FAIL;
		break;
	}
	*consumed = res == PROTO_NEED_MORE ? 0 : used;
	return res;
}
