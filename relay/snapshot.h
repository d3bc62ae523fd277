/* SPDX-License-Identifier: MIT */
/* The configuration in force as one immutable object: the parsed INI and what was built from it, refcounted, swapped whole on reload. */
#ifndef SPLICED_SNAPSHOT_H
#define SPLICED_SNAPSHOT_H

#include <stdatomic.h>
#include <stdio.h>

#include "config.h"
#include "sec_stats.h"
#include "users.h"

/*
 * Everything a connection reads from the configuration it started with:
 * its inbound, the outbounds and rules that route it, the users tables it
 * logs in against, the counters it adds to. A reload builds a new one and
 * the workers switch to it for new connections; an open connection keeps
 * the one it started with alive (indexes into its inbounds[] and
 * outbounds[] stay valid), so nothing a connection holds changes under it.
 *
 * Lifetime: `refs` is one for main while the snapshot is current, plus one
 * for each worker that uses it. A worker counts its own objects on a
 * snapshot in holds[its id] (written by that worker alone, so no atomic on
 * the accept path) and gives its reference back once it has switched to a
 * newer snapshot and the last of those objects is gone. The last
 * reference frees it, on whichever thread drops it.
 */
struct snapshot_hold {
	unsigned n;
} __attribute__((aligned(64)));

struct snapshot {
	atomic_uint refs;
	unsigned gen; /* 1 at start, one more per reload */
	struct config *cfg;
	struct users *users[CONFIG_MAX_INBOUNDS];        /* NULL: no login on that inbound */
	struct sec_stats *in_stats[CONFIG_MAX_INBOUNDS]; /* by name: kept across reloads */
	struct sec_stats *out_stats[CONFIG_MAX_OUTBOUNDS];
	int n_workers;
	struct snapshot_hold holds[];
};

/*
 * A snapshot of cfg (which it then owns) for n_workers: reads every
 * inbound's users file, messages ("file:line: ...") to err. NULL with
 * *err_out set (-errno, -EINVAL) on failure; cfg is freed then too.
 */
struct snapshot *snapshot_new(struct config *cfg, int n_workers, unsigned gen, FILE *err,
                              int *err_out);
void snapshot_ref(struct snapshot *s);
void snapshot_unref(struct snapshot *s);

/* The index of the inbound / outbound called name in s, or -1. */
int snapshot_inbound(const struct snapshot *s, const char *name);

#endif
