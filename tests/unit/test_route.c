/* SPDX-License-Identifier: MIT */
/* Unit tests for relay/route.c: domain suffix matching and rule selection over parsed configs. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "t.h"
#include "t_config.h"
#include "t_target.h"
#include "config.h"
#include "route.h"

T_SUITE("route");

/* Outbounds a, b, c in this order (indices 0, 1, 2), then the implicit direct (3) and block (4). */
#define OUTS                                                                                      \
	"[inbound s]\ntype = socks5\nlisten = 127.0.0.1:1080\n"                                   \
	"[outbound a]\ntype = direct\n[outbound b]\ntype = direct\n[outbound c]\ntype = direct\n" \
	"[outbound direct]\ntype = direct\n[outbound block]\ntype = block\n"

enum { OUT_A, OUT_B, OUT_C, OUT_DIRECT, OUT_BLOCK };

/* route_pick with no inbound (or one without a forced outbound). */
static int pick_ip(const struct config *c, const char *addr, uint16_t port)
{
	struct proto_target t = t_ip(addr, port);
	return route_pick(c, NULL, &t, NULL);
}

static int pick_dom(const struct config *c, const char *host, uint16_t port)
{
	struct proto_target t = t_name(host, port);
	return route_pick(c, NULL, &t, NULL);
}

static void test_domain_exact_and_sub(void)
{
	T_ASSERT(route_domain_match("example.com", "example.com"));
	T_ASSERT(route_domain_match("a.example.com", "example.com"));
	T_ASSERT(route_domain_match("a.b.c.example.com", "example.com"));
	T_ASSERT(route_domain_match("com", "com"));
	T_ASSERT(route_domain_match("example.com", "com"));
	/* the suffix is a whole label, not a tail of one */
	T_ASSERT(!route_domain_match("badexample.com", "example.com"));
	T_ASSERT(!route_domain_match("a.badexample.com", "example.com"));
	T_ASSERT(!route_domain_match("xcom", "com"));
	/* nor a prefix, nor a parent */
	T_ASSERT(!route_domain_match("example.com.evil", "example.com"));
	T_ASSERT(!route_domain_match("example.co", "example.com"));
	T_ASSERT(!route_domain_match("com", "example.com"));
	T_ASSERT(!route_domain_match("example.org", "example.com"));
	T_ASSERT(!route_domain_match("example.com", "a.example.com"));
}

static void test_domain_case(void)
{
	T_ASSERT(route_domain_match("EXAMPLE.COM", "example.com"));
	T_ASSERT(route_domain_match("Www.ExAmPlE.cOm", "example.com"));
	T_ASSERT(route_domain_match("www.example.com", "EXAMPLE.com"));
	T_ASSERT(!route_domain_match("WWW.BADEXAMPLE.COM", "example.com"));
}

static void test_domain_trailing_dot(void)
{
	T_ASSERT(route_domain_match("example.com.", "example.com"));
	T_ASSERT(route_domain_match("a.example.com.", "example.com"));
	T_ASSERT(route_domain_match("A.EXAMPLE.COM.", "example.com"));
	T_ASSERT(!route_domain_match("badexample.com.", "example.com"));
	/* only one root label is stripped */
	T_ASSERT(!route_domain_match("example.com..", "example.com"));
}

static void test_domain_empty(void)
{
	T_ASSERT(!route_domain_match("", "example.com"));
	T_ASSERT(!route_domain_match(".", "example.com"));
	T_ASSERT(!route_domain_match("", "com"));
	/* an empty suffix is not "every name": config never makes one, and it must not widen */
	T_ASSERT(!route_domain_match("example.com", ""));
	T_ASSERT(!route_domain_match("example.com.", ""));
}

