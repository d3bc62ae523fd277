/* SPDX-License-Identifier: MIT */
/* Route matching: CIDR (IP-literal targets), port ranges, domain suffixes; first match wins. */
#include <netinet/in.h>
#include <string.h>
#include <strings.h>

#include "route.h"

bool route_domain_match(const char *name, const char *suffix)
{
	size_t n = strlen(name), s = strlen(suffix);

	if (n && name[n - 1] == '.') /* fully qualified "example.com." */
		n--;
	if (s > n)
		return false;
	if (strncasecmp(name + n - s, suffix, s) != 0)
		return false;
	return n == s || name[n - s - 1] == '.';
}

static bool prefix_match(const uint8_t *a, const uint8_t *net, unsigned bits)
{
	unsigned bytes = bits / 8, rem = bits % 8;

	if (memcmp(a, net, bytes) != 0)
		return false;
	if (rem == 0)
		return true;
	uint8_t mask = (uint8_t)(0xff << (8 - rem));
	return (a[bytes] & mask) == (net[bytes] & mask);
}

static bool cidr_match(const struct rule *r, const struct proto_target *t)
{
	if (t->kind != TARGET_IP)
		return false;
	if (t->addr.ss_family == AF_INET && r->family == AF_INET) {
		const struct sockaddr_in *in = (const void *)&t->addr;
		return prefix_match((const uint8_t *)&in->sin_addr, r->addr, r->prefix);
	}
	if (t->addr.ss_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const void *)&t->addr;
		if (r->family == AF_INET6)
			return prefix_match(in6->sin6_addr.s6_addr, r->addr, r->prefix);
		/*
		 * ::ffff:a.b.c.d reaches a.b.c.d through a dual-stack socket, so
		 * IPv4 rules must see it as the IPv4 address it is, or a client
		 * could walk around "cidr 10.0.0.0/8 -> block".
		 */
		if (r->family == AF_INET && IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr))
			return prefix_match(in6->sin6_addr.s6_addr + 12, r->addr, r->prefix);
	}
	return false;
}

int route_pick(const struct config *cfg, const struct inbound *in, const struct proto_target *t)
{
	if (in && in->outbound >= 0)
		return in->outbound;
	for (size_t i = 0; i < cfg->n_rules; i++) {
		const struct rule *r = &cfg->rules[i];
		bool hit = false;

		switch (r->kind) {
		case RULE_CIDR:
			hit = cidr_match(r, t);
			break;
		case RULE_PORT:
			hit = t->port >= r->port_lo && t->port <= r->port_hi;
			break;
		case RULE_DOMAIN:
			hit = t->kind == TARGET_DOMAIN && route_domain_match(t->host, r->domain);
			break;
		}
		if (hit)
			return r->outbound;
	}
	return cfg->route_default;
}
