/* SPDX-License-Identifier: MIT */
/* The keys of [outbound NAME] and the checks at the end of the section. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config_internal.h"
#include "config_value.h"

/* --- [outbound NAME] --- */

static const char *const outbound_types[] = {[OUTBOUND_DIRECT] = "direct",
                                             [OUTBOUND_SOCKS5] = "socks5",
                                             [OUTBOUND_BLOCK] = "block",
                                             [OUTBOUND_HTTP] = "http",
                                             [OUTBOUND_SHADOWSOCKS] = "shadowsocks"};

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
	config_get_keepalive(p, v, &cur_out(p)->keepalive_set, &cur_out(p)->keepalive_ms);
}

static void set_out_user_timeout(struct parser *p, const char *v)
{
	config_get_duration(p, v, 0, CONFIG_DAY_MS, "0..24h", &cur_out(p)->user_timeout_ms);
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
	cur_out(p)->ss_method = config_ss_method(p, v);
}

enum {
	DIRECT_ONLY = 1u << OUTBOUND_DIRECT,
	SOCKS_HTTP_OUT = 1u << OUTBOUND_SOCKS5 | 1u << OUTBOUND_HTTP,
	SS_OUT = 1u << OUTBOUND_SHADOWSOCKS,
	PROXY_OUTBOUNDS = SOCKS_HTTP_OUT | SS_OUT, /* a server to connect to */
	SOCKS5_OUT = 1u << OUTBOUND_SOCKS5,
	CONNECTING_OUTBOUNDS = 1u << OUTBOUND_DIRECT | PROXY_OUTBOUNDS, /* not block */
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

void config_close_outbound(struct parser *p)
{
	struct outbound *o = cur_out(p);

	config_require(p, OUT_TYPE);
	if (o->type)
		config_check_key_types(p, o->type, outbound_types[o->type]);
	if (o->type == OUTBOUND_SHADOWSOCKS) {
		config_ss_close_outbound(p, o);
		return;
	}
	if (o->type != OUTBOUND_SOCKS5 && o->type != OUTBOUND_HTTP)
		return;
	config_require(p, OUT_SERVER);
	if ((p->seen & KEY_BIT(OUT_USERNAME)) && !(p->seen & KEY_BIT(OUT_PASSWORD)))
		config_err(p, p->key_line[OUT_USERNAME], "username", "set without password");
	if (!(p->seen & KEY_BIT(OUT_USERNAME)) && (p->seen & KEY_BIT(OUT_PASSWORD)))
		config_err(p, p->key_line[OUT_PASSWORD], "password", "set without username");
}
