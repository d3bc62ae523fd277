/* SPDX-License-Identifier: MIT */
/* Counters per inbound and per outbound: one object per name, a row per worker, summed when read. */
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sec_stats.h"

/* Objects in use, by name; taken at start-up and reloads, put as configurations go. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct sec_stats *all;

#define C STATS_COUNTER
#define G STATS_GAUGE
#define BYTES(dir, path)                                                                                  \
	{                                                                                                 \
		"bytes",                                                                                  \
		        "bytes relayed, by direction (up: client to target) and path (splice: through a " \
		        "pipe; buffer: copied through user space)",                                       \
		        C, "direction=\"" dir "\",path=\"" path "\""                                      \
	}

/* Inbounds: read_in() fills the values in this order. */
static const struct stats_desc in_desc[] = {
        {"connections_accepted", "connections the inbound's listeners accepted", C, NULL},
        {"connections_refused", "accepted connections let go before their handshake, by reason", C,
         "reason=\"max-connections\""},
        {"connections_refused", "accepted connections let go before their handshake, by reason", C,
         "reason=\"allow\""},
        {"connections_refused", "accepted connections let go before their handshake, by reason", C,
         "reason=\"max-connections-per-source\""},
        {"connections_refused", "accepted connections let go before their handshake, by reason", C,
         "reason=\"user-limit\""},
        {"connections_active", "connections open (UDP associations' control connections too)", G,
         NULL},
        {"handshake_failures", "failed handshakes, by reason", C, "reason=\"bad-request\""},
        {"handshake_failures", "failed handshakes, by reason", C, "reason=\"timeout\""},
        {"handshake_failures", "failed handshakes, by reason", C,
         "reason=\"no-original-destination\""},
        {"auth_failures", "failed logins, by reason", C, "reason=\"bad-credentials\""},
        {"auth_failures", "failed logins, by reason", C, "reason=\"throttled\""},
        BYTES("up", "splice"),
        BYTES("up", "buffer"),
        BYTES("down", "splice"),
        BYTES("down", "buffer"),
};

/* Outbounds: read_out() fills the values in this order; failures by proto_connect_result. */
static const struct stats_desc out_desc[] = {
        {"connections", "requests routed to the outbound", C, NULL},
        {"connections_active", "connections routed to the outbound and still open", G, NULL},
        {"connect_failures", "requests that failed on the outbound, by reason", C,
         "reason=\"failed\""},
        {"connect_failures", "requests that failed on the outbound, by reason", C,
         "reason=\"blocked\""},
        {"connect_failures", "requests that failed on the outbound, by reason", C,
         "reason=\"net-unreachable\""},
        {"connect_failures", "requests that failed on the outbound, by reason", C,
         "reason=\"host-unreachable\""},
        {"connect_failures", "requests that failed on the outbound, by reason", C,
         "reason=\"refused\""},
        {"connect_failures", "requests that failed on the outbound, by reason", C,
         "reason=\"timeout\""},
        {"handshake_failures", "handshakes with the upstream that failed, by reason", C,
         "reason=\"refused\""},
        {"handshake_failures", "handshakes with the upstream that failed, by reason", C,
         "reason=\"closed\""},
        {"handshake_failures", "handshakes with the upstream that failed, by reason", C,
         "reason=\"timeout\""},
        BYTES("up", "splice"),
        BYTES("up", "buffer"),
        BYTES("down", "splice"),
        BYTES("down", "buffer"),
};
#undef BYTES
#undef C
#undef G

enum {
	N_IN = sizeof(in_desc) / sizeof(in_desc[0]),
	N_OUT = sizeof(out_desc) / sizeof(out_desc[0]),
};