static void test_cidr_v4(void)
{
	struct config *c = load(OUTS "[route]\n"
	                             "default = c\n"
	                             "rule = cidr 192.0.2.7/32 -> b\n"
	                             "rule = cidr 10.0.0.0/8 -> a\n"
	                             "rule = cidr 172.16.0.0/12 -> b\n"
	                             "rule = cidr 198.51.100.6/31 -> block\n"
	                             "rule = cidr 203.0.113.64/27 -> direct\n"
	                             "rule = cidr 128.0.0.0/1 -> a\n");

	T_ASSERT(c);
	if (!c)
		return;
	T_EQ_INT(c->n_rules, 6);
	T_EQ_INT(pick_ip(c, "192.0.2.7", 80), OUT_B);
	T_EQ_INT(pick_ip(c, "192.0.2.6", 80), OUT_A); /* 192 >= 128: the /1 rule */
	T_EQ_INT(pick_ip(c, "192.0.2.8", 80), OUT_A);
	T_EQ_INT(pick_ip(c, "10.0.0.0", 80), OUT_A);
	T_EQ_INT(pick_ip(c, "10.255.255.255", 80), OUT_A);
	T_EQ_INT(pick_ip(c, "11.0.0.0", 80), OUT_C);
	T_EQ_INT(pick_ip(c, "9.255.255.255", 80), OUT_C);
	/* /12: 172.16.0.0 - 172.31.255.255 (second octet's top 4 bits 0001) */
	T_EQ_INT(pick_ip(c, "172.16.0.0", 1), OUT_B);
	T_EQ_INT(pick_ip(c, "172.31.255.255", 1), OUT_B);
	T_EQ_INT(pick_ip(c, "172.20.1.1", 1), OUT_B);
	T_EQ_INT(pick_ip(c, "172.15.255.255", 1), OUT_A);
	T_EQ_INT(pick_ip(c, "172.32.0.0", 1), OUT_A);
	/* /31: .6 and .7 only */
	T_EQ_INT(pick_ip(c, "198.51.100.6", 1), OUT_BLOCK);
	T_EQ_INT(pick_ip(c, "198.51.100.7", 1), OUT_BLOCK);
	T_EQ_INT(pick_ip(c, "198.51.100.5", 1), OUT_A);
	T_EQ_INT(pick_ip(c, "198.51.100.8", 1), OUT_A);
	/* /27 at 64: .64 - .95 */
	T_EQ_INT(pick_ip(c, "203.0.113.64", 1), OUT_DIRECT);
	T_EQ_INT(pick_ip(c, "203.0.113.95", 1), OUT_DIRECT);
	T_EQ_INT(pick_ip(c, "203.0.113.63", 1), OUT_A);
	T_EQ_INT(pick_ip(c, "203.0.113.96", 1), OUT_A);
	/* /1: the top bit */
	T_EQ_INT(pick_ip(c, "127.255.255.255", 1), OUT_C);
	T_EQ_INT(pick_ip(c, "128.0.0.0", 1), OUT_A);
	/* v4 rules never match v6 targets, even ones with the same leading bytes */
	T_EQ_INT(pick_ip(c, "a00::1", 80), OUT_C);
	T_EQ_INT(pick_ip(c, "c000:207::", 80), OUT_C);
	config_free(c);
}

