/* SPDX-License-Identifier: MIT */
/* Allowed-IPs trie: longest prefix, IPv4 and IPv6, overlap, removal, packets, and a model check. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "allowedips.h"
#include "peer.h"
#include "t.h"

T_SUITE("wg_allowedips");

/* The trie keeps each peer's list of prefixes in the peer: zeroed peers will do. */
static struct wg_peer pa, pb, pc, pd;
#define A (&pa)
#define B (&pb)
#define C (&pc)
#define D (&pd)

static struct wg_allowedips t;

static int ins(const char *ip, int cidr, struct wg_peer *p)
{
	uint8_t a[16];
	int fam = strchr(ip, ':') ? AF_INET6 : AF_INET;

	inet_pton(fam, ip, a);
	return wg_allowedips_insert(&t, fam, a, (uint8_t)cidr, p);
}

static int rem(const char *ip, int cidr, struct wg_peer *p)
{
	uint8_t a[16];
	int fam = strchr(ip, ':') ? AF_INET6 : AF_INET;

	inet_pton(fam, ip, a);
	return wg_allowedips_remove(&t, fam, a, (uint8_t)cidr, p);
}

static struct wg_peer *look(const char *ip)
{
	uint8_t a[16];
	int fam = strchr(ip, ':') ? AF_INET6 : AF_INET;

	inet_pton(fam, ip, a);
	return wg_allowedips_lookup(&t, fam, a);
}

static void test_longest_prefix_v4(void)
{
	wg_allowedips_init(&t);
	T_EQ_INT(ins("10.0.0.0", 8, A), 0);
	T_EQ_INT(ins("10.1.0.0", 16, B), 0);
	T_EQ_INT(ins("10.1.2.0", 24, C), 0);
	T_EQ_INT(ins("10.1.2.3", 32, D), 0);
	T_ASSERT(look("10.9.9.9") == A);
	T_ASSERT(look("10.1.9.9") == B);
	T_ASSERT(look("10.1.2.9") == C);
	T_ASSERT(look("10.1.2.3") == D);
	T_ASSERT(look("11.0.0.1") == NULL);
	T_ASSERT(look("9.255.255.255") == NULL);
	/* Inserted in the other order, the same answers. */
	wg_allowedips_free(&t);
	T_EQ_INT(ins("10.1.2.3", 32, D), 0);
	T_EQ_INT(ins("10.1.2.0", 24, C), 0);
	T_EQ_INT(ins("10.1.0.0", 16, B), 0);
	T_EQ_INT(ins("10.0.0.0", 8, A), 0);
	T_ASSERT(look("10.9.9.9") == A);
	T_ASSERT(look("10.1.9.9") == B);
	T_ASSERT(look("10.1.2.9") == C);
	T_ASSERT(look("10.1.2.3") == D);
	wg_allowedips_free(&t);
}

static void test_default_route_and_host_bits(void)
{
	wg_allowedips_init(&t);
	T_EQ_INT(ins("0.0.0.0", 0, A), 0);
	T_EQ_INT(ins("192.168.77.99", 24, B), 0); /* host bits ignored */
	T_ASSERT(look("1.2.3.4") == A);
	T_ASSERT(look("255.255.255.255") == A);
	T_ASSERT(look("192.168.77.1") == B);
	T_EQ_INT(rem("192.168.77.0", 24, B), 0);
	T_ASSERT(look("192.168.77.1") == A);
	T_ASSERT(look("::1") == NULL); /* families are separate */
	T_EQ_INT(ins("1.2.3.4", 33, A), -EINVAL);
	wg_allowedips_free(&t);
}

