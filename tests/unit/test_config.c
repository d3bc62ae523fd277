/* SPDX-License-Identifier: MIT */
/* Unit tests for relay/config.c and relay/users.c: every key, every error class, users files. */
#include <arpa/inet.h>
#include <errno.h>
#include <grp.h>
#include <netinet/in.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "t.h"
#include "config.h"

T_SUITE("config");

/* A valid inbound, three lines; most error cases append or prepend it. */
#define IN "[inbound s]\ntype = socks5\nlisten = 127.0.0.1:1080\n"

static char tmpdir[] = "/tmp/test_config.XXXXXX";

/* Writes tmpdir/name and returns its path (static buffer per call site use). */
static const char *write_file(const char *name, const char *text)
{
	static char path[4][512];
	static int next;
	char *p = path[next++ % 4];
	FILE *f;

	snprintf(p, sizeof(path[0]), "%s/%s", tmpdir, name);
	f = fopen(p, "w");
	if (!f) {
		perror(p);
		exit(2);
	}
	fputs(text, f);
	fclose(f);
	return p;
}

/* Loads text as "t.ini"; *msgs gets everything written to err (caller frees). */
static int load_str(const char *text, struct config **c, char **msgs)
{
	size_t len;
	FILE *f = open_memstream(msgs, &len);
	int rc = config_load_string("t.ini", text, c, f);

	fclose(f);
	return rc;
}

static int load_path(const char *path, struct config **c, char **msgs)
{
	size_t len;
	FILE *f = open_memstream(msgs, &len);
	int rc = config_load(path, c, f);

	fclose(f);
	return rc;
}

/* Loads text expecting exactly `expected` on err and -EINVAL. */
static int expect_err(const char *text, const char *expected)
{
	struct config *c = (struct config *)1;
	char *m = NULL;
	int rc = load_str(text, &c, &m), ok = rc == -EINVAL && c == NULL && !strcmp(m, expected);

	if (!ok)
		printf("  rc %d, got:\n%s  expected:\n%s", rc, m, expected);
	config_free(c);
	free(m);
	return ok;
}

static struct config *load_ok(const char *text)
{
	struct config *c = NULL;
	char *m = NULL;
	int rc = load_str(text, &c, &m);

	if (rc != 0 || *m)
		printf("  rc %d, messages:\n%s", rc, m);
	free(m);
	return c;
}

static uint16_t sa_port(const struct sockaddr_storage *ss)
{
	return ntohs(ss->ss_family == AF_INET6 ? ((const struct sockaddr_in6 *)ss)->sin6_port
	                                       : ((const struct sockaddr_in *)ss)->sin_port);
}

static const char *sa_addr(const struct sockaddr_storage *ss)
{
	static char buf[INET6_ADDRSTRLEN];
	const void *a = ss->ss_family == AF_INET6
	                        ? (const void *)&((const struct sockaddr_in6 *)ss)->sin6_addr
	                        : (const void *)&((const struct sockaddr_in *)ss)->sin_addr;

	return inet_ntop(ss->ss_family, a, buf, sizeof(buf)) ? buf : "?";
}

static char *repeat(char ch, size_t n)
{
	char *s = malloc(n + 1);

	memset(s, ch, n);
	s[n] = '\0';
	return s;
}

static void test_builtin(void)
{
	struct config *c = NULL;
	char *m = NULL;

	T_EQ_INT(load_path(NULL, &c, &m), 0);
	T_EQ_STR(m, "");
	free(m);
	if (!c)
		return;
	T_EQ_STR(c->file, "(built-in)");
	T_EQ_INT(c->n_inbounds, 1);
	T_EQ_STR(c->inbounds[0].name, "socks");
	T_EQ_INT(c->inbounds[0].type, INBOUND_SOCKS5);
	T_EQ_INT(c->inbounds[0].listen.ss_family, AF_INET);
	T_EQ_INT(c->inbounds[0].listen_len, sizeof(struct sockaddr_in));
	T_EQ_STR(sa_addr(&c->inbounds[0].listen), "127.0.0.1");
	T_EQ_INT(sa_port(&c->inbounds[0].listen), 1080);
	T_EQ_INT(c->inbounds[0].outbound, -1);
	T_ASSERT(!inbound_requires_auth(&c->inbounds[0]));
	T_EQ_INT(c->n_outbounds, 2);
	T_EQ_STR(c->outbounds[0].name, "direct");
	T_EQ_INT(c->outbounds[0].type, OUTBOUND_DIRECT);
	T_EQ_INT(c->outbounds[0].bind_addr.ss_family, AF_UNSPEC);
	T_EQ_STR(c->outbounds[1].name, "block");
	T_EQ_INT(c->outbounds[1].type, OUTBOUND_BLOCK);
	T_EQ_INT(c->route_default, 0);
	T_EQ_INT(c->n_rules, 0);
	config_free(c);
}

static void test_defaults(void)
{
	struct config *c = load_ok(IN);

	T_ASSERT(c != NULL);
	if (!c)
		return;
	T_EQ_INT(c->workers, 0);
	T_EQ_INT(c->log_level, LOG_INFO);
	T_EQ_INT(c->max_connections, 10000);
	T_EQ_INT(c->handshake_timeout_ms, 10000);
	T_EQ_INT(c->connect_timeout_ms, 10000);
	T_EQ_INT(c->idle_timeout_ms, 300000);
	T_EQ_INT(c->drain_timeout_ms, 5000);
	T_EQ_INT(c->pipe_size, 1048576);
	T_EQ_INT(c->max_pipes, 0);
	T_EQ_INT(c->resolve_timeout_ms, 5000);
	T_EQ_INT(c->max_resolving, 4096);
	T_EQ_INT(c->splice, true);
	T_EQ_INT(c->accept_steering, STEER_HASH);
	T_EQ_INT(c->inbounds[0].line, 1);
	T_ASSERT(c->inbounds[0].users_file == NULL);
	T_EQ_INT(c->inbounds[0].inline_users.n, 0);
	T_ASSERT(c->inbounds[0].target_host == NULL);
	config_free(c);
}

static const char every_key[] = "; every key once (or more when repeatable)\n"
                                "[main]\n"
                                "workers = 4\n"
                                "log-level = debug\n"
                                "max-connections = 500\n"
                                "handshake-timeout = 500ms\n"
                                "connect-timeout = 3s\n"
                                "idle-timeout = 0\n"
                                "drain-timeout = 1m\n"
                                "pipe-size = 64k\n"
                                "max-pipes = 128\n"
                                "resolve-timeout = 1500ms\n"
                                "max-resolving = 64\n"
                                "splice = no\n"
                                "accept-steering = cpu\n"
                                "\n"
                                "[inbound socks]\n"
                                "type = socks5\n"
                                "listen = [::1]:1080\n"
                                "user = bob:pa:ss word\n"
                                "user = alice:secret\n"
                                "users = users.txt\n"
                                "outbound = upstream\n"
                                "\n"
                                "[inbound web]\n"
                                "type = http\n"
                                "listen = 127.0.0.1:8080\n"
                                "\n"
                                "[inbound fwd]\n"
                                "type = forward\n"
                                "listen = 0.0.0.0:8443\n"
                                "target = [2001:db8::1]:443\n"
                                "\n"
                                "[outbound upstream]\n"
                                "type = socks5\n"
                                "server = proxy.example.net:1081\n"
                                "username = carol\n"
                                "password = hunter2\n"
                                "\n"
                                "[outbound direct]\n"
                                "type = direct\n"
                                "bind-address = 192.0.2.1\n"
                                "bind-interface = lo\n"
                                "fwmark = 0x10\n"
                                "\n"
                                "[outbound v6]\n"
                                "type = direct\n"
                                "bind-address = 2001:db8::2\n"
                                "fwmark = 42\n"
                                "\n"
                                "[route]\n"
                                "default = upstream\n"
                                "rule = cidr 10.0.0.0/8 -> upstream\n"
                                "rule = cidr fd00::/8 -> block\n"
                                "rule = port 25 -> block\n"
                                "rule = port 6000-6063 -> direct\n"
                                "rule = domain Example.COM. -> v6\n"
                                "\n"
                                "[outbound web]\n"
                                "type = http\n"
                                "server = [2001:db8::8]:3128\n"
                                "username = dave\n"
                                "password = s3cret\n"
                                "fwmark = 7\n";

static void test_every_key(void)
{
	struct config *c = NULL;
	const struct inbound *in;
	const struct outbound *o;
	const struct rule *r;
	char *m = NULL, users_path[600];
	static const uint8_t fd00[16] = {0xfd};

	write_file("users.txt", "dave daves-pass\n");
	T_EQ_INT(load_path(write_file("every.ini", every_key), &c, &m), 0);
	T_EQ_STR(m, "");
	free(m);
	if (!c)
		return;
	T_EQ_INT(c->workers, 4);
	T_EQ_INT(c->log_level, LOG_DEBUG);
	T_EQ_INT(c->max_connections, 500);
	T_EQ_INT(c->handshake_timeout_ms, 500);
	T_EQ_INT(c->connect_timeout_ms, 3000);
	T_EQ_INT(c->idle_timeout_ms, 0);
	T_EQ_INT(c->drain_timeout_ms, 60000);
	T_EQ_INT(c->pipe_size, 65536);
	T_EQ_INT(c->max_pipes, 128);
	T_EQ_INT(c->resolve_timeout_ms, 1500);
	T_EQ_INT(c->max_resolving, 64);
	T_EQ_INT(c->splice, false);
	T_EQ_INT(c->accept_steering, STEER_CPU);

	T_EQ_INT(c->n_inbounds, 3);
	in = &c->inbounds[0];
	T_EQ_STR(in->name, "socks");
	T_EQ_INT(in->line, 17);
	T_EQ_INT(in->listen.ss_family, AF_INET6);
	T_EQ_INT(in->listen_len, sizeof(struct sockaddr_in6));
	T_EQ_STR(sa_addr(&in->listen), "::1");
	T_EQ_INT(sa_port(&in->listen), 1080);
	T_EQ_INT(in->inline_users.n, 2);
	if (in->inline_users.n == 2) {
		/* sorted by name */
		T_EQ_STR(in->inline_users.v[0].name, "alice");
		T_EQ_STR(in->inline_users.v[1].name, "bob");
		T_EQ_STR(in->inline_users.v[1].pass, "pa:ss word");
	}
	T_ASSERT(users_check(&in->inline_users, "bob", "pa:ss word"));
	snprintf(users_path, sizeof(users_path), "%s/users.txt", tmpdir);
	T_EQ_STR(in->users_file, users_path);
	T_EQ_INT(in->outbound, 0);
	T_ASSERT(inbound_requires_auth(in));

	in = &c->inbounds[1];
	T_EQ_INT(in->type, INBOUND_HTTP);
	T_EQ_STR(sa_addr(&in->listen), "127.0.0.1");
	T_EQ_INT(sa_port(&in->listen), 8080);
	T_EQ_INT(in->outbound, -1);
	T_ASSERT(!inbound_requires_auth(in));

	in = &c->inbounds[2];
	T_EQ_INT(in->type, INBOUND_FORWARD);
	T_EQ_STR(sa_addr(&in->listen), "0.0.0.0");
	T_EQ_STR(in->target_host, "2001:db8::1");
	T_EQ_INT(in->target_port, 443);

	/* document order, then the implicit block */
	T_EQ_INT(c->n_outbounds, 5);
	o = &c->outbounds[0];
	T_EQ_STR(o->name, "upstream");
	T_EQ_INT(o->type, OUTBOUND_SOCKS5);
	T_EQ_STR(o->server_host, "proxy.example.net");
	T_EQ_INT(o->server_port, 1081);
	T_EQ_STR(o->username, "carol");
	T_EQ_STR(o->password, "hunter2");
	T_EQ_INT(o->line, 34);
	o = &c->outbounds[1];
	T_EQ_STR(o->name, "direct");
	T_EQ_INT(o->type, OUTBOUND_DIRECT);
	T_EQ_STR(sa_addr(&o->bind_addr), "192.0.2.1");
	T_EQ_STR(o->bind_interface, "lo");
	T_EQ_INT(o->fwmark, 16);
	o = &c->outbounds[2];
	T_EQ_STR(sa_addr(&o->bind_addr), "2001:db8::2");
	T_EQ_INT(o->bind_addr.ss_family, AF_INET6);
	T_EQ_INT(o->fwmark, 42);
	T_EQ_INT(o->bind_interface[0], 0);
	o = &c->outbounds[3];
	T_EQ_STR(o->name, "web");
	T_EQ_INT(o->type, OUTBOUND_HTTP);
	T_EQ_STR(o->server_host, "2001:db8::8");
	T_EQ_INT(o->server_port, 3128);
	T_EQ_STR(o->username, "dave");
	T_EQ_STR(o->password, "s3cret");
	T_EQ_INT(o->fwmark, 7); /* socket options apply to every outbound that connects */
	T_EQ_STR(c->outbounds[4].name, "block");
	T_EQ_INT(c->outbounds[4].type, OUTBOUND_BLOCK);
	T_EQ_INT(c->outbounds[4].line, 0);
	T_EQ_INT(config_outbound_index(c, "v6"), 2);
	T_EQ_INT(config_outbound_index(c, "nope"), -1);

	T_EQ_INT(c->route_default, 0);
	T_EQ_INT(c->n_rules, 5);
	if (c->n_rules != 5)
		goto out;
	r = &c->rules[0];
	T_EQ_INT(r->kind, RULE_CIDR);
	T_EQ_INT(r->family, AF_INET);
	T_EQ_INT(r->addr[0], 10);
	T_EQ_INT(r->prefix, 8);
	T_EQ_INT(r->outbound, 0);
	T_EQ_INT(r->line, 53);
	r = &c->rules[1];
	T_EQ_INT(r->family, AF_INET6);
	T_EQ_MEM(r->addr, fd00, 16);
	T_EQ_INT(r->prefix, 8);
	T_EQ_INT(r->outbound, 4); /* block: after every declared outbound */
	r = &c->rules[2];
	T_EQ_INT(r->kind, RULE_PORT);
	T_EQ_INT(r->port_lo, 25);
	T_EQ_INT(r->port_hi, 25);
	r = &c->rules[3];
	T_EQ_INT(r->port_lo, 6000);
	T_EQ_INT(r->port_hi, 6063);
	T_EQ_INT(r->outbound, 1);
	r = &c->rules[4];
	T_EQ_INT(r->kind, RULE_DOMAIN);
	T_EQ_STR(r->domain, "example.com");
	T_EQ_INT(r->outbound, 2);
out:
	config_free(c);
}

