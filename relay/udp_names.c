/* SPDX-License-Identifier: MIT */
/* Names in a UDP session's datagrams: looked up once (c-ares), kept, and the datagrams that wait for them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>

#include "udp.h"
#include "worker.h"

/*
 * Names a client sends to are looked up once per session and kept
 * (UDP_NAMES of them, the oldest replaced); datagrams wait for their name's
 * answer, at most UDP_QUEUE of them and UDP_QUEUE_BYTES in all.
 */
enum { UDP_NAMES = 4, UDP_QUEUE = 8, UDP_QUEUE_BYTES = 16384 };

enum udp_name_state { NAME_EMPTY = 0, NAME_WAITING, NAME_LOOKUP, NAME_READY, NAME_FAILED };

struct udp_name {
	enum udp_name_state state;
	char host[PROTO_HOST_MAX + 1];
	uint16_t port;                /* of the datagram that asked (the lookup wants one) */
	struct sockaddr_storage addr; /* NAME_READY: the first address */
};

struct udp_queued {
	uint8_t *data; /* the payload, malloc'd */
	size_t len;
	uint16_t port;
	int name; /* index into names[] */
	int outbound;
};

/* The names a session has sent to, and the datagrams waiting for one. */
struct udp_names {
	struct udp_name names[UDP_NAMES];
	unsigned next_name; /* the entry a new name replaces */
	struct udp_queued queue[UDP_QUEUE];
	unsigned n_queued;
	size_t queued_bytes;
	bool lookup; /* a lookup is in flight (for the NAME_LOOKUP entry) */
};

/*
 * The table (struct udp_names) is allocated the first time the client
 * sends to a name, so a session that only ever sends to addresses
 * (most: DNS, QUIC, games) does not carry it: 1.8 KiB less each.
 */

static void flush_name(struct udp_sess *s, int i);

static int find_name(const struct udp_sess *s, const char *host)
{
	for (int i = 0; i < UDP_NAMES; i++)
		if (s->nm->names[i].state != NAME_EMPTY && strcmp(s->nm->names[i].host, host) == 0)
			return i;
	return -1;
}

static void drop_queued(struct udp_sess *s, unsigned i)
{
	s->nm->queued_bytes -= s->nm->queue[i].len;
	free(s->nm->queue[i].data);
	s->nm->queue[i] = s->nm->queue[--s->nm->n_queued];
}

/* Start the lookup of the next name that waits for one, if none is in flight. */
static void next_lookup(struct udp_sess *s)
{
	struct worker *w = s->w;

	for (int i = 0; !s->nm->lookup && i < UDP_NAMES; i++) {
		struct udp_name *nm = &s->nm->names[i];

		if (nm->state != NAME_WAITING)
			continue;
		nm->state = NAME_LOOKUP;
		s->nm->lookup = true;
		/* The answer may come before this returns (/etc/hosts): udp_resolved() then ran. */
		if (resolver_lookup(&w->res, &s->obj, nm->host, nm->port) < 0) {
			s->nm->lookup = false;
			nm->state = NAME_FAILED;
			w->stats.resolve_full++;
			flush_name(s, i);
		}
	}
}

/* Datagrams for name i: sent now that it resolved, or dropped if it did not. */
static void flush_name(struct udp_sess *s, int i)
{
	struct worker *w = s->w;
	const struct udp_name *nm = &s->nm->names[i];

	for (unsigned q = 0; q < s->nm->n_queued;) {
		struct udp_queued *e = &s->nm->queue[q];
		struct proto_target t = {.kind = TARGET_DOMAIN, .port = e->port};
		struct sockaddr_storage to = nm->addr;

		if (e->name != i) {
			q++;
			continue;
		}
		if (nm->state == NAME_READY) {
			snprintf(t.host, sizeof(t.host), "%s", nm->host);
			((struct sockaddr_in *)&to)->sin_port = htons(e->port);
			udp_sess_send_to(s, &w->cfg->outbounds[e->outbound], &t, &to, e->data,
			                 e->len);
			udp_tx_flush(w); /* e->data goes next */
		} else {
			w->stats.udp_unresolved++;
		}
		drop_queued(s, q);
	}
}

void udp_resolved(struct worker *w, struct loop_obj *o, int err,
                  const struct sockaddr_storage *addrs, int n)
{
	struct udp_sess *s = (struct udp_sess *)o;

	(void)w;
	if (!s->nm)
		return; /* not ours to answer: no lookup was asked */
	s->nm->lookup = false;
	for (int i = 0; i < UDP_NAMES; i++) {
		struct udp_name *nm = &s->nm->names[i];

		if (nm->state != NAME_LOOKUP)
			continue;
		if (err == 0 && n > 0) {
			nm->addr = addrs[0];
			nm->state = NAME_READY;
		} else {
			nm->state = NAME_FAILED;
		}
		flush_name(s, i);
	}
	next_lookup(s);
}

/* A datagram to a name: sent at once when the name is known, else queued for its lookup. */
void udp_names_send(struct udp_sess *s, const struct outbound *ob, const struct proto_target *t,
                    const uint8_t *d, size_t n)
{
	struct worker *w = s->w;
	struct udp_queued *e;
	int i;

	if (!s->nm && !(s->nm = calloc(1, sizeof(*s->nm)))) {
		w->stats.udp_queue_full++;
		return;
	}
	i = find_name(s, t->host);

	if (i >= 0 && s->nm->names[i].state == NAME_READY) {
		struct sockaddr_storage to = s->nm->names[i].addr;

		((struct sockaddr_in *)&to)->sin_port = htons(t->port);
		udp_sess_send_to(s, ob, t, &to, d, n);
		return;
	}
	if (i >= 0 && s->nm->names[i].state == NAME_FAILED) {
		w->stats.udp_unresolved++;
		return;
	}
	if (s->nm->n_queued == UDP_QUEUE || s->nm->queued_bytes + n > UDP_QUEUE_BYTES) {
		w->stats.udp_queue_full++;
		return;
	}
	if (i < 0) {
		/* A new name replaces the oldest entry, unless that one still waits for its answer. */
		i = (int)(s->nm->next_name % UDP_NAMES);
		if (s->nm->names[i].state == NAME_LOOKUP || s->nm->names[i].state == NAME_WAITING) {
			w->stats.udp_queue_full++;
			return;
		}
		s->nm->next_name++;
		memset(&s->nm->names[i], 0, sizeof(s->nm->names[i]));
		snprintf(s->nm->names[i].host, sizeof(s->nm->names[i].host), "%s", t->host);
		s->nm->names[i].port = t->port ? t->port : 1; /* c-ares refuses service "0" */
		s->nm->names[i].state = NAME_WAITING;
	}
	e = &s->nm->queue[s->nm->n_queued];
	e->data = malloc(n ? n : 1);
	if (!e->data) {
		w->stats.udp_queue_full++;
		return;
	}
	memcpy(e->data, d, n);
	e->len = n;
	e->port = t->port;
	e->name = i;
	e->outbound = (int)(ob - w->cfg->outbounds);
	s->nm->n_queued++;
	s->nm->queued_bytes += n;
	next_lookup(s);
}

void udp_names_free(struct udp_sess *s)
{
	if (!s->nm)
		return;
	while (s->nm->n_queued)
		drop_queued(s, 0);
	free(s->nm);
	s->nm = NULL;
}
