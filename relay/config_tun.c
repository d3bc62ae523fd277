/* SPDX-License-Identifier: MIT */
/* The keys of a type = tun inbound, its defaults, and the checks between tun inbounds. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_internal.h"
#include "config_value.h"
#include "strset.h"

/*
 * Defaults (docs/tun.md): 198.18.0.0/15 is the benchmarking range (RFC
 * 2544), never routed on the Internet, and what sing-box and others use
 * for the same purpose; fdfe:5370::/64 is a ULA. The table, the rules'
 * priority and the mark share one number (0x5370 = 21360, "Sp"), so
 * `ip rule` and `ip route show table all` show at a glance what is ours;
 * the rules sit well before the main table's (32766).
 */
enum {
	TUN_DEF_MTU = 8500,
	TUN_DEF_TABLE = 21360,
	TUN_DEF_PRIORITY = 21360,
	TUN_DEF_FWMARK = 0x5370,
	TUN_DEF_MAX_FLOWS = 65536,
	TUN_DEF_LINGER_MS = 60000, /* TIME_WAIT's 60 s (TCP_TIMEWAIT_LEN) */
	TUN_DEF_TXQLEN = 1000,
	TUN_MIN_MTU = 1280, /* IPv6's minimum (RFC 8200 §5), and room for any header */
	TUN_MAX_MTU = 65535,
	TUN_MAX_QUEUES = 16, /* tun/tun.h */
};

void config_tun_defaults(struct inbound *in)
{
	struct inbound_tun *t = &in->tun;

	snprintf(t->ifname, sizeof(t->ifname), "tun0");
	t->mtu = TUN_DEF_MTU;
	t->table = TUN_DEF_TABLE;
	t->priority = TUN_DEF_PRIORITY;
	t->fwmark = TUN_DEF_FWMARK;
	t->offload = true;
	t->max_flows = TUN_DEF_MAX_FLOWS;
	t->linger_ms = TUN_DEF_LINGER_MS;
	t->txqlen = TUN_DEF_TXQLEN;
}

void config_tun_set_name(struct parser *p, const char *v)
{
	char q[QUOTE_BYTES];

	if (!config_valid_ifname(v)) {
		kerr(p, "\"%s\" is not an interface name (at most 15 bytes, no '/', ':' or blanks)",
		     config_quote(q, v));
		return;
	}
	snprintf(cur_in(p)->tun.ifname, sizeof(cur_in(p)->tun.ifname), "%s", v);
}

void config_tun_set_mtu(struct parser *p, const char *v)
{
	config_get_uint(p, v, TUN_MIN_MTU, TUN_MAX_MTU, &cur_in(p)->tun.mtu);
}

/* Calls each(p, item) for every comma-separated item of v, trimmed; false on an empty one. */
static bool each_item(struct parser *p, const char *v, void (*each)(struct parser *, const char *))
{
	char item[64];

	while (*v) {
		size_t n = strset_cspan(v, ",");
		const char *s = v;

		while (n && (*s == ' ' || *s == '\t'))
			s++, n--;
		while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
			n--;
		if (n == 0 || n >= sizeof(item))
			return false;
		memcpy(item, s, n);
		item[n] = '\0';
		each(p, item);
		v += strset_cspan(v, ",");
		if (*v == ',')
			v++;
	}
	return true;
}

/* "a.b.c.d/len" or "v6/len": an address with host bits (it is the TUN's own). */
static const char *parse_host_prefix(const char *s, struct cidr *out)
{
	char addr[INET6_ADDRSTRLEN + 1];
	const char *slash = strchr(s, '/'), *end;
	size_t alen = slash ? (size_t)(slash - s) : strlen(s);
	uint64_t prefix;
	unsigned max;

	if (!slash)
		return "needs a prefix length (e.g. 198.18.0.1/15, fdfe:5370::1/64)";
	if (alen >= sizeof(addr))
		return "is not an address/prefix";
	memcpy(addr, s, alen);
	addr[alen] = '\0';
	memset(out, 0, sizeof(*out));
	out->family = strchr(addr, ':') ? AF_INET6 : AF_INET;
	if (inet_pton(out->family, addr, out->addr) != 1)
		return "is not an address/prefix";
	max = out->family == AF_INET6 ? 128 : 32;
	if (config_parse_u64(slash + 1, &end, &prefix) < 0 || *end || prefix > max)
		return "has a bad prefix length";
	out->prefix = (uint8_t)prefix;
	return NULL;
}

