/* SPDX-License-Identifier: MIT */
/* The keys of [inbound NAME], [outbound NAME], [route], [wireguard NAME], and the end-of-section checks. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config_internal.h"
#include "config_value.h"
#include "shadowsocks.h"
#include "sockaddr.h"

static void add_ref(struct parser *p, enum ref_kind kind, size_t idx, const char *name)
{
	char q[QUOTE_BYTES];
	struct ref *r;

	if (!config_valid_name(name)) {
		kerr(p, "\"%s\" is not an outbound name", config_quote(q, name));
		return;
	}
	r = realloc(p->refs, (p->n_refs + 1) * sizeof(*r));
	if (!r) {
		kerr(p, "out of memory");
		return;
	}
	p->refs = r;
	r += p->n_refs++;
	*r = (struct ref){.kind = kind, .idx = idx, .line = p->line, .key = p->key};
	snprintf(r->label, sizeof(r->label), "%s", p->label);
	snprintf(r->name, sizeof(r->name), "%s", name);
}

/* --- [inbound NAME] --- */

static const char *const inbound_types[] = {
        [INBOUND_SOCKS5] = "socks5",     [INBOUND_HTTP] = "http",
        [INBOUND_FORWARD] = "forward",   [INBOUND_MIXED] = "mixed",
        [INBOUND_REDIRECT] = "redirect", [INBOUND_TPROXY] = "tproxy",
        [INBOUND_TUN] = "tun",           [INBOUND_SHADOWSOCKS] = "shadowsocks"};
static const char *const outbound_types[] = {[OUTBOUND_DIRECT] = "direct",
                                             [OUTBOUND_SOCKS5] = "socks5",
                                             [OUTBOUND_BLOCK] = "block",
                                             [OUTBOUND_HTTP] = "http",
                                             [OUTBOUND_SHADOWSOCKS] = "shadowsocks"};

static void set_in_type(struct parser *p, const char *v)
{
	char q[QUOTE_BYTES];

	for (int t = INBOUND_SOCKS5; t <= INBOUND_SHADOWSOCKS; t++) {
		if (strcmp(v, inbound_types[t]) == 0) {
			cur_in(p)->type = (enum inbound_type)t;
			return;
		}
	}
	kerr(p,
	     "\"%s\" is not one of socks5, http, mixed, forward, redirect, tproxy, tun, shadowsocks",
	     config_quote(q, v));
}

static void set_listen(struct parser *p, const char *v)
{
	struct inbound *in = cur_in(p);
	char q[QUOTE_BYTES];
	const char *why = "cannot be stored: out of memory";

	if (sa_parse(v, &in->listen, &in->listen_len, &why) < 0)
		kerr(p, "\"%s\" %s", config_quote(q, v), why);
}

static void set_user(struct parser *p, const char *v)
{
	struct users *u = &cur_in(p)->inline_users;
	const char *colon = strchr(v, ':'), *why;
	size_t n;

	if (!colon) {
		kerr(p, "expected name:password");
		return;
	}
	n = (size_t)(colon - v);
	why = users_check_name(v, n);
	if (why) {
		kerr(p, "%s", why);
		return;
	}
	why = users_check_pass(colon + 1, strlen(colon + 1));
	if (why) {
		kerr(p, "user \"%.*s\": %s", (int)n, v, why);
		return;
	}
	for (size_t i = 0; i < u->n; i++) {
		if (strlen(u->v[i].name) == n && memcmp(u->v[i].name, v, n) == 0) {
			kerr(p, "user \"%.*s\" defined twice", (int)n, v);
			return;
		}
	}
	if (users_add(u, v, n, colon + 1, strlen(colon + 1)) < 0)
		kerr(p, "out of memory");
}

char *config_path(struct parser *p, const char *v)
{
	bool rel = p->dir && v[0] != '/';
	const char *sep = rel && p->dir[strlen(p->dir) - 1] != '/' ? "/" : "";
	size_t need = strlen(v) + (rel ? strlen(p->dir) + strlen(sep) : 0);
	char *out;

	if (need > CONFIG_PATH_MAX) {
		kerr(p, "path longer than %d bytes", CONFIG_PATH_MAX);
		return NULL;
	}
	out = malloc(need + 1);
	if (!out) {
		kerr(p, "out of memory");
		return NULL;
	}
	/* Relative to the config file, so a reload finds it whatever the cwd. */
	if (rel)
		snprintf(out, need + 1, "%s%s%s", p->dir, sep, v);
	else
		memcpy(out, v, need + 1);
	return out;
}

static void set_users(struct parser *p, const char *v)
{
	cur_in(p)->users_file = config_path(p, v);
	cur_in(p)->users_line = p->line;
}

static void set_target(struct parser *p, const char *v)
{
	struct inbound *in = cur_in(p);
	char q[QUOTE_BYTES];
	const char *why = "cannot be stored: out of memory";

	if (config_hostport_why(v, &in->target_host, &in->target_port, &why) < 0)
		kerr(p, "\"%s\" %s", config_quote(q, v), why);
}