static void test_cidr_v6(void)
{
	struct config *c = load(OUTS "[route]\n"
	                             "default = c\n"
	                             "rule = cidr 2001:db8::1/128 -> b\n"
	                             "rule = cidr 2001:db8::1 -> block\n"
	                             "rule = cidr 2001:db8::/32 -> a\n"
	                             "rule = cidr 2001:db9:8000::/33 -> b\n"
	                             "rule = cidr fe80::/10 -> direct\n"
	                             "rule = cidr fd00::/8 -> block\n");

	T_ASSERT(c);
	if (!c)
		return;
	T_EQ_INT(c->n_rules, 6);
	T_EQ_INT(pick_ip(c, "2001:db8::1", 443), OUT_B);
	T_EQ_INT(pick_ip(c, "2001:db8::2", 443), OUT_A);
	T_EQ_INT(pick_ip(c, "2001:db8:ffff:ffff:ffff:ffff:ffff:ffff", 443), OUT_A);
	T_EQ_INT(pick_ip(c, "2001:db7:ffff::", 443), OUT_C);
	/* /33: the top bit of the third 16-bit group */
	T_EQ_INT(pick_ip(c, "2001:db9:8000::", 1), OUT_B);
	T_EQ_INT(pick_ip(c, "2001:db9:ffff::1", 1), OUT_B);
	T_EQ_INT(pick_ip(c, "2001:db9:7fff:ffff::", 1), OUT_C);
	/* /10: fe80 - febf */
	T_EQ_INT(pick_ip(c, "fe80::1", 1), OUT_DIRECT);
	T_EQ_INT(pick_ip(c, "febf:ffff::", 1), OUT_DIRECT);
	T_EQ_INT(pick_ip(c, "fec0::", 1), OUT_C);
	T_EQ_INT(pick_ip(c, "fe7f::", 1), OUT_C);
	T_EQ_INT(pick_ip(c, "fdff::1", 1), OUT_BLOCK);
	T_EQ_INT(pick_ip(c, "fc00::1", 1), OUT_C);
	/* v6 rules never match v4 targets */
	T_EQ_INT(pick_ip(c, "32.1.13.184", 1), OUT_C); /* 0x20 0x01 0x0d 0xb8 */
	config_free(c);
}

static void test_cidr_zero_prefix(void)
{
	struct config *c = load(OUTS "[route]\n"
	                             "default = c\n"
	                             "rule = cidr 0.0.0.0/0 -> a\n"
	                             "rule = cidr ::/0 -> b\n");

	T_ASSERT(c);
	if (!c)
		return;
	T_EQ_INT(pick_ip(c, "0.0.0.0", 1), OUT_A);
	T_EQ_INT(pick_ip(c, "1.2.3.4", 1), OUT_A);
	T_EQ_INT(pick_ip(c, "255.255.255.255", 1), OUT_A);
	T_EQ_INT(pick_ip(c, "::", 1), OUT_B);
	T_EQ_INT(pick_ip(c, "::1", 1), OUT_B);
	T_EQ_INT(pick_ip(c, "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", 1), OUT_B);
	/* /0 of either family still only matches IP targets */
	T_EQ_INT(pick_dom(c, "example.com", 1), OUT_C);
	T_EQ_INT(pick_dom(c, "1.2.3.4", 1), OUT_C);
	config_free(c);
}

/*
 * An IPv4-mapped IPv6 literal is an IPv4 destination: the direct outbound's
 * AF_INET6 socket (no IPV6_V6ONLY) connects ::ffff:10.1.2.3 to 10.1.2.3, so
 * an IPv4 rule has to match it or "cidr 10.0.0.0/8 -> block" is bypassed by
 * asking for [::ffff:10.1.2.3].
 */
static void test_cidr_v4_mapped(void)
{
	struct config *c = load(OUTS "[route]\n"
	                             "default = c\n"
	                             "rule = cidr 10.0.0.0/8 -> block\n"
	                             "rule = cidr 192.0.2.7/32 -> a\n");

	T_ASSERT(c);
	if (!c)
		return;
	T_EQ_INT(pick_ip(c, "10.1.2.3", 80), OUT_BLOCK);
	T_EQ_INT(pick_ip(c, "::ffff:10.1.2.3", 80), OUT_BLOCK);
	T_EQ_INT(pick_ip(c, "::ffff:192.0.2.7", 80), OUT_A);
	T_EQ_INT(pick_ip(c, "::ffff:192.0.2.8", 80), OUT_C);
	/* NAT64's well-known prefix (RFC 6052) is translated to the IPv4 address it embeds */
	T_EQ_INT(pick_ip(c, "64:ff9b::10.1.2.3", 80), OUT_BLOCK);
	T_EQ_INT(pick_ip(c, "64:ff9b::192.0.2.7", 80), OUT_A);
	/* not mapped: the deprecated IPv4-compatible form, other prefixes */
	T_EQ_INT(pick_ip(c, "::10.1.2.3", 80), OUT_C);
	T_EQ_INT(pick_ip(c, "64:ff9b:1::10.1.2.3", 80), OUT_C);
	T_EQ_INT(pick_ip(c, "::fffe:10.1.2.3", 80), OUT_C);
	config_free(c);
}

