/* SPDX-License-Identifier: MIT */
/* Routes and rules a tunnel installs, recorded so they can be undone (the TUN inbound and WireGuard share it). */
#include "routing.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

void routing_init(struct routing_set *s, int ifindex, uint8_t protocol)
{
	memset(s, 0, sizeof(*s));
	s->ifindex = ifindex;
	s->protocol = protocol;
}

int routing_add(struct routing_set *s, const struct netlink_prefix *p, uint32_t table)
{
	struct netlink_route r = {
	        .ifindex = s->ifindex, .dst = *p, .table = table, .protocol = s->protocol};
	struct netlink_route *a = realloc(s->routes, (s->n_routes + 1) * sizeof(*a));
	int ret;

	if (!a)
		return -ENOMEM;
	s->routes = a;
	ret = netlink_route_add_r(&r);
	if (ret == 0)
		a[s->n_routes++] = r;
	return ret == -EEXIST ? 0 : ret;
}

static int add_rule(struct routing_set *s, const struct netlink_rule *r)
{
	int ret;

	if (s->n_rules >= ROUTING_MAX_RULES)
		return -ENOSPC;
	ret = netlink_rule_add(r);
	if (ret == 0)
		s->rules[s->n_rules++] = *r;
	return ret;
}

int routing_default_pair(struct routing_set *s, int family, uint32_t table, uint32_t fwmark,
                         uint32_t priority)
{
	struct netlink_rule suppress = {.family = family,
	                                .table = 254, /* main */
	                                .suppress_prefixlen = 0,
	                                .priority = priority,
	                                .protocol = s->protocol};
	struct netlink_rule marked = {.family = family,
	                              .table = table,
	                              .fwmark = fwmark,
	                              .invert = true,
	                              .suppress_prefixlen = -1,
	                              .priority = priority ? priority + 1 : 0,
	                              .protocol = s->protocol};
	struct netlink_prefix any = {.family = family, .prefixlen = 0};
	int ret;

	/*
	 * The suppressing rule must be looked at first (a lower priority
	 * number). Without priorities the kernel gives each new rule the number
	 * below the lowest one in use, so it is added last, as wg-quick does.
	 */
	if (priority) {
		ret = add_rule(s, &suppress);
		if (ret == 0)
			ret = add_rule(s, &marked);
	} else {
		ret = add_rule(s, &marked);
		if (ret == 0)
			ret = add_rule(s, &suppress);
	}
	if (ret == 0)
		ret = routing_add(s, &any, table);
	return ret;
}

void routing_undo(struct routing_set *s, int device_gone)
{
	for (size_t i = s->n_rules; i-- > 0;)
		netlink_rule_del(&s->rules[i]);
	if (!device_gone)
		for (size_t i = 0; i < s->n_routes; i++)
			netlink_route_del_r(&s->routes[i]);
	free(s->routes);
	s->routes = NULL;
	s->n_routes = s->n_rules = 0;
}
