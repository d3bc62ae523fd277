/* SPDX-License-Identifier: MIT */
/* Counters per [inbound NAME] and per [outbound NAME]: a row per worker, summed when read (metrics). */
#ifndef SPLICED_SEC_STATS_H
#define SPLICED_SEC_STATS_H

#include <stdint.h>

#include "config.h"
#include "stats.h"

/* Why an accepted connection was let go before its handshake (inbounds). */
enum sec_refused {
	REFUSED_LIMIT = 0, /* max-connections */
	REFUSED_ALLOW,     /* not in the inbound's allow */
	REFUSED_SOURCE,    /* max-connections-per-source */
	REFUSED_USER,      /* the user is at its max-connections */
	REFUSED_N,
};

/* Why a handshake failed (inbounds). */
enum sec_hs_failed {
	HS_BAD = 0,         /* malformed or refused by the protocol */
	HS_TIMEOUT,         /* over handshake-timeout */
	HS_NO_ORIGINAL_DST, /* redirect/tproxy: the socket cannot say where it was going */
	HS_AUTH,            /* wrong credentials */
	HS_AUTH_THROTTLED,  /* the source failed max-auth-failures this minute */
	HS_N,
};

/* Why an upstream's handshake failed (outbounds; in hs_failed[], so fewer than HS_N). */
enum sec_out_hs_failed {
	OUT_HS_REFUSED =
	        0,      /* it answered, not with a yes: a refusal, of our login too, or nonsense */
	OUT_HS_CLOSED,  /* it closed (or a send to it failed) before its answer was whole */
	OUT_HS_TIMEOUT, /* no answer within handshake-timeout */
	OUT_HS_N,
};
_Static_assert((int)OUT_HS_N <= (int)HS_N, "outbound handshake failures share hs_failed[]");

enum sec_path { PATH_SPLICE = 0, PATH_BUFFER, PATH_N };

/* Outbound failures: by enum proto_connect_result (CONNECT_GENERAL_FAILURE..CONNECT_TIMEOUT). */
enum { SEC_CONNECT_N = 7 };

/*
 * One worker's counters for one section, written by that worker alone and
 * read without a lock by the metrics endpoint (stats.h). A cache line of
 * its own at least, so workers never share one. Not every field applies to
 * both kinds: an outbound has no refusals, an inbound no connect failures.
 */
struct sec_row {
	uint64_t accepted; /* inbounds: connections the listener accepted */
	uint64_t opened,
	        closed; /* admitted (inbound) or routed here (outbound); active = difference */
	uint64_t refused[REFUSED_N];
	uint64_t hs_failed[HS_N];
	uint64_t connect_failed[SEC_CONNECT_N];
	uint64_t bytes[2][PATH_N]; /* [0: client to target, 1: back][splice or buffer] */
} __attribute__((aligned(64)));

enum sec_kind { SEC_STATS_INBOUND = 0, SEC_STATS_OUTBOUND };

/*
 * The counters of the section called `name`: one object per name for the
 * life of the process's configurations, so a reload that keeps a section
 * keeps its counters (a Prometheus counter never goes back). Refcounted by
 * the configuration snapshots that name it; registered with the stats
 * registry as family "inbound" or "outbound", labels inbound="NAME".
 */
struct sec_stats {
	enum sec_kind kind;
	char name[CONFIG_NAME_MAX + 1];
	char labels[CONFIG_NAME_MAX + 16];
	unsigned refs; /* under the module's lock */
	struct stats_group group;
	struct sec_stats *next;
	int n_rows;
	struct sec_row rows[];
};

/* The object for (kind, name) with one more reference, made on first use. NULL: no memory. */
struct sec_stats *sec_stats_get(enum sec_kind kind, const char *name, int n_workers);
void sec_stats_put(struct sec_stats *s);

/* The sums of every row (tests, logs). */
void sec_stats_sum(const struct sec_stats *s, struct sec_row *out);

#endif
