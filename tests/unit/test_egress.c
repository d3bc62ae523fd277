/* SPDX-License-Identifier: MIT */
/* Unit tests for relay/egress.c and relay/hostaddr.c: block rules per address, self, deny-private. */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "t.h"
#include "t_config.h"
#include "t_target.h"
#include "config.h"
#include "egress.h"
#include "hostaddr.h"

T_SUITE("egress");

/*
 * The host-ownership answer, scripted: fake_owned_addr is "ours", every
 * other address is not, unless fake_owned_ret forces an answer. Counts the
 * questions, so the tests can see when the (netlink) question is not asked.
 */
static char fake_owned_addr[INET6_ADDRSTRLEN];
static int fake_owned_ret = 1, fake_calls;
static uint32_t fake_last_mark;

static int fake_owned(const struct sockaddr_storage *a, uint32_t fwmark)
{
	char buf[INET6_ADDRSTRLEN];
	const void *p = a->ss_family == AF_INET
	                        ? (const void *)&((const struct sockaddr_in *)a)->sin_addr
	                        : (const void *)&((const struct sockaddr_in6 *)a)->sin6_addr;

	fake_calls++;
	fake_last_mark = fwmark;
	if (fake_owned_ret <= 0)
		return fake_owned_ret;
	inet_ntop(a->ss_family, p, buf, sizeof(buf));
	return strcmp(buf, fake_owned_addr) == 0;
}

static void fake_reset(const char *owned, int ret)
{
	snprintf(fake_owned_addr, sizeof(fake_owned_addr), "%s", owned);
	fake_owned_ret = ret;
	fake_calls = 0;
	fake_last_mark = 0;
}

static enum egress_verdict decide(const struct config *c, const char *in, const char *out,
                                  const struct proto_target *t, const char *addr, uint16_t port)
{
	struct sockaddr_storage a = t_sockaddr(addr, port);
	int ob = config_outbound_index(c, out);
	const struct inbound *inb = NULL;

	for (size_t i = 0; i < c->n_inbounds; i++)
		if (strcmp(c->inbounds[i].name, in) == 0)
			inb = &c->inbounds[i];
	if (ob < 0 || !inb)
		abort();
	return egress_decide(c, inb, &c->outbounds[ob], t, NULL, &a, fake_owned);
}

static void test_private_ranges(void)
{
	static const char *private[] = {
	        "0.0.0.0",
	        "0.255.255.255",
	        "10.0.0.0",
	        "10.255.255.255",
	        "100.64.0.0",
	        "100.127.255.255",
	        "127.0.0.1",
	        "127.255.255.254",
	        "169.254.169.254",
	        "172.16.0.0",
	        "172.31.255.255",
	        "192.168.0.1",
	        "224.0.0.1",
	        "239.255.255.255",
	        "240.0.0.1",
	        "255.255.255.255",
	        "::",
	        "::1",
	        "::127.0.0.1",
	        "::10.0.0.1",
	        "fe80::1",
	        "febf::1",
	        "fec0::1",
	        "fc00::1",
	        "fdff:ffff::1",
	        "ff02::1",
	        "::ffff:127.0.0.1",
	        "::ffff:10.1.2.3",
	        "::ffff:0.0.0.0",
	        "64:ff9b::10.0.0.1",
	        "64:ff9b::169.254.169.254",
	};
	static const char *public[] = {
	        "1.1.1.1",
	        "9.255.255.255",
	        "11.0.0.0",
	        "100.63.255.255",
	        "100.128.0.0",
	        "126.255.255.255",
	        "128.0.0.0",
	        "169.253.255.255",
	        "169.255.0.0",
	        "172.15.255.255",
	        "172.32.0.0",
	        "192.167.255.255",
	        "192.169.0.0",
	        "192.0.2.1",
	        "198.51.100.7",
	        "203.0.113.1",
	        "223.255.255.255",
	        "2001:db8::1",
	        "2606:4700::1111",
	        "::1:0:0:1",
	        "fe7f::1",
	        "fb00::1",
	        "::ffff:192.0.2.1",
	        "64:ff9b::192.0.2.1",
	        "64:ff9b:1::10.0.0.1",
	};

	for (size_t i = 0; i < sizeof(private) / sizeof(private[0]); i++) {
		struct sockaddr_storage a = t_sockaddr(private[i], 1);
		if (!egress_private_range(&a))
			T_FAILF("%s: not in any deny-private range", private[i]);
	}
	for (size_t i = 0; i < sizeof(public) / sizeof(public[0]); i++) {
		struct sockaddr_storage a = t_sockaddr(public[i], 1);
		const char *r = egress_private_range(&a);
		if (r)
			T_FAILF("%s: taken for %s", public[i], r);
	}
	struct sockaddr_storage a = t_sockaddr("10.1.2.3", 1);
	T_EQ_STR(egress_private_range(&a), "10.0.0.0/8 (private)");
	a = t_sockaddr("::ffff:127.0.0.1", 1);
	T_EQ_STR(egress_private_range(&a), "127.0.0.0/8 (loopback)");
	a = t_sockaddr("::1", 1);
	T_EQ_STR(egress_private_range(&a), "::1/128 (loopback)");
}