/*
 * Review H2: Linux connects 0.0.0.0 and :: to the local host (loopback), so a
 * rule for the loopback covers them, whichever way they are written.
 */
static void test_cidr_unspecified_is_loopback(void)
{
	struct config *c = load(OUTS "[route]\n"
	                             "default = c\n"
	                             "rule = cidr 127.0.0.0/8 -> block\n"
	                             "rule = cidr ::1/128 -> a\n");

	T_ASSERT(c);
	if (!c)
		return;
	T_EQ_INT(pick_ip(c, "0.0.0.0", 80), OUT_BLOCK);
	T_EQ_INT(pick_ip(c, "::ffff:0.0.0.0", 80), OUT_BLOCK);
	T_EQ_INT(pick_ip(c, "::ffff:127.0.0.1", 80), OUT_BLOCK);
	T_EQ_INT(pick_ip(c, "::", 80), OUT_A);
	T_EQ_INT(pick_ip(c, "::1", 80), OUT_A);
	/* only the unspecified address: the rest of 0.0.0.0/8 is not the loopback */
	T_EQ_INT(pick_ip(c, "0.0.0.1", 80), OUT_C);
	T_EQ_INT(pick_ip(c, "::2", 80), OUT_C);
	config_free(c);

	/* a rule for 0.0.0.0/8 itself still matches it */
	c = load(OUTS
	         "[route]\ndefault = c\nrule = cidr 0.0.0.0/8 -> b\nrule = cidr ::/128 -> a\n");
	T_ASSERT(c);
	if (!c)
		return;
	T_EQ_INT(pick_ip(c, "0.0.0.0", 80), OUT_B);
	T_EQ_INT(pick_ip(c, "0.1.2.3", 80), OUT_B);
	T_EQ_INT(pick_ip(c, "::", 80), OUT_A);
	T_EQ_INT(pick_ip(c, "127.0.0.1", 80), OUT_C);
	config_free(c);
}

/* What a client sends, through the same normalisation the inbounds apply. */
static int pick_sent(const struct config *c, const char *host, uint16_t port)
{
	struct proto_target t = t_name(host, port);

	proto_target_ip_literal(&t);
	return route_pick(c, NULL, &t, NULL);
}

/* Every spelling of the loopback the resolver would accept meets the cidr rule. */
static void test_cidr_every_spelling(void)
{
	static const char *loop[] = {"127.0.0.1",
	                             "127.1",
	                             "2130706433",
	                             "0x7f000001",
	                             "0X7F.0.0.1",
	                             "017700000001",
	                             "0177.1",
	                             "0",
	                             "0.0.0.0",
	                             "127.0.1",
	                             "[::1]",
	                             "::1",
	                             "[::]",
	                             "::",
	                             "[::ffff:127.0.0.1]",
	                             "::ffff:7f00:1",
	                             "[::ffff:0.0.0.0]",
	                             "64:ff9b::7f00:1"};
	struct config *c = load(OUTS "[route]\n"
	                             "default = c\n"
	                             "rule = cidr 127.0.0.0/8 -> block\n"
	                             "rule = cidr ::1/128 -> block\n");

	T_ASSERT(c);
	if (!c)
		return;
	for (size_t i = 0; i < sizeof(loop) / sizeof(loop[0]); i++)
		if (pick_sent(c, loop[i], 80) != OUT_BLOCK)
			T_FAILF("\"%s\" is not routed to block", loop[i]);
	/* names are routed as names; their addresses are checked at connect time (egress.c) */
	T_EQ_INT(pick_sent(c, "localhost", 80), OUT_C);
	T_EQ_INT(pick_sent(c, "localhost.", 80), OUT_C);
	T_EQ_INT(pick_sent(c, "fe80::1%lo", 80), OUT_C);
	T_EQ_INT(pick_sent(c, "128.1", 80), OUT_C);
	config_free(c);
}

static int rule_for(const struct config *c, const char *host, uint16_t port, const char *addr)
{
	struct proto_target t = t_name(host, port), a = t_ip(addr, port);

	return route_rule_for(c, &t, &a.addr, NULL);
}