static void test_stats(void)
{
	struct config *c =
	        load_ok("[stats]\nlisten = [::1]:9100\nallow = ::1/128\nallow = 10.0.0.0/8, "
	                "127.0.0.1\n" IN);

	T_ASSERT(c != NULL);
	if (!c)
		return;
	T_EQ_INT(c->stats_listen.ss_family, AF_INET6);
	T_EQ_INT(ntohs(((struct sockaddr_in6 *)&c->stats_listen)->sin6_port), 9100);
	T_EQ_INT(c->n_stats_allow, 3);
	T_EQ_INT(c->stats_line, 1);
	config_free(c);
	/* Off unless the section is there. */
	c = load_ok(IN);
	T_ASSERT(c && c->stats_listen_len == 0 && c->n_stats_allow == 0);
	config_free(c);
}

static void test_allow_list(void)
{
	struct config *c = load_ok(IN "allow = 192.0.2.0/24, 2001:db8::/32\nallow=10.1.2.3\n");
	const struct inbound *in;

	T_ASSERT(c != NULL);
	if (!c)
		return;
	in = &c->inbounds[0];
	T_EQ_INT(in->n_allow, 3);
	if (in->n_allow == 3) {
		T_EQ_INT(in->allow[0].family, AF_INET);
		T_EQ_INT(in->allow[0].prefix, 24);
		T_EQ_INT(in->allow[0].addr[2], 2);
		T_EQ_INT(in->allow[1].family, AF_INET6);
		T_EQ_INT(in->allow[1].prefix, 32);
		T_EQ_INT(in->allow[2].prefix, 32);
		T_EQ_INT(in->allow[2].addr[3], 3);
	}
	T_EQ_INT(c->max_auth_failures, 20);
	config_free(c);
}

static void test_udp_keys(void)
{
	struct config *c =
	        load_ok("[main]\nudp-timeout = 30s\n" IN
	                "udp = on\nudp-advertise = [2001:db8::7]\nudp-ports = 40000-40099\n"
	                "[inbound t]\ntype = socks5\nlisten = 127.0.0.1:1081\n");
	const struct inbound *in;

	T_ASSERT(c != NULL);
	if (!c)
		return;
	in = &c->inbounds[0];
	T_ASSERT(in->udp);
	T_EQ_INT(in->udp_advertise.ss_family, AF_INET6);
	T_EQ_INT(sa_port(&in->udp_advertise), 0);
	T_EQ_INT(in->udp_port_lo, 40000);
	T_EQ_INT(in->udp_port_hi, 40099);
	T_EQ_INT(c->udp_timeout_ms, 30000);
	/* The defaults: off, the reached address, any port. */
	in = &c->inbounds[1];
	T_ASSERT(!in->udp);
	T_EQ_INT(in->udp_advertise.ss_family, AF_UNSPEC);
	T_EQ_INT(in->udp_port_lo, 0);
	config_free(c);
	c = load_ok(IN);
	T_ASSERT(c && c->udp_timeout_ms == 60000);
	T_ASSERT(c && c->udp_buffer == 512 * 1024);
	T_ASSERT(c && c->udp_dns_timeout_ms == 30000);
	config_free(c);
	c = load_ok("[main]\nudp-buffer = 2m\n" IN);
	T_ASSERT(c && c->udp_buffer == 2 * 1024 * 1024);
	config_free(c);
	c = load_ok("[main]\nudp-buffer = 0\n" IN);
	T_ASSERT(c && c->udp_buffer == 0);
	config_free(c);
	/* keepalive and user-timeout per inbound and per outbound; unset: [main]'s keepalive. */
	c = load_ok(
	        "[inbound k]\ntype = socks5\nlisten = 127.0.0.1:1\nkeepalive = 0\nuser-timeout = 20s\n"
	        "[outbound o]\ntype = socks5\nserver = 127.0.0.1:2\nkeepalive = 1m\n" IN);
	T_ASSERT(c != NULL);
	if (c) {
		T_ASSERT(c->inbounds[0].keepalive_set && c->inbounds[0].keepalive_ms == 0);
		T_EQ_INT(c->inbounds[0].user_timeout_ms, 20000);
		T_ASSERT(!c->inbounds[1].keepalive_set && c->inbounds[1].user_timeout_ms == 0);
		T_ASSERT(c->outbounds[0].keepalive_set && c->outbounds[0].keepalive_ms == 60000);
		T_EQ_INT(c->outbounds[0].user_timeout_ms, 0);
	}
	config_free(c);
	/* access-log: off by default; stderr; a path (relative to the file's directory). */
	c = load_ok(IN);
	T_ASSERT(c && c->access_log == NULL);
	config_free(c);
	c = load_ok("[main]\naccess-log = stderr\n" IN);
	T_ASSERT(c && c->access_log && strcmp(c->access_log, "stderr") == 0);
	config_free(c);
	c = load_ok("[main]\naccess-log = /var/log/spliced/access.log\n" IN);
	T_ASSERT(c && c->access_log && strcmp(c->access_log, "/var/log/spliced/access.log") == 0);
	config_free(c);
	c = load_ok("[main]\naccess-log = off\n" IN);
	T_ASSERT(c && c->access_log == NULL);
	config_free(c);
	/* A socks5 upstream carries UDP by UDP ASSOCIATE unless it says tcp (FWD UDP) or off. */
	c = load_ok("[outbound a]\ntype = socks5\nserver = 127.0.0.1:1\n"
	            "[outbound t]\ntype = socks5\nserver = 127.0.0.1:1\nudp = tcp\n"
	            "[outbound o]\ntype = socks5\nserver = 127.0.0.1:1\nudp = off\n"
	            "[outbound u]\ntype = socks5\nserver = 127.0.0.1:1\nudp = udp\n" IN);
	T_ASSERT(c != NULL);
	if (!c)
		return;
	for (size_t i = 0; i < c->n_outbounds; i++) {
		const struct outbound *o = &c->outbounds[i];

		if (strcmp(o->name, "a") == 0 || strcmp(o->name, "u") == 0)
			T_EQ_INT(o->udp_mode, OUTBOUND_UDP_ASSOCIATE);
		else if (strcmp(o->name, "t") == 0)
			T_EQ_INT(o->udp_mode, OUTBOUND_UDP_TCP);
		else if (strcmp(o->name, "o") == 0)
			T_EQ_INT(o->udp_mode, OUTBOUND_UDP_OFF);
	}
	config_free(c);
}

