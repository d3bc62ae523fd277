/* SPDX-License-Identifier: MIT */
/* Unit tests for tun/nat.c: the life of an entry, fake tuples, capacity, refusals, the rewrite both ways. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "nat.h"
#include "packet.h"
#include "t.h"

T_SUITE("tun_nat");

static const uint8_t LISTEN4[4] = {198, 18, 0, 1}, POOL4[4] = {198, 18, 0, 3};
static const uint8_t APP4[4] = {198, 18, 0, 1}, REMOTE4[4] = {203, 0, 113, 7};
static uint8_t LISTEN6[16], POOL6[16], APP6[16], REMOTE6[16];
enum { LPORT = 40000 };

static uint32_t naive_sum(uint32_t s, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i + 1 < n; i += 2)
		s += (uint32_t)(p[i] << 8 | p[i + 1]);
	if (n & 1)
		s += (uint32_t)p[n - 1] << 8;
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return s;
}

static bool l4_ok(const struct packet_view *v)
{
	uint8_t tail[8] = {0};
	uint32_t s;

	if (v->family == 4) {
		tail[1] = v->proto;
		tail[2] = (uint8_t)(v->l4len >> 8);
		tail[3] = (uint8_t)v->l4len;
		s = naive_sum(naive_sum(0, v->ip + 12, 8), tail, 4);
	} else {
		tail[2] = (uint8_t)(v->l4len >> 8);
		tail[3] = (uint8_t)v->l4len;
		tail[7] = v->proto;
		s = naive_sum(naive_sum(0, v->ip + 8, 32), tail, 8);
	}
	return naive_sum(s, v->l4, v->l4len) == 0xffff;
}

static void init(struct nat *n, unsigned cap, uint64_t pool4)
{
	struct nat_cfg c = {.cap = cap, .linger_ms = 1000, .embryo_ms = 500};

	c.fam[0].on = true;
	memcpy(c.fam[0].listen, LISTEN4, 4);
	memcpy(c.fam[0].pool, POOL4, 4);
	c.fam[0].prefixlen = 15;
	c.fam[0].n_pool = pool4;
	c.fam[1].on = true;
	memcpy(c.fam[1].listen, LISTEN6, 16);
	memcpy(c.fam[1].pool, POOL6, 16);
	c.fam[1].prefixlen = 64;
	c.fam[1].n_pool = 1u << 20;
	c.ports[0] = htons(LPORT);
	c.ports[1] = htons(LPORT + 1);
	c.n_ports = 2;
	T_EQ_INT(nat_init(n, &c, 1000), 0);
}

/* A TCP segment src:sport → dst:dport with flags and 10 bytes of payload, checksums complete. */
static size_t seg(uint8_t *buf, int fam, const uint8_t *src, uint16_t sport, const uint8_t *dst,
                  uint16_t dport, uint8_t flags)
{
	size_t hl = fam == 4 ? 20 : 40, l4len = 30;
	uint8_t *t = buf + hl;
	uint16_t p;

	memset(buf, 0, hl + l4len);
	if (fam == 4) {
		buf[0] = 0x45;
		buf[3] = (uint8_t)(hl + l4len);
		buf[8] = 64;
		buf[9] = IPPROTO_TCP;
		memcpy(buf + 12, src, 4);
		memcpy(buf + 16, dst, 4);
		packet_ipv4_csum(buf);
	} else {
		buf[0] = 0x60;
		buf[5] = (uint8_t)l4len;
		buf[6] = IPPROTO_TCP;
		buf[7] = 64;
		memcpy(buf + 8, src, 16);
		memcpy(buf + 24, dst, 16);
	}
	p = htons(sport);
	memcpy(t, &p, 2);
	p = htons(dport);
	memcpy(t + 2, &p, 2);
	t[12] = 5 << 4;
	t[13] = flags;
	memset(t + 20, 'p', 10);
	packet_l4_csum(buf, fam == 6, hl, IPPROTO_TCP, l4len);
	return hl + l4len;
}

static void sa_of(struct sockaddr_storage *ss, const struct packet_view *v)
{
	memset(ss, 0, sizeof(*ss));
	if (v->family == 4) {
		struct sockaddr_in *s = (struct sockaddr_in *)ss;
		s->sin_family = AF_INET;
		memcpy(&s->sin_addr, packet_src(v), 4);
		memcpy(&s->sin_port, v->l4, 2);
	} else {
		struct sockaddr_in6 *s = (struct sockaddr_in6 *)ss;
		s->sin6_family = AF_INET6;
		memcpy(&s->sin6_addr, packet_src(v), 16);
		memcpy(&s->sin6_port, v->l4, 2);
	}
}

