/* SPDX-License-Identifier: MIT */
/* The mixed inbound: SOCKS5 and HTTP CONNECT on one port, told apart by the client's first byte. */
#include <string.h>

#include "http_connect.h"
#include "inbound.h"
#include "socks5.h"

/*
 * A SOCKS5 client speaks first with VER = 5; an HTTP request line starts
 * with a method token, which is never that byte. So the first byte picks
 * the protocol, and from then on the connection is exactly a socks5 or an
 * http inbound connection: same users, same udp settings, same replies. A
 * first byte that is neither 5 nor a token character (SOCKS4's 4, TLS's
 * 0x16, ...) goes to the HTTP parser, which answers 400.
 */

enum mixed_which { MIXED_UNDECIDED = 0, MIXED_SOCKS5, MIXED_HTTP };

struct mixed {
	enum mixed_which which;
	const struct inbound *in; /* for the init once the protocol is known */
	union {
		struct socks5_server socks5;
		struct http_connect http;
	} u;
};

static const struct inbound_ops *ops_of(const struct mixed *m)
{
	return m->which == MIXED_SOCKS5 ? &inbound_socks5_ops : &inbound_http_ops;
}

static enum proto_res start(void *st, const struct inbound *in, int fd)
{
	(void)fd;
	struct mixed *m = st;

	m->which = MIXED_UNDECIDED;
	m->in = in;
	return PROTO_NEED_MORE;
}

static enum proto_res feed(void *st, uint8_t *buf, size_t len, size_t *used)
{
	struct mixed *m = st;

	if (m->which == MIXED_UNDECIDED) {
		if (!len) {
			*used = 0;
			return PROTO_NEED_MORE;
		}
		m->which = buf[0] == SOCKS5_VERSION ? MIXED_SOCKS5 : MIXED_HTTP;
		ops_of(m)->start(&m->u, m->in, -1);
	}
	return ops_of(m)->feed(&m->u, buf, len, used);
}

static void creds(const void *st, const char **user, const char **pass)
{
	const struct mixed *m = st;

	ops_of(m)->creds(&m->u, user, pass);
}

static enum proto_res auth_result(void *st, bool ok)
{
	struct mixed *m = st;

	return ops_of(m)->auth_result(&m->u, ok);
}

static const uint8_t *pending(const void *st, size_t *len)
{
	const struct mixed *m = st;

	if (m->which == MIXED_UNDECIDED) {
		*len = 0;
		return NULL;
	}
	return ops_of(m)->pending(&m->u, len);
}

static const struct proto_target *target(const void *st)
{
	const struct mixed *m = st;

	return ops_of(m)->target(&m->u);
}

static enum inbound_udp udp(const void *st)
{
	const struct mixed *m = st;

	return m->which == MIXED_SOCKS5 ? inbound_socks5_ops.udp(&m->u) : INBOUND_UDP_NONE;
}

static const uint8_t *reply(void *st, enum proto_connect_result r, const struct sockaddr *bound,
                            size_t *len)
{
	struct mixed *m = st;

	return ops_of(m)->reply(&m->u, r, bound, len);
}

static const struct http_fwd_req *http_fwd(const void *st)
{
	const struct mixed *m = st;

	return m->which == MIXED_HTTP ? inbound_http_ops.http_fwd(&m->u) : NULL;
}

const struct inbound_ops inbound_mixed_ops = {
        .name = "mixed",
        .state_size = sizeof(struct mixed),
        /* HTTP's head limit is the larger need; SOCKS5's is 1.5 KiB. */
        .buf_size = HTTP_HEADER_MAX + 1,
        .start = start,
        .feed = feed,
        .creds = creds,
        .auth_result = auth_result,
        .pending = pending,
        .target = target,
        .udp = udp,
        .reply = reply,
        .http_fwd = http_fwd,
};
