/* SPDX-License-Identifier: MIT */
/* SIGHUP: the whole INI read and checked again, then applied all at once or not at all. */
#ifndef SPLICED_APP_RELOAD_H
#define SPLICED_APP_RELOAD_H

#include <stdint.h>

#include "privdrop.h"
#include "wg_hosted.h"
#include "worker.h"

struct reload {
	const char *path; /* -c FILE; NULL: the built-in configuration */
	unsigned gen;     /* reloads applied (the snapshot's gen) */
	unsigned fd_seq;  /* descriptor messages sent to the workers, applied or not */
	uint64_t ok, failed;
	uint64_t last_ok_s; /* Unix time of the last reload applied, 0: none yet */
};

/*
 * Read rl->path again and check everything that can be checked before a
 * thing changes: the INI ("file:line: ..." per problem), every users file,
 * every wg-quick file, what needs a restart ([main] workers, user, ...;
 * an inbound type the reload cannot reopen; a WireGuard interface's
 * addresses), the privileges it needs, and the sockets of new or moved
 * listeners (opened now: a port in use fails here). On any error nothing
 * changes and the running configuration stays. Otherwise every worker
 * switches to the new configuration for new connections (open ones keep
 * theirs), the WireGuard interfaces are brought in line like `wg
 * syncconf`, and it returns once the workers have switched (or after a
 * bounded wait, logged). 0 applied, -errno not.
 */
int reload_run(struct reload *rl, struct server *srv, struct wg_hosted *wg,
               const struct privdrop *pd);

/* [main] max-connections over the workers: what RLIMIT_NOFILE should be (start, reload). */
void reload_raise_nofile(const struct config *cfg, int n_workers);

#endif
