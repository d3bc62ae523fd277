/* SPDX-License-Identifier: MIT */
/* Egress policy: [route] block rules per address, no connects to our own listeners, deny-private. */
#include <errno.h>
#include <netinet/in.h>
#include <string.h>

#include "egress.h"
#include "hostaddr.h"
#include "log.h"
#include "sockaddr.h"
#include "route.h"

/*
 * The route is decided on what the client sent (a name, a port, or an
 * address in any spelling, proto_target_ip_literal()). What is checked here
 * is what spliced is about to connect to: every address of a name after
 * resolution, the literal itself, or the upstream server. So "cidr
 * 127.0.0.0/8 -> block" holds for "localhost", "localhost.", a name whose
 * A records include 127.0.0.1, "0.0.0.0" and "[::ffff:127.0.0.1]" alike,
 * and a DNS answer can no longer walk a client around a rule.
 */

const char *egress_verdict_name(enum egress_verdict v)
{
	switch (v) {
	case EGRESS_OK:
		return "allowed";
	case EGRESS_RULE:
		return "block rule";
	case EGRESS_SELF:
		return "own listener";
	case EGRESS_PRIVATE:
		return "deny-private range";
	case EGRESS_OWNED:
		return "deny-private: address of this host";
	case EGRESS_UNKNOWN:
		return "ownership unknown";
	case EGRESS_N:
		break;
	}
	return "?";
}

struct range {
	uint8_t net[16];
	uint8_t bits;
	const char *name;
};

/*
 * deny-private: destinations that are this host, this site, or no unicast
 * destination at all (RFC 6890 special-purpose registries). Documentation
 * ranges (192.0.2.0/24, 2001:db8::/32, ...) and the benchmarking range
 * stay allowed: they are unrouted, not private.
 */
static const struct range v4_ranges[] = {
        {{0}, 8, "0.0.0.0/8 (this network)"},
        {{10}, 8, "10.0.0.0/8 (private)"},
        {{100, 64}, 10, "100.64.0.0/10 (shared address space, CGNAT)"},
        {{127}, 8, "127.0.0.0/8 (loopback)"},
        {{169, 254}, 16, "169.254.0.0/16 (link-local)"},
        {{172, 16}, 12, "172.16.0.0/12 (private)"},
        {{192, 168}, 16, "192.168.0.0/16 (private)"},
        {{224}, 4, "224.0.0.0/4 (multicast)"},
        {{240}, 4, "240.0.0.0/4 (reserved, broadcast)"},
};
static const struct range v6_ranges[] = {
        {{0}, 128, "::/128 (unspecified)"},
        {{[15] = 1}, 128, "::1/128 (loopback)"},
        {{0}, 96, "::/96 (IPv4-compatible, deprecated)"},
        {{0xfe, 0x80}, 10, "fe80::/10 (link-local)"},
        {{0xfe, 0xc0}, 10, "fec0::/10 (site-local, deprecated)"},
        {{0xfc}, 7, "fc00::/7 (unique local)"},
        {{0xff}, 8, "ff00::/8 (multicast)"},
};

static const char *in_ranges(const uint8_t *a, const struct range *r, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (route_prefix_match(a, r[i].net, r[i].bits))
			return r[i].name;
	return NULL;
}

const char *egress_private_range(const struct sockaddr_storage *a)
{
	uint8_t v4[4];

	if (route_addr_v4(a, v4))
		return in_ranges(v4, v4_ranges, sizeof(v4_ranges) / sizeof(v4_ranges[0]));
	if (a->ss_family != AF_INET6)
		return "not an IP address";
	return in_ranges(((const struct sockaddr_in6 *)a)->sin6_addr.s6_addr, v6_ranges,
	                 sizeof(v6_ranges) / sizeof(v6_ranges[0]));
}

/* sin_port and sin6_port share their offset; network byte order. */
static uint16_t port_of(const struct sockaddr_storage *a)
{
	return ((const struct sockaddr_in *)a)->sin_port;
}

/*
 * Where the kernel really connects a socket for `a`: ::ffff:a.b.c.d goes to
 * a.b.c.d; 0.0.0.0 to the socket's bound address (bind-address) or else
 * 127.0.0.1 (ip_route_connect()), :: to the bound address or ::1
 * (tcp_v6_connect()).
 */