#define RULES                                                        \
	"[inbound s]\ntype = socks5\nlisten = 127.0.0.1:1080\n"      \
	"[inbound forced]\ntype = socks5\nlisten = 127.0.0.1:1081\n" \
	"outbound = direct\n"                                        \
	"[outbound up]\ntype = socks5\nserver = 127.0.0.1:9050\n"    \
	"[route]\n"                                                  \
	"rule = domain intranet.example -> direct\n"                 \
	"rule = cidr 127.0.0.0/8 -> block\n"                         \
	"rule = cidr ::1/128 -> block\n"                             \
	"rule = cidr 10.0.0.0/8 -> block\n"

/* Review H2: every resolved address meets the rules, as if the client had sent it. */
static void test_rule_per_address(void)
{
	struct config *c = load(RULES);
	struct proto_target lh = t_name("localhost", 80), in = t_name("intranet.example", 80),
	                    ip = t_name("127.0.0.1", 80);

	T_ASSERT(c);
	if (!c)
		return;
	fake_reset("", 0);
	T_EQ_INT(decide(c, "s", "direct", &lh, "127.0.0.1", 80), EGRESS_RULE);
	T_EQ_INT(decide(c, "s", "direct", &lh, "127.0.0.53", 80), EGRESS_RULE);
	T_EQ_INT(decide(c, "s", "direct", &lh, "::1", 80), EGRESS_RULE);
	T_EQ_INT(decide(c, "s", "direct", &lh, "::", 80), EGRESS_RULE);
	T_EQ_INT(decide(c, "s", "direct", &lh, "0.0.0.0", 80), EGRESS_RULE);
	T_EQ_INT(decide(c, "s", "direct", &lh, "::ffff:127.0.0.1", 80), EGRESS_RULE);
	T_EQ_INT(decide(c, "s", "direct", &lh, "64:ff9b::a00:1", 80), EGRESS_RULE);
	T_EQ_INT(decide(c, "s", "direct", &lh, "192.0.2.1", 80), EGRESS_OK);
	T_EQ_INT(decide(c, "s", "direct", &lh, "2001:db8::1", 80), EGRESS_OK);
	/* a domain rule before the cidr rule decides for its own names */
	T_EQ_INT(decide(c, "s", "direct", &in, "10.1.2.3", 80), EGRESS_OK);
	/* an inbound with its own outbound ignores [route], as documented */
	T_EQ_INT(decide(c, "forced", "direct", &lh, "127.0.0.1", 80), EGRESS_OK);
	/* the address of an upstream server is the operator's, not the client's target */
	T_EQ_INT(decide(c, "s", "up", &lh, "127.0.0.1", 9050), EGRESS_OK);
	/* an IP target was routed on itself before (route_pick): not checked twice */
	proto_target_ip_literal(&ip);
	T_EQ_INT(ip.kind, TARGET_IP);
	T_EQ_INT(decide(c, "s", "direct", &ip, "127.0.0.1", 80), EGRESS_OK);
	T_EQ_INT(fake_calls, 0); /* no wildcard listener, no deny-private: no netlink */
	config_free(c);
}