void sec_stats_sum(const struct sec_stats *s, struct sec_row *out)
{
	memset(out, 0, sizeof(*out));
	for (int w = 0; w < s->n_rows; w++) {
		const uint64_t *v = (const uint64_t *)&s->rows[w];
		uint64_t *o = (uint64_t *)out;

		/*
		 * closed before opened: both only grow, so a row read while a
		 * connection opens and closes in between never shows closed > opened.
		 */
		o[offsetof(struct sec_row, closed) / 8] += s->rows[w].closed;
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		for (size_t k = 0; k < sizeof(*out) / 8; k++)
			if (k != offsetof(struct sec_row, closed) / 8)
				o[k] += v[k];
	}
}

static uint64_t active(const struct sec_row *r)
{
	return r->opened > r->closed ? r->opened - r->closed : 0;
}

static void read_in(const struct stats_group *g, uint64_t *out)
{
	struct sec_row r;
	size_t n = 0;

	sec_stats_sum(g->ctx, &r);
	out[n++] = r.accepted;
	for (int i = 0; i < REFUSED_N; i++)
		out[n++] = r.refused[i];
	out[n++] = active(&r);
	for (int i = 0; i < HS_N; i++)
		out[n++] = r.hs_failed[i];
	for (int d = 0; d < 2; d++)
		for (int p = 0; p < PATH_N; p++)
			out[n++] = r.bytes[d][p];
}

static void read_out(const struct stats_group *g, uint64_t *out)
{
	struct sec_row r;
	size_t n = 0;

	sec_stats_sum(g->ctx, &r);
	out[n++] = r.opened;
	out[n++] = active(&r);
	for (int i = 0; i < SEC_CONNECT_N - 1; i++)
		out[n++] = r.connect_failed[i + 1];
	for (int i = 0; i < OUT_HS_N; i++)
		out[n++] = r.hs_failed[i];
	for (int d = 0; d < 2; d++)
		for (int p = 0; p < PATH_N; p++)
			out[n++] = r.bytes[d][p];
}

_Static_assert(N_IN == 1 + REFUSED_N + 1 + HS_N + 2 * PATH_N, "one inbound desc per value");
_Static_assert(N_OUT == 2 + SEC_CONNECT_N - 1 + OUT_HS_N + 2 * PATH_N,
               "one outbound desc per value");

struct sec_stats *sec_stats_get(enum sec_kind kind, const char *name, int n_workers)
{
	struct sec_stats *s;

	pthread_mutex_lock(&lock);
	for (s = all; s; s = s->next)
		if (s->kind == kind && strcmp(s->name, name) == 0)
			break;
	if (s) {
		s->refs++;
		pthread_mutex_unlock(&lock);
		return s;
	}
	s = aligned_alloc(64, sizeof(*s) + (size_t)n_workers * sizeof(s->rows[0]));
	if (!s) {
		pthread_mutex_unlock(&lock);
		return NULL;
	}
	memset(s, 0, sizeof(*s) + (size_t)n_workers * sizeof(s->rows[0]));
	s->kind = kind;
	s->refs = 1;
	s->n_rows = n_workers;
	snprintf(s->name, sizeof(s->name), "%s", name);
	snprintf(s->labels, sizeof(s->labels), "%s=\"%s\"",
	         kind == SEC_STATS_INBOUND ? "inbound" : "outbound", name);
	s->group = (struct stats_group){
	        .name = s->name,
	        .family = kind == SEC_STATS_INBOUND ? "inbound" : "outbound",
	        .labels = s->labels,
	        .desc = kind == SEC_STATS_INBOUND ? in_desc : out_desc,
	        .n = kind == SEC_STATS_INBOUND ? N_IN : N_OUT,
	        .read = kind == SEC_STATS_INBOUND ? read_in : read_out,
	        .ctx = s,
	};
	s->next = all;
	all = s;
	stats_register(&s->group);
	pthread_mutex_unlock(&lock);
	return s;
}

void sec_stats_put(struct sec_stats *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&lock);
	if (--s->refs == 0) {
		for (struct sec_stats **p = &all; *p; p = &(*p)->next) {
			if (*p == s) {
				*p = s->next;
				break;
			}
		}
		/* After this no scrape reads it (the registry's lock). */
		stats_unregister(&s->group);
		free(s);
	}
	pthread_mutex_unlock(&lock);
}