static void set_in_outbound(struct parser *p, const char *v)
{
	add_ref(p, REF_INBOUND, p->idx, v);
}

/* allow = CIDR[, CIDR...]; repeatable: the lists add up. */
static void parse_allow(struct parser *p, const char *v, struct cidr **list, size_t *n_list)
{
	char q[QUOTE_BYTES], item[64];
	const char *s = v;

	while (*s) {
		size_t n = strcspn(s, ",");
		const char *why;
		struct rule r = {0};
		struct cidr *grown;

		while (n && (*s == ' ' || *s == '\t'))
			s++, n--;
		while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
			n--;
		if (n == 0 || n >= sizeof(item)) {
			kerr(p,
			     "\"%s\" is not a list of address/prefix (e.g. 192.0.2.0/24, 2001:db8::/32)",
			     config_quote(q, v));
			return;
		}
		memcpy(item, s, n);
		item[n] = '\0';
		why = config_parse_cidr(item, &r);
		if (why) {
			kerr(p, "\"%s\" %s", config_quote(q, item), why);
			return;
		}
		grown = realloc(*list, (*n_list + 1) * sizeof(**list));
		if (!grown) {
			kerr(p, "out of memory");
			return;
		}
		*list = grown;
		grown[*n_list].family = r.family;
		memcpy(grown[*n_list].addr, r.addr, sizeof(r.addr));
		grown[(*n_list)++].prefix = r.prefix;
		s += strcspn(s, ",");
		if (*s == ',')
			s++;
	}
}

static void set_allow(struct parser *p, const char *v)
{
	parse_allow(p, v, &cur_in(p)->allow, &cur_in(p)->n_allow);
}

static void set_udp(struct parser *p, const char *v)
{
	char q[QUOTE_BYTES];

	if (strcmp(v, "on") == 0)
		cur_in(p)->udp = true;
	else if (strcmp(v, "off") == 0)
		cur_in(p)->udp = false;
	else
		kerr(p, "\"%s\" is not one of on, off", config_quote(q, v));
}

/* udp-advertise = ADDR: an IP literal (the reply's BND.ADDR; a name would need a lookup). */
static void set_udp_advertise(struct parser *p, const char *v)
{
	struct sockaddr_storage *ss = &cur_in(p)->udp_advertise;
	char q[QUOTE_BYTES];

	if (config_parse_ip(v, ss) < 0)
		kerr(p, "\"%s\" is not an IPv4 or IPv6 address", config_quote(q, v));
}

/* udp-ports = LO-HI: where relay sockets bind, for a firewall that opens only those. */
static void set_udp_ports(struct parser *p, const char *v)
{
	struct inbound *in = cur_in(p);
	struct rule r = {0};
	char q[QUOTE_BYTES];
	const char *why = config_parse_port_range(v, &r);

	if (why)
		kerr(p, "\"%s\" %s", config_quote(q, v), why);
	else
		in->udp_port_lo = r.port_lo, in->udp_port_hi = r.port_hi;
}

enum { DAY_MS = 24 * 3600 * 1000 };

/*
 * keepalive = DURATION (0: off; else at least 1s, the kernel's unit) and
 * user-timeout = DURATION (TCP_USER_TIMEOUT; 0: the kernel's default), for an
 * inbound's accepted sockets or an outbound's connections.
 */
static void get_keepalive(struct parser *p, const char *v, bool *set, unsigned *ms)
{
	char q[QUOTE_BYTES];

	config_get_duration(p, v, 0, DAY_MS, "0, or 1s..24h", ms);
	if (*ms && *ms < 1000)
		kerr(p, "\"%s\" is below 1s, the kernel's unit for keepalive", config_quote(q, v));
	*set = true;
}

static void set_in_keepalive(struct parser *p, const char *v)
{
	get_keepalive(p, v, &cur_in(p)->keepalive_set, &cur_in(p)->keepalive_ms);
}

static void set_in_user_timeout(struct parser *p, const char *v)
{
	config_get_duration(p, v, 0, DAY_MS, "0..24h", &cur_in(p)->user_timeout_ms);
}

/* method = NAME: a Shadowsocks cipher (ss_method_names). */
static int get_method(struct parser *p, const char *v)
{
	char q[QUOTE_BYTES];
	enum ss_method m = ss_method_by_name(v);

	if (!m)
		kerr(p, "\"%s\" is not one of %s", config_quote(q, v), ss_method_names);
	return (int)m;
}

static void set_in_method(struct parser *p, const char *v)
{
	cur_in(p)->ss_method = get_method(p, v);
}

/* Never echoed: a bad value may still be most of a real password. */
static void set_in_password(struct parser *p, const char *v)
{
	struct inbound *in = cur_in(p);

	if (!*v)
		kerr(p, "is empty");
	else if (!(in->ss_password = strdup(v)))
		kerr(p, "out of memory");
}