#define LISTENERS                                                     \
	"[inbound s]\ntype = socks5\nlisten = 127.0.0.1:1080\n"       \
	"[inbound h]\ntype = http\nlisten = 192.0.2.9:3128\n"         \
	"[inbound any4]\ntype = socks5\nlisten = 0.0.0.0:8080\n"      \
	"[inbound any6]\ntype = socks5\nlisten = [::]:8081\n"         \
	"[inbound six]\ntype = http\nlisten = [::1]:1082\n"           \
	"[outbound up]\ntype = socks5\nserver = 127.0.0.1:1080\n"     \
	"[outbound bound]\ntype = direct\nbind-address = 192.0.2.9\n" \
	"[outbound marked]\ntype = direct\nfwmark = 0x2a\n"

/* Review M7: never a connect to one of our own listeners, however the address is written. */
static void test_self(void)
{
	struct config *c = load(LISTENERS);
	struct proto_target t = t_name("x.example", 1);

	T_ASSERT(c);
	if (!c)
		return;
	fake_reset("192.0.2.5", 1);
	T_EQ_INT(decide(c, "s", "direct", &t, "127.0.0.1", 1080), EGRESS_SELF);
	T_EQ_INT(decide(c, "s", "direct", &t, "0.0.0.0", 1080), EGRESS_SELF);
	T_EQ_INT(decide(c, "s", "direct", &t, "::ffff:127.0.0.1", 1080), EGRESS_SELF);
	T_EQ_INT(decide(c, "s", "direct", &t, "::ffff:0.0.0.0", 1080), EGRESS_SELF);
	T_EQ_INT(decide(c, "s", "direct", &t, "192.0.2.9", 3128), EGRESS_SELF);
	T_EQ_INT(decide(c, "s", "direct", &t, "::1", 1082), EGRESS_SELF);
	T_EQ_INT(decide(c, "s", "direct", &t, "::", 1082), EGRESS_SELF);
	/* another address on the port of a specific listener is another socket */
	T_EQ_INT(decide(c, "s", "direct", &t, "127.0.0.2", 1080), EGRESS_OK);
	T_EQ_INT(decide(c, "s", "direct", &t, "127.0.0.1", 1081), EGRESS_OK);
	T_EQ_INT(decide(c, "s", "direct", &t, "::1", 1080), EGRESS_OK);
	T_EQ_INT(fake_calls, 0); /* none of these needed the kernel */
	/* wildcard listeners: any loopback, and any address the host owns, of their family */
	T_EQ_INT(decide(c, "s", "direct", &t, "127.0.0.9", 8080), EGRESS_SELF);
	T_EQ_INT(decide(c, "s", "direct", &t, "0.0.0.0", 8080), EGRESS_SELF);
	T_EQ_INT(fake_calls, 0);
	T_EQ_INT(decide(c, "s", "direct", &t, "192.0.2.5", 8080), EGRESS_SELF);
	T_EQ_INT(fake_calls, 1);
	T_EQ_INT(decide(c, "s", "direct", &t, "198.51.100.7", 8080), EGRESS_OK);
	T_EQ_INT(fake_calls, 2);
	T_EQ_INT(decide(c, "s", "direct", &t, "::ffff:192.0.2.5", 8080), EGRESS_SELF);
	T_EQ_INT(decide(c, "s", "direct", &t, "::1", 8081), EGRESS_SELF);
	T_EQ_INT(decide(c, "s", "direct", &t, "::", 8081), EGRESS_SELF);
	T_EQ_INT(decide(c, "s", "direct", &t, "127.0.0.1", 8081), EGRESS_OK); /* IPV6_V6ONLY */
	T_EQ_INT(decide(c, "s", "direct", &t, "::1", 8080), EGRESS_OK);
	/* 0.0.0.0 from a socket bound to 192.0.2.9 reaches 192.0.2.9 */
	T_EQ_INT(decide(c, "s", "bound", &t, "0.0.0.0", 3128), EGRESS_SELF);
	T_EQ_INT(decide(c, "s", "bound", &t, "0.0.0.0", 1080), EGRESS_OK);
	/* the question carries the outbound's fwmark (policy routing may differ per mark) */
	fake_reset("192.0.2.5", 1);
	T_EQ_INT(decide(c, "s", "marked", &t, "192.0.2.5", 8080), EGRESS_SELF);
	T_EQ_INT(fake_last_mark, 0x2a);
	/* an upstream server that is one of our listeners is a loop too */
	T_EQ_INT(decide(c, "s", "up", &t, "127.0.0.1", 1080), EGRESS_SELF);
	/* no answer from the kernel: refused, not guessed */
	fake_reset("", -EIO);
	T_EQ_INT(decide(c, "s", "direct", &t, "198.51.100.7", 8080), EGRESS_UNKNOWN);
	T_EQ_INT(decide(c, "s", "direct", &t, "198.51.100.7", 80), EGRESS_OK);
	config_free(c);
}

