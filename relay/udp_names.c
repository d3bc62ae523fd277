/* SPDX-License-Identifier: MIT */
/* Names in a UDP association's datagrams: looked up once (c-ares), kept, and the datagrams that wait for them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>

#include "udp.h"
#include "worker.h"

/*
 * The table (struct udp_names) is allocated the first time the client
 * sends to a name, so an association that only ever sends to addresses
 * (most: DNS, QUIC, games) does not carry it: 1.8 KiB less each.
 */

static void flush_name(struct udp_assoc *a, int i);

static int find_name(const struct udp_assoc *a, const char *host)
{
	for (int i = 0; i < UDP_NAMES; i++)
		if (a->nm->names[i].state != NAME_EMPTY && strcmp(a->nm->names[i].host, host) == 0)
			return i;
	return -1;
}

static void drop_queued(struct udp_assoc *a, unsigned i)
{
	a->nm->queued_bytes -= a->nm->queue[i].len;
	free(a->nm->queue[i].data);
	a->nm->queue[i] = a->nm->queue[--a->nm->n_queued];
}

/* Start the lookup of the next name that waits for one, if none is in flight. */
static void next_lookup(struct udp_assoc *a)
{
	struct worker *w = a->w;

	for (int i = 0; !a->nm->lookup && i < UDP_NAMES; i++) {
		struct udp_name *nm = &a->nm->names[i];

		if (nm->state != NAME_WAITING)
			continue;
		nm->state = NAME_LOOKUP;
		a->nm->lookup = true;
		/* The answer may come before this returns (/etc/hosts): udp_resolved() then ran. */
		if (resolver_lookup(&w->res, &a->obj, nm->host, nm->port) < 0) {
			a->nm->lookup = false;
			nm->state = NAME_FAILED;
			w->stats.resolve_full++;
			flush_name(a, i);
		}
	}
}

/* Datagrams for name i: sent now that it resolved, or dropped if it did not. */
static void flush_name(struct udp_assoc *a, int i)
{
	struct worker *w = a->w;
	const struct udp_name *nm = &a->nm->names[i];

	for (unsigned q = 0; q < a->nm->n_queued;) {
		struct udp_queued *e = &a->nm->queue[q];
		struct proto_target t = {.kind = TARGET_DOMAIN, .port = e->port};
		struct sockaddr_storage to = nm->addr;

		if (e->name != i) {
			q++;
			continue;
		}
		if (nm->state == NAME_READY) {
			snprintf(t.host, sizeof(t.host), "%s", nm->host);
			((struct sockaddr_in *)&to)->sin_port = htons(e->port);
			udp_send_to(a, &a->snap->cfg->outbounds[e->outbound], &t, &to, e->data,
			            e->len);
			udp_tx_flush(w); /* e->data goes next */
		} else {
			w->stats.udp_unresolved++;
		}
		drop_queued(a, q);
	}
}

void udp_resolved(struct worker *w, struct loop_obj *o, int err,
                  const struct sockaddr_storage *addrs, int n)
{
	struct udp_assoc *a = (struct udp_assoc *)o;

	(void)w;
	if (!a->nm)
		return; /* not ours to answer: no lookup was asked */
	a->nm->lookup = false;
	for (int i = 0; i < UDP_NAMES; i++) {
		struct udp_name *nm = &a->nm->names[i];

		if (nm->state != NAME_LOOKUP)
			continue;
		if (err == 0 && n > 0) {
			nm->addr = addrs[0];
			nm->state = NAME_READY;
		} else {
			nm->state = NAME_FAILED;
		}
		flush_name(a, i);
	}
	next_lookup(a);
}

/* A datagram to a name: sent at once when the name is known, else queued for its lookup. */
void udp_up_name(struct udp_assoc *a, const struct outbound *ob, const struct proto_target *t,
                 const uint8_t *d, size_t n)
{
	struct worker *w = a->w;
	struct udp_queued *e;
	int i;

	if (!a->nm && !(a->nm = calloc(1, sizeof(*a->nm)))) {
		w->stats.udp_queue_full++;
		return;
	}
	i = find_name(a, t->host);

	if (i >= 0 && a->nm->names[i].state == NAME_READY) {
		struct sockaddr_storage to = a->nm->names[i].addr;

		((struct sockaddr_in *)&to)->sin_port = htons(t->port);
		udp_send_to(a, ob, t, &to, d, n);
		return;
	}
	if (i >= 0 && a->nm->names[i].state == NAME_FAILED) {
		w->stats.udp_unresolved++;
		return;
	}
	if (a->nm->n_queued == UDP_QUEUE || a->nm->queued_bytes + n > UDP_QUEUE_BYTES) {
		w->stats.udp_queue_full++;
		return;
	}
	if (i < 0) {
		/* A new name replaces the oldest entry, unless that one still waits for its answer. */
		i = (int)(a->nm->next_name % UDP_NAMES);
		if (a->nm->names[i].state == NAME_LOOKUP || a->nm->names[i].state == NAME_WAITING) {
			w->stats.udp_queue_full++;
			return;
		}
		a->nm->next_name++;
		memset(&a->nm->names[i], 0, sizeof(a->nm->names[i]));
		snprintf(a->nm->names[i].host, sizeof(a->nm->names[i].host), "%s", t->host);
		a->nm->names[i].port = t->port ? t->port : 1; /* c-ares refuses service "0" */
		a->nm->names[i].state = NAME_WAITING;
	}
	e = &a->nm->queue[a->nm->n_queued];
	e->data = malloc(n ? n : 1);
	if (!e->data) {
		w->stats.udp_queue_full++;
		return;
	}
	memcpy(e->data, d, n);
	e->len = n;
	e->port = t->port;
	e->name = i;
	e->outbound = (int)(ob - a->snap->cfg->outbounds);
	a->nm->n_queued++;
	a->nm->queued_bytes += n;
	next_lookup(a);
}

void udp_names_free(struct udp_assoc *a)
{
	if (!a->nm)
		return;
	while (a->nm->n_queued)
		drop_queued(a, 0);
	free(a->nm);
	a->nm = NULL;
}