/*
 * route_rule_for(): the rule deciding a connection to a resolved address of
 * a name, first match over the name (domain rules), the port and the address
 * (cidr rules); -1 when none matches (the default applies).
 */
static void test_rule_for_resolved_address(void)
{
	struct config *c = load(OUTS "[route]\n"
	                             "default = c\n"
	                             "rule = domain intranet.example -> a\n"
	                             "rule = cidr 10.0.0.0/8 -> block\n"
	                             "rule = port 8443 -> b\n"
	                             "rule = cidr 127.0.0.0/8 -> block\n");

	T_ASSERT(c);
	if (!c)
		return;
	/* a domain rule before the cidr rule decides for the name it names */
	T_EQ_INT(rule_for(c, "intranet.example", 80, "10.1.2.3"), 0);
	T_EQ_INT(rule_for(c, "www.intranet.example", 80, "127.0.0.1"), 0);
	/* any other name resolving into 10/8 meets the block rule */
	T_EQ_INT(rule_for(c, "rebind.example", 80, "10.1.2.3"), 1);
	T_EQ_INT(rule_for(c, "rebind.example", 8443, "10.1.2.3"), 1);
	T_EQ_INT(rule_for(c, "rebind.example", 80, "::ffff:10.1.2.3"), 1);
	/* the port rule comes before the loopback rule, for a name as for the literal */
	T_EQ_INT(rule_for(c, "localhost", 8443, "127.0.0.1"), 2);
	T_EQ_INT(pick_ip(c, "127.0.0.1", 8443), OUT_B);
	T_EQ_INT(rule_for(c, "localhost", 80, "127.0.0.1"), 3);
	T_EQ_INT(rule_for(c, "localhost", 80, "0.0.0.0"), 3);
	T_EQ_INT(rule_for(c, "example.org", 80, "192.0.2.1"), -1);
	T_EQ_INT(route_rule_for(c, &(struct proto_target){.kind = TARGET_DOMAIN, .port = 80}, NULL,
	                        NULL),
	         -1);
	config_free(c);
}

static void test_ports(void)
{
	struct config *c = load(OUTS "[route]\n"
	                             "rule = port 25 -> block\n"
	                             "rule = port 6000-6063 -> a\n"
	                             "rule = port 1-1 -> b\n"
	                             "rule = port 65535 -> c\n");

	T_ASSERT(c);
	if (!c)
		return;
	T_EQ_INT(c->route_default, OUT_DIRECT);
	T_EQ_INT(pick_ip(c, "192.0.2.1", 25), OUT_BLOCK);
	T_EQ_INT(pick_dom(c, "mail.example.com", 25), OUT_BLOCK);
	T_EQ_INT(pick_ip(c, "2001:db8::1", 25), OUT_BLOCK);
	T_EQ_INT(pick_ip(c, "192.0.2.1", 24), OUT_DIRECT);
	T_EQ_INT(pick_ip(c, "192.0.2.1", 26), OUT_DIRECT);
	T_EQ_INT(pick_ip(c, "192.0.2.1", 5999), OUT_DIRECT);
	T_EQ_INT(pick_ip(c, "192.0.2.1", 6000), OUT_A);
	T_EQ_INT(pick_ip(c, "192.0.2.1", 6031), OUT_A);
	T_EQ_INT(pick_ip(c, "192.0.2.1", 6063), OUT_A);
	T_EQ_INT(pick_ip(c, "192.0.2.1", 6064), OUT_DIRECT);
	T_EQ_INT(pick_dom(c, "x.example", 1), OUT_B);
	T_EQ_INT(pick_dom(c, "x.example", 2), OUT_DIRECT);
	T_EQ_INT(pick_dom(c, "x.example", 65535), OUT_C);
	T_EQ_INT(pick_dom(c, "x.example", 65534), OUT_DIRECT);
	config_free(c);
}