enum {
	SS_IN = 1u << INBOUND_SHADOWSOCKS,
	AUTH_INBOUNDS = 1u << INBOUND_SOCKS5 | 1u << INBOUND_HTTP | 1u << INBOUND_MIXED | SS_IN,
	SOCKS5_ONLY = 1u << INBOUND_SOCKS5 | 1u << INBOUND_MIXED, /* the keys of its SOCKS5 side */
	UDP_INBOUNDS = SOCKS5_ONLY | 1u << INBOUND_TPROXY | 1u << INBOUND_TUN,
	FORWARD_ONLY = 1u << INBOUND_FORWARD,
	DIRECT_ONLY = 1u << OUTBOUND_DIRECT,
	SOCKS_HTTP_OUT = 1u << OUTBOUND_SOCKS5 | 1u << OUTBOUND_HTTP,
	SS_OUT = 1u << OUTBOUND_SHADOWSOCKS,
	PROXY_OUTBOUNDS = SOCKS_HTTP_OUT | SS_OUT, /* a server to connect to */
	SOCKS5_OUT = 1u << OUTBOUND_SOCKS5,
	CONNECTING_OUTBOUNDS = 1u << OUTBOUND_DIRECT | PROXY_OUTBOUNDS, /* not block */
	TUN_ONLY = 1u << INBOUND_TUN,
	LISTENING = ~TUN_ONLY, /* every inbound with a listen address */
};

/* Order matters: config_close_inbound() names keys by index (IN_*). */
enum {
	IN_TYPE,
	IN_LISTEN,
	IN_USER,
	IN_USERS,
	IN_TARGET,
	IN_OUTBOUND,
	IN_ALLOW,
	IN_UDP,
	IN_METHOD,
	IN_PASSWORD
};
const struct key config_inbound_keys[] = {
        [IN_TYPE] = {"type", set_in_type, false, 0},
        [IN_LISTEN] = {"listen", set_listen, false, LISTENING},
        [IN_USER] = {"user", set_user, true, AUTH_INBOUNDS},
        [IN_USERS] = {"users", set_users, false, AUTH_INBOUNDS},
        [IN_TARGET] = {"target", set_target, false, FORWARD_ONLY},
        [IN_OUTBOUND] = {"outbound", set_in_outbound, false, 0},
        [IN_ALLOW] = {"allow", set_allow, true, LISTENING},
        [IN_UDP] = {"udp", set_udp, false, UDP_INBOUNDS},
        [IN_METHOD] = {"method", set_in_method, false, SS_IN},
        [IN_PASSWORD] = {"password", set_in_password, false, SS_IN},
        {"udp-advertise", set_udp_advertise, false, SOCKS5_ONLY},
        {"udp-ports", set_udp_ports, false, SOCKS5_ONLY},
        {"keepalive", set_in_keepalive, false, 0},
        {"user-timeout", set_in_user_timeout, false, 0},
        /* type = tun (config_tun.c) */
        {"name", config_tun_set_name, false, TUN_ONLY},
        {"mtu", config_tun_set_mtu, false, TUN_ONLY},
        {"address", config_tun_set_address, true, TUN_ONLY},
        {"routes", config_tun_set_routes, true, TUN_ONLY},
        {"auto-route", config_tun_set_auto_route, false, TUN_ONLY},
        {"table", config_tun_set_table, false, TUN_ONLY},
        {"rule-priority", config_tun_set_priority, false, TUN_ONLY},
        {"fwmark", config_tun_set_fwmark, false, TUN_ONLY},
        {"queues", config_tun_set_queues, false, TUN_ONLY},
        {"offload", config_tun_set_offload, false, TUN_ONLY},
        {"max-flows", config_tun_set_max_flows, false, TUN_ONLY},
        {"flow-linger", config_tun_set_linger, false, TUN_ONLY},
        {"tx-queue-len", config_tun_set_txqlen, false, TUN_ONLY},
        {"netns", config_tun_set_netns, false, TUN_ONLY},
        {"dns-server", config_tun_set_dns_server, false, TUN_ONLY},
        {"dns-hijack", config_tun_set_dns_hijack, false, TUN_ONLY},
        {"mapped-dns", config_tun_set_mapped_dns, false, TUN_ONLY},
        {NULL, NULL, false, 0},
};

/* --- [outbound NAME] --- */

static void set_out_type(struct parser *p, const char *v)
{
	char q[QUOTE_BYTES];

	for (int t = OUTBOUND_DIRECT; t <= OUTBOUND_SHADOWSOCKS; t++) {
		if (strcmp(v, outbound_types[t]) == 0) {
			cur_out(p)->type = (enum outbound_type)t;
			return;
		}
	}
	kerr(p, "\"%s\" is not one of direct, socks5, http, shadowsocks, block",
	     config_quote(q, v));
}