/* A whole flow both ways: SYN rewritten, listener's answer rewritten back, accept, release, expiry. */
static void test_flow(void)
{
	struct nat n;
	uint8_t buf[200], reply[200];
	struct packet_view v, r;
	struct sockaddr_storage peer;
	struct nat_flow fl;
	uint32_t ref;

	for (int fam = 4; fam <= 6; fam += 2) {
		const uint8_t *app = fam == 4 ? APP4 : APP6, *remote = fam == 4 ? REMOTE4 : REMOTE6;
		const uint8_t *listen = fam == 4 ? LISTEN4 : LISTEN6;
		size_t alen = fam == 4 ? 4 : 16, len;
		uint16_t fport;
		uint8_t fake[16];

		init(&n, 64, 100);
		len = seg(buf, fam, app, 5555, remote, 443, PACKET_TCP_SYN);
		T_EQ_INT(packet_parse(buf, len, &v), PACKET_OK);
		T_ASSERT(!nat_is_listener(&n, &v));
		T_EQ_INT(nat_from_app(&n, &v, false, 1000, 0), NAT_PASS);
		T_ASSERT(l4_ok(&v));
		T_EQ_MEM(packet_dst(&v), listen, alen);
		T_EQ_INT(ntohs(*(uint16_t *)(v.l4 + 2)), LPORT);
		memcpy(fake, packet_src(&v), alen);
		memcpy(&fport, v.l4, 2);
		T_ASSERT(memcmp(fake, app, alen) != 0);
		T_EQ_INT(nat_count(&n), 1);
		/* A retransmitted SYN takes the same fake tuple. */
		len = seg(buf, fam, app, 5555, remote, 443, PACKET_TCP_SYN);
		packet_parse(buf, len, &v);
		T_EQ_INT(nat_from_app(&n, &v, false, 1001, 0), NAT_PASS);
		T_EQ_MEM(packet_src(&v), fake, alen);
		T_EQ_INT(nat_count(&n), 1);
		/* The listener's SYN-ACK goes back as from the remote, to the app. */
		len = seg(reply, fam, listen, LPORT, fake, ntohs(fport),
		          PACKET_TCP_SYN | PACKET_TCP_ACK);
		packet_parse(reply, len, &r);
		T_ASSERT(nat_is_listener(&n, &r));
		T_EQ_INT(nat_from_listener(&n, &r, false), NAT_PASS);
		T_ASSERT(l4_ok(&r));
		T_EQ_MEM(packet_src(&r), remote, alen);
		T_EQ_MEM(packet_dst(&r), app, alen);
		T_EQ_INT(ntohs(*(uint16_t *)r.l4), 443);
		T_EQ_INT(ntohs(*(uint16_t *)(r.l4 + 2)), 5555);
		/* accept: the original flow */
		sa_of(&peer, &v);
		T_EQ_INT(nat_accept(&n, (struct sockaddr *)&peer, &fl, &ref, 1002), 0);
		T_EQ_INT(fl.dst.ss_family, fam == 4 ? AF_INET : AF_INET6);
		if (fam == 4) {
			const struct sockaddr_in *d = (const struct sockaddr_in *)&fl.dst;
			T_EQ_MEM(&d->sin_addr, remote, 4);
			T_EQ_INT(ntohs(d->sin_port), 443);
		} else {
			const struct sockaddr_in6 *d = (const struct sockaddr_in6 *)&fl.dst;
			T_EQ_MEM(&d->sin6_addr, remote, 16);
			T_EQ_INT(ntohs(d->sin6_port), 443);
		}
		T_EQ_INT(nat_accept(&n, (struct sockaddr *)&peer, &fl, &ref, 1002), -ENOENT);
		/* Open: no timeout at all, however long it is idle. */
		nat_expire(&n, 1000 + 3600 * 1000);
		T_EQ_INT(nat_count(&n), 1);
		len = seg(buf, fam, app, 5555, remote, 443, PACKET_TCP_ACK);
		packet_parse(buf, len, &v);
		T_EQ_INT(nat_from_app(&n, &v, false, 3600 * 1000, 0), NAT_PASS);
		/* Released: lingers 1 s (still translating), then is freed. */
		nat_release(&n, ref, 3600 * 1000);
		nat_release(&n, ref, 3600 * 1000); /* twice is harmless */
		len = seg(reply, fam, listen, LPORT, fake, ntohs(fport), PACKET_TCP_FIN);
		packet_parse(reply, len, &r);
		T_EQ_INT(nat_from_listener(&n, &r, false), NAT_PASS);
		nat_expire(&n, 3600 * 1000 + 999);
		T_EQ_INT(nat_count(&n), 1);
		nat_expire(&n, 3600 * 1000 + 1001);
		T_EQ_INT(nat_count(&n), 0);
		len = seg(reply, fam, listen, LPORT, fake, ntohs(fport), PACKET_TCP_ACK);
		packet_parse(reply, len, &r);
		T_EQ_INT(nat_from_listener(&n, &r, false), NAT_NO_FLOW);
		T_EQ_INT(n.st.released, 1);
		T_EQ_INT(n.st.expired_linger, 1);
		nat_destroy(&n);
	}
}

