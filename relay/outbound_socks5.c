/* SPDX-License-Identifier: MIT */
/* The socks5 outbound: the target through an upstream SOCKS5 proxy (RFC 1928/1929 client). */
#include <stdio.h>

#include "outbound.h"
#include "socks5.h"

static enum proto_connect_result start(void *st, const struct outbound *ob,
                                       const struct proto_target *t, struct proto_target *dest)
{
	/* The target goes to the upstream as the client sent it: a name stays a name. */
	if (socks5_client_init(st, t, ob->username, ob->password) < 0)
		return CONNECT_GENERAL_FAILURE;
	dest->kind = TARGET_DOMAIN;
	dest->port = ob->server_port;
	snprintf(dest->host, sizeof(dest->host), "%s", ob->server_host);
	proto_target_ip_literal(dest);
	return CONNECT_OK;
}

static const uint8_t *pending(const void *st, size_t *len)
{
	const struct socks5_client *c = st;

	*len = c->out_len;
	return c->out;
}

static const uint8_t *greeting(void *st, size_t *len)
{
	return pending(st, len);
}

static enum proto_res feed(void *st, const uint8_t *buf, size_t len, size_t *used)
{
	return socks5_client_feed(st, buf, len, used);
}

static enum proto_connect_result failure(const void *st)
{
	/* The upstream's verdict, passed on: REP maps to REP one to one. */
	return socks5_connect_result_from_rep(((const struct socks5_client *)st)->rep);
}

static const struct sockaddr *bound(const void *st)
{
	const struct socks5_client *c = st;

	return c->bound.ss_family == AF_UNSPEC ? NULL : (const struct sockaddr *)&c->bound;
}

const struct outbound_ops outbound_socks5_ops = {
        .name = "socks5",
        .state_size = sizeof(struct socks5_client),
        .buf_size = 1024, /* an upstream's replies are at most 262 bytes */
        .start = start,
        .greeting = greeting,
        .feed = feed,
        .pending = pending,
        .failure = failure,
        .bound = bound,
};