static void set_bind_address(struct parser *p, const char *v)
{
	struct outbound *o = cur_out(p);
	char q[QUOTE_BYTES];

	if (o->bind4.ss_family != AF_UNSPEC || o->bind6.ss_family != AF_UNSPEC)
		kerr(p, "cannot be used with bind-address-v4 or -v6 (one or the other)");
	else if (config_parse_ip(v, &o->bind_addr) < 0)
		kerr(p, "\"%s\" is not an IPv4 or IPv6 address", config_quote(q, v));
}

/* bind-address-v4 / -v6: a source for each family; a family without one is not bound. */
static void set_bind_family(struct parser *p, const char *v, int family)
{
	struct outbound *o = cur_out(p);
	struct sockaddr_storage *ss = family == AF_INET ? &o->bind4 : &o->bind6;
	char q[QUOTE_BYTES];

	if (o->bind_addr.ss_family != AF_UNSPEC)
		kerr(p, "cannot be used with bind-address (one or the other)");
	else if (config_parse_ip(v, ss) < 0 || ss->ss_family != family) {
		ss->ss_family = AF_UNSPEC;
		kerr(p, "\"%s\" is not an %s address", config_quote(q, v),
		     family == AF_INET ? "IPv4" : "IPv6");
	}
}

static void set_bind_address4(struct parser *p, const char *v)
{
	set_bind_family(p, v, AF_INET);
}

static void set_bind_address6(struct parser *p, const char *v)
{
	set_bind_family(p, v, AF_INET6);
}

static void set_bind_interface(struct parser *p, const char *v)
{
	char q[QUOTE_BYTES];

	if (!config_valid_ifname(v)) {
		kerr(p, "\"%s\" is not an interface name (at most 15 bytes, no '/', ':' or blanks)",
		     config_quote(q, v));
		return;
	}
	memcpy(cur_out(p)->bind_interface, v, strlen(v) + 1);
}

static void set_fwmark(struct parser *p, const char *v)
{
	char q[QUOTE_BYTES];
	int rc = config_parse_fwmark(v, &cur_out(p)->fwmark);

	if (rc == -EINVAL)
		kerr(p, "\"%s\" is not a number (decimal, or hex with 0x)", config_quote(q, v));
	else if (rc < 0)
		kerr(p, "\"%s\" is out of range (0..0xffffffff)", config_quote(q, v));
}

static void set_deny_private(struct parser *p, const char *v)
{
	char q[QUOTE_BYTES];

	if (strcmp(v, "yes") == 0)
		cur_out(p)->deny_private = true;
	else if (strcmp(v, "no") == 0)
		cur_out(p)->deny_private = false;
	else
		kerr(p, "\"%s\" is not one of yes, no", config_quote(q, v));
}

static void set_server(struct parser *p, const char *v)
{
	struct outbound *o = cur_out(p);
	char q[QUOTE_BYTES];
	const char *why = "cannot be stored: out of memory";

	if (config_hostport_why(v, &o->server_host, &o->server_port, &why) < 0)
		kerr(p, "\"%s\" %s", config_quote(q, v), why);
}

static void set_username(struct parser *p, const char *v)
{
	const char *why = users_check_name(v, strlen(v));

	if (why)
		kerr(p, "%s", why);
	else if (!(cur_out(p)->username = strdup(v)))
		kerr(p, "out of memory");
}

/* Never echoed: a bad value may still be most of a real password. */
static void set_password(struct parser *p, const char *v)
{
	const char *why = users_check_pass(v, strlen(v));

	if (why)
		kerr(p, "%s", why);
	else if (!(cur_out(p)->password = strdup(v)))
		kerr(p, "out of memory");
}

static void set_out_keepalive(struct parser *p, const char *v)
{
	get_keepalive(p, v, &cur_out(p)->keepalive_set, &cur_out(p)->keepalive_ms);
}

static void set_out_user_timeout(struct parser *p, const char *v)
{
	config_get_duration(p, v, 0, DAY_MS, "0..24h", &cur_out(p)->user_timeout_ms);
}

/* udp = udp | tcp | off: how a socks5 upstream carries UDP. */
static void set_out_udp(struct parser *p, const char *v)
{
	static const char *const names[] = {[OUTBOUND_UDP_ASSOCIATE] = "udp",
	                                    [OUTBOUND_UDP_TCP] = "tcp",
	                                    [OUTBOUND_UDP_OFF] = "off"};
	char q[QUOTE_BYTES];

	for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (strcmp(v, names[i]) == 0) {
			cur_out(p)->udp_mode = (enum outbound_udp)i;
			return;
		}
	}
	kerr(p, "\"%s\" is not one of udp, tcp, off", config_quote(q, v));
}

static void set_out_method(struct parser *p, const char *v)
{
	cur_out(p)->ss_method = get_method(p, v);
}