static void effective(const struct sockaddr_storage *a, const struct outbound *ob,
                      struct sockaddr_storage *e)
{
	struct sockaddr_in *e4 = (struct sockaddr_in *)e;
	struct sockaddr_in6 *e6 = (struct sockaddr_in6 *)e;
	const struct sockaddr_in6 *a6 = (const struct sockaddr_in6 *)a;
	uint16_t port = port_of(a);

	*e = *a;
	if (a->ss_family == AF_INET6 && IN6_IS_ADDR_V4MAPPED(&a6->sin6_addr)) {
		uint8_t v4[4];

		memcpy(v4, a6->sin6_addr.s6_addr + 12, 4);
		memset(e, 0, sizeof(*e));
		e4->sin_family = AF_INET;
		e4->sin_port = port;
		memcpy(&e4->sin_addr, v4, 4);
	}
	if (e->ss_family == AF_INET && e4->sin_addr.s_addr == htonl(INADDR_ANY)) {
		const struct sockaddr_storage *src = outbound_source(ob, AF_INET);

		if (src)
			e4->sin_addr = ((const struct sockaddr_in *)src)->sin_addr;
		else
			e4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	} else if (e->ss_family == AF_INET6 && IN6_IS_ADDR_UNSPECIFIED(&e6->sin6_addr)) {
		const struct sockaddr_storage *src = outbound_source(ob, AF_INET6);

		if (src)
			e6->sin6_addr = ((const struct sockaddr_in6 *)src)->sin6_addr;
		else
			e6->sin6_addr = in6addr_loopback;
	}
}

static bool is_loopback(const struct sockaddr_storage *a)
{
	if (a->ss_family == AF_INET)
		return ntohl(((const struct sockaddr_in *)a)->sin_addr.s_addr) >> 24 == 127;
	return IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)a)->sin6_addr);
}