static void one_address(struct parser *p, const char *item)
{
	struct inbound_tun *t = &cur_in(p)->tun;
	char q[QUOTE_BYTES];
	struct cidr c;
	const char *why = parse_host_prefix(item, &c);
	int f;

	if (why) {
		kerr(p, "\"%s\" %s", config_quote(q, item), why);
		return;
	}
	f = c.family == AF_INET ? 0 : 1;
	/* The fake sources come from the rest of the prefix (docs/tun.md): it needs room. */
	if (c.prefix > (f ? 120 : 29)) {
		kerr(p,
		     "\"%s\": the prefix leaves no room for the fake sources the TUN needs "
		     "(at most /%d)",
		     config_quote(q, item), f ? 120 : 29);
		return;
	}
	if (t->addr[f].family) {
		kerr(p, "\"%s\": one %s address at most", config_quote(q, item),
		     f ? "IPv6" : "IPv4");
		return;
	}
	t->addr[f] = c;
}

void config_tun_set_address(struct parser *p, const char *v)
{
	char q[QUOTE_BYTES];

	cur_in(p)->tun.addr_given = true; /* no defaults then */
	if (!each_item(p, v, one_address))
		kerr(p, "\"%s\" is not a list of address/prefix", config_quote(q, v));
}

static void one_route(struct parser *p, const char *item)
{
	struct inbound_tun *t = &cur_in(p)->tun;
	char q[QUOTE_BYTES];
	struct rule r = {0};
	const char *why = config_parse_cidr(item, &r);
	struct cidr *grown;

	if (why) {
		kerr(p, "\"%s\" %s", config_quote(q, item), why);
		return;
	}
	if (t->n_routes == TUN_CONF_MAX_ROUTES) {
		kerr(p, "more than %d routes", TUN_CONF_MAX_ROUTES);
		return;
	}
	grown = realloc(t->routes, (t->n_routes + 1) * sizeof(*grown));
	if (!grown) {
		kerr(p, "out of memory");
		return;
	}
	t->routes = grown;
	grown[t->n_routes].family = r.family;
	memcpy(grown[t->n_routes].addr, r.addr, sizeof(r.addr));
	grown[t->n_routes++].prefix = r.prefix;
}

void config_tun_set_routes(struct parser *p, const char *v)
{
	char q[QUOTE_BYTES];

	if (!each_item(p, v, one_route))
		kerr(p, "\"%s\" is not a list of address/prefix", config_quote(q, v));
}

static bool on_off(struct parser *p, const char *v, const char *on, const char *off, bool *out)
{
	char q[QUOTE_BYTES];

	if (strcmp(v, on) == 0)
		*out = true;
	else if (strcmp(v, off) == 0)
		*out = false;
	else {
		kerr(p, "\"%s\" is not one of %s, %s", config_quote(q, v), on, off);
		return false;
	}
	return true;
}

void config_tun_set_auto_route(struct parser *p, const char *v)
{
	on_off(p, v, "on", "off", &cur_in(p)->tun.auto_route);
}

void config_tun_set_table(struct parser *p, const char *v)
{
	unsigned x;

	/* 253-255 are default, main and local; 0 is "unspecified" */
	if (config_get_uint(p, v, 1, 0xfffffffeu, &x) == 0) {
		if (x >= 253 && x <= 255)
			kerr(p, "%u is one of the kernel's own tables (default, main, local)", x);
		else
			cur_in(p)->tun.table = x;
	}
}

void config_tun_set_priority(struct parser *p, const char *v)
{
	/* below main's 32766, and the next one is ours too */
	config_get_uint(p, v, 1, 32764, &cur_in(p)->tun.priority);
}

