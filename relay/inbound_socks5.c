/* SPDX-License-Identifier: MIT */
/* The socks5 inbound: RFC 1928 CONNECT with optional RFC 1929 username/password. */
#include "inbound.h"
#include "socks5.h"

static enum proto_res start(void *st, const struct inbound *in, int fd)
{
	(void)fd;
	socks5_server_init(st, inbound_requires_auth(in));
	socks5_server_allow(st, in->udp, in->udp);
	return PROTO_NEED_MORE;
}

static enum proto_res feed(void *st, uint8_t *buf, size_t len, size_t *used)
{
	return socks5_server_feed(st, buf, len, used);
}

static void creds(const void *st, const char **user, const char **pass)
{
	const struct socks5_server *s = st;

	*user = s->user;
	*pass = s->pass;
}

static enum proto_res auth_result(void *st, bool ok)
{
	return socks5_server_auth_result(st, ok);
}

static const uint8_t *pending(const void *st, size_t *len)
{
	const struct socks5_server *s = st;

	*len = s->reply_len;
	return s->reply;
}

static const struct proto_target *target(const void *st)
{
	return &((const struct socks5_server *)st)->target;
}

static enum inbound_udp udp(const void *st)
{
	switch (((const struct socks5_server *)st)->cmd) {
	case SOCKS5_CMD_UDP_ASSOCIATE:
		return INBOUND_UDP_ASSOCIATE;
	case SOCKS5_CMD_FWD_UDP:
		return INBOUND_UDP_IN_TCP;
	default:
		return INBOUND_UDP_NONE;
	}
}

static const uint8_t *reply(void *st, enum proto_connect_result r, const struct sockaddr *bound,
                            size_t *len)
{
	struct socks5_server *s = st;

	socks5_server_reply(s, socks5_rep_from_connect(r), bound);
	*len = s->reply_len;
	return s->reply;
}

const struct inbound_ops inbound_socks5_ops = {
        .name = "socks5",
        .state_size = sizeof(struct socks5_server),
        /*
         * The largest message is the RFC 1929 request (513 bytes); the rest
         * is room for early payload, which otherwise simply waits in the
         * socket for the pump. Small, so idle handshakes cost little.
         */
        .buf_size = 1536,
        .start = start,
        .feed = feed,
        .creds = creds,
        .auth_result = auth_result,
        .pending = pending,
        .target = target,
        .udp = udp,
        .reply = reply,
};
