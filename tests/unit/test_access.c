/* SPDX-License-Identifier: MIT */
/* Unit tests for relay/access.c: allow lists, the failed-login throttle and the open-connection cap per source (IPv4 address, IPv6 /64). */
#include "t.h"

#include "access.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>

T_SUITE("access");

static struct sockaddr_storage addr(const char *s)
{
	struct sockaddr_storage ss;

	memset(&ss, 0, sizeof(ss));
	if (strchr(s, ':')) {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
		a->sin6_family = AF_INET6;
		T_ASSERT(inet_pton(AF_INET6, s, &a->sin6_addr) == 1);
	} else {
		struct sockaddr_in *a = (struct sockaddr_in *)&ss;
		a->sin_family = AF_INET;
		T_ASSERT(inet_pton(AF_INET, s, &a->sin_addr) == 1);
	}
	return ss;
}

static struct cidr cidr(const char *s, int prefix)
{
	struct cidr c = {.prefix = (uint8_t)prefix};
	struct sockaddr_storage a = addr(s);

	c.family = a.ss_family;
	if (c.family == AF_INET)
		memcpy(c.addr, &((struct sockaddr_in *)&a)->sin_addr, 4);
	else
		memcpy(c.addr, &((struct sockaddr_in6 *)&a)->sin6_addr, 16);
	return c;
}

static bool allowed(const struct inbound *in, const char *a)
{
	struct sockaddr_storage ss = addr(a);

	return access_allowed(in, &ss);
}

static void test_allow(void)
{
	struct cidr list[] = {cidr("192.0.2.0", 24), cidr("10.1.2.3", 32), cidr("2001:db8::", 32)};
	struct inbound in = {.allow = list, .n_allow = 3};
	struct inbound open = {0};

	T_ASSERT(allowed(&in, "192.0.2.1"));
	T_ASSERT(allowed(&in, "192.0.2.255"));
	T_ASSERT(!allowed(&in, "192.0.3.1"));
	T_ASSERT(allowed(&in, "10.1.2.3"));
	T_ASSERT(!allowed(&in, "10.1.2.4"));
	T_ASSERT(allowed(&in, "2001:db8:ffff::1"));
	T_ASSERT(!allowed(&in, "2001:db9::1"));
	/* an IPv4 client seen through a dual-stack socket is the IPv4 address it is */
	T_ASSERT(allowed(&in, "::ffff:192.0.2.9"));
	T_ASSERT(!allowed(&in, "::ffff:198.51.100.1"));
	/* an IPv4 rule never matches an IPv6 address that merely has the same bytes */
	T_ASSERT(!allowed(&in, "c000:0201::1"));
	T_ASSERT(allowed(&open, "198.51.100.1")); /* no list: everyone */
}

static struct auth_guard *guard(unsigned max)
{
	struct auth_guard *g = auth_guard_new(max);

	T_ASSERT(g != NULL);
	return g;
}

static void fail_n(struct auth_guard *g, const char *a, unsigned n, uint64_t now)
{
	struct sockaddr_storage ss = addr(a);
	bool log;

	for (unsigned i = 0; i < n; i++)
		auth_guard_failed(g, &ss, now, &log);
}

static bool blocked(struct auth_guard *g, const char *a, uint64_t now)
{
	struct sockaddr_storage ss = addr(a);

	return auth_guard_blocked(g, &ss, now);
}

static void test_guard_limit_and_minute(void)
{
	struct auth_guard *g = guard(5);
	struct sockaddr_storage a = addr("198.51.100.7");
	bool log;
	unsigned logs = 0;
	uint64_t now = 6000; /* minute 100 */

	for (unsigned i = 1; i <= 7; i++) {
		T_EQ_INT(blocked(g, "198.51.100.7", now), i > 5);
		T_EQ_INT(auth_guard_failed(g, &a, now, &log), i);
		logs += log;
	}
	T_EQ_INT(logs, 1);                          /* once per source and minute */
	T_ASSERT(!blocked(g, "198.51.100.8", now)); /* another address, another source */
	T_ASSERT(blocked(g, "198.51.100.7", now + 59));
	/* a new minute starts from zero */
	T_ASSERT(!blocked(g, "198.51.100.7", now + 60));
	T_EQ_INT(auth_guard_failed(g, &a, now + 60, &log), 1);
	T_ASSERT(!log);
	auth_guard_free(g);
}

