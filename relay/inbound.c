/* SPDX-License-Identifier: MIT */
/* The inbound table, and the forward inbound (no handshake: every connection goes to one target). */
#include <stdio.h>

#include "inbound.h"

static enum proto_res fwd_start(void *st, const struct inbound *in, int fd)
{
	(void)fd;
	struct proto_target *t = st;

	t->kind = TARGET_DOMAIN;
	t->port = in->target_port;
	snprintf(t->host, sizeof(t->host), "%s", in->target_host);
	proto_target_ip_literal(t); /* so CIDR rules see an IP target */
	return PROTO_REQUEST;
}

/* The ops of every inbound without a handshake (forward, redirect, tproxy). */
enum proto_res inbound_nohs_feed(void *st, uint8_t *buf, size_t len, size_t *used)
{
	(void)st, (void)buf, (void)len;
	*used = 0;
	return PROTO_FAIL; /* never called: start() has the request already */
}

const struct proto_target *inbound_nohs_target(const void *st)
{
	return st;
}

const uint8_t *inbound_nohs_pending(const void *st, size_t *len)
{
	(void)st;
	*len = 0;
	return NULL;
}

const uint8_t *inbound_nohs_reply(void *st, enum proto_connect_result r,
                                  const struct sockaddr *bound, size_t *len)
{
	(void)r, (void)bound;
	return inbound_nohs_pending(st, len); /* no answer: a failure just closes */
}

static const struct inbound_ops inbound_forward_ops = {
        .name = "forward",
        .state_size = sizeof(struct proto_target),
        .buf_size = 0,
        .start = fwd_start,
        .feed = inbound_nohs_feed,
        .pending = inbound_nohs_pending,
        .target = inbound_nohs_target,
        .reply = inbound_nohs_reply,
};

static const struct inbound_ops *const table[] = {
        [INBOUND_SOCKS5] = &inbound_socks5_ops,     [INBOUND_HTTP] = &inbound_http_ops,
        [INBOUND_FORWARD] = &inbound_forward_ops,   [INBOUND_MIXED] = &inbound_mixed_ops,
        [INBOUND_REDIRECT] = &inbound_redirect_ops, [INBOUND_TPROXY] = &inbound_tproxy_ops,
        [INBOUND_TUN] = &inbound_tun_ops,           [INBOUND_SHADOWSOCKS] = &inbound_ss_ops,
};

const struct inbound_ops *inbound_ops(enum inbound_type type)
{
	return table[type];
}
