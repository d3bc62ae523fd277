/* SPDX-License-Identifier: MIT */
/* Routes and rules a tunnel installs (wg-quick's default-route pair), recorded so they can be undone; shared by the TUN inbound and WireGuard. */
#ifndef SPLICED_TUN_ROUTING_H
#define SPLICED_TUN_ROUTING_H

#include <stddef.h>
#include <stdint.h>

#include "netlink.h"

enum { ROUTING_MAX_RULES = 4 };

/* What was installed, to be removed at exit (routing_undo()). */
struct routing_set {
	int ifindex;
	uint8_t protocol; /* the tag on every route and rule (0: untagged) */
	struct netlink_route *routes;
	size_t n_routes;
	struct netlink_rule rules[ROUTING_MAX_RULES];
	size_t n_rules;
};

void routing_init(struct routing_set *s, int ifindex, uint8_t protocol);
/* A route to p through the device in table (0: main); -EEXIST is not an error here. */
int routing_add(struct routing_set *s, const struct netlink_prefix *p, uint32_t table);
/*
 * wg-quick's pair for a default route of `family` in table T:
 *   priority P:     from all lookup main suppress_prefixlength 0
 *   priority P + 1: not from all fwmark M lookup T
 * so more specific routes of the main table (the LAN, the tunnel's own
 * prefix) still win, and sockets marked M (the tunnel's own) skip T.
 * priority 0 lets the kernel choose (wg-quick's way). Then the default
 * route itself in T.
 */
int routing_default_pair(struct routing_set *s, int family, uint32_t table, uint32_t fwmark,
                         uint32_t priority);
/* Removes every rule, and every route while the device exists (device_gone: skip them). */
void routing_undo(struct routing_set *s, int device_gone);

#endif
