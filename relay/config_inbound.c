/* SPDX-License-Identifier: MIT */
/* The keys of [inbound NAME] and the checks at the end of the section. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config_internal.h"
#include "config_value.h"
#include "sockaddr.h"

/* --- [inbound NAME] --- */

static const char *const inbound_types[] = {
        [INBOUND_SOCKS5] = "socks5",     [INBOUND_HTTP] = "http",
        [INBOUND_FORWARD] = "forward",   [INBOUND_MIXED] = "mixed",
        [INBOUND_REDIRECT] = "redirect", [INBOUND_TPROXY] = "tproxy",
        [INBOUND_TUN] = "tun",           [INBOUND_SHADOWSOCKS] = "shadowsocks"};

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
	config_add_ref(p, REF_INBOUND, p->idx, v);
}

static void set_allow(struct parser *p, const char *v)
{
	config_parse_allow(p, v, &cur_in(p)->allow, &cur_in(p)->n_allow);
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

static void set_in_keepalive(struct parser *p, const char *v)
{
	config_get_keepalive(p, v, &cur_in(p)->keepalive_set, &cur_in(p)->keepalive_ms);
}

static void set_in_user_timeout(struct parser *p, const char *v)
{
	config_get_duration(p, v, 0, CONFIG_DAY_MS, "0..24h", &cur_in(p)->user_timeout_ms);
}

static void set_in_method(struct parser *p, const char *v)
{
	cur_in(p)->ss_method = config_ss_method(p, v);
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
	TUN_ONLY = 1u << INBOUND_TUN,
	LISTENING = ~TUN_ONLY, /* every inbound with a listen address */
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

void config_close_inbound(struct parser *p)
{
	struct inbound *in = cur_in(p);

	config_require(p, IN_TYPE);
	if (in->type == INBOUND_TUN) {
		config_check_key_types(p, in->type, inbound_types[in->type]);
		/* a tun2socks without UDP breaks DNS and QUIC (socks5's default is off) */
		if (!(p->seen & KEY_BIT(IN_UDP)))
			in->udp = true;
		config_tun_close(p);
		return;
	}
	config_require(p, IN_LISTEN);
	if (in->type)
		config_check_key_types(p, in->type, inbound_types[in->type]);
	if (in->type == INBOUND_FORWARD)
		config_require(p, IN_TARGET);
	if (in->type == INBOUND_SHADOWSOCKS)
		config_ss_close_inbound(p, in);
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