/* type = tun: its defaults, every key, auto-route's mark on the outbounds, and its errors. */
static void test_tun_keys(void)
{
	struct config *c = load_ok("[inbound t]\ntype = tun\n");
	const struct inbound_tun *t;

	T_ASSERT(c != NULL);
	if (!c)
		return;
	t = &c->inbounds[0].tun;
	T_EQ_STR(t->ifname, "tun0");
	T_EQ_INT(t->mtu, 8500);
	T_EQ_INT(t->addr[0].family, AF_INET);
	T_EQ_INT(t->addr[0].prefix, 15);
	T_EQ_INT(t->addr[0].addr[0], 198);
	T_EQ_INT(t->addr[0].addr[3], 1);
	T_EQ_INT(t->addr[1].family, AF_INET6);
	T_EQ_INT(t->addr[1].prefix, 64);
	T_ASSERT(!t->auto_route && t->offload && t->queues == 0);
	T_ASSERT(c->inbounds[0].udp); /* on by default for tun */
	T_EQ_INT(t->dns_server.ss_family, AF_UNSPEC);
	T_EQ_INT(t->table, 21360);
	T_EQ_INT(t->priority, 21360);
	T_EQ_INT(t->fwmark, 0x5370);
	T_EQ_INT(t->max_flows, 65536);
	T_EQ_INT(t->linger_ms, 60000);
	T_EQ_INT(t->txqlen, 1000);
	T_EQ_INT(c->auto_mark, 0);
	T_EQ_INT(c->inbounds[0].listen.ss_family, AF_UNSPEC);
	config_free(c);

	c = load_ok("[inbound t]\ntype = tun\nname = wan9\nmtu = 1500\naddress = 10.7.0.1/24\n"
	            "routes = 192.0.2.0/24, 198.51.100.0/24\nroutes = 203.0.113.0/24\n"
	            "auto-route = on\ntable = 100\nrule-priority = 500\nfwmark = 0x10\n"
	            "queues = 1\noffload = off\nmax-flows = 1000\nflow-linger = 5s\n"
	            "tx-queue-len = 4000\noutbound = up\nkeepalive = 30s\nudp = off\n"
	            "dns-server = [2001:db8::53]\ndns-hijack = on\nmapped-dns = on\n"
	            "[outbound up]\ntype = socks5\nserver = 127.0.0.1:1080\n"
	            "[outbound own]\ntype = direct\nfwmark = 7\n");
	T_ASSERT(c != NULL);
	if (!c)
		return;
	t = &c->inbounds[0].tun;
	T_EQ_STR(t->ifname, "wan9");
	T_EQ_INT(t->mtu, 1500);
	T_EQ_INT(t->addr[0].prefix, 24);
	T_EQ_INT(t->addr[1].family, 0); /* address given: no default IPv6 */
	T_EQ_INT(t->n_routes, 3);
	T_EQ_INT(t->routes[2].addr[0], 203);
	T_ASSERT(t->auto_route && !t->offload);
	T_EQ_INT(t->table, 100);
	T_EQ_INT(t->priority, 500);
	T_EQ_INT(t->fwmark, 0x10);
	T_EQ_INT(t->queues, 1);
	T_EQ_INT(t->max_flows, 1000);
	T_EQ_INT(t->linger_ms, 5000);
	T_EQ_INT(t->txqlen, 4000);
	T_ASSERT(!c->inbounds[0].udp && t->dns_hijack && t->mapped_dns);
	T_EQ_INT(t->dns_server.ss_family, AF_INET6);
	T_EQ_INT(sa_port(&t->dns_server), 53);
	/* auto-route: every connecting outbound without a mark gets the TUN's */
	T_EQ_INT(c->auto_mark, 0x10);
	for (size_t i = 0; i < c->n_outbounds; i++) {
		const struct outbound *o = &c->outbounds[i];

		if (!strcmp(o->name, "own"))
			T_EQ_INT(o->fwmark, 7);
		else if (o->type == OUTBOUND_BLOCK)
			T_EQ_INT(o->fwmark, 0);
		else
			T_EQ_INT(o->fwmark, 0x10);
	}
	config_free(c);

	T_ASSERT(expect_err("[inbound t]\ntype = tun\nlisten = 127.0.0.1:1\nallow = 10.0.0.0/8\n",
	                    "t.ini:3: [inbound t] listen: not valid with type = tun\n"
	                    "t.ini:4: [inbound t] allow: not valid with type = tun\n"));
	T_ASSERT(expect_err(IN "mtu = 1500\n",
	                    "t.ini:4: [inbound s] mtu: not valid with type = socks5\n"));
	T_ASSERT(expect_err("[inbound t]\ntype = tun\nmtu = 576\n",
	                    "t.ini:3: [inbound t] mtu: \"576\" is out of range (1280..65535)\n"));
	T_ASSERT(expect_err("[inbound t]\ntype = tun\naddress = 10.0.0.1\n",
	                    "t.ini:3: [inbound t] address: \"10.0.0.1\" needs a prefix length "
	                    "(e.g. 198.18.0.1/15, fdfe:5370::1/64)\n"));
	T_ASSERT(expect_err("[inbound t]\ntype = tun\naddress = 10.0.0.1/30\n",
	                    "t.ini:3: [inbound t] address: \"10.0.0.1/30\": the prefix leaves no "
	                    "room for the fake sources the TUN needs (at most /29)\n"));
	T_ASSERT(expect_err("[inbound t]\ntype = tun\naddress = 10.0.0.1/24, 10.1.0.1/24\n",
	                    "t.ini:3: [inbound t] address: \"10.1.0.1/24\": one IPv4 address at "
	                    "most\n"));
	T_ASSERT(expect_err(
	        "[inbound t]\ntype = tun\naddress = 10.0.0.1/24\nroutes = ::/0\n",
	        "t.ini:1: [inbound t] routes: an IPv6 prefix, but no IPv6 address on the "
	        "TUN to answer it\n"));
	T_ASSERT(expect_err("[inbound t]\ntype = tun\ntable = 254\n",
	                    "t.ini:3: [inbound t] table: 254 is one of the kernel's own tables "
	                    "(default, main, local)\n"));
	T_ASSERT(
	        expect_err("[inbound t]\ntype = tun\nfwmark = 0\n",
	                   "t.ini:3: [inbound t] fwmark: \"0\" is out of range (1..0xffffffff)\n"));
	T_ASSERT(expect_err("[inbound t]\ntype = tun\nname = a/b\n",
	                    "t.ini:3: [inbound t] name: \"a/b\" is not an interface name (at most "
	                    "15 bytes, no '/', ':' or blanks)\n"));
	T_ASSERT(expect_err("[inbound t]\ntype = tun\nqueues = 17\n",
	                    "t.ini:3: [inbound t] queues: \"17\" is out of range (1..16)\n"));
	T_ASSERT(expect_err("[inbound t]\ntype = tun\noffload = on\n",
	                    "t.ini:3: [inbound t] offload: \"on\" is not one of auto, off\n"));
	T_ASSERT(expect_err("[inbound a]\ntype = tun\nauto-route = on\n"
	                    "[inbound b]\ntype = tun\nname = tun1\nauto-route = on\n",
	                    "t.ini:4: [inbound b] table: auto-route: table and rule priorities "
	                    "must differ from [inbound a]'s (line 1)\n"));
	T_ASSERT(expect_err("[inbound t]\ntype = tun\ndns-hijack = on\n",
	                    "t.ini:1: [inbound t] dns-hijack: needs dns-server or mapped-dns: what "
	                    "answers the queries\n"));
	T_ASSERT(expect_err(
	        "[inbound t]\ntype = tun\nmapped-dns = on\naddress = 10.0.128.1/16\n",
	        "t.ini:1: [inbound t] mapped-dns: takes the upper half of each prefix for "
	        "its names: the IPv4 address must lie in the lower half\n"));
	T_ASSERT(
	        expect_err("[inbound t]\ntype = tun\ndns-server = resolver\n",
	                   "t.ini:3: [inbound t] dns-server: \"resolver\" is not an IP address, or "
	                   "address:port\n"));
	T_ASSERT(
	        expect_err("[inbound t]\ntype = tun\nnetns = a/b\n",
	                   "t.ini:3: [inbound t] netns: \"a/b\" is neither a namespace name (as ip "
	                   "netns names them) nor an absolute path\n"));
	T_ASSERT(expect_err("[inbound a]\ntype = tun\n[inbound b]\ntype = tun\n",
	                    "t.ini:3: [inbound b] name: \"tun0\" is also [inbound a]'s device "
	                    "(line 1)\n"));
}

static void test_outbound_order(void)
{
	struct config *c = load_ok("[outbound b]\ntype = block\n[outbound a]\ntype = direct\n" IN
	                           "[route]\ndefault = a\n");

	T_ASSERT(c != NULL);
	if (!c)
		return;
	T_EQ_INT(c->n_outbounds, 4);
	T_EQ_STR(c->outbounds[0].name, "b");
	T_EQ_STR(c->outbounds[1].name, "a");
	T_EQ_STR(c->outbounds[2].name, "direct");
	T_EQ_STR(c->outbounds[3].name, "block");
	T_EQ_INT(c->route_default, 1);
	config_free(c);

	/* a redefined implicit outbound keeps its document position */
	c = load_ok("[outbound block]\ntype = block\n" IN);
	T_ASSERT(c != NULL);
	if (!c)
		return;
	T_EQ_INT(c->n_outbounds, 2);
	T_EQ_STR(c->outbounds[0].name, "block");
	T_EQ_INT(c->outbounds[0].line, 1);
	T_EQ_STR(c->outbounds[1].name, "direct");
	T_EQ_INT(c->route_default, 1);
	config_free(c);
}

static void test_syntax_tolerance(void)
{
	/* BOM, CRLF, indentation, comments of both kinds, inline ';', "key: value" */
	struct config *c = load_ok("\xef\xbb\xbf# comment\r\n"
	                           "  [main]  ; trailing comment\r\n"
	                           "\tworkers = 2 ; inline comment\r\n"
	                           "    log-level: warn\r\n"
	                           "; another\r\n"
	                           "[ inbound   s ]\n"
	                           "type=socks5\n"
	                           "  listen = 127.0.0.1:1080\n"
	                           "user = a:b;c\n"
	                           "[route]\n"
	                           "rule = domain .Example.ORG  ->  block\n"
	                           "rule = cidr 192.0.2.7->direct\n");

	T_ASSERT(c != NULL);
	if (!c)
		return;
	T_EQ_INT(c->workers, 2);
	T_EQ_INT(c->log_level, LOG_WARN);
	T_EQ_STR(c->inbounds[0].name, "s");
	T_EQ_INT(c->inbounds[0].line, 6);
	/* ';' not preceded by a blank is part of the value */
	T_ASSERT(users_check(&c->inbounds[0].inline_users, "a", "b;c"));
	T_EQ_INT(c->n_rules, 2);
	if (c->n_rules == 2) {
		T_EQ_STR(c->rules[0].domain, "example.org");
		T_EQ_INT(c->rules[0].outbound, 1);
		T_EQ_INT(c->rules[1].prefix, 32);
		T_EQ_INT(c->rules[1].addr[3], 7);
	}
	config_free(c);
}