static bool is_unspecified(const struct sockaddr_storage *a)
{
	if (a->ss_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr == htonl(INADDR_ANY);
	return IN6_IS_ADDR_UNSPECIFIED(&((const struct sockaddr_in6 *)a)->sin6_addr);
}

static bool same_addr(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	if (a->ss_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	return IN6_ARE_ADDR_EQUAL(&((const struct sockaddr_in6 *)a)->sin6_addr,
	                          &((const struct sockaddr_in6 *)b)->sin6_addr);
}

/*
 * Review M7: a CONNECT to one of our own listeners nests the proxy in
 * itself, each level two more descriptors and a slot and every byte spliced
 * once more. A wildcard listener (0.0.0.0 or [::], IPV6_V6ONLY) takes every
 * local address of its family on its port, so there the kernel is asked
 * whether the address is ours; that costs a netlink round trip only for
 * connects to such a port.
 */
static enum egress_verdict self_check(const struct config *cfg, const struct outbound *ob,
                                      const struct sockaddr_storage *a, egress_owned_fn owned)
{
	struct sockaddr_storage e;
	int ret;

	effective(a, ob, &e);
	for (size_t i = 0; i < cfg->n_inbounds; i++) {
		const struct inbound *l = &cfg->inbounds[i];

		if (l->listen.ss_family != e.ss_family || port_of(&l->listen) != port_of(&e))
			continue;
		if (same_addr(&e, &l->listen))
			return EGRESS_SELF;
		if (!is_unspecified(&l->listen))
			continue;
		if (is_loopback(&e))
			return EGRESS_SELF;
		ret = owned(&e, ob->fwmark);
		if (ret != 0)
			return ret > 0 ? EGRESS_SELF : EGRESS_UNKNOWN;
	}
	return EGRESS_OK;
}

static enum egress_verdict owned_verdict(int ret)
{
	return ret > 0 ? EGRESS_OWNED : ret < 0 ? EGRESS_UNKNOWN : EGRESS_OK;
}

/*
 * deny-private: the special ranges, then whether this host owns the
 * address (a public address of our own is as local as the loopback).
 * ::ffff:a.b.c.d is connected as a.b.c.d; 64:ff9b::a.b.c.d reaches a.b.c.d
 * through a NAT64 translator, which may run on this very host, so both
 * addresses are asked about.
 */
static enum egress_verdict private_check(const struct outbound *ob,
                                         const struct sockaddr_storage *a, egress_owned_fn owned)
{
	const struct sockaddr_in6 *a6 = (const struct sockaddr_in6 *)a;
	struct sockaddr_storage v4 = {.ss_family = AF_INET};
	int ret;

	if (egress_private_range(a))
		return EGRESS_PRIVATE;
	if (a->ss_family == AF_INET6 &&
	    route_addr_v4(a, (uint8_t *)&((struct sockaddr_in *)&v4)->sin_addr)) {
		ret = owned(&v4, ob->fwmark);
		if (ret != 0 || IN6_IS_ADDR_V4MAPPED(&a6->sin6_addr))
			return owned_verdict(ret);
	}
	return owned_verdict(owned(a, ob->fwmark));
}

static enum egress_verdict decide(const struct config *cfg, const struct inbound *in,
                                  const struct outbound *ob, const struct proto_target *t,
                                  const char *user, const struct sockaddr_storage *a,
                                  egress_owned_fn owned, int *rule)
{
	enum egress_verdict v;

	*rule = -1;
	if (a->ss_family != AF_INET && a->ss_family != AF_INET6)
		return EGRESS_UNKNOWN;
	if (ob->type == OUTBOUND_DIRECT && t->kind == TARGET_DOMAIN && !(in && in->outbound >= 0)) {
		*rule = route_rule_for(cfg, t, a, user);
		if (*rule >= 0 && cfg->outbounds[cfg->rules[*rule].outbound].type == OUTBOUND_BLOCK)
			return EGRESS_RULE;
	}
	v = self_check(cfg, ob, a, owned);
	if (v != EGRESS_OK || !ob->deny_private)
		return v;
	return private_check(ob, a, owned);
}

enum egress_verdict egress_decide(const struct config *cfg, const struct inbound *in,
                                  const struct outbound *ob, const struct proto_target *t,
                                  const char *user, const struct sockaddr_storage *a,
                                  egress_owned_fn owned)
{
	int rule;

	return decide(cfg, in, ob, t, user, a, owned, &rule);
}

bool egress_refused(const struct config *cfg, const struct inbound *in, const struct outbound *ob,
                    const struct proto_target *t, const char *user,
                    const struct sockaddr_storage *a, uint64_t counters[EGRESS_N])
{
	char addr[SA_STR_MAX];
	int rule;
	enum egress_verdict v = decide(cfg, in, ob, t, user, a, hostaddr_owned, &rule);
	const char *via = ob->type == OUTBOUND_DIRECT ? "" : " (upstream server)";

	if (v == EGRESS_OK)
		return false;
	counters[v]++;
	/* One call site per reason, so each reason gets its own rate limit. */
	switch (v) {
	case EGRESS_RULE:
		log_debug_rl("egress: %s for %s:%u refused: %s:%d sends it to [outbound %s]",
		             sa_str(a, addr), t->host, t->port, cfg->file, cfg->rules[rule].line,
		             cfg->outbounds[cfg->rules[rule].outbound].name);
		break;
	case EGRESS_SELF:
		log_debug_rl("egress: %s%s for %s:%u refused: one of spliced's own listeners",
		             sa_str(a, addr), via, t->host, t->port);
		break;
	case EGRESS_PRIVATE:
		log_debug_rl("egress: %s for %s:%u refused by [outbound %s] deny-private: %s",
		             sa_str(a, addr), t->host, t->port, ob->name, egress_private_range(a));
		break;
	case EGRESS_OWNED:
		log_debug_rl("egress: %s for %s:%u refused by [outbound %s] deny-private: an "
		             "address of this host",
		             sa_str(a, addr), t->host, t->port, ob->name);
		break;
	default:
		log_debug_rl(
		        "egress: %s%s for %s:%u refused: cannot tell whether this host owns it",
		        sa_str(a, addr), via, t->host, t->port);
		break;
	}
	return true;
}