void config_tun_set_fwmark(struct parser *p, const char *v)
{
	char q[QUOTE_BYTES];
	int rc = config_parse_fwmark(v, &cur_in(p)->tun.fwmark);

	if (rc == -EINVAL)
		kerr(p, "\"%s\" is not a number (decimal, or hex with 0x)", config_quote(q, v));
	else if (rc < 0 || cur_in(p)->tun.fwmark == 0)
		kerr(p, "\"%s\" is out of range (1..0xffffffff)", config_quote(q, v));
}

void config_tun_set_queues(struct parser *p, const char *v)
{
	if (strcmp(v, "auto") == 0)
		cur_in(p)->tun.queues = 0;
	else
		config_get_uint(p, v, 1, TUN_MAX_QUEUES, &cur_in(p)->tun.queues);
}

void config_tun_set_offload(struct parser *p, const char *v)
{
	on_off(p, v, "auto", "off", &cur_in(p)->tun.offload);
}

void config_tun_set_max_flows(struct parser *p, const char *v)
{
	config_get_uint(p, v, 16, 1u << 24, &cur_in(p)->tun.max_flows);
}

void config_tun_set_linger(struct parser *p, const char *v)
{
	config_get_duration(p, v, 100, 3600 * 1000, "100ms..1h", &cur_in(p)->tun.linger_ms);
}

void config_tun_set_txqlen(struct parser *p, const char *v)
{
	config_get_uint(p, v, 16, 1u << 20, &cur_in(p)->tun.txqlen);
}

/*
 * netns = NAME (as `ip netns` names them: /run/netns/NAME) or an absolute
 * path (/proc/PID/ns/net). Whether it exists is checked at start.
 */
void config_tun_set_netns(struct parser *p, const char *v)
{
	char q[QUOTE_BYTES];
	struct inbound_tun *t = &cur_in(p)->tun;
	size_t n = strlen(v);

	if (v[0] != '/' && (!config_valid_name(v) || !strcmp(v, ".") || !strcmp(v, ".."))) {
		kerr(p,
		     "\"%s\" is neither a namespace name (as ip netns names them) nor an "
		     "absolute path",
		     config_quote(q, v));
		return;
	}
	if (n > CONFIG_PATH_MAX - 16) {
		kerr(p, "path longer than %d bytes", CONFIG_PATH_MAX - 16);
		return;
	}
	t->netns = malloc(n + 16);
	if (!t->netns) {
		kerr(p, "out of memory");
		return;
	}
	snprintf(t->netns, n + 16, "%s%s", v[0] == '/' ? "" : "/run/netns/", v);
}

/* dns-server = ADDRESS[:PORT]: an IP literal (no lookup before the resolver exists), port 53. */
void config_tun_set_dns_server(struct parser *p, const char *v)
{
	struct sockaddr_storage *ss = &cur_in(p)->tun.dns_server;
	char q[QUOTE_BYTES];
	socklen_t len;

	if (config_parse_ip(v, ss) == 0) {
		((struct sockaddr_in *)ss)->sin_port = htons(53); /* same offset in sockaddr_in6 */
		return;
	}
	if (config_parse_sockaddr(v, ss, &len) < 0) {
		ss->ss_family = AF_UNSPEC;
		kerr(p, "\"%s\" is not an IP address, or address:port", config_quote(q, v));
	}
}

void config_tun_set_dns_hijack(struct parser *p, const char *v)
{
	on_off(p, v, "on", "off", &cur_in(p)->tun.dns_hijack);
}

void config_tun_set_mapped_dns(struct parser *p, const char *v)
{
	on_off(p, v, "on", "off", &cur_in(p)->tun.mapped_dns);
}

static bool v4_default(struct cidr *c)
{
	memset(c, 0, sizeof(*c));
	c->family = AF_INET;
	c->prefix = 15;
	return inet_pton(AF_INET, "198.18.0.1", c->addr) == 1;
}