static void test_deny_private(void)
{
	struct config *c = load("[inbound s]\ntype = socks5\nlisten = 127.0.0.1:1080\n"
	                        "[outbound g]\ntype = direct\ndeny-private = yes\nfwmark = 7\n"
	                        "[outbound open]\ntype = direct\ndeny-private = no\n");
	struct proto_target t = t_name("x.example", 443);

	T_ASSERT(c);
	if (!c)
		return;
	T_ASSERT(c->outbounds[config_outbound_index(c, "g")].deny_private);
	T_ASSERT(!c->outbounds[config_outbound_index(c, "open")].deny_private);
	T_ASSERT(!c->outbounds[config_outbound_index(c, "direct")].deny_private); /* default */
	fake_reset("192.0.2.5", 1);
	T_EQ_INT(decide(c, "s", "g", &t, "10.1.2.3", 443), EGRESS_PRIVATE);
	T_EQ_INT(decide(c, "s", "g", &t, "127.0.0.1", 443), EGRESS_PRIVATE);
	T_EQ_INT(decide(c, "s", "g", &t, "169.254.169.254", 80), EGRESS_PRIVATE);
	T_EQ_INT(decide(c, "s", "g", &t, "fd00::1", 443), EGRESS_PRIVATE);
	T_EQ_INT(decide(c, "s", "g", &t, "::ffff:192.168.1.1", 443), EGRESS_PRIVATE);
	T_EQ_INT(fake_calls, 0); /* a private range needs no question */
	T_EQ_INT(decide(c, "s", "g", &t, "192.0.2.5", 443), EGRESS_OWNED);
	T_EQ_INT(fake_last_mark, 7);
	T_EQ_INT(decide(c, "s", "g", &t, "::ffff:192.0.2.5", 443), EGRESS_OWNED);
	T_EQ_INT(decide(c, "s", "g", &t, "64:ff9b::c000:205", 443), EGRESS_OWNED);
	T_EQ_INT(decide(c, "s", "g", &t, "192.0.2.6", 443), EGRESS_OK);
	T_EQ_INT(decide(c, "s", "g", &t, "2001:db8::1", 443), EGRESS_OK);
	fake_reset("2001:db8::5", 1);
	T_EQ_INT(decide(c, "s", "g", &t, "2001:db8::5", 443), EGRESS_OWNED);
	fake_reset("", -ENOBUFS);
	T_EQ_INT(decide(c, "s", "g", &t, "192.0.2.6", 443), EGRESS_UNKNOWN);
	/* without deny-private nothing of this is looked at */
	fake_reset("192.0.2.5", 1);
	T_EQ_INT(decide(c, "s", "open", &t, "10.1.2.3", 443), EGRESS_OK);
	T_EQ_INT(decide(c, "s", "open", &t, "192.0.2.5", 443), EGRESS_OK);
	T_EQ_INT(fake_calls, 0);
	config_free(c);
}

