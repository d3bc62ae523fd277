/* SPDX-License-Identifier: MIT */
/* The keys of [stats], the metrics endpoint (relay/metrics.c), and the checks at the end of the section. */
#include <string.h>

#include "config_internal.h"
#include "sockaddr.h"

static void set_stats_listen(struct parser *p, const char *v)
{
	char q[QUOTE_BYTES];
	const char *why = "cannot be stored: out of memory";

	if (sa_parse(v, &p->c->stats_listen, &p->c->stats_listen_len, &why) < 0)
		kerr(p, "\"%s\" %s", config_quote(q, v), why);
}

static void set_stats_allow(struct parser *p, const char *v)
{
	config_parse_allow(p, v, &p->c->stats_allow, &p->c->n_stats_allow);
}

enum { STATS_LISTEN, STATS_ALLOW };
const struct key config_stats_keys[] = {
        [STATS_LISTEN] = {"listen", set_stats_listen, false, 0},
        [STATS_ALLOW] = {"allow", set_stats_allow, true, 0},
        {NULL, NULL, false, 0},
};

/* The endpoint needs an address; one of an inbound's would take its connections. */
void config_close_stats(struct parser *p)
{
	struct config *c = p->c;

	c->stats_line = p->sec_line;
	if (!(p->seen & 1u << STATS_LISTEN)) {
		config_err(p, p->sec_line, NULL,
		           "missing key: listen (the metrics endpoint's address)");
		return;
	}
	for (size_t i = 0; i < c->n_inbounds; i++)
		if (c->inbounds[i].listen_len == c->stats_listen_len && c->stats_listen_len &&
		    memcmp(&c->inbounds[i].listen, &c->stats_listen, c->stats_listen_len) == 0)
			config_err(p, p->key_line[STATS_LISTEN], "listen",
			           "address already used by [inbound %s]", c->inbounds[i].name);
}
