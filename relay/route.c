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

bool route_prefix_match(const uint8_t *a, const uint8_t *net, unsigned bits)
{
	unsigned bytes = bits / 8, rem = bits % 8;

	if (memcmp(a, net, bytes) != 0)
		return false;
	if (rem == 0)
		return true;
	uint8_t mask = (uint8_t)(0xff << (8 - rem));
	return (a[bytes] & mask) == (net[bytes] & mask);
}

bool route_addr_v4(const struct sockaddr_storage *a, uint8_t v4[4])
{
	static const uint8_t nat64[12] = {0x00, 0x64, 0xff, 0x9b};

	if (a->ss_family == AF_INET) {
		memcpy(v4, &((const struct sockaddr_in *)a)->sin_addr, 4);
		return true;
	}
	if (a->ss_family != AF_INET6)
		return false;
	const struct in6_addr *in6 = &((const struct sockaddr_in6 *)a)->sin6_addr;
	if (!IN6_IS_ADDR_V4MAPPED(in6) && memcmp(in6->s6_addr, nat64, sizeof(nat64)) != 0)
		return false;
	memcpy(v4, in6->s6_addr + 12, 4);
	return true;
}

/*
 * Whether rule r covers a connection to `a`. An address is matched in every
 * form the kernel treats as the same destination, or a client could walk
 * around "cidr 127.0.0.0/8 -> block" by spelling it another way:
 *  - IPv4 rules see the IPv4 address behind ::ffff:a.b.c.d and
 *    64:ff9b::a.b.c.d (route_addr_v4());
 *  - 0.0.0.0 is also 127.0.0.1, and :: also ::1: Linux connects the
 *    unspecified address to the local host (ip_route_connect() substitutes
 *    loopback, tcp_v6_connect() ::1), so it is the loopback a rule names.
 * Other IPv6 addresses never match IPv4 rules, nor IPv4 addresses IPv6 rules.
 */
static bool cidr_match(const struct rule *r, const struct sockaddr_storage *a)
{
	static const uint8_t loop4[4] = {127, 0, 0, 1};
	uint8_t v4[4];

	if (r->family == AF_INET) {
		if (!route_addr_v4(a, v4))
			return false;
		if (route_prefix_match(v4, r->addr, r->prefix))
			return true;
		return memcmp(v4, "\0\0\0\0", 4) == 0 &&
		       route_prefix_match(loop4, r->addr, r->prefix);
	}
	if (a->ss_family != AF_INET6)
		return false;
	const struct in6_addr *in6 = &((const struct sockaddr_in6 *)a)->sin6_addr;
	if (route_prefix_match(in6->s6_addr, r->addr, r->prefix))
		return true;
	return IN6_IS_ADDR_UNSPECIFIED(in6) &&
	       route_prefix_match(in6addr_loopback.s6_addr, r->addr, r->prefix);
}

bool route_user_match(const struct rule *r, const char *user)
{
	if (!user)
		return false;
	for (const char *n = r->users; *n; n += strlen(n) + 1)
		if (strcmp(n, user) == 0)
			return true;
	return false;
}

int route_rule_for(const struct config *cfg, const struct proto_target *t,
                   const struct sockaddr_storage *a, const char *user)
{
	for (size_t i = 0; i < cfg->n_rules; i++) {
		const struct rule *r = &cfg->rules[i];
		bool hit = false;

		switch (r->kind) {
		case RULE_CIDR:
			hit = a && cidr_match(r, a);
			break;
		case RULE_PORT:
			hit = t->port >= r->port_lo && t->port <= r->port_hi;
			break;
		case RULE_DOMAIN:
			hit = t->kind == TARGET_DOMAIN && route_domain_match(t->host, r->domain);
			break;
		case RULE_USER:
			hit = route_user_match(r, user);
			break;
		}
		if (hit)
			return (int)i;
	}
	return -1;
}

int route_pick(const struct config *cfg, const struct inbound *in, const struct proto_target *t,
               const char *user)
{
	int i;

	if (in && in->outbound >= 0)
		return in->outbound;
	i = route_rule_for(cfg, t, t->kind == TARGET_IP ? &t->addr : NULL, user);
	return i >= 0 ? cfg->rules[i].outbound : cfg->route_default;
}
