/* SPDX-License-Identifier: MIT */
/* The http inbound: HTTP/1.1 CONNECT (RFC 9110 §9.3.6) with optional Basic auth. */
#include "http_connect.h"
#include "inbound.h"

static enum proto_res start(void *st, const struct inbound *in, int fd)
{
	(void)fd;
	http_connect_init(st, inbound_requires_auth(in));
	return PROTO_NEED_MORE;
}

static enum proto_res feed(void *st, uint8_t *buf, size_t len, size_t *used)
{
	return http_connect_feed(st, buf, len, used);
}

static void creds(const void *st, const char **user, const char **pass)
{
	const struct http_connect *h = st;

	*user = h->user;
	*pass = h->pass;
}

static enum proto_res auth_result(void *st, bool ok)
{
	return http_connect_auth_result(st, ok);
}

static const uint8_t *pending(const void *st, size_t *len)
{
	const struct http_connect *h = st;

	*len = h->reply_len;
	return h->reply;
}

static const struct proto_target *target(const void *st)
{
	return &((const struct http_connect *)st)->target;
}

static const uint8_t *reply(void *st, enum proto_connect_result r, const struct sockaddr *bound,
                            size_t *len)
{
	struct http_connect *h = st;

	(void)bound; /* a 200 carries no address */
	http_connect_reply(h, r);
	*len = h->reply_len;
	return h->reply;
}

static const struct http_fwd_req *http_fwd(const void *st)
{
	const struct http_connect *h = st;

	return h->forward && h->done ? &h->fwd : NULL;
}

const struct inbound_ops inbound_http_ops = {
        .name = "http",
        .state_size = sizeof(struct http_connect),
        /* The head limit plus one byte, so the parser can tell "over". */
        .buf_size = HTTP_HEADER_MAX + 1,
        .start = start,
        .feed = feed,
        .creds = creds,
        .auth_result = auth_result,
        .pending = pending,
        .target = target,
        .reply = reply,
        .http_fwd = http_fwd,
};