/* One case per error class; the whole err output must match. */
static void test_errors(void)
{
	static const struct {
		const char *text, *expected;
	} cases[] = {
	        {"[foo]\nx = 1\n" IN,
	         "t.ini:1: [foo]: unknown section (expected [main], [inbound "
	         "NAME], [outbound NAME], [route], [user NAME], [wireguard NAME] or [stats])\n"},
	        /* [stats] */
	        {"[stats]\nallow = 127.0.0.1\n" IN,
	         "t.ini:1: [stats]: missing key: listen (the metrics endpoint's address)\n"},
	        {"[stats x]\n" IN, "t.ini:1: [stats x]: [stats] takes no name\n"},
	        {"[stats]\nlisten = 127.0.0.1:9\n[stats]\nlisten = 127.0.0.1:8\n" IN,
	         "t.ini:3: [stats]: duplicate section (first on line 1)\n"},
	        {"[stats]\nlisten = nowhere\n" IN,
	         "t.ini:2: [stats] listen: \"nowhere\" has no port\n"},
	        {"[stats]\nlisten = 127.0.0.1:9\nallow = 10.0.0.0/33\n" IN,
	         "t.ini:3: [stats] allow: \"10.0.0.0/33\" has a prefix longer than 32\n"},
	        {"[stats]\nlisten = 127.0.0.1:1080\n" IN,
	         "t.ini:5: [inbound s] listen: address already used by [stats]\n"},
	        {IN "[stats]\nlisten = 127.0.0.1:1080\n",
	         "t.ini:5: [stats] listen: address already used by [inbound s]\n"},
	        {"[stats]\nlisten = 127.0.0.1:1080\nfoo = 1\n" IN,
	         "t.ini:3: [stats] foo: unknown key\nt.ini:6: [inbound s] listen: address already "
	         "used by [stats]\n"},
	        {"[wireguard wg0]\n", "t.ini:1: [wireguard wg0]: missing key: config (the wg-quick "
	                              "file)\n"},
	        {"[wireguard]\nconfig = a\n" IN, "t.ini:1: [wireguard]: needs a name: [wireguard "
	                                         "NAME]\n"},
	        {"[wireguard a_very_long_name0]\nconfig = a\n" IN,
	         "t.ini:1: [wireguard a_very_long_name0]: bad interface name \"a_very_long_name0\" "
	         "(1..15 of A-Z a-z 0-9 . _ -)\n"},
	        {"[wireguard w]\nconfig = a\nfoo = 1\n" IN,
	         "t.ini:3: [wireguard w] foo: unknown key\n"},
	        {"[main]\nfoo = 1\n" IN, "t.ini:2: [main] foo: unknown key\n"},
	        {"[main]\nworkers = 2\nworkers = 3\n" IN,
	         "t.ini:3: [main] workers: duplicate key (first set on line 2)\n"},
	        {IN "[inbound s]\ntype = http\n",
	         "t.ini:4: [inbound s]: duplicate section (first on line 1)\n"},
	        {"[outbound o]\ntype = block\n[outbound o]\ntype = block\n" IN,
	         "t.ini:3: [outbound o]: duplicate section (first on line 1)\n"},
	        {"[main]\n[main]\n" IN, "t.ini:2: [main]: duplicate section (first on line 1)\n"},
	        {"[route]\n[route]\n" IN,
	         "t.ini:2: [route]: duplicate section (first on line 1)\n"},
	        {"[main]\nworkers = 0\n" IN,
	         "t.ini:2: [main] workers: \"0\" is out of range (1..256)\n"},
	        {"[main]\nworkers = 257\n" IN,
	         "t.ini:2: [main] workers: \"257\" is out of range (1..256)\n"},
	        {"[main]\nworkers = many\n" IN,
	         "t.ini:2: [main] workers: \"many\" is not a whole number\n"},
	        {"[main]\nworkers = -1\n" IN,
	         "t.ini:2: [main] workers: \"-1\" is not a whole number\n"},
	        {"[main]\nlog-level = loud\n" IN,
	         "t.ini:2: [main] log-level: \"loud\" is not one of error, warn, info, debug\n"},
	        {"[main]\nmax-connections = 0\n" IN,
	         "t.ini:2: [main] max-connections: \"0\" is out of range (1..10000000)\n"},
	        {"[main]\nhandshake-timeout = 0\n" IN,
	         "t.ini:2: [main] handshake-timeout: \"0\" is out of range (1ms..24h)\n"},
	        {"[main]\nconnect-timeout = 25h\n" IN,
	         "t.ini:2: [main] connect-timeout: \"25h\" is out of range (1ms..24h)\n"},
	        {"[main]\nidle-timeout = 5 m\n" IN,
	         "t.ini:2: [main] idle-timeout: \"5 m\" is not a "
	         "duration (e.g. 500ms, 10s, 5m, 1h)\n"},
	        {"[main]\ndrain-timeout = 1.5s\n" IN,
	         "t.ini:2: [main] drain-timeout: \"1.5s\" is not "
	         "a duration (e.g. 500ms, 10s, 5m, 1h)\n"},
	        {"[main]\npipe-size = 1k\n" IN,
	         "t.ini:2: [main] pipe-size: \"1k\" is out of range (4k..1m)\n"},
	        {"[main]\npipe-size = 2m\n" IN,
	         "t.ini:2: [main] pipe-size: \"2m\" is out of range (4k..1m)\n"},
	        {"[main]\npipe-size = 64kb\n" IN,
	         "t.ini:2: [main] pipe-size: \"64kb\" is not a size "
	         "(bytes, or a number with a k or m suffix)\n"},
	        {"[main]\nmax-pipes = x\n" IN,
	         "t.ini:2: [main] max-pipes: \"x\" is not a whole number\n"},
	        {"[main]\nresolver-threads = 2\n" IN,
	         "t.ini:2: [main] resolver-threads: no longer used: names are resolved on each "
	         "worker's loop (c-ares), without threads; remove the line (see resolve-timeout "
	         "and max-resolving)\n"},
	        {"[main]\nresolve-timeout = 2h\n" IN,
	         "t.ini:2: [main] resolve-timeout: \"2h\" is out of range (1ms..1h)\n"},
	        {"[main]\nmax-resolving = 0\n" IN,
	         "t.ini:2: [main] max-resolving: \"0\" is out of range (1..1000000)\n"},
	        {"[main]\nsplice = maybe\n" IN,
	         "t.ini:2: [main] splice: \"maybe\" is not yes or no\n"},
	        {"[main]\naccept-steering = CPU\n" IN,
	         "t.ini:2: [main] accept-steering: \"CPU\" is not one of hash, cpu\n"},
	        {"[inbound x]\ntype = socks5\n",
	         "t.ini:1: [inbound x] listen: required key is missing\n"},
	        {"[inbound x]\nlisten = 127.0.0.1:1\n",
	         "t.ini:1: [inbound x] type: required key is missing\n"},
	        {"[inbound x]\n", "t.ini:1: [inbound x] type: required key is missing\n"
	                          "t.ini:1: [inbound x] listen: required key is missing\n"},
	        {"[inbound x]\ntype = socks4\nlisten = 127.0.0.1:1\n",
	         "t.ini:2: [inbound x] type: \"socks4\" is not one of socks5, http, mixed, forward, redirect, tproxy, tun, shadowsocks\n"},
	        {"[inbound f]\ntype = forward\nlisten = 127.0.0.1:1\n",
	         "t.ini:1: [inbound f] target: required key is missing\n"},
	        {"[inbound s]\ntype = socks5\nlisten = 127.0.0.1:1\ntarget = a.b:1\n",
	         "t.ini:4: [inbound s] target: not valid with type = socks5\n"},
	        {IN "allow = 10.0.0.0/33\n",
	         "t.ini:4: [inbound s] allow: \"10.0.0.0/33\" has a prefix longer than 32\n"},
	        {IN "allow = 192.0.2.0/24, 10.0.0.1/8\n",
	         "t.ini:4: [inbound s] allow: \"10.0.0.1/8\" has bits set beyond its prefix "
	         "length\n"},
	        {IN "allow = 192.0.2.0/24,,::1\n",
	         "t.ini:4: [inbound s] allow: \"192.0.2.0/24,,::1\" is not a list of address/prefix "
	         "(e.g. 192.0.2.0/24, 2001:db8::/32)\n"},
	        {"[main]\npipe-memory = 64k\n" IN,
	         "t.ini:2: [main] pipe-memory: \"64k\" is below 1m, one pipe of the largest size\n"},
	        {IN "udp = yes\n", "t.ini:4: [inbound s] udp: \"yes\" is not one of on, off\n"},
	        {"[inbound h]\ntype = http\nlisten = 127.0.0.1:1\nudp = on\n",
	         "t.ini:4: [inbound h] udp: not valid with type = http\n"},
	        {IN "udp-advertise = relay.example\n",
	         "t.ini:4: [inbound s] udp-advertise: \"relay.example\" is not an IPv4 or IPv6 "
	         "address\n"},
	        {IN "udp-ports = 9-1\n",
	         "t.ini:4: [inbound s] udp-ports: \"9-1\" is an empty range (lo > hi)\n"},
	        {"[outbound u]\ntype = socks5\nserver = 127.0.0.1:1\nudp = yes\n" IN,
	         "t.ini:4: [outbound u] udp: \"yes\" is not one of udp, tcp, off\n"},
	        {"[outbound h]\ntype = http\nserver = 127.0.0.1:1\nudp = tcp\n" IN,
	         "t.ini:4: [outbound h] udp: not valid with type = http\n"},
	        {"[outbound d]\ntype = direct\nbind-address-v4 = ::1\n" IN,
	         "t.ini:3: [outbound d] bind-address-v4: \"::1\" is not an IPv4 address\n"},
	        {"[outbound d]\ntype = direct\nbind-address-v6 = 10.0.0.1\n" IN,
	         "t.ini:3: [outbound d] bind-address-v6: \"10.0.0.1\" is not an IPv6 address\n"},
	        {"[outbound d]\ntype = direct\nbind-address-v6 = ::1\nbind-address = 10.0.0.1\n" IN,
	         "t.ini:4: [outbound d] bind-address: cannot be used with bind-address-v4 or -v6 (one "
	         "or the other)\n"},
	        {IN "keepalive = 500ms\n",
	         "t.ini:4: [inbound s] keepalive: \"500ms\" is below 1s, the kernel's unit for keepalive\n"},
	        {"[outbound b]\ntype = block\nuser-timeout = 5s\n" IN,
	         "t.ini:3: [outbound b] user-timeout: not valid with type = block\n"},
	        {"[main]\nudp-buffer = 1k\n" IN,
	         "t.ini:2: [main] udp-buffer: \"1k\" is out of range (0, or 4k..64m)\n"},
	        {"[main]\nudp-buffer = lots\n" IN,
	         "t.ini:2: [main] udp-buffer: \"lots\" is not a size (bytes, or a number with a k or m "
	         "suffix)\n"},
	        {"[main]\nudp-timeout = 10ms\n" IN,
	         "t.ini:2: [main] udp-timeout: \"10ms\" is out of range (1s..24h)\n"},
	        {"[main]\nkeepalive = 500ms\n" IN,
	         "t.ini:2: [main] keepalive: \"500ms\" is below 1s, the kernel's unit for keepalive\n"},
	        {"[main]\nmax-auth-failures = x\n" IN,
	         "t.ini:2: [main] max-auth-failures: \"x\" is not a whole number\n"},
	        {"[inbound f]\ntype = forward\nlisten = 127.0.0.1:1\ntarget = a.b:1\nuser = a:b\n",
	         "t.ini:5: [inbound f] user: not valid with type = forward\n"},
	        {"[inbound f]\ntype = forward\nlisten = 127.0.0.1:1\ntarget = a.b\n",
	         "t.ini:4: [inbound f] target: \"a.b\" has no port\n"},
	        {"[inbound f]\ntype = forward\nlisten = 127.0.0.1:1\ntarget = 2001:db8::1:443\n",
	         "t.ini:4: [inbound f] target: \"2001:db8::1:443\" needs brackets around the IPv6 "
	         "address: [addr]:port\n"},
	        {"[inbound f]\ntype = forward\nlisten = 127.0.0.1:1\ntarget = bad..name:443\n",
	         "t.ini:4: [inbound f] target: \"bad..name:443\" is not a host name or IP address "
	         "and port\n"},
	        {"[inbound web]\ntype = http\nlisten = 1.2.3.4\n",
	         "t.ini:3: [inbound web] listen: \"1.2.3.4\" has no port\n"},
	        {"[inbound web]\ntype = http\nlisten = localhost:80\n",
	         "t.ini:3: [inbound web] listen: \"localhost:80\" is not an IP address and port "
	         "(a.b.c.d:port or [v6]:port)\n"},
	        {"[inbound web]\ntype = http\nlisten = ::1:80\n",
	         "t.ini:3: [inbound web] listen: \"::1:80\" needs brackets around the IPv6 address: "
	         "[addr]:port\n"},
	        {"[inbound web]\ntype = http\nlisten = [::1]\n",
	         "t.ini:3: [inbound web] listen: \"[::1]\" has no port\n"},
	        {"[inbound web]\ntype = http\nlisten = 127.0.0.1:0\n",
	         "t.ini:3: [inbound web] listen: \"127.0.0.1:0\" has a bad port (1..65535)\n"},
	        {"[inbound web]\ntype = http\nlisten = 127.0.0.1:65536\n",
	         "t.ini:3: [inbound web] listen: \"127.0.0.1:65536\" has a bad port (1..65535)\n"},
	        {IN "[inbound t]\ntype = http\nlisten = 127.0.0.1:1080\n",
	         "t.ini:6: [inbound t] listen: address already used by [inbound s]\n"},
	        {"[inbound s]\ntype = socks5\nlisten = 127.0.0.1:1\nuser = alice\n",
	         "t.ini:4: [inbound s] user: expected name:password\n"},
	        {"[inbound s]\ntype = socks5\nlisten = 127.0.0.1:1\nuser = :pw\n",
	         "t.ini:4: [inbound s] user: empty user name\n"},
	        {"[inbound s]\ntype = socks5\nlisten = 127.0.0.1:1\nuser = al ice:pw\n",
	         "t.ini:4: [inbound s] user: user name contains a space, ':' or a control "
	         "character\n"},
	        {"[inbound s]\ntype = socks5\nlisten = 127.0.0.1:1\nuser = alice:\n",
	         "t.ini:4: [inbound s] user: user \"alice\": empty password\n"},
	        {"[inbound s]\ntype = socks5\nlisten = 127.0.0.1:1\nuser = a:1\nuser = a:2\n",
	         "t.ini:5: [inbound s] user: user \"a\" defined twice\n"},
	        {"[inbound s]\ntype = socks5\nlisten = 127.0.0.1:1\noutbound = nope\n",
	         "t.ini:4: [inbound s] outbound: unknown outbound \"nope\"\n"},
	        {"[outbound u]\ntype = socks5\n" IN,
	         "t.ini:1: [outbound u] server: required key is missing\n"},
	        {"[outbound u]\n" IN, "t.ini:1: [outbound u] type: required key is missing\n"},
	        {"[outbound u]\ntype = tor\n" IN,
	         "t.ini:2: [outbound u] type: \"tor\" is not one of direct, socks5, http, shadowsocks, block\n"},
	        {"[outbound u]\ntype = socks5\nserver = h:1\nusername = a\n" IN,
	         "t.ini:4: [outbound u] username: set without password\n"},
	        {"[outbound u]\ntype = socks5\nserver = h:1\npassword = a\n" IN,
	         "t.ini:4: [outbound u] password: set without username\n"},
	        {"[outbound u]\ntype = socks5\nserver = h\n" IN,
	         "t.ini:3: [outbound u] server: \"h\" has no port\n"},
	        {"[outbound d]\ntype = direct\nserver = h:1\n" IN,
	         "t.ini:3: [outbound d] server: not valid with type = direct\n"},
	        {"[outbound d]\ntype = block\nfwmark = 1\n" IN,
	         "t.ini:3: [outbound d] fwmark: not valid with type = block\n"},
	        {"[outbound d]\ntype = http\nserver = h:1\nusername = a:b\npassword = p\n" IN,
	         "t.ini:4: [outbound d] username: user name contains a space, ':' or a control "
	         "character\n"},
	        {"[outbound d]\ntype = http\nusername = a\npassword = p\n" IN,
	         "t.ini:1: [outbound d] server: required key is missing\n"},
	        {"[outbound d]\ntype = direct\nbind-address = 1.2.3.4:5\n" IN,
	         "t.ini:3: [outbound d] bind-address: \"1.2.3.4:5\" is not an IPv4 or IPv6 "
	         "address\n"},
	        {"[outbound d]\ntype = direct\nbind-interface = averyveryverylong\n" IN,
	         "t.ini:3: [outbound d] bind-interface: \"averyveryverylong\" is not an interface "
	         "name (at most 15 bytes, no '/', ':' or blanks)\n"},
	        {"[outbound d]\ntype = direct\nfwmark = 0x\n" IN,
	         "t.ini:3: [outbound d] fwmark: \"0x\" is not a number (decimal, or hex with 0x)\n"},
	        {"[outbound d]\ntype = direct\nfwmark = 010\n" IN,
	         "t.ini:3: [outbound d] fwmark: \"010\" is not a number (decimal, or hex with 0x)\n"},
	        {"[outbound d]\ntype = direct\nfwmark = 0x100000000\n" IN,
	         "t.ini:3: [outbound d] fwmark: \"0x100000000\" is out of range (0..0xffffffff)\n"},
	        {IN "[route]\ndefault = nowhere\n",
	         "t.ini:5: [route] default: unknown outbound \"nowhere\"\n"},
	        {IN "[route]\nrule = port 25 -> nowhere\n",
	         "t.ini:5: [route] rule: unknown outbound \"nowhere\"\n"},
	        {IN "[route]\nrule = cidr 10.1.0.0/8 -> block\n",
	         "t.ini:5: [route] rule: cidr \"10.1.0.0/8\" has bits set beyond its prefix length\n"},
	        {IN "[route]\nrule = cidr fd00::1/8 -> block\n",
	         "t.ini:5: [route] rule: cidr \"fd00::1/8\" has bits set beyond its prefix length\n"},
	        {IN "[route]\nrule = cidr 10.0.0.0/33 -> block\n",
	         "t.ini:5: [route] rule: cidr \"10.0.0.0/33\" has a prefix longer than 32\n"},
	        {IN "[route]\nrule = cidr fd00::/129 -> block\n",
	         "t.ini:5: [route] rule: cidr \"fd00::/129\" has a prefix longer than 128\n"},
	        {IN "[route]\nrule = cidr 10.0.0.0/x -> block\n",
	         "t.ini:5: [route] rule: cidr \"10.0.0.0/x\" has a bad prefix length\n"},
	        {IN "[route]\nrule = cidr example.com -> block\n",
	         "t.ini:5: [route] rule: cidr \"example.com\" is not an address/prefix\n"},
	        {IN "[route]\nrule = subnet 10.0.0.0/8 -> block\n",
	         "t.ini:5: [route] rule: unknown rule kind \"subnet\" (cidr, port, domain or user)\n"},
	        {"[inbound s]\ntype = socks5\nlisten = 127.0.0.1:1080\n[route]\nrule = user a:b -> block\n",
	         "t.ini:5: [route] rule: user \"a:b\" names a user with ':' or a control character\n"},
	        {"[inbound s]\ntype = socks5\nlisten = 127.0.0.1:1080\n[route]\nrule = user -> block\n",
	         "t.ini:5: [route] rule: user: expected one value before \"->\"\n"},
	        {"[user]\n" IN, "t.ini:1: [user]: needs a name: [user NAME]\n"},
	        {"[user a:b]\n" IN,
	         "t.ini:1: [user a:b]: user name contains a space, ':' or a control character\n"},
	        {"[user al]\nmax-connections = 0\n" IN,
	         "t.ini:2: [user al] max-connections: \"0\" is out of range (1..10000000)\n"},
	        {"[user al]\n[user al]\n" IN,
	         "t.ini:2: [user al]: duplicate section (first on line 1)\n"},
	        {"[user al]\nspeed = 1\n" IN, "t.ini:2: [user al] speed: unknown key\n"},
	        {IN "[route]\nrule = port 100-10 -> block\n",
	         "t.ini:5: [route] rule: port \"100-10\" is an empty range (lo > hi)\n"},
	        {IN "[route]\nrule = port 0 -> block\n",
	         "t.ini:5: [route] rule: port \"0\" is not a port (1..65535) or range (lo-hi)\n"},
	        {IN "[route]\nrule = port 1-65536 -> block\n",
	         "t.ini:5: [route] rule: port \"1-65536\" is not a port (1..65535) or range "
	         "(lo-hi)\n"},
	        {IN "[route]\nrule = cidr 10.0.0.0/8 block\n",
	         "t.ini:5: [route] rule: \"cidr 10.0.0.0/8 block\" is not \"KIND VALUE -> "
	         "OUTBOUND\"\n"},
	        {IN "[route]\nrule = cidr -> block\n",
	         "t.ini:5: [route] rule: cidr: expected one value before \"->\"\n"},
	        {IN "[route]\nrule = port 1 2 -> block\n",
	         "t.ini:5: [route] rule: port: expected one value before \"->\"\n"},
	        {IN "[route]\nrule = port 1 ->\n",
	         "t.ini:5: [route] rule: no outbound after \"->\"\n"},
	        {IN "[route]\nrule = domain *.example.com -> block\n",
	         "t.ini:5: [route] rule: domain \"*.example.com\" has a wildcard: a domain rule "
	         "already matches every name below it\n"},
	        {IN "[route]\nrule = domain exa_mple..com -> block\n",
	         "t.ini:5: [route] rule: domain \"exa_mple..com\" is not a domain name\n"},
	        {"[main]\n", "t.ini:1: no [inbound NAME] section: nothing to listen on\n"},
	        {"", "t.ini:1: no [inbound NAME] section: nothing to listen on\n"},
	        {"[main]\ngarbage\n" IN,
	         "t.ini:2: [main]: line is not \"key = value\" (not shown: it may hold a secret)\n"},
	        {"[main]\nfoo ; = bar\n" IN,
	         "t.ini:2: [main]: line is not \"key = value\" (not shown: it may hold a secret)\n"},
	        {"[main]\n= 5\n" IN, "t.ini:2: [main]: missing key before '='\n"},
	        /* a line without '=' names only a key of the section, never the rest */
	        {"[main]\nuser nobody\n" IN,
	         "t.ini:2: [main] user: no '=' after the key (expected \"user = value\")\n"},
	        {IN "[outbound o]\ntype = socks5\nserver = h:1\nusername = u\npassword hunter2\n",
	         "t.ini:8: [outbound o] password: no '=' after the key (expected \"password = "
	         "value\")\n"
	         "t.ini:7: [outbound o] username: set without password\n"},
	        {"[main]\nhunter2 with blanks\n" IN,
	         "t.ini:2: [main]: line is not \"key = value\" (not shown: it may hold a secret)\n"},
	        /* [main] user / group */
	        {"[main]\nuser = no-such-user-spliced\n" IN,
	         "t.ini:2: [main] user: unknown user \"no-such-user-spliced\"\n"},
	        {"[main]\nuser = nobody\ngroup = no-such-group-spliced\n" IN,
	         "t.ini:3: [main] group: unknown group \"no-such-group-spliced\"\n"},
	        {"[main]\ngroup = nogroup\n" IN, "t.ini:2: [main] group: set without user\n"},
	        {"[main]\nuser = root\n" IN,
	         "t.ini:2: [main] user: \"root\" is root: name an unprivileged user (or leave user "
	         "out)\n"},
	        {"[main]\nuser = 0\n" IN,
	         "t.ini:2: [main] user: \"0\" is root: name an unprivileged user (or leave user "
	         "out)\n"},
	        {"[main]\nuser = nobody\ngroup = 0\n" IN,
	         "t.ini:3: [main] group: \"0\" is root's group: name an unprivileged group\n"},
	        {"[main]\nuser = nobody\ngroup = root\n" IN,
	         "t.ini:3: [main] group: \"root\" is root's group: name an unprivileged group\n"},
	        {"[main]\nuser = 4294967295\n" IN,
	         "t.ini:2: [main] user: \"4294967295\" is out of range (0..4294967294)\n"},
	        {"[main]\nuser = 4000000000\n" IN,
	         "t.ini:2: [main] user: uid 4000000000 has no passwd entry: set group\n"},
	        {"[main]\nuser = nobody\nuser = nobody\n" IN,
	         "t.ini:3: [main] user: duplicate key (first set on line 2)\n"},
	        {"[main\n" IN, "t.ini:1: section header \"[main\" has no closing ']'\n"},
	        {"[main] x\n" IN, "t.ini:1: text after the section header: \"x\"\n"},
	        {"[]\n" IN, "t.ini:1: []: empty section name\n"},
	        {"[main x]\n" IN, "t.ini:1: [main x]: [main] takes no name\n"},
	        {"[inbound]\n" IN, "t.ini:1: [inbound]: needs a name: [inbound NAME]\n"},
	        {"[inbound a b]\n" IN, "t.ini:1: [inbound a]: unexpected \"b\" after the name\n"},
	        {"[inbound a/b]\n" IN,
	         "t.ini:1: [inbound a/b]: bad name \"a/b\" (1..63 of A-Z a-z 0-9 . _ -)\n"},
	        {"workers = 1\n" IN, "t.ini:1: workers: key before any [section]\n"},
	        {"[main]\nworkers =\n" IN, "t.ini:2: [main] workers: needs a value\n"},
	        {"[main]\n\x1b[31m = 1\n" IN, "t.ini:2: [main] ?[31m: unknown key\n"},
	        {"[main]\nthis-key-is-far-too-long-to-be-any-key = 1\n" IN,
	         "t.ini:2: [main] this-key-is-far-too-long-to-be-any-key: unknown key\n"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (!expect_err(cases[i].text, cases[i].expected))
			T_FAILF("case %zu: %s", i, cases[i].text);
	}
}

/* Errors do not stop the parse: each is reported, in file order. */
static void test_all_errors_collected(void)
{
	T_ASSERT(expect_err(
	        "[main]\n"
	        "workers = 0\n"
	        "bogus = 1\n"
	        "[inbound a]\n"
	        "type = socks5\n"
	        "[outbound x]\n"
	        "type = direct\n"
	        "[route]\n"
	        "rule = port 0 -> x\n"
	        "rule = port 1 -> y\n"
	        "no equals sign\n"
	        "default = x\n"
	        "default = x\n",
	        "t.ini:2: [main] workers: \"0\" is out of range (1..256)\n"
	        "t.ini:3: [main] bogus: unknown key\n"
	        "t.ini:4: [inbound a] listen: required key is missing\n"
	        "t.ini:9: [route] rule: port \"0\" is not a port (1..65535) or range "
	        "(lo-hi)\n"
	        "t.ini:11: [route]: line is not \"key = value\" (not shown: it may hold a secret)\n"
	        "t.ini:13: [route] default: duplicate key (first set on line 12)\n"
	        "t.ini:10: [route] rule: unknown outbound \"y\"\n"));
}

/* Long values: a 255-byte name and password fit (inih's default line would not). */
static void test_long_lines(void)
{
	char *n255 = repeat('n', 255), *p255 = repeat('p', 255), *n256 = repeat('n', 256),
	     *p256 = repeat('S', 256), *huge = repeat('x', 9000), *text = malloc(12000),
	     *exp = malloc(12000);
	struct config *c;

	snprintf(text, 12000, IN "user = %s:%s\n", n255, p255);
	c = load_ok(text);
	T_ASSERT(c != NULL);
	if (c) {
		T_ASSERT(users_check(&c->inbounds[0].inline_users, n255, p255));
		config_free(c);
	}
	snprintf(text, 12000, IN "user = %s:pw\n", n256);
	T_ASSERT(expect_err(text, "t.ini:4: [inbound s] user: user name longer than 255 bytes\n"));
	snprintf(text, 12000, IN "user = alice:%s\n", p256);
	T_ASSERT(expect_err(
	        text,
	        "t.ini:4: [inbound s] user: user \"alice\": password longer than 255 bytes\n"));
	snprintf(text, 12000,
	         "[outbound u]\ntype = socks5\nserver = h:1\nusername = a\npassword = %s\n" IN,
	         p256);
	/* the password itself is never echoed */
	T_ASSERT(expect_err(text,
	                    "t.ini:5: [outbound u] password: password longer than 255 bytes\n"));
	snprintf(text, 12000, "[main]\nworkers = %s\n" IN, huge);
	T_ASSERT(expect_err(text, "t.ini:2: [main] workers: line longer than 8189 bytes\n"));
	snprintf(text, 12000, "[inbound %s]\n" IN, n256);
	snprintf(
	        exp, 12000,
	        "t.ini:1: [inbound %.77s...]: bad name \"%.77s...\" (1..63 of A-Z a-z 0-9 . _ -)\n",
	        n256, n256);
	T_ASSERT(expect_err(text, exp));
	free(n255), free(p255), free(n256), free(p256), free(huge), free(text), free(exp);
}

static void test_file_errors(void)
{
	struct config *c = (struct config *)1;
	char *m = NULL, exp[700], path[600];

	snprintf(path, sizeof(path), "%s/missing.ini", tmpdir);
	T_EQ_INT(load_path(path, &c, &m), -ENOENT);
	T_ASSERT(c == NULL);
	T_EQ_STR(m, ""); /* -errno: the caller says it, with the path */
	free(m);

	/* a directory opens but cannot be read */
	T_EQ_INT(load_path(tmpdir, &c, &m), -EISDIR);
	T_ASSERT(c == NULL);
	T_EQ_STR(m, "");
	free(m);

	/* errors in a file carry its own name */
	snprintf(path, sizeof(path), "%s", write_file("bad.ini", IN "[main]\nworkers = 0\n"));
	T_EQ_INT(load_path(path, &c, &m), -EINVAL);
	snprintf(exp, sizeof(exp), "%s:5: [main] workers: \"0\" is out of range (1..256)\n", path);
	T_EQ_STR(m, exp);
	free(m);
}

static void test_users_file(void)
{
	struct users u;
	char *m = NULL, exp[2048], *p256 = repeat('p', 256), *n256 = repeat('n', 256), text[2048],
	     none[64];
	const char *path;
	size_t len;
	FILE *err;

	path = write_file("u1", "# users\n"
	                        "alice secret\n"
	                        "\n"
	                        "bob:pa ss:word\n"
	                        "  carol \t spaced  pass  \r\n"
	                        "   # indented comment\n"
	                        "dave:x\r\n");
	err = open_memstream(&m, &len);
	T_EQ_INT(users_load_file(path, &u, err), 0);
	fclose(err);
	T_EQ_STR(m, "");
	free(m);
	T_EQ_INT(u.n, 4);
	if (u.n == 4) {
		T_EQ_STR(u.v[0].name, "alice");
		T_EQ_STR(u.v[1].name, "bob");
		T_EQ_STR(u.v[1].pass, "pa ss:word");
		T_EQ_STR(u.v[2].name, "carol");
		T_EQ_STR(u.v[2].pass, "spaced  pass");
		T_EQ_STR(u.v[3].pass, "x");
	}
	T_ASSERT(users_check(&u, "alice", "secret"));
	T_ASSERT(users_check(&u, "carol", "spaced  pass"));
	T_ASSERT(users_check(&u, "dave", "x"));
	T_ASSERT(!users_check(&u, "dave", "x\r"));
	users_free(&u);
	T_EQ_INT(u.n, 0);

	snprintf(text, sizeof(text),
	         "alice\n"
	         ":nameless\n"
	         "bob:\n"
	         "%s pw\n"
	         "eve %s\n"
	         "carol one\n"
	         "carol two\n"
	         "zed ok\n"
	         "\x1b[31m\n",
	         n256, p256);
	path = write_file("u2", text);
	err = open_memstream(&m, &len);
	T_EQ_INT(users_load_file(path, &u, err), -EINVAL);
	fclose(err);
	snprintf(exp, sizeof(exp),
	         "%1$s:1: one word without a password (expected \"name password\"; not shown: it "
	         "may be a secret)\n"
	         "%1$s:2: empty user name\n"
	         "%1$s:3: user \"bob\": empty password\n"
	         "%1$s:4: user name longer than 255 bytes\n"
	         "%1$s:5: user \"eve\": password longer than 255 bytes\n"
	         "%1$s:9: user name contains a space, ':' or a control character\n"
	         "%1$s:7: user \"carol\" already defined on line 6\n",
	         path);
	T_EQ_STR(m, exp);
	free(m);
	T_EQ_INT(u.n, 0);
	T_ASSERT(u.v == NULL);

	err = open_memstream(&m, &len);
	snprintf(none, sizeof(none), "%s/none", tmpdir);
	T_EQ_INT(users_load_file(none, &u, err), -ENOENT);
	fclose(err);
	snprintf(exp, sizeof(exp), "%s: cannot open: No such file or directory\n", none);
	T_EQ_STR(m, exp);
	free(m);

	/* an empty file is a valid, empty table */
	T_EQ_INT(users_load_file(write_file("u3", "# nobody\n"), &u, NULL), 0);
	T_EQ_INT(u.n, 0);
	T_ASSERT(!users_check(&u, "a", "b"));
	users_free(&u);
	free(p256);
	free(n256);
}

static void test_users_check(void)
{
	struct users u = {0};
	char *p255 = repeat('q', 255), *p256 = repeat('q', 256);

	T_EQ_INT(users_add(&u, "mallory", 7, "m", 1), 0);
	T_EQ_INT(users_add(&u, "alice", 5, "secret", 6), 0);
	T_EQ_INT(users_add(&u, "al", 2, p255, 255), 0);
	T_EQ_INT(users_add(&u, "x", 1, p256, 256), -EINVAL);
	T_EQ_INT(users_add(&u, "", 0, "pw", 2), -EINVAL);
	T_EQ_INT(users_add(&u, "a:b", 3, "pw", 2), -EINVAL);
	users_sort(&u);
	T_ASSERT(users_check(&u, "alice", "secret"));
	T_ASSERT(users_check(&u, "al", p255));
	T_ASSERT(users_check(&u, "mallory", "m"));
	T_ASSERT(!users_check(&u, "alice", "secre"));
	T_ASSERT(!users_check(&u, "alice", "secret2"));
	T_ASSERT(!users_check(&u, "alice", ""));
	T_ASSERT(!users_check(&u, "alice", "m"));
	T_ASSERT(!users_check(&u, "Alice", "secret"));
	T_ASSERT(!users_check(&u, "alic", "secret"));
	T_ASSERT(!users_check(&u, "alicee", "secret"));
	T_ASSERT(!users_check(&u, "al", p256));
	T_ASSERT(!users_check(&u, "nobody", ""));
	T_ASSERT(!users_check(&u, NULL, "secret"));
	T_ASSERT(!users_check(&u, "alice", NULL));
	T_ASSERT(!users_check(NULL, "alice", "secret"));
	/* length-carrying form: bytes after a NUL are not ignored */
	T_ASSERT(users_check_len(&u, "alice", 5, "secret", 6));
	T_ASSERT(users_check_len(&u, "alicexx", 5, "secretyy", 6));
	T_ASSERT(!users_check_len(&u, "alice", 5, "secret\0x", 8));
	T_ASSERT(!users_check_len(&u, "alice\0", 6, "secret", 6));
	users_free(&u);
	T_ASSERT(!users_check(&u, "alice", "secret"));
	free(p255);
	free(p256);
}

/* L4: the fixed-step search finds every entry of tables of every size, and nothing else. */
static void test_users_check_sizes(void)
{
	static const unsigned sizes[] = {1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 100, 257};
	uint32_t seed = 12345;
	char name[40], pass[40], probe[48];

	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		struct users u = {0};
		unsigned n = sizes[k], bad = 0;

		/* names "n<2i>" plus a byte above 0x7f on odd ones: strcmp() order is unsigned */
		for (unsigned i = 0; i < n; i++) {
			snprintf(name, sizeof(name), "n%05u%s", 2 * i, i % 2 ? "\xe9" : "");
			snprintf(pass, sizeof(pass), "p%u", i);
			T_EQ_INT(users_add(&u, name, strlen(name), pass, strlen(pass)), 0);
		}
		users_sort(&u);
		for (unsigned i = 0; i < n; i++) {
			snprintf(name, sizeof(name), "n%05u%s", 2 * i, i % 2 ? "\xe9" : "");
			snprintf(pass, sizeof(pass), "p%u", i);
			bad += !users_check(&u, name, pass);
			snprintf(pass, sizeof(pass), "p%u", i + 1);
			bad += users_check(&u, name, pass); /* another user's password */
			/* between two entries, a prefix, an extension: absent */
			snprintf(probe, sizeof(probe), "n%05u", 2 * i + 1);
			bad += users_check(&u, probe, "p0");
			snprintf(probe, sizeof(probe), "n%05u", 2 * i);
			if (i % 2)
				bad += users_check(&u, probe, pass);
			snprintf(probe, sizeof(probe), "%sx", name);
			bad += users_check(&u, probe, "p0");
		}
		bad += users_check(&u, "a", "p0") + users_check(&u, "z", "p0") +
		       users_check(&u, "\xff", "p0");
		/* random probes: found exactly when they are a member */
		for (int r = 0; r < 200; r++) {
			unsigned i;

			seed = seed * 1103515245u + 12345u;
			i = (seed >> 8) % (2 * n + 2);
			snprintf(probe, sizeof(probe), "n%05u%s", i, (i / 2) % 2 ? "\xe9" : "");
			snprintf(pass, sizeof(pass), "p%u", i / 2);
			bad += users_check(&u, probe, pass) != (i % 2 == 0 && i / 2 < n);
		}
		if (bad)
			printf("  table of %u users: %u wrong answers\n", n, bad);
		T_EQ_INT(bad, 0);
		users_free(&u);
	}
	/* an empty table never matches */
	T_ASSERT(!users_check(&(struct users){0}, "a", "b"));
}