static void test_domains(void)
{
	struct config *c = load(OUTS "[route]\n"
	                             "default = c\n"
	                             "rule = domain Example.COM. -> a\n"
	                             "rule = domain .example.org -> b\n"
	                             "rule = domain org -> block\n");

	T_ASSERT(c);
	if (!c)
		return;
	T_EQ_INT(pick_dom(c, "example.com", 443), OUT_A);
	T_EQ_INT(pick_dom(c, "WWW.EXAMPLE.COM", 443), OUT_A);
	T_EQ_INT(pick_dom(c, "www.example.com.", 443), OUT_A);
	T_EQ_INT(pick_dom(c, "badexample.com", 443), OUT_C);
	T_EQ_INT(pick_dom(c, "example.com.evil.net", 443), OUT_C);
	T_EQ_INT(pick_dom(c, "example.org", 443), OUT_B);
	T_EQ_INT(pick_dom(c, "a.example.org", 443), OUT_B);
	T_EQ_INT(pick_dom(c, "wikipedia.org", 443), OUT_BLOCK);
	T_EQ_INT(pick_dom(c, "org", 443), OUT_BLOCK);
	T_EQ_INT(pick_dom(c, "org.com", 443), OUT_C);
	T_EQ_INT(pick_dom(c, "", 443), OUT_C);
	/* an IP target never matches a domain rule, whatever its text form says */
	struct proto_target t = t_ip("192.0.2.1", 443);
	snprintf(t.host, sizeof(t.host), "www.example.com");
	T_EQ_INT(route_pick(c, NULL, &t, NULL), OUT_C);
	config_free(c);
}

/* A domain target is routed by name; its addr field (unset, or stale) is never looked at. */
static void test_domain_target_skips_cidr(void)
{
	struct config *c = load(OUTS "[route]\n"
	                             "default = c\n"
	                             "rule = cidr 10.0.0.0/8 -> a\n"
	                             "rule = cidr 2001:db8::/32 -> a\n"
	                             "rule = domain example.com -> b\n");
	struct proto_target t;

	T_ASSERT(c);
	if (!c)
		return;
	T_EQ_INT(pick_dom(c, "10.1.2.3", 80), OUT_C);
	T_EQ_INT(pick_dom(c, "2001:db8::1", 80), OUT_C);
	T_EQ_INT(pick_dom(c, "[2001:db8::1]", 80), OUT_C);
	/* addr filled as if a resolver had run: still a domain target */
	t = t_ip("10.1.2.3", 80);
	t.kind = TARGET_DOMAIN;
	snprintf(t.host, sizeof(t.host), "www.example.com");
	T_EQ_INT(route_pick(c, NULL, &t, NULL), OUT_B);
	snprintf(t.host, sizeof(t.host), "other.net");
	T_EQ_INT(route_pick(c, NULL, &t, NULL), OUT_C);
	/* the same address as an IP target does match */
	T_EQ_INT(pick_ip(c, "10.1.2.3", 80), OUT_A);
	config_free(c);
}

static void test_first_match(void)
{
	struct config *c = load(OUTS "[route]\n"
	                             "default = block\n"
	                             "rule = port 443 -> a\n"
	                             "rule = domain example.com -> b\n"
	                             "rule = cidr 10.0.0.0/8 -> c\n"
	                             "rule = cidr 10.1.0.0/16 -> b\n"
	                             "rule = port 1-65535 -> direct\n");

	T_ASSERT(c);
	if (!c)
		return;
	T_EQ_INT(c->route_default, OUT_BLOCK);
	T_EQ_INT(pick_dom(c, "example.com", 443), OUT_A);
	T_EQ_INT(pick_dom(c, "example.com", 80), OUT_B);
	T_EQ_INT(pick_ip(c, "10.1.2.3", 443), OUT_A);
	/* the wider rule comes first, so the /16 never wins */
	T_EQ_INT(pick_ip(c, "10.1.2.3", 80), OUT_C);
	T_EQ_INT(pick_ip(c, "11.1.2.3", 80), OUT_DIRECT);
	T_EQ_INT(pick_dom(c, "other.net", 80), OUT_DIRECT);
	config_free(c);

	/* nothing matches: the default */
	c = load(OUTS "[route]\ndefault = b\nrule = port 25 -> a\n");
	T_ASSERT(c);
	if (!c)
		return;
	T_EQ_INT(pick_ip(c, "192.0.2.1", 80), OUT_B);
	T_EQ_INT(pick_dom(c, "example.com", 80), OUT_B);
	T_EQ_INT(pick_ip(c, "192.0.2.1", 25), OUT_A);
	config_free(c);
}