static void test_guard_ipv6_slash64(void)
{
	struct auth_guard *g = guard(3);
	char buf[64];
	struct sockaddr_storage a = addr("2001:db8:1:2::abcd");

	fail_n(g, "2001:db8:1:2::1", 2, 600);
	fail_n(g, "2001:db8:1:2:ffff::9", 1, 600); /* same /64: the same source */
	T_ASSERT(blocked(g, "2001:db8:1:2::77", 600));
	T_ASSERT(!blocked(g, "2001:db8:1:3::1", 600)); /* the next /64 */
	T_EQ_STR(auth_guard_source_str(&a, buf, sizeof(buf)), "2001:db8:1:2::/64");
	a = addr("::ffff:192.0.2.1");
	T_EQ_STR(auth_guard_source_str(&a, buf, sizeof(buf)), "192.0.2.1");
	fail_n(g, "192.0.2.1", 3, 600); /* mapped and plain IPv4 are one source */
	T_ASSERT(blocked(g, "::ffff:192.0.2.1", 600));
	auth_guard_free(g);
}

/* More sources than slots: no crash, and a source failing now is still caught. */
static void test_guard_pressure(void)
{
	struct auth_guard *g = guard(4);
	char a[32];

	for (unsigned i = 0; i < 3 * AUTH_GUARD_SLOTS; i++) {
		snprintf(a, sizeof(a), "10.%u.%u.%u", (i >> 16) & 255, (i >> 8) & 255, i & 255);
		fail_n(g, a, 1, 60);
	}
	fail_n(g, "203.0.113.5", 4, 60);
	T_ASSERT(blocked(g, "203.0.113.5", 60));
	T_ASSERT(!blocked(g, "203.0.113.6", 60));
	auth_guard_free(g);
}

static void test_guard_off(void)
{
	struct auth_guard *g = guard(0);

	fail_n(g, "198.51.100.7", 1000, 60);
	T_ASSERT(!blocked(g, "198.51.100.7", 60));
	auth_guard_free(g);
}

static void test_open_to_all(void)
{
	struct inbound in = {.type = INBOUND_SOCKS5};
	struct cidr list[] = {cidr("192.0.2.0", 24)};

	in.listen = addr("0.0.0.0");
	T_ASSERT(access_open_to_all(&in));
	in.listen = addr("127.0.0.1");
	T_ASSERT(!access_open_to_all(&in));
	in.listen = addr("::1");
	T_ASSERT(!access_open_to_all(&in));
	in.listen = addr("::");
	T_ASSERT(access_open_to_all(&in));
	in.allow = list;
	in.n_allow = 1;
	T_ASSERT(!access_open_to_all(&in));
	in.n_allow = 0;
	in.type = INBOUND_FORWARD; /* a port forward is no proxy */
	T_ASSERT(!access_open_to_all(&in));
}

/* max-connections-per-source: take up to the limit, refuse (logged once a minute), give back. */
static bool take(struct source_limit *l, const char *a, uint64_t now_s, uint32_t *slot, bool *log)
{
	struct sockaddr_storage ss = addr(a);

	return source_limit_take(l, &ss, now_s, slot, log);
}

static unsigned open_from(struct source_limit *l, const char *a)
{
	struct sockaddr_storage ss = addr(a);

	return source_limit_open(l, &ss);
}

static void test_source_limit(void)
{
	struct source_limit l;
	uint32_t slots[3], s;
	bool log;

	T_EQ_INT(source_limit_init(&l, 3, 100), 0);
	for (int i = 0; i < 3; i++) {
		T_ASSERT(take(&l, "198.51.100.7", 60, &slots[i], &log));
		T_ASSERT(slots[i] != SOURCE_UNCOUNTED);
		T_ASSERT(!log);
	}
	T_EQ_INT(open_from(&l, "198.51.100.7"), 3);
	/* The fourth is refused, logged the first time in the minute only. */
	T_ASSERT(!take(&l, "198.51.100.7", 61, &s, &log));
	T_ASSERT(log);
	T_EQ_INT(s, SOURCE_UNCOUNTED);
	T_ASSERT(!take(&l, "198.51.100.7", 119, &s, &log));
	T_ASSERT(!log);
	T_ASSERT(!take(&l, "198.51.100.7", 120, &s, &log));
	T_ASSERT(log); /* a new minute */
	/* Another source is not affected; the v4-mapped spelling is the same source. */
	T_ASSERT(take(&l, "198.51.100.8", 120, &s, &log));
	source_limit_put(&l, s);
	T_ASSERT(!take(&l, "::ffff:198.51.100.7", 120, &s, &log));
	/* One given back lets one more in; all given back frees the slot. */
	source_limit_put(&l, slots[0]);
	T_EQ_INT(open_from(&l, "198.51.100.7"), 2);
	T_ASSERT(take(&l, "198.51.100.7", 120, &slots[0], &log));
	T_ASSERT(!take(&l, "198.51.100.7", 120, &s, &log));
	for (int i = 0; i < 3; i++)
		source_limit_put(&l, slots[i]);
	T_EQ_INT(open_from(&l, "198.51.100.7"), 0);
	source_limit_put(&l, SOURCE_UNCOUNTED); /* harmless */
	source_limit_destroy(&l);
}

