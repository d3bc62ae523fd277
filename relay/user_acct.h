/* SPDX-License-Identifier: MIT */
/* Per-user accounting: connections open now (max-connections per user), counts and bytes, whole process. */
#ifndef SPLICED_USER_ACCT_H
#define SPLICED_USER_ACCT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "log.h"

/*
 * One entry per name that has logged in (on any inbound: a name is one user
 * wherever it logs in), made at its first login and kept until exit, so a
 * connection may hold a plain pointer to it. The counters are atomics shared
 * by every worker, touched twice per connection (open, close), never per
 * byte: a connection adds its bytes when it ends.
 */
struct user_acct {
	struct user_acct *next; /* hash chain */
	atomic_uint limit;      /* connections open at once (0: no limit); a reload may change it */
	atomic_uint active;     /* connections and UDP associations open now */
	atomic_uint_fast64_t conns, refused, bytes_up, bytes_down;
	char name[]; /* NUL-terminated, 1..255 bytes */
};

struct user_accts;

/*
 * The table for cfg ([user NAME] max-connections, [main] max-connections-per-user),
 * registered with the stats registry (family "user", a row per user). NULL: no memory.
 */
struct user_accts *user_accts_new(const struct config *cfg);
/* A reload: the limits of cfg (which must outlive the next call) for every user, known or not. */
void user_accts_set_config(struct user_accts *t, const struct config *cfg);
void user_accts_free(struct user_accts *t);
/* name's entry, made on first use (any thread). NULL: no memory. */
struct user_acct *user_acct_get(struct user_accts *t, const char *name);
/* A connection of u opens: false (counted in refused) when u is at its limit. */
bool user_acct_open(struct user_acct *u);
/* It ends, having moved up bytes client to target and down bytes back. */
void user_acct_close(struct user_acct *u, uint64_t up, uint64_t down);
/* Bytes of a connection that goes on (an HTTP keep-alive exchange that ended). */
void user_acct_bytes(struct user_acct *u, uint64_t up, uint64_t down);
/* One "stats: user NAME: ..." line per user who has logged in, by name. */
void user_accts_log(struct user_accts *t, enum log_level level);

#endif