enum {
	OUT_TYPE,
	OUT_BIND_ADDRESS,
	OUT_BIND_INTERFACE,
	OUT_FWMARK,
	OUT_DENY_PRIVATE,
	OUT_SERVER,
	OUT_USERNAME,
	OUT_PASSWORD,
	OUT_METHOD
};
const struct key config_outbound_keys[] = {
        [OUT_TYPE] = {"type", set_out_type, false, 0},
        [OUT_BIND_ADDRESS] = {"bind-address", set_bind_address, false, CONNECTING_OUTBOUNDS},
        [OUT_BIND_INTERFACE] = {"bind-interface", set_bind_interface, false, CONNECTING_OUTBOUNDS},
        [OUT_FWMARK] = {"fwmark", set_fwmark, false, CONNECTING_OUTBOUNDS},
        [OUT_DENY_PRIVATE] = {"deny-private", set_deny_private, false, DIRECT_ONLY},
        [OUT_SERVER] = {"server", set_server, false, PROXY_OUTBOUNDS},
        [OUT_USERNAME] = {"username", set_username, false, SOCKS_HTTP_OUT},
        [OUT_PASSWORD] = {"password", set_password, false, PROXY_OUTBOUNDS},
        [OUT_METHOD] = {"method", set_out_method, false, SS_OUT},
        {"udp", set_out_udp, false, SOCKS5_OUT},
        {"bind-address-v4", set_bind_address4, false, CONNECTING_OUTBOUNDS},
        {"bind-address-v6", set_bind_address6, false, CONNECTING_OUTBOUNDS},
        {"keepalive", set_out_keepalive, false, CONNECTING_OUTBOUNDS},
        {"user-timeout", set_out_user_timeout, false, CONNECTING_OUTBOUNDS},
        {NULL, NULL, false, 0},
};

/* --- [route] --- */

/*
 * "alice bob": user names (as a users file spells them, so no blanks)
 * separated by blanks, stored NUL-separated with an empty name at the end.
 */
static const char *parse_user_list(const char *arg, struct rule *r)
{
	size_t n = strlen(arg), off = 0;
	const char *s = arg;

	r->users = malloc(n + 2);
	if (!r->users)
		return "cannot be stored: out of memory";
	while (*s) {
		size_t len = strcspn(s, " \t");

		if (users_check_name(s, len))
			return len > USERS_FIELD_MAX
			               ? "names a user longer than 255 bytes"
			               : "names a user with ':' or a control character";
		memcpy(r->users + off, s, len);
		off += len;
		r->users[off++] = '\0';
		s += len;
		s += strspn(s, " \t");
	}
	r->users[off] = '\0';
	return NULL;
}

static void set_rule(struct parser *p, const char *v)
{
	char q[QUOTE_BYTES], kind[16], *arg = NULL, *target = NULL;
	const char *arrow = strstr(v, "->"), *why;
	struct rule r = {.outbound = -1, .line = p->line};
	size_t n;

	if (!arrow || arrow == v) {
		kerr(p, "\"%s\" is not \"KIND VALUE -> OUTBOUND\"", config_quote(q, v));
		return;
	}
	n = strcspn(v, " \t");
	if (n >= sizeof(kind) || v + n >= arrow) {
		kerr(p, "\"%s\" is not \"KIND VALUE -> OUTBOUND\"", config_quote(q, v));
		return;
	}
	memcpy(kind, v, n);
	kind[n] = '\0';
	v += n + strspn(v + n, " \t");
	for (n = (size_t)(arrow - v); n > 0 && (v[n - 1] == ' ' || v[n - 1] == '\t');)
		n--;
	arg = strndup(v, n);
	target = strdup(arrow + 2 + strspn(arrow + 2, " \t"));
	if (!arg || !target) {
		kerr(p, "out of memory");
		goto out;
	}
	if (!*arg || (strpbrk(arg, " \t") && strcmp(kind, "user") != 0)) {
		kerr(p, "%s: expected one value before \"->\"", config_quote(q, kind));
		goto out;
	}
	if (!*target) {
		kerr(p, "no outbound after \"->\"");
		goto out;
	}
	if (strcmp(kind, "cidr") == 0)
		r.kind = RULE_CIDR, why = config_parse_cidr(arg, &r);
	else if (strcmp(kind, "port") == 0)
		r.kind = RULE_PORT, why = config_parse_port_range(arg, &r);
	else if (strcmp(kind, "domain") == 0)
		r.kind = RULE_DOMAIN, why = config_parse_domain(arg, &r);
	else if (strcmp(kind, "user") == 0)
		r.kind = RULE_USER, why = parse_user_list(arg, &r);
	else {
		kerr(p, "unknown rule kind \"%s\" (cidr, port, domain or user)",
		     config_quote(q, kind));
		goto out;
	}
	if (why) {
		kerr(p, "%s \"%s\" %s", kind, config_quote(q, arg), why);
		goto out;
	}
	if (p->c->n_rules == CONFIG_MAX_RULES) {
		kerr(p, "more than %d rules", CONFIG_MAX_RULES);
		goto out;
	}
	if (p->c->n_rules == p->cap_rules) {
		size_t cap = p->cap_rules ? 2 * p->cap_rules : 16;
		struct rule *nr = realloc(p->c->rules, cap * sizeof(*nr));
		if (!nr) {
			kerr(p, "out of memory");
			goto out;
		}
		p->c->rules = nr;
		p->cap_rules = cap;
	}
	add_ref(p, REF_RULE, p->c->n_rules, target);
	p->c->rules[p->c->n_rules++] = r;
	r.domain = r.users = NULL; /* owned by the config now */
out:
	free(r.domain);
	free(r.users);
	free(arg);
	free(target);
}

