/* SPDX-License-Identifier: MIT */
/* The http outbound: the target through an upstream HTTP proxy (CONNECT, optional Basic auth). */
#include <stdio.h>

#include "http_client.h"
#include "outbound.h"

static enum proto_connect_result start(void *st, const struct outbound *ob,
                                       const struct proto_target *t, struct proto_target *dest)
{
	/* The target goes to the upstream as the client sent it: a name stays a name. */
	if (http_client_init(st, t, ob->username, ob->password) < 0)
		return CONNECT_GENERAL_FAILURE;
	dest->kind = TARGET_DOMAIN;
	dest->port = ob->server_port;
	snprintf(dest->host, sizeof(dest->host), "%s", ob->server_host);
	proto_target_ip_literal(dest);
	return CONNECT_OK;
}

static const uint8_t *greeting(void *st, size_t *len)
{
	struct http_client *c = st;

	*len = c->out_len;
	return c->out;
}

static enum proto_res feed(void *st, const uint8_t *buf, size_t len, size_t *used)
{
	return http_client_feed(st, buf, len, used);
}

static const uint8_t *pending(const void *st, size_t *len)
{
	(void)st;
	*len = 0; /* one request, one response: nothing to send in between */
	return NULL;
}

static enum proto_connect_result failure(const void *st)
{
	return ((const struct http_client *)st)->result;
}

static const struct sockaddr *bound(const void *st)
{
	(void)st;
	return NULL; /* an HTTP proxy does not say which address it connected from */
}

const struct outbound_ops outbound_http_ops = {
        .name = "http",
        .state_size = sizeof(struct http_client),
        .buf_size = HTTP_CLIENT_HEAD_MAX,
        .start = start,
        .greeting = greeting,
        .feed = feed,
        .pending = pending,
        .failure = failure,
        .bound = bound,
};