/* L9: who may read or change a users file. */
static void test_users_audit(void)
{
	const char *path = write_file("audit", "alice pw\n");
	char *m = NULL, exp[1200];
	size_t len;
	FILE *f;

	chmod(path, 0600);
	f = open_memstream(&m, &len);
	T_EQ_INT(users_file_audit(path, (uid_t)-1, f), 0);
	fclose(f);
	T_EQ_STR(m, "");
	free(m);

	chmod(path, 0664);
	f = open_memstream(&m, &len);
	T_EQ_INT(users_file_audit(path, (uid_t)-1, f), 2);
	fclose(f);
	snprintf(exp, sizeof(exp),
	         "%1$s: warning: readable or writable by every user (chmod o-rwx)\n"
	         "%1$s: warning: writable by group %2$u (chmod g-w)\n",
	         path, (unsigned)getegid());
	T_EQ_STR(m, exp);
	free(m);

	chmod(path, 0640);
	if (geteuid() == 0 && chown(path, 12345, (gid_t)-1) == 0) {
		f = open_memstream(&m, &len);
		T_EQ_INT(users_file_audit(path, (uid_t)-1, f), 1);
		fclose(f);
		snprintf(exp, sizeof(exp),
		         "%s: warning: owned by uid 12345, who can change who may log in\n", path);
		T_EQ_STR(m, exp);
		free(m);
		/* the [main] user may own it */
		T_EQ_INT(users_file_audit(path, 12345, NULL), 0);
	}
	/* a missing file: nothing to say here, the loader reports it */
	T_EQ_INT(users_file_audit("/nonexistent/users", (uid_t)-1, NULL), 0);
}