static void set_default(struct parser *p, const char *v)
{
	add_ref(p, REF_DEFAULT, 0, v);
}

const struct key config_route_keys[] = {
        {"default", set_default, false, 0},
        {"rule", set_rule, true, 0},
        {NULL, NULL, false, 0},
};

/* --- sections --- */

/* Keys given that the section's type does not take. */
static void check_key_types(struct parser *p, unsigned type, const char *type_name)
{
	for (int i = 0; p->keys[i].name; i++) {
		if ((p->seen & KEY_BIT(i)) && p->keys[i].types && !(p->keys[i].types & 1u << type))
			config_err(p, p->key_line[i], p->keys[i].name, "not valid with type = %s",
			           type_name);
	}
}

static void require(struct parser *p, int key)
{
	if (!(p->seen & KEY_BIT(key)))
		config_err(p, p->sec_line, p->keys[key].name, "required key is missing");
}

static bool same_sockaddr(const struct inbound *a, const struct inbound *b)
{
	return a->listen_len == b->listen_len && a->listen_len &&
	       memcmp(&a->listen, &b->listen, a->listen_len) == 0;
}

/*
 * The address a host:port names when the host is numeric (the resolver's
 * inet_aton() spellings included, see proto_target_ip_literal()), with the
 * forms the kernel treats as another address folded in: ::ffff:a.b.c.d is
 * a.b.c.d, 0.0.0.0 and :: are the loopback. False for a name.
 */
static bool numeric_target(const char *host, uint16_t port, struct sockaddr_storage *ss)
{
	struct sockaddr_in *a4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof(*ss));
	if (!strpbrk(host, " \t") && inet_aton(host, &a4->sin_addr)) {
		a4->sin_family = AF_INET;
	} else if (inet_pton(AF_INET6, host, &a6->sin6_addr) == 1) {
		if (IN6_IS_ADDR_V4MAPPED(&a6->sin6_addr)) {
			memcpy(&a4->sin_addr, a6->sin6_addr.s6_addr + 12, 4);
			memset(a6->sin6_addr.s6_addr, 0, 12);
			a4->sin_family = AF_INET;
		} else {
			a6->sin6_family = AF_INET6;
			if (IN6_IS_ADDR_UNSPECIFIED(&a6->sin6_addr))
				a6->sin6_addr = in6addr_loopback;
		}
	} else {
		return false;
	}
	if (ss->ss_family == AF_INET && a4->sin_addr.s_addr == htonl(INADDR_ANY))
		a4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	a4->sin_port = htons(port); /* sin_port and sin6_port share their offset */
	return true;
}

/*
 * Whether a connection to `t` (numeric_target()) lands on inbound `in`'s
 * listener: the same address and port, or a wildcard listener (0.0.0.0,
 * [::], IPV6_V6ONLY) and a loopback address of its family on its port. Other
 * addresses of this host on a wildcard port are only known at connect time;
 * egress.c refuses those.
 */
static bool lands_on(const struct sockaddr_storage *t, const struct inbound *in)
{
	const struct sockaddr_in *l4 = (const struct sockaddr_in *)&in->listen;
	const struct sockaddr_in6 *l6 = (const struct sockaddr_in6 *)&in->listen;
	const struct sockaddr_in *t4 = (const struct sockaddr_in *)t;
	const struct sockaddr_in6 *t6 = (const struct sockaddr_in6 *)t;

	if (t->ss_family != in->listen.ss_family || t4->sin_port != l4->sin_port)
		return false;
	if (t->ss_family == AF_INET)
		return t4->sin_addr.s_addr == l4->sin_addr.s_addr ||
		       (l4->sin_addr.s_addr == htonl(INADDR_ANY) &&
		        (ntohl(t4->sin_addr.s_addr) >> 24) == 127);
	return IN6_ARE_ADDR_EQUAL(&t6->sin6_addr, &l6->sin6_addr) ||
	       (IN6_IS_ADDR_UNSPECIFIED(&l6->sin6_addr) && IN6_IS_ADDR_LOOPBACK(&t6->sin6_addr));
}