/* A new flow goes to the listener of the worker that read its SYN, and stays there. */
static void test_listeners(void)
{
	struct nat n;
	uint8_t buf[200], reply[200];
	struct packet_view v, r;
	uint16_t lport, fport;
	size_t len;

	init(&n, 64, 100);
	len = seg(buf, 4, APP4, 4000, REMOTE4, 80, PACKET_TCP_SYN);
	packet_parse(buf, len, &v);
	T_EQ_INT(nat_from_app(&n, &v, false, 1000, 1), NAT_PASS);
	memcpy(&lport, v.l4 + 2, 2);
	memcpy(&fport, v.l4, 2);
	T_EQ_INT(ntohs(lport), LPORT + 1);
	/* the retransmitted SYN, read by another worker, keeps its listener */
	len = seg(buf, 4, APP4, 4000, REMOTE4, 80, PACKET_TCP_SYN);
	packet_parse(buf, len, &v);
	T_EQ_INT(nat_from_app(&n, &v, false, 1001, 0), NAT_PASS);
	memcpy(&lport, v.l4 + 2, 2);
	T_EQ_INT(ntohs(lport), LPORT + 1);
	/* both listeners' packets are recognised as the listener's */
	len = seg(reply, 4, LISTEN4, LPORT + 1, packet_src(&v), ntohs(fport), PACKET_TCP_ACK);
	packet_parse(reply, len, &r);
	T_ASSERT(nat_is_listener(&n, &r));
	T_EQ_INT(nat_from_listener(&n, &r, false), NAT_PASS);
	len = seg(reply, 4, LISTEN4, LPORT + 2, POOL4, 1024, PACKET_TCP_ACK);
	packet_parse(reply, len, &r);
	T_ASSERT(!nat_is_listener(&n, &r));
	nat_destroy(&n);
}

static void test_embryo_expires(void)
{
	struct nat n;
	uint8_t buf[200];
	struct packet_view v;
	struct sockaddr_storage peer;
	struct nat_flow fl;
	uint32_t ref;
	size_t len;

	init(&n, 64, 100);
	len = seg(buf, 4, APP4, 1, REMOTE4, 80, PACKET_TCP_SYN);
	packet_parse(buf, len, &v);
	T_EQ_INT(nat_from_app(&n, &v, false, 2000, 0), NAT_PASS);
	sa_of(&peer, &v);
	nat_expire(&n, 2499);
	T_EQ_INT(nat_count(&n), 1);
	nat_expire(&n, 2500);
	T_EQ_INT(nat_count(&n), 0);
	T_EQ_INT(nat_accept(&n, (struct sockaddr *)&peer, &fl, &ref, 2600), -ENOENT);
	T_EQ_INT(n.st.expired_embryo, 1);
	/* an embryo the app resets lingers (1 s here) instead of waiting out embryo_ms */
	len = seg(buf, 4, APP4, 2, REMOTE4, 80, PACKET_TCP_SYN);
	packet_parse(buf, len, &v);
	T_EQ_INT(nat_from_app(&n, &v, false, 3000, 0), NAT_PASS);
	len = seg(buf, 4, APP4, 2, REMOTE4, 80, PACKET_TCP_RST);
	packet_parse(buf, len, &v);
	T_EQ_INT(nat_from_app(&n, &v, false, 3000, 0), NAT_PASS);
	nat_expire(&n, 3999);
	T_EQ_INT(nat_count(&n), 1);
	nat_expire(&n, 4000);
	T_EQ_INT(nat_count(&n), 0);
	nat_destroy(&n);
}