/* [main] user / group, looked up at load time. */
static void test_run_as(void)
{
	struct passwd *pw = getpwnam("nobody");
	struct group *gr = getgrnam("nogroup");
	struct config *c;

	T_ASSERT(pw && gr);
	if (!pw || !gr)
		return;
	c = load_ok(IN);
	T_ASSERT(c && !c->run_as);
	config_free(c);

	c = load_ok("[main]\nworkers = 1\nuser = nobody\n" IN);
	T_ASSERT(c && c->run_as);
	if (c) {
		T_EQ_INT(c->run_uid, pw->pw_uid);
		T_EQ_INT(c->run_gid, pw->pw_gid);
		T_EQ_STR(c->run_user, "nobody");
		T_EQ_INT(c->user_line, 3);
	}
	config_free(c);

	/* a number is a uid; the name in messages is the passwd entry's */
	c = load_ok("[main]\nuser = 65534\n" IN);
	T_ASSERT(c && c->run_as);
	if (c && pw->pw_uid == 65534) {
		T_EQ_STR(c->run_user, "nobody");
		T_EQ_INT(c->run_gid, pw->pw_gid);
	}
	config_free(c);

	/* group before or after user */
	c = load_ok("[main]\ngroup = nogroup\nuser = nobody\n" IN);
	T_ASSERT(c && c->run_gid == gr->gr_gid);
	config_free(c);
	c = load_ok("[main]\nuser = nobody\ngroup = 4000000001\n" IN);
	T_ASSERT(c && c->run_gid == 4000000001u);
	config_free(c);

	/* a uid without a passwd entry, with a group */
	c = load_ok("[main]\nuser = 4000000000\ngroup = nogroup\n" IN);
	T_ASSERT(c && c->run_as && c->run_uid == 4000000000u && c->run_gid == gr->gr_gid);
	if (c)
		T_EQ_STR(c->run_user, "4000000000");
	config_free(c);

	/* the users key's line is kept for reload messages */
	c = load_ok(IN "users = /dev/null\n");
	T_ASSERT(c && c->inbounds[0].users_line == 4);
	config_free(c);
}

