/* SPDX-License-Identifier: MIT */
/* The shadowsocks outbound: the target in the first chunk of an AEAD or 2022 stream to the server. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "outbound.h"
#include "shadowsocks.h"

struct out_ss {
	const struct outbound *ob;
	struct proto_target t;
};

static enum proto_connect_result start(void *st, const struct outbound *ob,
                                       const struct proto_target *t, struct proto_target *dest)
{
	struct out_ss *s = st;

	/* The target goes to the server as the client sent it: a name stays a name. */
	s->ob = ob;
	s->t = *t;
	dest->kind = TARGET_DOMAIN;
	dest->port = ob->server_port;
	snprintf(dest->host, sizeof(dest->host), "%s", ob->server_host);
	proto_target_ip_literal(dest);
	return CONNECT_OK;
}

static const uint8_t *greeting(void *st, size_t *len)
{
	(void)st;
	*len = 0; /* no handshake: the request header goes with the first payload */
	return NULL;
}

static struct xform *xform(void *st)
{
	struct out_ss *s = st;
	uint8_t rnd[SS_RAND_LEN];
	struct ss_leg *l = malloc(sizeof(*l));

	if (!l)
		return NULL;
	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd) ||
	    ss_client_init(l, s->ob->ss, &s->t, rnd) < 0) {
		free(l);
		l = NULL;
	}
	explicit_bzero(rnd, sizeof(rnd));
	return l ? &l->x : NULL;
}

const struct outbound_ops outbound_ss_ops = {
        .name = "shadowsocks",
        .state_size = sizeof(struct out_ss),
        .start = start,
        .greeting = greeting,
        .xform = xform,
};