static void test_refused_counts(void)
{
	struct config *c = load(RULES);
	uint64_t n[EGRESS_N] = {0};
	struct proto_target lh = t_name("localhost", 80);
	struct sockaddr_storage a = t_sockaddr("127.0.0.1", 80), b = t_sockaddr("192.0.2.1", 80),
	                        self = t_sockaddr("127.0.0.1", 1080);
	int direct;

	T_ASSERT(c);
	if (!c)
		return;
	direct = config_outbound_index(c, "direct");
	T_ASSERT(egress_refused(c, &c->inbounds[0], &c->outbounds[direct], &lh, NULL, &a, n));
	T_ASSERT(egress_refused(c, &c->inbounds[0], &c->outbounds[direct], &lh, NULL, &a, n));
	T_ASSERT(!egress_refused(c, &c->inbounds[0], &c->outbounds[direct], &lh, NULL, &b, n));
	T_ASSERT(egress_refused(c, &c->inbounds[1], &c->outbounds[direct], &lh, NULL, &self, n));
	T_EQ_INT(n[EGRESS_RULE], 2);
	T_EQ_INT(n[EGRESS_SELF], 1);
	T_EQ_INT(n[EGRESS_OK], 0);
	T_EQ_INT(n[EGRESS_PRIVATE] + n[EGRESS_OWNED] + n[EGRESS_UNKNOWN], 0);
	for (int v = EGRESS_OK; v < EGRESS_N; v++)
		T_ASSERT(strcmp(egress_verdict_name((enum egress_verdict)v), "?") != 0);
	config_free(c);
}

/* expect_config_error TEXT LINE: loading fails and names t.ini:LINE. */
static void expect_config_error(const char *text, int line, const char *what)
{
	char want[32], *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct config *c = NULL;
	int rc;

	if (!f)
		abort();
	rc = config_load_string("t.ini", text, &c, f);
	fclose(f);
	snprintf(want, sizeof(want), "t.ini:%d:", line);
	if (rc != -EINVAL || c || !buf || !strstr(buf, want) || !strstr(buf, what))
		T_FAILF("want an error at %s naming \"%s\"; rc %d, got: %s", want, what, rc,
		        buf ? buf : "");
	config_free(c);
	free(buf);
}

static void test_config_keys(void)
{
	expect_config_error("[inbound s]\ntype = socks5\nlisten = 127.0.0.1:1080\n"
	                    "[outbound g]\ntype = direct\ndeny-private = maybe\n",
	                    6, "deny-private: \"maybe\" is not one of yes, no");
	expect_config_error("[inbound s]\ntype = socks5\nlisten = 127.0.0.1:1080\n"
	                    "[outbound g]\ntype = socks5\nserver = 127.0.0.1:9050\n"
	                    "deny-private = yes\n",
	                    7, "not valid with type = socks5");
	expect_config_error("[inbound s]\ntype = socks5\nlisten = 127.0.0.1:1080\n"
	                    "[outbound g]\ntype = block\ndeny-private = yes\n",
	                    6, "not valid with type = block");
}