static void test_v6(void)
{
	wg_allowedips_init(&t);
	T_EQ_INT(ins("2001:db8::", 32, A), 0);
	T_EQ_INT(ins("2001:db8:1::", 48, B), 0);
	T_EQ_INT(ins("2001:db8:1:0:8000::", 65, C), 0); /* crosses the 64-bit word */
	T_EQ_INT(ins("2001:db8:1:0:8000::1", 128, D), 0);
	T_ASSERT(look("2001:db8:ffff::1") == A);
	T_ASSERT(look("2001:db8:1::1") == B);
	T_ASSERT(look("2001:db8:1:0:7fff::1") == B);
	T_ASSERT(look("2001:db8:1:0:8000::2") == C);
	T_ASSERT(look("2001:db8:1:0:ffff::2") == C);
	T_ASSERT(look("2001:db8:1:0:8000::1") == D);
	T_ASSERT(look("2001:db9::1") == NULL);
	T_ASSERT(look("10.0.0.1") == NULL);
	T_EQ_INT(ins("::", 0, A), 0);
	T_ASSERT(look("2001:db9::1") == A);
	T_EQ_INT(ins("::", 129, A), -EINVAL);
	wg_allowedips_free(&t);
}

static void test_overlap_replace(void)
{
	wg_allowedips_init(&t);
	T_EQ_INT(ins("10.0.0.0", 24, A), 0);
	T_EQ_INT(ins("10.0.0.0", 24, B), 0); /* same prefix: new owner */
	T_ASSERT(look("10.0.0.1") == B);
	T_EQ_INT(ins("10.0.0.128", 25, A), 0);
	T_ASSERT(look("10.0.0.1") == B);
	T_ASSERT(look("10.0.0.200") == A);
	/* Siblings that diverge deep: a peerless branch node must not match. */
	T_EQ_INT(ins("172.16.0.0", 24, C), 0);
	T_EQ_INT(ins("172.16.1.0", 24, D), 0);
	T_ASSERT(look("172.16.0.5") == C);
	T_ASSERT(look("172.16.1.5") == D);
	T_ASSERT(look("172.16.2.5") == NULL);
	wg_allowedips_free(&t);
}

static int count_cb(void *ctx, int family, const uint8_t *addr, uint8_t cidr)
{
	char s[64];

	(void)cidr;
	inet_ntop(family, addr, s, sizeof(s));
	(*(int *)ctx)++;
	return 0;
}

static void test_remove(void)
{
	int n = 0;

	wg_allowedips_init(&t);
	T_EQ_INT(ins("10.0.0.0", 8, A), 0);
	T_EQ_INT(ins("10.1.0.0", 16, B), 0);
	T_EQ_INT(ins("10.2.0.0", 16, A), 0);
	T_EQ_INT(ins("fd00::", 8, A), 0);
	T_EQ_INT(ins("fd00::1", 128, B), 0);
	T_EQ_INT(rem("10.1.0.0", 16, A), -ENOENT); /* wrong peer */
	T_EQ_INT(rem("10.1.0.0", 17, NULL), -ENOENT);
	T_EQ_INT(rem("10.3.0.0", 16, NULL), -ENOENT);
	wg_allowedips_walk(&t, A, count_cb, &n);
	T_EQ_INT(n, 3);
	wg_allowedips_remove_by_peer(&t, A);
	T_ASSERT(look("10.9.0.1") == NULL);
	T_ASSERT(look("10.2.0.1") == NULL);
	T_ASSERT(look("10.1.0.1") == B);
	T_ASSERT(look("fd00::2") == NULL);
	T_ASSERT(look("fd00::1") == B);
	n = 0;
	wg_allowedips_walk(&t, A, count_cb, &n);
	T_EQ_INT(n, 0);
	wg_allowedips_walk(&t, B, count_cb, &n);
	T_EQ_INT(n, 2);
	T_EQ_INT(rem("10.1.0.0", 16, B), 0);
	T_EQ_INT(rem("fd00::1", 128, NULL), 0);
	T_ASSERT(t.root4 == NULL && t.root6 == NULL); /* nothing left behind */
	wg_allowedips_free(&t);
}

