/* SPDX-License-Identifier: MIT */
/* The [wireguard NAME] sections of spliced.ini: userspace WireGuard interfaces run in-process. */
#ifndef SPLICED_APP_WG_HOSTED_H
#define SPLICED_APP_WG_HOSTED_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"

struct wg_hosted;

/* Parse every section's wg-quick file; errors ("file:line: ...") to stderr. 0 or -EINVAL. */
int wg_hosted_check(const struct config *cfg);
/*
 * Bring every interface up (TUN, addresses, routes, UDP, UAPI socket)
 * without starting a thread, so privileges can be dropped in between
 * (privdrop.c). 0 or -errno; on error nothing is left behind.
 */
int wg_hosted_create(const struct config *cfg, struct wg_hosted **out);
/*
 * Run each interface in its own thread (it starts its worker threads).
 * Call with the stop signals blocked. 0 or -errno; wg_hosted_stop() cleans
 * up either way. NULL is fine.
 */
int wg_hosted_run(struct wg_hosted *h);
/* The i-th interface's ListenPort from its file (0: random), for privdrop_need(). */
uint16_t wg_hosted_listen_port(const struct wg_hosted *h, size_t i);
/* SIGUSR1: every interface prints its counters to stderr at its next tick. */
void wg_hosted_dump_stats(struct wg_hosted *h);
/* Stop, join and remove every interface started. NULL is fine. */
void wg_hosted_stop(struct wg_hosted *h);

/*
 * A reload in two steps. Prepare: parse every [wireguard] section's file
 * of cfg, refuse what only a new interface takes (Address, MTU, Table, a
 * /0 coming or going, [Spliced] keys: "needs a restart"), check that a new
 * ListenPort can be bound, and create the interfaces cfg adds (not yet
 * running). 0 with *out, or -errno with every problem logged and nothing
 * changed. Then apply (cannot fail as a whole: each interface is logged)
 * or abort.
 */
struct wg_hosted_change;
int wg_hosted_prepare(struct wg_hosted *h, const struct config *cfg, struct wg_hosted_change **out);
/* Kept interfaces synced like `wg syncconf`, new ones started, removed ones stopped. Frees c. */
void wg_hosted_apply(struct wg_hosted *h, struct wg_hosted_change *c);
void wg_hosted_abort(struct wg_hosted_change *c);

#endif