static void test_default(void)
{
	/* no [route] at all: the implicit direct outbound */
	struct config *c = load("[inbound s]\ntype = socks5\nlisten = 127.0.0.1:1080\n");

	T_ASSERT(c);
	if (!c)
		return;
	T_EQ_INT(pick_ip(c, "192.0.2.1", 80), config_outbound_index(c, "direct"));
	T_EQ_INT(pick_dom(c, "example.com", 80), config_outbound_index(c, "direct"));
	T_EQ_INT(c->outbounds[pick_ip(c, "::1", 80)].type, OUTBOUND_DIRECT);
	config_free(c);

	c = load(OUTS "[route]\ndefault = block\n");
	T_ASSERT(c);
	if (!c)
		return;
	T_EQ_INT(pick_ip(c, "192.0.2.1", 80), OUT_BLOCK);
	T_EQ_INT(c->outbounds[pick_dom(c, "example.com", 80)].type, OUTBOUND_BLOCK);
	config_free(c);
}

static void test_inbound_forced(void)
{
	struct config *c =
	        load("[inbound s]\ntype = socks5\nlisten = 127.0.0.1:1080\n"
	             "[inbound f]\ntype = forward\nlisten = 127.0.0.1:2000\n"
	             "target = 10.0.0.1:22\noutbound = b\n"
	             "[inbound h]\ntype = http\nlisten = 127.0.0.1:3128\noutbound = block\n"
	             "[outbound a]\ntype = direct\n[outbound b]\ntype = direct\n"
	             "[route]\n"
	             "default = a\n"
	             "rule = cidr 10.0.0.0/8 -> direct\n"
	             "rule = domain example.com -> direct\n");
	struct proto_target t1 = t_ip("10.0.0.1", 22), t2 = t_name("example.com", 443),
	                    t3 = t_ip("192.0.2.1", 80);
	int direct;

	T_ASSERT(c);
	if (!c)
		return;
	direct = config_outbound_index(c, "direct");
	T_ASSERT(direct >= 0);
	T_EQ_INT(c->n_inbounds, 3);
	T_EQ_INT(c->inbounds[0].outbound, -1);
	/* s follows [route] */
	T_EQ_INT(route_pick(c, &c->inbounds[0], &t1, NULL), direct);
	T_EQ_INT(route_pick(c, &c->inbounds[0], &t2, NULL), direct);
	T_EQ_INT(route_pick(c, &c->inbounds[0], &t3, NULL), 0);
	/* f and h ignore every rule and the default */
	T_EQ_INT(route_pick(c, &c->inbounds[1], &t1, NULL), 1);
	T_EQ_INT(route_pick(c, &c->inbounds[1], &t2, NULL), 1);
	T_EQ_INT(route_pick(c, &c->inbounds[1], &t3, NULL), 1);
	T_EQ_INT(route_pick(c, &c->inbounds[2], &t1, NULL), config_outbound_index(c, "block"));
	T_EQ_INT(route_pick(c, &c->inbounds[2], &t2, NULL), config_outbound_index(c, "block"));
	T_EQ_INT(route_pick(c, &c->inbounds[2], &t3, NULL), config_outbound_index(c, "block"));
	config_free(c);
}