static void test_refusals(void)
{
	struct nat n;
	uint8_t buf[200], inpool[4] = {198, 18, 0, 77};
	struct packet_view v;
	size_t len;

	init(&n, 64, 100);
	/* not a SYN, no entry */
	len = seg(buf, 4, APP4, 1, REMOTE4, 80, PACKET_TCP_ACK);
	packet_parse(buf, len, &v);
	T_EQ_INT(nat_from_app(&n, &v, false, 1000, 0), NAT_NO_FLOW);
	/* SYN+ACK is not a new flow either */
	len = seg(buf, 4, APP4, 1, REMOTE4, 80, PACKET_TCP_SYN | PACKET_TCP_ACK);
	packet_parse(buf, len, &v);
	T_EQ_INT(nat_from_app(&n, &v, false, 1000, 0), NAT_NO_FLOW);
	/* to the pool or the listener itself */
	len = seg(buf, 4, APP4, 1, inpool, 80, PACKET_TCP_SYN);
	packet_parse(buf, len, &v);
	T_EQ_INT(nat_from_app(&n, &v, false, 1000, 0), NAT_BAD_DST);
	len = seg(buf, 4, APP4, 1, LISTEN4, 80, PACKET_TCP_SYN);
	packet_parse(buf, len, &v);
	T_EQ_INT(nat_from_app(&n, &v, false, 1000, 0), NAT_BAD_DST);
	{
		uint8_t edge[4] = {198, 19, 255, 255}, out[4] = {198, 20, 0, 0};

		len = seg(buf, 4, APP4, 1, edge, 80, PACKET_TCP_SYN); /* the prefix's last */
		packet_parse(buf, len, &v);
		T_EQ_INT(nat_from_app(&n, &v, false, 1000, 0), NAT_BAD_DST);
		len = seg(buf, 4, APP4, 1, out, 80, PACKET_TCP_SYN); /* just past it */
		packet_parse(buf, len, &v);
		T_EQ_INT(nat_from_app(&n, &v, false, 1000, 0), NAT_PASS);
		nat_expire(&n, 100000);
	}
	/* a listener packet to a fake tuple no entry holds */
	len = seg(buf, 4, LISTEN4, LPORT, POOL4, 1024, PACKET_TCP_ACK);
	packet_parse(buf, len, &v);
	T_EQ_INT(nat_from_listener(&n, &v, false), NAT_NO_FLOW);
	len = seg(buf, 4, LISTEN4, LPORT, POOL4, 80, PACKET_TCP_ACK); /* below the port range */
	packet_parse(buf, len, &v);
	T_EQ_INT(nat_from_listener(&n, &v, false), NAT_NO_FLOW);
	T_EQ_INT(nat_count(&n), 0);
	nat_destroy(&n);
}

/* Full: a SYN gets NAT_FULL; a lingering entry's tuple reused takes another fake tuple. */
static void test_capacity_and_reuse(void)
{
	struct nat n;
	uint8_t buf[200], fake1[4], fake2[4];
	struct packet_view v;
	struct sockaddr_storage peer;
	struct nat_flow fl;
	uint32_t ref;
	uint16_t p1, p2;
	size_t len;

	init(&n, 8, 100);
	for (int i = 0; i < 8; i++) {
		len = seg(buf, 4, APP4, (uint16_t)(100 + i), REMOTE4, 80, PACKET_TCP_SYN);
		packet_parse(buf, len, &v);
		T_EQ_INT(nat_from_app(&n, &v, false, 1000, 0), NAT_PASS);
	}
	len = seg(buf, 4, APP4, 999, REMOTE4, 80, PACKET_TCP_SYN);
	packet_parse(buf, len, &v);
	T_EQ_INT(nat_from_app(&n, &v, false, 1000, 0), NAT_FULL);
	T_EQ_INT(n.st.full, 1);
	nat_expire(&n, 2000);
	T_EQ_INT(nat_count(&n), 0);

	len = seg(buf, 4, APP4, 7, REMOTE4, 80, PACKET_TCP_SYN);
	packet_parse(buf, len, &v);
	T_EQ_INT(nat_from_app(&n, &v, false, 3000, 0), NAT_PASS);
	memcpy(fake1, packet_src(&v), 4);
	memcpy(&p1, v.l4, 2);
	sa_of(&peer, &v);
	T_EQ_INT(nat_accept(&n, (struct sockaddr *)&peer, &fl, &ref, 3000), 0);
	nat_release(&n, ref, 3000);
	/* the same app tuple again while the old entry lingers */
	len = seg(buf, 4, APP4, 7, REMOTE4, 80, PACKET_TCP_SYN);
	packet_parse(buf, len, &v);
	T_EQ_INT(nat_from_app(&n, &v, false, 3100, 0), NAT_PASS);
	memcpy(fake2, packet_src(&v), 4);
	memcpy(&p2, v.l4, 2);
	T_ASSERT(memcmp(fake1, fake2, 4) != 0 || p1 != p2);
	T_EQ_INT(nat_count(&n), 2);
	nat_destroy(&n);
}