static void test_source_limit_ipv6_slash64(void)
{
	struct source_limit l;
	uint32_t a, b, c;
	bool log;

	T_EQ_INT(source_limit_init(&l, 2, 100), 0);
	T_ASSERT(take(&l, "2001:db8:1:2::1", 0, &a, &log));
	T_ASSERT(take(&l, "2001:db8:1:2:ffff::9", 0, &b, &log));
	T_EQ_INT(a, b); /* one source */
	T_ASSERT(!take(&l, "2001:db8:1:2::3", 0, &c, &log));
	T_ASSERT(log);
	T_ASSERT(take(&l, "2001:db8:1:3::1", 0, &c, &log)); /* the next /64 */
	T_ASSERT(c != a);
	source_limit_put(&l, a);
	source_limit_put(&l, b);
	source_limit_put(&l, c);
	source_limit_destroy(&l);
}

/*
 * As many sources as max-connections, each at its limit: all but a rare
 * few are counted (the table has room for twice as many; a source whose
 * whole window is taken is let in uncounted, by design: about one in a
 * million here, so a run sees one about 3% of the time), each counted one
 * is refused a second connection, and giving them all back leaves the
 * table empty.
 */
static void test_source_limit_full(void)
{
	enum { N = 20000 };
	struct source_limit l;
	uint32_t *slot = calloc(N, sizeof(*slot));
	unsigned uncounted = 0;
	char a[32];
	bool log;

	T_ASSERT(slot != NULL);
	T_EQ_INT(source_limit_init(&l, 1, N), 0);
	for (int i = 0; i < N; i++) {
		snprintf(a, sizeof(a), "10.%d.%d.%d", i >> 16, (i >> 8) & 255, i & 255);
		T_ASSERT(take(&l, a, 0, &slot[i], &log));
		uncounted += slot[i] == SOURCE_UNCOUNTED;
	}
	T_ASSERT(uncounted <= N / 5000); /* at most 4 of 20,000 */
	for (int i = 0; i < N; i++) {
		snprintf(a, sizeof(a), "10.%d.%d.%d", i >> 16, (i >> 8) & 255, i & 255);
		if (slot[i] != SOURCE_UNCOUNTED)
			T_ASSERT(!take(&l, a, 0, &(uint32_t){0}, &log));
		source_limit_put(&l, slot[i]);
	}
	uncounted = 0;
	for (uint32_t i = 0; i < l.group_slots * SOURCE_LIMIT_LOCKS; i++)
		if (l.slots[i].family)
			uncounted++;
	T_EQ_INT(uncounted, 0);
	source_limit_destroy(&l);
	free(slot);
}

static void test_source_limit_off(void)
{
	struct source_limit l;
	uint32_t s;
	bool log;

	T_EQ_INT(source_limit_init(&l, 0, 100), 0);
	T_ASSERT(l.slots == NULL);
	for (int i = 0; i < 100; i++) {
		T_ASSERT(take(&l, "198.51.100.7", 0, &s, &log));
		T_EQ_INT(s, SOURCE_UNCOUNTED);
	}
	source_limit_destroy(&l);
}

int main(void)
{
	T_RUN(test_allow);
	T_RUN(test_guard_limit_and_minute);
	T_RUN(test_guard_ipv6_slash64);
	T_RUN(test_guard_pressure);
	T_RUN(test_guard_off);
	T_RUN(test_open_to_all);
	T_RUN(test_source_limit);
	T_RUN(test_source_limit_ipv6_slash64);
	T_RUN(test_source_limit_full);
	T_RUN(test_source_limit_off);
	return t_finish();
}