static void test_inbound_users(void)
{
	struct config *c = NULL;
	struct users *u;
	char *m = NULL, text[1024], exp[1024];
	const char *upath;
	size_t len;
	FILE *err;
	int rc = 1;

	upath = write_file("iu", "bob bobpw\n");
	snprintf(text, sizeof(text), IN "user = alice:alicepw\nusers = %s\n", upath);
	c = load_ok(text);
	T_ASSERT(c != NULL);
	if (!c)
		return;
	u = inbound_users_build(&c->inbounds[0], NULL, &rc);
	T_EQ_INT(rc, 0);
	T_ASSERT(u != NULL);
	T_ASSERT(users_check(u, "alice", "alicepw"));
	T_ASSERT(users_check(u, "bob", "bobpw"));
	T_ASSERT(!users_check(u, "bob", "alicepw"));
	users_destroy(u);

	/* the file changes (SIGHUP): re-read it, a conflict with inline users is an error */
	write_file("iu", "carol carolpw\n\nalice other\n");
	err = open_memstream(&m, &len);
	u = inbound_users_build(&c->inbounds[0], err, &rc);
	fclose(err);
	T_ASSERT(u == NULL);
	T_EQ_INT(rc, -EINVAL);
	snprintf(exp, sizeof(exp),
	         "%s:3: user \"alice\" is also defined by a user = key in [inbound s]\n", upath);
	T_EQ_STR(m, exp);
	free(m);

	unlink(upath);
	u = inbound_users_build(&c->inbounds[0], NULL, &rc);
	T_ASSERT(u == NULL);
	T_EQ_INT(rc, -ENOENT);
	config_free(c);

	/* at load time the users file is checked too, with its own file:line */
	snprintf(text, sizeof(text), IN "users = %s\n", upath);
	snprintf(exp, sizeof(exp),
	         "t.ini:4: [inbound s] users: cannot open \"%s\": No such file or directory\n",
	         upath);
	if (strlen(upath) < 70)
		T_ASSERT(expect_err(text, exp));
	write_file("iu", "ok pw\nbroken\n");
	snprintf(exp, sizeof(exp),
	         "%s:2: one word without a password (expected \"name password\"; not shown: it may "
	         "be a secret)\n",
	         upath);
	T_ASSERT(expect_err(text, exp));
	write_file("iu", "ok pw\n");
	c = load_ok(text);
	T_ASSERT(c && inbound_requires_auth(&c->inbounds[0]));
	config_free(c);
	unlink(upath);
}

/* A relative users path is relative to the config file, not the cwd. */
static void test_relative_users_path(void)
{
	struct config *c = NULL;
	char *m = NULL, exp[600];

	mkdir(strcat(strcpy(exp, tmpdir), "/sub"), 0700);
	write_file("sub/rel-users", "u p\n");
	T_EQ_INT(load_path(write_file("sub/rel.ini", IN "users = rel-users\n"), &c, &m), 0);
	T_EQ_STR(m, "");
	free(m);
	if (!c)
		return;
	snprintf(exp, sizeof(exp), "%s/sub/rel-users", tmpdir);
	T_EQ_STR(c->inbounds[0].users_file, exp);
	config_free(c);
	unlink(exp);
	snprintf(exp, sizeof(exp), "%s/sub/rel.ini", tmpdir);
	unlink(exp);
	snprintf(exp, sizeof(exp), "%s/sub", tmpdir);
	rmdir(exp);
}

static void test_durations(void)
{
	static const struct {
		const char *s;
		int rc;
		unsigned ms;
	} cases[] = {
	        {"0", 0, 0},
	        {"0ms", 0, 0},
	        {"1ms", 0, 1},
	        {"500ms", 0, 500},
	        {"10s", 0, 10000},
	        {"30", 0, 30000},
	        {"5m", 0, 300000},
	        {"1h", 0, 3600000},
	        {"1193h", 0, 4294800000u},
	        {"1194h", -ERANGE, 0},
	        {"4294967295ms", 0, 4294967295u},
	        {"4294967296ms", -ERANGE, 0},
	        {"4294967s", 0, 4294967000u},
	        {"4294968s", -ERANGE, 0},
	        {"99999999999999999999999999h", -ERANGE, 0},
	        {"007s", 0, 7000},
	        {"", -EINVAL, 0},
	        {"s", -EINVAL, 0},
	        {"ms", -EINVAL, 0},
	        {"10 s", -EINVAL, 0},
	        {" 10s", -EINVAL, 0},
	        {"10s ", -EINVAL, 0},
	        {"-1", -EINVAL, 0},
	        {"+1", -EINVAL, 0},
	        {"1.5s", -EINVAL, 0},
	        {"10S", -EINVAL, 0},
	        {"1d", -EINVAL, 0},
	        {"1m30s", -EINVAL, 0},
	        {"0x10", -EINVAL, 0},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		unsigned ms = 12345;
		int rc = config_parse_duration(cases[i].s, &ms);
		if (rc != cases[i].rc || (rc == 0 && ms != cases[i].ms))
			T_FAILF("\"%s\": rc %d ms %u, expected rc %d ms %u", cases[i].s, rc, ms,
			        cases[i].rc, cases[i].ms);
	}
}

static void test_sizes(void)
{
	static const struct {
		const char *s;
		int rc;
		unsigned bytes;
	} cases[] = {
	        {"0", 0, 0},
	        {"4096", 0, 4096},
	        {"4k", 0, 4096},
	        {"4K", 0, 4096},
	        {"64k", 0, 65536},
	        {"1m", 0, 1048576},
	        {"1M", 0, 1048576},
	        {"4194303k", 0, 4294966272u},
	        {"4194304k", -ERANGE, 0},
	        {"4096m", -ERANGE, 0},
	        {"4294967295", 0, 4294967295u},
	        {"4294967296", -ERANGE, 0},
	        {"", -EINVAL, 0},
	        {"k", -EINVAL, 0},
	        {"1g", -EINVAL, 0},
	        {"1kb", -EINVAL, 0},
	        {"1 k", -EINVAL, 0},
	        {" 1k", -EINVAL, 0},
	        {"-4k", -EINVAL, 0},
	        {"1.5m", -EINVAL, 0},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		unsigned b = 12345;
		int rc = config_parse_size(cases[i].s, &b);
		if (rc != cases[i].rc || (rc == 0 && b != cases[i].bytes))
			T_FAILF("\"%s\": rc %d bytes %u, expected rc %d bytes %u", cases[i].s, rc,
			        b, cases[i].rc, cases[i].bytes);
	}
	/* and through the key: both ends of the range */
	{
		struct config *c = load_ok("[main]\npipe-size = 4k\n" IN);
		T_ASSERT(c && c->pipe_size == 4096);
		config_free(c);
		c = load_ok("[main]\npipe-size = 1048576\n" IN);
		T_ASSERT(c && c->pipe_size == 1048576);
		config_free(c);
	}
}

static void test_sockaddr(void)
{
	static const struct {
		const char *s;
		int ok, family;
		const char *addr;
		uint16_t port;
	} cases[] = {
	        {"127.0.0.1:1080", 1, AF_INET, "127.0.0.1", 1080},
	        {"0.0.0.0:65535", 1, AF_INET, "0.0.0.0", 65535},
	        {"[::1]:80", 1, AF_INET6, "::1", 80},
	        {"[::]:1", 1, AF_INET6, "::", 1},
	        {"[2001:db8::7]:443", 1, AF_INET6, "2001:db8::7", 443},
	        {"[::ffff:1.2.3.4]:9", 1, AF_INET6, "::ffff:1.2.3.4", 9},
	        {"1.2.3.4", 0, 0, NULL, 0},
	        {"1.2.3.4:", 0, 0, NULL, 0},
	        {"1.2.3.4:0", 0, 0, NULL, 0},
	        {"1.2.3.4:65536", 0, 0, NULL, 0},
	        {"1.2.3.4:80x", 0, 0, NULL, 0},
	        {"1.2.3.4:-1", 0, 0, NULL, 0},
	        {"1.2.3:80", 0, 0, NULL, 0},
	        {"256.0.0.1:80", 0, 0, NULL, 0},
	        {"localhost:80", 0, 0, NULL, 0},
	        {"::1:80", 0, 0, NULL, 0},
	        {"[::1]", 0, 0, NULL, 0},
	        {"[::1]80", 0, 0, NULL, 0},
	        {"[::1:80", 0, 0, NULL, 0},
	        {"[1.2.3.4]:80", 0, 0, NULL, 0},
	        {":80", 0, 0, NULL, 0},
	        {"[]:80", 0, 0, NULL, 0},
	        {"", 0, 0, NULL, 0},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct sockaddr_storage ss;
		socklen_t len = 0;
		int rc = config_parse_sockaddr(cases[i].s, &ss, &len);
		if (!cases[i].ok) {
			if (rc != -EINVAL)
				T_FAILF("\"%s\" accepted (rc %d)", cases[i].s, rc);
			continue;
		}
		if (rc != 0) {
			T_FAILF("\"%s\" refused (rc %d)", cases[i].s, rc);
			continue;
		}
		T_EQ_INT(ss.ss_family, cases[i].family);
		T_EQ_INT(len, cases[i].family == AF_INET ? sizeof(struct sockaddr_in)
		                                         : sizeof(struct sockaddr_in6));
		T_EQ_STR(sa_addr(&ss), cases[i].addr);
		T_EQ_INT(sa_port(&ss), cases[i].port);
	}
}