/*
 * Fake tuples: distinct for every live entry, inside the pool, and a freed
 * index comes back with a tuple other than its last (clear of TIME_WAIT).
 */
static void test_fake_tuples(void)
{
	struct nat n;
	enum { CAP = 4096 };
	static uint8_t seen[CAP][6];
	uint8_t buf[200];
	struct packet_view v;
	size_t len;
	int dup = 0, outside = 0;

	init(&n, CAP, 3); /* 3 addresses x 64512 ports */
	for (int i = 0; i < CAP; i++) {
		len = seg(buf, 4, APP4, (uint16_t)(i + 1), REMOTE4, 80, PACKET_TCP_SYN);
		packet_parse(buf, len, &v);
		T_EQ_INT(nat_from_app(&n, &v, false, 1000, 0), NAT_PASS);
		memcpy(seen[i], packet_src(&v), 4);
		memcpy(seen[i] + 4, v.l4, 2);
		if (packet_src(&v)[3] < 3 || packet_src(&v)[3] > 5)
			outside++;
	}
	for (int i = 0; i < CAP; i++)
		for (int j = i + 1; j < CAP && j < i + 64; j++)
			dup += !memcmp(seen[i], seen[j], 6);
	T_EQ_INT(dup, 0);
	T_EQ_INT(outside, 0);
	nat_expire(&n, 5000);
	/* index 0 again, another tuple */
	len = seg(buf, 4, APP4, 1, REMOTE4, 80, PACKET_TCP_SYN);
	packet_parse(buf, len, &v);
	T_EQ_INT(nat_from_app(&n, &v, false, 6000, 0), NAT_PASS);
	T_ASSERT(memcmp(packet_src(&v), seen[CAP - 1], 4) || memcmp(v.l4, seen[CAP - 1] + 4, 2));
	T_ASSERT(memcmp(packet_src(&v), seen[0], 4) || memcmp(v.l4, seen[0] + 4, 2));
	nat_destroy(&n);
	/* a pool of one address caps the table at its ports */
	init(&n, 100000, 1);
	T_EQ_INT(n.cfg.cap, NAT_PORTS);
	nat_destroy(&n);
}

/* NEEDS_CSUM packets: the partial sum follows the addresses only, and completes right. */
static void test_partial(void)
{
	struct nat n;
	uint8_t buf[200];
	struct packet_view v;
	size_t len;

	init(&n, 64, 100);
	for (int fam = 4; fam <= 6; fam += 2) {
		uint8_t *csum;
		uint16_t c;

		len = seg(buf, fam, fam == 4 ? APP4 : APP6, 77, fam == 4 ? REMOTE4 : REMOTE6, 80,
		          PACKET_TCP_SYN);
		packet_parse(buf, len, &v);
		csum = v.l4 + 16;
		/* what the kernel leaves for NEEDS_CSUM: the folded pseudo-header sum */
		c = packet_csum_fold(packet_pseudo_sum(v.ip, fam == 6, IPPROTO_TCP, v.l4len));
		memcpy(csum, &c, 2);
		T_EQ_INT(nat_from_app(&n, &v, true, 1000, 0), NAT_PASS);
		c = (uint16_t)~packet_csum_fold(packet_csum_add(0, v.l4, v.l4len));
		memcpy(csum, &c, 2);
		T_ASSERT(l4_ok(&v));
	}
	nat_destroy(&n);
}

int main(void)
{
	inet_pton(AF_INET6, "fdfe:5370::1", LISTEN6);
	inet_pton(AF_INET6, "fdfe:5370::3", POOL6);
	inet_pton(AF_INET6, "fdfe:5370::1", APP6);
	inet_pton(AF_INET6, "2001:db8::7", REMOTE6);
	T_RUN(test_flow);
	T_RUN(test_listeners);
	T_RUN(test_embryo_expires);
	T_RUN(test_refusals);
	T_RUN(test_capacity_and_reuse);
	T_RUN(test_fake_tuples);
	T_RUN(test_partial);
	return t_finish();
}