/* Review M7: a forward inbound whose target is a listener of the same file is refused at load. */
static void test_config_forward_loops(void)
{
	struct config *c;

	expect_config_error("[inbound f]\ntype = forward\nlisten = 127.0.0.1:2000\n"
	                    "target = 127.0.0.1:2000\n",
	                    4, "[inbound f] target: is this inbound's own listen address");
	expect_config_error("[inbound f]\ntype = forward\nlisten = 127.0.0.1:2000\n"
	                    "target = 0x7f000001:2000\n",
	                    4, "own listen address");
	expect_config_error("[inbound f]\ntype = forward\nlisten = 127.0.0.1:2000\n"
	                    "target = [::ffff:127.0.0.1]:2000\n",
	                    4, "own listen address");
	expect_config_error("[inbound s]\ntype = socks5\nlisten = 0.0.0.0:1080\n"
	                    "[inbound f]\ntype = forward\nlisten = 127.0.0.1:2000\n"
	                    "target = 127.0.0.5:1080\n",
	                    7, "is the listen address of [inbound s]");
	expect_config_error("[inbound s]\ntype = socks5\nlisten = [::1]:1080\n"
	                    "[inbound f]\ntype = forward\nlisten = 127.0.0.1:2000\n"
	                    "target = [::]:1080\n",
	                    7, "is the listen address of [inbound s]");
	/* the forward first, the listener after it: reported at the listener's line */
	expect_config_error("[inbound f]\ntype = forward\nlisten = 127.0.0.1:2000\n"
	                    "target = 127.0.0.1:1080\n"
	                    "[inbound s]\ntype = socks5\nlisten = 127.0.0.1:1080\n",
	                    7, "[inbound s] listen: is the target of [inbound f] (line 1)");
	/* not loops: another port, another address, a name (checked at connect time) */
	c = load("[inbound s]\ntype = socks5\nlisten = 127.0.0.1:1080\n"
	         "[inbound f]\ntype = forward\nlisten = 127.0.0.1:2000\ntarget = 127.0.0.1:2001\n"
	         "[inbound g]\ntype = forward\nlisten = 127.0.0.1:2002\ntarget = 127.0.0.2:1080\n"
	         "[inbound h]\ntype = forward\nlisten = 127.0.0.1:2003\ntarget = localhost:1080\n"
	         "[inbound i]\ntype = forward\nlisten = [::1]:2004\ntarget = 127.0.0.1:2004\n");
	T_ASSERT(c);
	config_free(c);
}

/* The kernel's answer, from this machine's own routing table. */
static void test_hostaddr_owned(void)
{
	struct sockaddr_storage a = t_sockaddr("127.0.0.1", 0), un = {.ss_family = AF_UNIX};
	struct ifaddrs *ifa = NULL;
	int found = 0;

	T_EQ_INT(hostaddr_owned(&a, 0), 1);
	a = t_sockaddr("127.45.6.7", 80); /* the whole /8 is local */
	T_EQ_INT(hostaddr_owned(&a, 0), 1);
	a = t_sockaddr("127.0.0.1", 80);
	T_EQ_INT(hostaddr_owned(&a, 0x1234), 1);
	a = t_sockaddr("::1", 80);
	T_EQ_INT(hostaddr_owned(&a, 0), 1);
	/* TEST-NET-2: no host owns it (0, or no route at all: 0 too) */
	a = t_sockaddr("198.51.100.7", 80);
	T_EQ_INT(hostaddr_owned(&a, 0), 0);
	a = t_sockaddr("2001:db8::7", 80);
	T_EQ_INT(hostaddr_owned(&a, 0), 0);
	T_EQ_INT(hostaddr_owned(&un, 0), -EAFNOSUPPORT);
	/* every address an interface has is ours */
	T_ASSERT(getifaddrs(&ifa) == 0);
	for (struct ifaddrs *i = ifa; i; i = i->ifa_next) {
		struct sockaddr_storage s;

		if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET)
			continue;
		memset(&s, 0, sizeof(s));
		memcpy(&s, i->ifa_addr, sizeof(struct sockaddr_in));
		if (hostaddr_owned(&s, 0) != 1)
			T_FAILF("address of %s not owned", i->ifa_name);
		found++;
	}
	freeifaddrs(ifa);
	T_ASSERT(found > 0);
	/* many questions on the one socket of this thread: the answers stay in step */
	for (int i = 0; i < 2000; i++) {
		a = t_sockaddr(i % 2 ? "127.0.0.1" : "198.51.100.7", 80);
		if (hostaddr_owned(&a, 0) != i % 2) {
			T_FAILF("answer %d out of step", i);
			break;
		}
	}
}

int main(void)
{
	T_RUN(test_private_ranges);
	T_RUN(test_rule_per_address);
	T_RUN(test_self);
	T_RUN(test_deny_private);
	T_RUN(test_refused_counts);
	T_RUN(test_config_keys);
	T_RUN(test_config_forward_loops);
	T_RUN(test_hostaddr_owned);
	return t_finish();
}