static void test_packets(void)
{
	uint8_t v4[20] = {0x45}, v6[40] = {0x60};

	wg_allowedips_init(&t);
	T_EQ_INT(ins("10.0.0.2", 32, A), 0);
	T_EQ_INT(ins("10.0.0.1", 32, B), 0);
	T_EQ_INT(ins("fd00::2", 128, C), 0);
	inet_pton(AF_INET, "10.0.0.1", v4 + 12);
	inet_pton(AF_INET, "10.0.0.2", v4 + 16);
	T_ASSERT(wg_allowedips_lookup_dst(&t, v4, sizeof(v4)) == A);
	T_ASSERT(wg_allowedips_lookup_src(&t, v4, sizeof(v4)) == B);
	T_ASSERT(wg_allowedips_lookup_dst(&t, v4, 19) == NULL);
	inet_pton(AF_INET6, "fd00::2", v6 + 8);
	inet_pton(AF_INET6, "fd00::3", v6 + 24);
	T_ASSERT(wg_allowedips_lookup_src(&t, v6, sizeof(v6)) == C);
	T_ASSERT(wg_allowedips_lookup_dst(&t, v6, sizeof(v6)) == NULL);
	v6[0] = 0x50;
	T_ASSERT(wg_allowedips_lookup_src(&t, v6, sizeof(v6)) == NULL);
	wg_allowedips_free(&t);
}

/* Random prefixes against a linear longest-prefix scan. */
static void test_model(void)
{
	enum { NPFX = 400, NLOOK = 20000 };
	static struct {
		uint32_t addr;
		int cidr;
		struct wg_peer *peer;
	} pfx[NPFX];
	struct wg_peer *peers[4] = {A, B, C, D};
	uint64_t x = 0x1234567887654321ULL;
	int i, j, best, bad = 0;

	wg_allowedips_init(&t);
	for (i = 0; i < NPFX; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		pfx[i].cidr = (int)(x % 33);
		/* Cluster addresses so prefixes overlap a lot. */
		pfx[i].addr = (uint32_t)(0x0a000000u | ((x >> 16) & 0x00ff0fffu));
		if (pfx[i].cidr < 32)
			pfx[i].addr &= pfx[i].cidr ? ~0u << (32 - pfx[i].cidr) : 0;
		pfx[i].peer = peers[(x >> 40) % 4];
		uint32_t be = htonl(pfx[i].addr);
		T_EQ_INT(wg_allowedips_insert(&t, AF_INET, &be, (uint8_t)pfx[i].cidr, pfx[i].peer),
		         0);
		for (j = 0; j < i; j++) /* a re-insert of the same prefix replaces */
			if (pfx[j].cidr == pfx[i].cidr && pfx[j].addr == pfx[i].addr)
				pfx[j].cidr = -1;
	}
	for (i = 0; i < NLOOK; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		uint32_t a = (uint32_t)(0x0a000000u | ((x >> 16) & 0x00ff0fffu)), be = htonl(a);
		best = -1;
		for (j = 0; j < NPFX; j++) {
			if (pfx[j].cidr < 0)
				continue;
			uint32_t m = pfx[j].cidr ? ~0u << (32 - pfx[j].cidr) : 0;
			if ((a & m) == pfx[j].addr && (best < 0 || pfx[j].cidr > pfx[best].cidr))
				best = j;
		}
		if (wg_allowedips_lookup(&t, AF_INET, &be) != (best < 0 ? NULL : pfx[best].peer) &&
		    bad++ < 5)
			T_FAILF("lookup %08x mismatched", a);
	}
	T_EQ_INT(bad, 0);
	wg_allowedips_free(&t);
}

struct collected {
	int n;
	char first[64];
};

static int collect_cb(void *ctx, int family, const uint8_t *addr, uint8_t cidr)
{
	struct collected *c = ctx;
	char ip[INET6_ADDRSTRLEN];

	if (c->n++ == 0) {
		inet_ntop(family, addr, ip, sizeof(ip));
		snprintf(c->first, sizeof(c->first), "%s/%u", ip, cidr);
	}
	return 0;
}

/*
 * Per-peer lists (review L13): many peers, prefixes moved between owners,
 * removed one by one or per peer; every peer's walk matches a model, and
 * removing every peer leaves nothing behind.
 */
