/* SPDX-License-Identifier: MIT */
/* The [wireguard NAME] sections of spliced.ini: userspace WireGuard interfaces run in-process. */
#ifndef SPLICED_APP_WG_HOSTED_H
#define SPLICED_APP_WG_HOSTED_H

#include "config.h"

struct wg_hosted;

/* Parse every section's wg-quick file; errors ("file:line: ...") to stderr. 0 or -EINVAL. */
int wg_hosted_check(const struct config *cfg);
/*
 * Bring every interface up (TUN, addresses, routes, UDP, UAPI socket) and run
 * each in its own thread. Call with the stop signals blocked. 0 or -errno;
 * on error nothing is left running.
 */
int wg_hosted_start(const struct config *cfg, struct wg_hosted **out);
/* Stop, join and remove every interface started. NULL is fine. */
void wg_hosted_stop(struct wg_hosted *h);

#endif