/*
 * A forward inbound whose target is one of spliced's own listeners would
 * connect to itself (its own: a loop that fills max-connections; another
 * inbound's: a pointless hop egress.c refuses at connect time anyway).
 * Checked both ways, so the order of the sections does not matter.
 */
static void check_forward_loops(struct parser *p)
{
	struct inbound *in = cur_in(p);
	struct sockaddr_storage t;

	if (in->type == INBOUND_FORWARD && in->target_host &&
	    numeric_target(in->target_host, in->target_port, &t)) {
		for (size_t i = 0; i <= p->idx; i++) {
			if (!lands_on(&t, &p->c->inbounds[i]))
				continue;
			if (i == p->idx)
				config_err(
				        p, p->key_line[IN_TARGET], "target",
				        "is this inbound's own listen address: it would connect to "
				        "itself");
			else
				config_err(p, p->key_line[IN_TARGET], "target",
				           "is the listen address of [inbound %s]: spliced would "
				           "connect to itself",
				           p->c->inbounds[i].name);
		}
	}
	for (size_t i = 0; i < p->idx; i++) {
		const struct inbound *f = &p->c->inbounds[i];

		if (f->type == INBOUND_FORWARD && f->target_host &&
		    numeric_target(f->target_host, f->target_port, &t) && lands_on(&t, in))
			config_err(
			        p, p->key_line[IN_LISTEN], "listen",
			        "is the target of [inbound %s] (line %d), which would connect to "
			        "spliced itself",
			        f->name, f->line);
	}
}

/*
 * A shadowsocks section's key from method and password (which is wiped):
 * an inbound takes one key, an outbound a 2022 identity key list.
 */
static struct ss_key *ss_key_build(struct parser *p, int method, char **password, int pw_line,
                                   bool list)
{
	struct ss_key *k = calloc(1, sizeof(*k));
	const char *why;

	if (!k) {
		config_err(p, pw_line, "password", "out of memory");
		return NULL;
	}
	why = ss_key_init(k, (enum ss_method)method, *password, list);
	explicit_bzero(*password, strlen(*password));
	free(*password);
	*password = NULL;
	if (why) {
		config_err(p, pw_line, "password", "%s", why);
		ss_key_free(k);
		return NULL;
	}
	return k;
}

/* [inbound NAME] type = shadowsocks: method, password, and users only with a 2022 AES method. */
static void close_ss_inbound(struct parser *p, struct inbound *in)
{
	const struct ss_method_info *mi = ss_method_info((enum ss_method)in->ss_method);
	bool users = in->users_file || in->inline_users.n;

	require(p, IN_METHOD);
	require(p, IN_PASSWORD);
	if (in->ss_password && mi)
		in->ss = ss_key_build(p, in->ss_method, &in->ss_password, p->key_line[IN_PASSWORD],
		                      false);
	if (!users || !mi)
		return;
	if (!mi->v2022 || mi->alg == AEAD_CHACHA20_POLY1305) {
		config_err(
		        p, p->key_line[in->users_file ? IN_USERS : IN_USER],
		        in->users_file ? "users" : "user",
		        "needs 2022-blake3-aes-128-gcm or 2022-blake3-aes-256-gcm: users are told "
		        "apart by identity headers (SIP023), which only those methods have");
		return;
	}
	for (size_t i = 0; i < in->inline_users.n; i++) {
		uint8_t k[SS_SALT_MAX];

		if (ss_psk_decode(k, mi->key_len, in->inline_users.v[i].pass) < 0)
			config_err(p, p->key_line[IN_USER], "user",
			           "user \"%s\": the password is not base64 of a %u-byte key",
			           in->inline_users.v[i].name, mi->key_len);
		explicit_bzero(k, sizeof(k));
	}
}