static void test_hostport(void)
{
	static const struct {
		const char *s, *host;
		uint16_t port;
	} cases[] = {
	        {"example.org:443", "example.org", 443},
	        {"EXAMPLE.org.:1", "EXAMPLE.org.", 1},
	        {"a-b_c.example:65535", "a-b_c.example", 65535},
	        {"localhost:80", "localhost", 80},
	        {"1.2.3.4:80", "1.2.3.4", 80},
	        {"[::1]:80", "::1", 80},
	        {"[2001:db8::1]:443", "2001:db8::1", 443},
	        {"123.example:5", "123.example", 5},
	        {"example.org", NULL, 0},
	        {"example.org:", NULL, 0},
	        {"example.org:0", NULL, 0},
	        {"example.org:65536", NULL, 0},
	        {":80", NULL, 0},
	        {"::1:80", NULL, 0},
	        {"[example.org]:80", NULL, 0},
	        {"[::1]", NULL, 0},
	        {"bad..name:80", NULL, 0},
	        {".lead:80", NULL, 0},
	        {"sp ace:80", NULL, 0},
	        {"1.2.3:80", NULL, 0},
	        {"a/b:80", NULL, 0},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *host = (char *)1;
		uint16_t port = 0;
		int rc = config_parse_hostport(cases[i].s, &host, &port);
		if (!cases[i].host) {
			if (rc != -EINVAL || host != NULL)
				T_FAILF("\"%s\" accepted (rc %d)", cases[i].s, rc);
			continue;
		}
		if (rc != 0) {
			T_FAILF("\"%s\" refused (rc %d)", cases[i].s, rc);
			continue;
		}
		T_EQ_STR(host, cases[i].host);
		T_EQ_INT(port, cases[i].port);
		free(host);
	}
	{
		char *h63 = repeat('a', 63), *h64 = repeat('a', 64), buf[400], *host = NULL;
		uint16_t port;
		snprintf(buf, sizeof(buf), "%s.example:1", h63);
		T_EQ_INT(config_parse_hostport(buf, &host, &port), 0);
		free(host);
		snprintf(buf, sizeof(buf), "%s.example:1", h64);
		T_EQ_INT(config_parse_hostport(buf, &host, &port), -EINVAL);
		/* 4 * 63 + 3 dots = 255 > 253 */
		snprintf(buf, sizeof(buf), "%s.%s.%s.%s:1", h63, h63, h63, h63);
		T_EQ_INT(config_parse_hostport(buf, &host, &port), -EINVAL);
		free(h63);
		free(h64);
	}
}

static void test_rules(void)
{
	static const uint8_t v6[16] = {0x20, 0x01, 0x0d, 0xb8};
	struct config *c = load_ok(IN "[route]\n"
	                              "rule = cidr 0.0.0.0/0 -> direct\n"
	                              "rule = cidr ::/0 -> direct\n"
	                              "rule = cidr 2001:db8::/32 -> block\n"
	                              "rule = cidr 2001:db8::1 -> block\n"
	                              "rule = cidr 192.168.0.0/16 -> block\n"
	                              "rule = port 1-65535 -> block\n"
	                              "rule = port 80-80 -> block\n"
	                              "rule = domain .a.example -> block\n"
	                              "rule = domain localhost -> block\n"
	                              "rule\t=\tdomain\tx.example\t->\tdirect\n");

	T_ASSERT(c != NULL);
	if (!c)
		return;
	T_EQ_INT(c->n_rules, 10);
	if (c->n_rules != 10)
		goto out;
	T_EQ_INT(c->rules[0].family, AF_INET);
	T_EQ_INT(c->rules[0].prefix, 0);
	T_EQ_INT(c->rules[1].family, AF_INET6);
	T_EQ_INT(c->rules[1].prefix, 0);
	T_EQ_MEM(c->rules[2].addr, v6, 16);
	T_EQ_INT(c->rules[2].prefix, 32);
	T_EQ_INT(c->rules[2].outbound, 1);
	T_EQ_INT(c->rules[3].prefix, 128);
	T_EQ_INT(c->rules[3].addr[15], 1);
	T_EQ_INT(c->rules[4].addr[0], 192);
	T_EQ_INT(c->rules[4].addr[1], 168);
	T_EQ_INT(c->rules[4].prefix, 16);
	T_EQ_INT(c->rules[5].port_lo, 1);
	T_EQ_INT(c->rules[5].port_hi, 65535);
	T_EQ_INT(c->rules[6].port_lo, 80);
	T_EQ_INT(c->rules[6].port_hi, 80);
	T_EQ_STR(c->rules[7].domain, "a.example");
	T_EQ_STR(c->rules[8].domain, "localhost");
	T_EQ_STR(c->rules[9].domain, "x.example");
	T_EQ_INT(c->rules[9].outbound, 0);
	T_EQ_INT(c->rules[9].line, 14);
	for (size_t i = 0; i < c->n_rules; i++)
		T_EQ_INT(c->rules[i].line, 5 + (int)i);
out:
	config_free(c);
}

static void test_rule_limit(void)
{
	size_t cap = 40 * (CONFIG_MAX_RULES + 2) + 200, off;
	char *text = malloc(cap), exp[200];

	off = (size_t)snprintf(text, cap, IN "[route]\n");
	for (int i = 0; i <= CONFIG_MAX_RULES; i++)
		off += (size_t)snprintf(text + off, cap - off, "rule = port %d -> block\n", i + 1);
	snprintf(exp, sizeof(exp), "t.ini:%d: [route] rule: more than %d rules\n",
	         5 + CONFIG_MAX_RULES, CONFIG_MAX_RULES);
	T_ASSERT(expect_err(text, exp));
	free(text);
}

static void test_section_limits(void)
{
	size_t cap = 100 * (CONFIG_MAX_OUTBOUNDS + 2), off;
	char *text = malloc(cap), exp[300];

	/* 63 outbounds + the implicit direct fill the table; block finds no room */
	off = (size_t)snprintf(text, cap, IN);
	for (int i = 0; i < CONFIG_MAX_OUTBOUNDS - 1; i++)
		off += (size_t)snprintf(text + off, cap - off, "[outbound o%d]\ntype = direct\n",
		                        i);
	snprintf(
	        exp, sizeof(exp),
	        "t.ini:%d: no room left for the implicit [outbound block] (at most %d outbounds)\n",
	        4 + 2 * (CONFIG_MAX_OUTBOUNDS - 2), CONFIG_MAX_OUTBOUNDS);
	T_ASSERT(expect_err(text, exp));
	/* 64 defined leave no room for either; a 65th does not fit at all */
	off += (size_t)snprintf(text + off, cap - off, "[outbound last]\ntype = block\n");
	off += (size_t)snprintf(text + off, cap - off, "[outbound extra]\ntype = block\n");
	snprintf(
	        exp, sizeof(exp),
	        "t.ini:%d: [outbound extra]: too many outbound sections (at most %d)\n"
	        "t.ini:%d: no room left for the implicit [outbound direct] (at most %d outbounds)\n"
	        "t.ini:%d: no room left for the implicit [outbound block] (at most %d outbounds)\n",
	        4 + 2 * CONFIG_MAX_OUTBOUNDS, CONFIG_MAX_OUTBOUNDS,
	        4 + 2 * (CONFIG_MAX_OUTBOUNDS - 1), CONFIG_MAX_OUTBOUNDS,
	        4 + 2 * (CONFIG_MAX_OUTBOUNDS - 1), CONFIG_MAX_OUTBOUNDS);
	T_ASSERT(expect_err(text, exp));
	free(text);
}

/* The example file loads cleanly, and it and docs/configuration.md document every key. */
static void test_example_and_readme(void)
{
	static const char *const keys[] = {
	        "workers",
	        "log-level",
	        "max-connections",
	        "handshake-timeout",
	        "connect-timeout",
	        "idle-timeout",
	        "drain-timeout",
	        "pipe-size",
	        "max-pipes",
	        "resolve-timeout",
	        "max-resolving",
	        "max-auth-failures",
	        "keepalive",
	        "pipe-memory",
	        "accept-steering",
	        "splice",
	        "group",
	        "type",
	        "listen",
	        "user",
	        "users",
	        "target",
	        "outbound",
	        "allow",
	        "udp",
	        "udp-advertise",
	        "udp-ports",
	        "udp-timeout",
	        "udp-max-sessions",
	        "udp-buffer",
	        "udp-dns-timeout",
	        "access-log",
	        "user-timeout",
	        "bind-address-v4",
	        "bind-address-v6",
	        "bind-address",
	        "bind-interface",
	        "fwmark",
	        "deny-private",
	        "server",
	        "username",
	        "password",
	        "method",
	        "default",
	        "rule",
	};
	struct config *c = NULL;
	char *m = NULL, *ex = NULL, *readme = NULL, *block, *end, needle[64];
	size_t len;
	FILE *f;

	T_EQ_INT(load_path(SPLICED_SRCDIR "/spliced.example.ini", &c, &m), 0);
	T_EQ_STR(m, "");
	free(m);
	config_free(c);

	f = fopen(SPLICED_SRCDIR "/spliced.example.ini", "r");
	if (f) {
		T_ASSERT(getdelim(&ex, &len, '\0', f) > 0);
		fclose(f);
	}
	f = fopen(SPLICED_SRCDIR "/docs/configuration.md", "r");
	if (f) {
		T_ASSERT(getdelim(&readme, &len, '\0', f) > 0);
		fclose(f);
	}
	T_ASSERT(ex && readme);
	if (!ex || !readme)
		goto out;
	/* only the configuration block of docs/configuration.md counts */
	block = strstr(readme, "<!-- config begin -->");
	end = block ? strstr(block, "<!-- config end -->") : NULL;
	T_ASSERT(block && end);
	if (!block || !end)
		goto out;
	*end = '\0';
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		snprintf(needle, sizeof(needle), "\n%s = ", keys[i]);
		if (!strstr(ex, needle)) {
			snprintf(needle, sizeof(needle), "\n;%s = ", keys[i]);
			if (!strstr(ex, needle))
				T_FAILF("spliced.example.ini does not show \"%s = \"", keys[i]);
		}
		snprintf(needle, sizeof(needle), "| `%s` |", keys[i]);
		if (!strstr(block, needle))
			T_FAILF("docs/configuration.md has no table row for `%s`", keys[i]);
	}
out:
	free(ex);
	free(readme);
}

/* Loading and freeing repeatedly, with errors too, leaks nothing (run under ASan). */
static void test_free_paths(void)
{
	const char *path = write_file("every.ini", every_key);

	write_file("users.txt", "dave daves-pass\n");
	for (int i = 0; i < 20; i++) {
		struct config *c = NULL;
		char *m = NULL;
		T_EQ_INT(load_path(path, &c, &m), 0);
		free(m);
		config_free(c);
		T_ASSERT(expect_err(
		        "[outbound u]\ntype = socks5\nserver = h:1\nusername = a\n"
		        "password = b\npassword = c\n[inbound x]\ntype = forward\n"
		        "listen = 127.0.0.1:1\ntarget = h:2\ntarget = h:3\n"
		        "[route]\nrule = domain a.example -> nope\n",
		        "t.ini:6: [outbound u] password: duplicate key (first set on line 5)\n"
		        "t.ini:11: [inbound x] target: duplicate key (first set on line 10)\n"
		        "t.ini:13: [route] rule: unknown outbound \"nope\"\n"));
	}
	config_free(NULL);
	users_free(NULL);
	users_destroy(NULL);
}

static void cleanup(void)
{
	static const char *const names[] = {"users.txt", "every.ini", "bad.ini", "u1",
	                                    "u2",        "u3",        "iu",      "audit"};
	char path[600];

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", tmpdir, names[i]);
		unlink(path);
	}
	if (rmdir(tmpdir) < 0)
		perror(tmpdir);
}

int main(void)
{
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 2;
	}
	T_RUN(test_builtin);
	T_RUN(test_defaults);
	T_RUN(test_every_key);
	T_RUN(test_tun_keys);
	T_RUN(test_allow_list);
	T_RUN(test_stats);
	T_RUN(test_udp_keys);
	T_RUN(test_outbound_order);
	T_RUN(test_syntax_tolerance);
	T_RUN(test_errors);
	T_RUN(test_all_errors_collected);
	T_RUN(test_long_lines);
	T_RUN(test_file_errors);
	T_RUN(test_users_file);
	T_RUN(test_users_check);
	T_RUN(test_users_check_sizes);
	T_RUN(test_users_audit);
	T_RUN(test_run_as);
	T_RUN(test_inbound_users);
	T_RUN(test_relative_users_path);
	T_RUN(test_durations);
	T_RUN(test_sizes);
	T_RUN(test_sockaddr);
	T_RUN(test_hostport);
	T_RUN(test_rules);
	T_RUN(test_rule_limit);
	T_RUN(test_section_limits);
	T_RUN(test_example_and_readme);
	T_RUN(test_free_paths);
	cleanup();
	return t_finish();
}