static void test_peer_lists(void)
{
	enum { NPEER = 64, NPFX = 3000 };
	static struct wg_peer peers[NPEER];
	static int owner[NPFX], count[NPEER];
	uint64_t x = 0x9e3779b97f4a7c15ULL;
	struct collected c;
	int i;

	memset(peers, 0, sizeof(peers));
	wg_allowedips_init(&t);
	for (i = 0; i < NPFX; i++) {
		/* distinct /32s and /128s, each inserted once, then maybe given to another peer */
		uint8_t v4[4] = {10, (uint8_t)(i >> 8), (uint8_t)i, 1};
		uint8_t v6[16] = {
		        0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, (uint8_t)(i >> 8), (uint8_t)i};
		int fam = i % 2 ? AF_INET6 : AF_INET;

		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		owner[i] = (int)(x % NPEER);
		T_EQ_INT(wg_allowedips_insert(&t, fam, fam == AF_INET ? (void *)v4 : (void *)v6,
		                              fam == AF_INET ? 32 : 128, &peers[owner[i]]),
		         0);
		if (x & 0x100000) {
			owner[i] = (owner[i] + 1) % NPEER;
			T_EQ_INT(wg_allowedips_insert(&t, fam,
			                              fam == AF_INET ? (void *)v4 : (void *)v6,
			                              fam == AF_INET ? 32 : 128, &peers[owner[i]]),
			         0);
		}
		if (x & 0x200000) {
			T_EQ_INT(wg_allowedips_remove(&t, fam,
			                              fam == AF_INET ? (void *)v4 : (void *)v6,
			                              fam == AF_INET ? 32 : 128, NULL),
			         0);
			owner[i] = -1;
		}
	}
	memset(count, 0, sizeof(count));
	for (i = 0; i < NPFX; i++)
		if (owner[i] >= 0)
			count[owner[i]]++;
	for (i = 0; i < NPEER; i++) {
		memset(&c, 0, sizeof(c));
		wg_allowedips_walk(&t, &peers[i], collect_cb, &c);
		T_EQ_INT(c.n, count[i]);
	}
	/* removing half the peers leaves the others whole */
	for (i = 0; i < NPEER; i += 2)
		wg_allowedips_remove_by_peer(&t, &peers[i]);
	for (i = 0; i < NPEER; i++) {
		memset(&c, 0, sizeof(c));
		wg_allowedips_walk(&t, &peers[i], collect_cb, &c);
		T_EQ_INT(c.n, i % 2 ? count[i] : 0);
	}
	for (i = 0; i < NPFX; i++) {
		uint8_t v4[4] = {10, (uint8_t)(i >> 8), (uint8_t)i, 1};
		uint8_t v6[16] = {
		        0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, (uint8_t)(i >> 8), (uint8_t)i};
		struct wg_peer *want = owner[i] >= 0 && owner[i] % 2 ? &peers[owner[i]] : NULL;

		T_ASSERT(wg_allowedips_lookup(&t, i % 2 ? AF_INET6 : AF_INET,
		                              i % 2 ? (void *)v6 : (void *)v4) == want);
	}
	for (i = 1; i < NPEER; i += 2)
		wg_allowedips_remove_by_peer(&t, &peers[i]);
	T_ASSERT(t.root4 == NULL && t.root6 == NULL);
	/* insertion order is what wg show prints */
	T_EQ_INT(ins("10.9.0.0", 16, A), 0);
	T_EQ_INT(ins("fd09::", 64, A), 0);
	T_EQ_INT(ins("10.8.0.0", 16, A), 0);
	memset(&c, 0, sizeof(c));
	wg_allowedips_walk(&t, A, collect_cb, &c);
	T_EQ_INT(c.n, 3);
	T_EQ_STR(c.first, "10.9.0.0/16");
	/* freeing the trie empties the lists too */
	wg_allowedips_free(&t);
	T_ASSERT(A->aip_head == NULL);
	T_EQ_INT(ins("10.7.0.0", 16, A), 0);
	memset(&c, 0, sizeof(c));
	wg_allowedips_walk(&t, A, collect_cb, &c);
	T_EQ_INT(c.n, 1);
	wg_allowedips_free(&t);
}

int main(void)
{
	T_RUN(test_longest_prefix_v4);
	T_RUN(test_default_route_and_host_bits);
	T_RUN(test_v6);
	T_RUN(test_overlap_replace);
	T_RUN(test_remove);
	T_RUN(test_packets);
	T_RUN(test_model);
	T_RUN(test_peer_lists);
	return t_finish();
}