static bool v6_default(struct cidr *c)
{
	memset(c, 0, sizeof(*c));
	c->family = AF_INET6;
	c->prefix = 64;
	return inet_pton(AF_INET6, "fdfe:5370::1", c->addr) == 1;
}

void config_tun_close(struct parser *p)
{
	struct inbound_tun *t = &cur_in(p)->tun;

	if (!t->addr_given && (!v4_default(&t->addr[0]) || !v6_default(&t->addr[1])))
		config_err(p, p->sec_line, "address", "no default address (inet_pton failed)");
	for (size_t i = 0; i < t->n_routes; i++) {
		int f = t->routes[i].family == AF_INET ? 0 : 1;

		if (!t->addr[f].family)
			config_err(p, p->sec_line, "routes",
			           "an %s prefix, but no %s address on the TUN to answer it",
			           f ? "IPv6" : "IPv4", f ? "IPv6" : "IPv4");
	}
	if (t->auto_route && t->table == 0)
		config_err(p, p->sec_line, "table", "auto-route needs a table");
	if (t->dns_hijack && t->dns_server.ss_family == AF_UNSPEC && !t->mapped_dns)
		config_err(p, p->sec_line, "dns-hijack",
		           "needs dns-server or mapped-dns: what answers the queries");
	/* mapped-dns takes the upper half of each prefix: the TUN's address must be in the lower */
	for (int f = 0; t->mapped_dns && f < 2; f++) {
		const struct cidr *c = &t->addr[f];

		if (c->family && (c->addr[c->prefix / 8] & (0x80 >> (c->prefix % 8))))
			config_err(
			        p, p->sec_line, "mapped-dns",
			        "takes the upper half of each prefix for its names: the %s address "
			        "must lie in the lower half",
			        f ? "IPv6" : "IPv4");
	}
}

void config_tun_finish(struct parser *p)
{
	struct config *c = p->c;

	for (size_t i = 0; i < c->n_inbounds; i++) {
		const struct inbound *in = &c->inbounds[i];

		if (in->type != INBOUND_TUN)
			continue;
		snprintf(p->label, sizeof(p->label), "[inbound %s]", in->name); /* for config_err */
		for (size_t j = 0; j < i; j++) {
			const struct inbound *o = &c->inbounds[j];

			if (o->type != INBOUND_TUN)
				continue;
			/* names are per namespace */
			if (!strcmp(o->tun.ifname, in->tun.ifname) &&
			    !strcmp(o->tun.netns ? o->tun.netns : "",
			            in->tun.netns ? in->tun.netns : ""))
				config_err(p, in->line, "name",
				           "\"%s\" is also [inbound %s]'s device (line %d)",
				           in->tun.ifname, o->name, o->line);
			if (in->tun.auto_route && o->tun.auto_route && !in->tun.netns &&
			    !o->tun.netns &&
			    (o->tun.table == in->tun.table ||
			     (o->tun.priority <= in->tun.priority + 1 &&
			      in->tun.priority <= o->tun.priority + 1)))
				config_err(p, in->line, "table",
				           "auto-route: table and rule priorities must differ from "
				           "[inbound %s]'s (line %d)",
				           o->name, o->line);
		}
		if (!in->tun.auto_route || in->tun.netns)
			continue; /* netns: the namespace's own default route, no rules or marks */
		if (c->auto_mark && c->auto_mark != in->tun.fwmark)
			config_err(p, in->line, "fwmark",
			           "auto-route on two tun inbounds needs one fwmark for both");
		c->auto_mark = in->tun.fwmark;
	}
	p->label[0] = '\0';
	/*
	 * Every connecting outbound without a mark of its own takes it: its TCP
	 * and UDP sockets then skip the TUN's table. One with another mark
	 * routes by that mark (the user's own rules), which is theirs to get
	 * right.
	 */
	for (size_t i = 0; c->auto_mark && i < c->n_outbounds; i++)
		if (!c->outbounds[i].fwmark && c->outbounds[i].type != OUTBOUND_BLOCK)
			c->outbounds[i].fwmark = c->auto_mark;
}