/* 1024 rules (the cap): the last one is still reached; an earlier duplicate wins. */
static void test_many_rules(void)
{
	size_t cap = 64 << 10, len;
	char *text = malloc(cap);
	struct config *c;

	T_ASSERT(text);
	if (!text)
		return;
	len = (size_t)snprintf(text, cap, OUTS "[route]\ndefault = c\n");
	for (int i = 0; i < CONFIG_MAX_RULES - 1; i++)
		len += (size_t)snprintf(text + len, cap - len, "rule = cidr 10.%d.%d.0/24 -> a\n",
		                        i / 256, i % 256);
	len += (size_t)snprintf(text + len, cap - len, "rule = domain last.example -> b\n");
	T_ASSERT(len < cap);
	c = load(text);
	free(text);
	T_ASSERT(c);
	if (!c)
		return;
	T_EQ_INT(c->n_rules, CONFIG_MAX_RULES);
	T_EQ_INT(pick_dom(c, "www.last.example", 1), OUT_B);
	T_EQ_INT(pick_ip(c, "10.3.254.9", 1), OUT_A);
	T_EQ_INT(pick_ip(c, "10.3.255.9", 1), OUT_C); /* i = 1023 is the domain rule */
	T_EQ_INT(pick_ip(c, "10.0.0.1", 1), OUT_A);
	config_free(c);
}

/* user rules: the logged-in name, among several, in file order with the others. */
static void test_users(void)
{
	struct config *c = load(OUTS "[route]\n"
	                             "default = c\n"
	                             "rule = port 22 -> block\n"
	                             "rule = user alice  bob -> a\n"
	                             "rule = user carol -> b\n"
	                             "rule = cidr 10.0.0.0/8 -> block\n");
	struct proto_target t;
	struct sockaddr_storage ten;

	T_ASSERT(c);
	if (!c)
		return;
	t = t_ip("192.0.2.1", 443);
	T_EQ_INT(route_pick(c, NULL, &t, "alice"), OUT_A);
	T_EQ_INT(route_pick(c, NULL, &t, "bob"), OUT_A);
	T_EQ_INT(route_pick(c, NULL, &t, "carol"), OUT_B);
	T_EQ_INT(route_pick(c, NULL, &t, "Alice"), OUT_C); /* names are exact */
	T_EQ_INT(route_pick(c, NULL, &t, "ali"), OUT_C);
	T_EQ_INT(route_pick(c, NULL, &t, "alicebob"), OUT_C);
	T_EQ_INT(route_pick(c, NULL, &t, NULL), OUT_C); /* nobody logged in */
	/* an earlier rule still wins over a user rule, and a later one loses to it */
	t = t_ip("192.0.2.1", 22);
	T_EQ_INT(route_pick(c, NULL, &t, "alice"), OUT_BLOCK);
	t = t_ip("10.1.2.3", 80);
	T_EQ_INT(route_pick(c, NULL, &t, "alice"), OUT_A);
	T_EQ_INT(route_pick(c, NULL, &t, "dave"), OUT_BLOCK);
	/* a name resolved to 10/8: the rule deciding that address is alice's own, not the block */
	ten = t_ip("10.1.2.3", 80).addr;
	t = (struct proto_target){.kind = TARGET_DOMAIN, .port = 80};
	snprintf(t.host, sizeof(t.host), "intranet.example");
	T_EQ_INT(route_rule_for(c, &t, &ten, "alice"), 1);
	T_EQ_INT(route_rule_for(c, &t, &ten, "dave"), 3);
	config_free(c);
}

int main(void)
{
	T_RUN(test_domain_exact_and_sub);
	T_RUN(test_domain_case);
	T_RUN(test_domain_trailing_dot);
	T_RUN(test_domain_empty);
	T_RUN(test_cidr_v4);
	T_RUN(test_cidr_v6);
	T_RUN(test_cidr_zero_prefix);
	T_RUN(test_cidr_v4_mapped);
	T_RUN(test_cidr_unspecified_is_loopback);
	T_RUN(test_cidr_every_spelling);
	T_RUN(test_rule_for_resolved_address);
	T_RUN(test_ports);
	T_RUN(test_domains);
	T_RUN(test_domain_target_skips_cidr);
	T_RUN(test_first_match);
	T_RUN(test_default);
	T_RUN(test_inbound_forced);
	T_RUN(test_many_rules);
	T_RUN(test_users);
	return t_finish();
}