void config_close_inbound(struct parser *p)
{
	struct inbound *in = cur_in(p);

	require(p, IN_TYPE);
	if (in->type == INBOUND_TUN) {
		check_key_types(p, in->type, inbound_types[in->type]);
		/* a tun2socks without UDP breaks DNS and QUIC (socks5's default is off) */
		if (!(p->seen & KEY_BIT(IN_UDP)))
			in->udp = true;
		config_tun_close(p);
		return;
	}
	require(p, IN_LISTEN);
	if (in->type)
		check_key_types(p, in->type, inbound_types[in->type]);
	if (in->type == INBOUND_FORWARD)
		require(p, IN_TARGET);
	if (in->type == INBOUND_SHADOWSOCKS)
		close_ss_inbound(p, in);
	for (size_t i = 0; i < p->idx; i++) {
		if (same_sockaddr(&p->c->inbounds[i], in))
			config_err(p, p->key_line[IN_LISTEN], "listen",
			           "address already used by [inbound %s]", p->c->inbounds[i].name);
	}
	if (p->c->stats_listen_len && in->listen_len == p->c->stats_listen_len &&
	    memcmp(&in->listen, &p->c->stats_listen, in->listen_len) == 0)
		config_err(p, p->key_line[IN_LISTEN], "listen", "address already used by [stats]");
	if (in->listen_len)
		check_forward_loops(p);
	users_sort(&in->inline_users);
	/* Read the users file now, so a bad one stops the start, not the first login. */
	if (in->users_file && in->type != INBOUND_FORWARD) {
		FILE *f = fopen(in->users_file, "re");
		char q[QUOTE_BYTES];
		struct users *u;
		int rc;

		if (!f) {
			int e = errno;
			/* A reload after [main] user: the file must be readable by that user. */
			bool hint = (e == EACCES || e == EPERM) && geteuid() != 0;

			config_err(
			        p, p->key_line[IN_USERS], "users", "cannot open \"%s\": %s%s",
			        config_quote(q, in->users_file), strerror(e),
			        hint ? " (spliced no longer runs as root: make the file readable "
			               "by its user, or restart)"
			             : "");
			return;
		}
		fclose(f);
		u = inbound_users_build(in, p->err, &rc);
		if (rc < 0)
			p->errors++;
		users_destroy(u);
	}
}

void config_close_outbound(struct parser *p)
{
	struct outbound *o = cur_out(p);

	require(p, OUT_TYPE);
	if (o->type)
		check_key_types(p, o->type, outbound_types[o->type]);
	if (o->type == OUTBOUND_SHADOWSOCKS) {
		require(p, OUT_SERVER);
		require(p, OUT_METHOD);
		require(p, OUT_PASSWORD);
		if (o->password && o->ss_method)
			o->ss = ss_key_build(p, o->ss_method, &o->password,
			                     p->key_line[OUT_PASSWORD], true);
		return;
	}
	if (o->type != OUTBOUND_SOCKS5 && o->type != OUTBOUND_HTTP)
		return;
	require(p, OUT_SERVER);
	if ((p->seen & KEY_BIT(OUT_USERNAME)) && !(p->seen & KEY_BIT(OUT_PASSWORD)))
		config_err(p, p->key_line[OUT_USERNAME], "username", "set without password");
	if (!(p->seen & KEY_BIT(OUT_USERNAME)) && (p->seen & KEY_BIT(OUT_PASSWORD)))
		config_err(p, p->key_line[OUT_PASSWORD], "password", "set without username");
}

/* --- [wireguard NAME] --- */

static void set_wg_config(struct parser *p, const char *v)
{
	p->c->wireguards[p->idx].conf = config_path(p, v);
}

/* --- [user NAME] --- */

static void set_user_max_conns(struct parser *p, const char *v)
{
	config_get_uint(p, v, 1, 10000000, &p->c->users[p->idx].max_conns); /* as max-connections */
}

const struct key config_user_keys[] = {
        {"max-connections", set_user_max_conns, false, 0},
        {NULL, NULL, false, 0},
};

/* --- [stats] --- */

static void set_stats_listen(struct parser *p, const char *v)
{
	char q[QUOTE_BYTES];
	const char *why = "cannot be stored: out of memory";

	if (sa_parse(v, &p->c->stats_listen, &p->c->stats_listen_len, &why) < 0)
		kerr(p, "\"%s\" %s", config_quote(q, v), why);
}

static void set_stats_allow(struct parser *p, const char *v)
{
	parse_allow(p, v, &p->c->stats_allow, &p->c->n_stats_allow);
}

enum { STATS_LISTEN, STATS_ALLOW };
const struct key config_stats_keys[] = {
        [STATS_LISTEN] = {"listen", set_stats_listen, false, 0},
        [STATS_ALLOW] = {"allow", set_stats_allow, true, 0},
        {NULL, NULL, false, 0},
};

/* The endpoint needs an address; one of an inbound's would take its connections. */
void config_close_stats(struct parser *p)
{
	struct config *c = p->c;

	c->stats_line = p->sec_line;
	if (!(p->seen & 1u << STATS_LISTEN)) {
		config_err(p, p->sec_line, NULL,
		           "missing key: listen (the metrics endpoint's address)");
		return;
	}
	for (size_t i = 0; i < c->n_inbounds; i++)
		if (c->inbounds[i].listen_len == c->stats_listen_len && c->stats_listen_len &&
		    memcmp(&c->inbounds[i].listen, &c->stats_listen, c->stats_listen_len) == 0)
			config_err(p, p->key_line[STATS_LISTEN], "listen",
			           "address already used by [inbound %s]", c->inbounds[i].name);
}

const struct key config_wireguard_keys[] = {
        {"config", set_wg_config, false, 0},
        {NULL, NULL, false, 0},
};

void config_close_wireguard(struct parser *p)
{
	const struct wireguard_sec *wg = &p->c->wireguards[p->idx];

	if (!wg->conf)
		config_err(p, wg->line, NULL, "missing key: config (the wg-quick file)");
}
