/* SPDX-License-Identifier: MIT */
/* Unit tests for tun/packet.c: views, refusals, incremental and partial checksums against full recomputes, builders. */
#include <arpa/inet.h>
#include <linux/virtio_net.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "packet.h"
#include "t.h"

T_SUITE("tun_packet");

/* RFC 1071 the slow way: big-endian 16-bit words, end-around carry. Independent of packet.c. */
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

static uint32_t naive_pseudo(const uint8_t *ip, bool v6, uint8_t proto, size_t l4len)
{
	uint8_t tail[8] = {0};

	if (v6) {
		tail[2] = (uint8_t)(l4len >> 8);
		tail[3] = (uint8_t)l4len;
		tail[7] = proto;
		return naive_sum(naive_sum(0, ip + 8, 32), tail, 8);
	}
	tail[1] = proto;
	tail[2] = (uint8_t)(l4len >> 8);
	tail[3] = (uint8_t)l4len;
	return naive_sum(naive_sum(0, ip + 12, 8), tail, 4);
}

/* Whether the transport checksum of v verifies (the full sum is all ones). */
static bool l4_ok(const struct packet_view *v)
{
	return naive_sum(naive_pseudo(v->ip, v->family == 6, v->proto, v->l4len), v->l4,
	                 v->l4len) == 0xffff;
}

static bool ipv4_ok(const uint8_t *ip)
{
	return naive_sum(0, ip, (size_t)(ip[0] & 15) * 4) == 0xffff;
}

static unsigned rnd(void)
{
	return (unsigned)random();
}

/* A random TCP packet of family fam (4/6) with payload bytes, checksums complete. */
static size_t make_tcp(uint8_t *buf, int fam, size_t payload)
{
	size_t hl = fam == 4 ? 20 : 40, l4len = 20 + payload;
	uint8_t *t = buf + hl;

	memset(buf, 0, hl + l4len);
	if (fam == 4) {
		buf[0] = 0x45;
		buf[2] = (uint8_t)((hl + l4len) >> 8);
		buf[3] = (uint8_t)(hl + l4len);
		buf[8] = 64;
		buf[9] = IPPROTO_TCP;
		for (int i = 12; i < 20; i++)
			buf[i] = (uint8_t)rnd();
		packet_ipv4_csum(buf);
	} else {
		buf[0] = 0x60;
		buf[4] = (uint8_t)(l4len >> 8);
		buf[5] = (uint8_t)l4len;
		buf[6] = IPPROTO_TCP;
		buf[7] = 64;
		for (int i = 8; i < 40; i++)
			buf[i] = (uint8_t)rnd();
	}
	for (size_t i = 0; i < l4len; i++)
		t[i] = (uint8_t)rnd();
	t[12] = 5 << 4;
	packet_l4_csum(buf, fam == 6, hl, IPPROTO_TCP, l4len);
	return hl + l4len;
}

static void test_parse_tcp(void)
{
	uint8_t buf[2000];
	struct packet_view v;

	for (int fam = 4; fam <= 6; fam += 2) {
		size_t n = make_tcp(buf, fam, 100);

		T_EQ_INT(packet_parse(buf, n + 7, &v), PACKET_OK); /* trailing bytes ignored */
		T_EQ_INT(v.family, fam);
		T_EQ_INT(v.proto, IPPROTO_TCP);
		T_EQ_INT(v.len, n);
		T_EQ_INT(v.l4len, 120);
		T_EQ_INT(v.thl, 20);
		T_ASSERT(l4_ok(&v));
		T_EQ_INT(packet_parse(buf, n - 1, &v), PACKET_ERR_TRUNCATED);
	}
}

static void test_parse_refusals(void)
{
	uint8_t buf[2000], save[2000];
	struct packet_view v;
	size_t n = make_tcp(buf, 4, 10);

	memcpy(save, buf, n);
	buf[0] = 0x55;
	T_EQ_INT(packet_parse(buf, n, &v), PACKET_ERR_VERSION);
	buf[0] = 0x44; /* IHL 4 */
	T_EQ_INT(packet_parse(buf, n, &v), PACKET_ERR_LENGTH);
	buf[0] = 0x46; /* options */
	T_EQ_INT(packet_parse(buf, n, &v), PACKET_ERR_OPTIONS);
	memcpy(buf, save, n);
	buf[6] = 0x20; /* MF */
	T_EQ_INT(packet_parse(buf, n, &v), PACKET_ERR_FRAGMENT);
	buf[6] = 0;
	buf[7] = 1; /* an offset */
	T_EQ_INT(packet_parse(buf, n, &v), PACKET_ERR_FRAGMENT);
	buf[7] = 0;
	buf[6] = 0x40; /* DF alone is fine */
	T_EQ_INT(packet_parse(buf, n, &v), PACKET_OK);
	memcpy(buf, save, n);
	buf[2] = 0;
	buf[3] = 10; /* total length below the header */
	T_EQ_INT(packet_parse(buf, n, &v), PACKET_ERR_LENGTH);
	memcpy(buf, save, n);
	buf[3] += 1; /* one byte more than the buffer */
	T_EQ_INT(packet_parse(buf, n, &v), PACKET_ERR_TRUNCATED);
	memcpy(buf, save, n);
	buf[20 + 12] = 4 << 4; /* TCP data offset below 5 */
	T_EQ_INT(packet_parse(buf, n, &v), PACKET_ERR_LENGTH);
	buf[20 + 12] = 15 << 4; /* beyond the segment */
	T_EQ_INT(packet_parse(buf, n, &v), PACKET_ERR_TRUNCATED);
	T_EQ_INT(packet_parse(buf, 0, &v), PACKET_ERR_TRUNCATED);
	T_EQ_INT(packet_parse(buf, 19, &v), PACKET_ERR_TRUNCATED);
}

static void test_parse_v6_ext(void)
{
	uint8_t buf[2000];
	struct packet_view v;
	size_t n = make_tcp(buf, 6, 10);

	/* Insert a hop-by-hop header (8 bytes) before TCP. */
	memmove(buf + 48, buf + 40, n - 40);
	buf[40] = IPPROTO_TCP;
	buf[41] = 0;
	memset(buf + 42, 0, 6);
	buf[6] = IPPROTO_HOPOPTS;
	buf[5] += 8;
	T_EQ_INT(packet_parse(buf, n + 8, &v), PACKET_OK);
	T_EQ_INT(v.proto, IPPROTO_TCP);
	T_EQ_INT(v.l4 - v.ip, 48);
	buf[6] = IPPROTO_FRAGMENT;
	T_EQ_INT(packet_parse(buf, n + 8, &v), PACKET_ERR_FRAGMENT);
	buf[6] = IPPROTO_ROUTING;
	T_EQ_INT(packet_parse(buf, n + 8, &v), PACKET_ERR_OPTIONS);
	buf[6] = IPPROTO_HOPOPTS;
	buf[41] = 200; /* an extension longer than the packet */
	T_EQ_INT(packet_parse(buf, n + 8, &v), PACKET_ERR_TRUNCATED);
	buf[4] = buf[5] = 0; /* payload length 0: a jumbogram */
	T_EQ_INT(packet_parse(buf, n + 8, &v), PACKET_ERR_LENGTH);
}

static void test_parse_udp_len(void)
{
	uint8_t buf[200], a[16] = {10, 0, 0, 1}, b[16] = {10, 0, 0, 2};
	size_t hl = 20, n;
	struct packet_view v;

	memset(buf + hl + 8, 'x', 30);
	n = packet_build_udp(buf, 4, a, htons(1000), b, htons(53), 30);
	T_EQ_INT(n, 58);
	T_EQ_INT(packet_parse(buf, n, &v), PACKET_OK);
	T_EQ_INT(v.proto, IPPROTO_UDP);
	T_ASSERT(l4_ok(&v));
	T_ASSERT(ipv4_ok(buf));
	buf[hl + 5] -= 1; /* UDP length one short of the IP payload */
	T_EQ_INT(packet_parse(buf, n, &v), PACKET_ERR_LENGTH);
}

/*
 * The rewrite the NAT does, checked against a full recompute: random
 * packets, addresses and ports replaced, for complete checksums and for a
 * NEEDS_CSUM pseudo-header sum completed afterwards as the receiver would.
 */
static void test_incremental_equals_full(void)
{
	uint8_t buf[70000], copy[70000];
	int bad = 0;

	for (int i = 0; i < 2000; i++) {
		int fam = i & 1 ? 6 : 4;
		bool partial = i & 2;
		size_t payload = i % 7 == 0 ? 65000 : (size_t)(rnd() % 1500), n;
		struct packet_view v;
		uint8_t fresh[32], ports[4], *csum;
		size_t alen;

		n = make_tcp(buf, fam, payload);
		packet_parse(buf, n, &v);
		alen = packet_addr_len(&v);
		csum = v.l4 + PACKET_TCP_CSUM_OFF;
		if (partial) {
			/* what the kernel leaves for NEEDS_CSUM: the folded pseudo-header sum */
			uint16_t ps =
			        htons((uint16_t)naive_pseudo(buf, fam == 6, IPPROTO_TCP, v.l4len));
			memcpy(csum, &ps, 2);
		}
		for (size_t k = 0; k < 2 * alen; k++)
			fresh[k] = (uint8_t)rnd();
		for (int k = 0; k < 4; k++)
			ports[k] = (uint8_t)rnd();
		if (fam == 4)
			packet_csum_replace(buf + 10, packet_src(&v), fresh, 8, false);
		packet_csum_replace(csum, packet_src(&v), fresh, 2 * alen, partial);
		if (!partial)
			packet_csum_replace(csum, v.l4, ports, 4, false);
		memcpy(packet_src(&v), fresh, 2 * alen);
		memcpy(v.l4, ports, 4);
		if (fam == 4 && !ipv4_ok(buf))
			bad++;
		if (partial) {
			/* the receiver's part: sum from csum_start (the TCP header) on */
			uint16_t c = (uint16_t)~packet_csum_fold(packet_csum_add(0, v.l4, v.l4len));
			memcpy(csum, &c, 2);
		}
		memcpy(copy, buf, n);
		if (!l4_ok(&v))
			bad++;
		/* and the same as recomputing from scratch */
		packet_l4_csum(copy, fam == 6, (size_t)(v.l4 - v.ip), IPPROTO_TCP, v.l4len);
		if (memcmp(copy + (v.l4 - v.ip) + PACKET_TCP_CSUM_OFF, csum, 2) != 0 &&
		    !(csum[0] == 0xff && csum[1] == 0xff)) /* +0 and -0 both verify */
			bad++;
	}
	T_EQ_INT(bad, 0);
}

static void test_vnet(void)
{
	uint8_t buf[2000], hdr[PACKET_VNET_HDR];
	struct packet_vnet h = {.flags = VIRTIO_NET_HDR_F_NEEDS_CSUM,
	                        .gso_type = VIRTIO_NET_HDR_GSO_TCPV4,
	                        .hdr_len = 40,
	                        .gso_size = 1448,
	                        .csum_start = 20,
	                        .csum_offset = 16},
	                   g;
	struct packet_view v;
	size_t n = make_tcp(buf, 4, 1500);

	packet_vnet_put(hdr, &h);
	packet_vnet_get(hdr, &g);
	T_EQ_MEM(&g, &h, sizeof(g));
	packet_parse(buf, n, &v);
	T_ASSERT(packet_vnet_ok(&h, &v));
	h.csum_start = 24;
	T_ASSERT(!packet_vnet_ok(&h, &v));
	h.csum_start = 20;
	h.csum_offset = 6;
	T_ASSERT(!packet_vnet_ok(&h, &v));
	h.csum_offset = 16;
	h.gso_type = VIRTIO_NET_HDR_GSO_TCPV6; /* the wrong family */
	T_ASSERT(!packet_vnet_ok(&h, &v));
	h.gso_type = VIRTIO_NET_HDR_GSO_TCPV4 | VIRTIO_NET_HDR_GSO_ECN;
	T_ASSERT(packet_vnet_ok(&h, &v));
	h.gso_size = 0;
	T_ASSERT(!packet_vnet_ok(&h, &v));
	h.gso_size = 1448;
	h.flags = 0; /* GSO without NEEDS_CSUM */
	T_ASSERT(!packet_vnet_ok(&h, &v));
	h.gso_type = 77;
	h.flags = VIRTIO_NET_HDR_F_NEEDS_CSUM;
	T_ASSERT(!packet_vnet_ok(&h, &v));
	/* completing a partial sum in software */
	{
		uint16_t ps = htons((uint16_t)naive_pseudo(buf, false, IPPROTO_TCP, v.l4len));
		struct packet_vnet p = {
		        .flags = VIRTIO_NET_HDR_F_NEEDS_CSUM, .csum_start = 20, .csum_offset = 16};

		memcpy(v.l4 + 16, &ps, 2);
		T_ASSERT(!l4_ok(&v));
		packet_vnet_complete(&p, &v);
		T_ASSERT(l4_ok(&v));
		T_EQ_INT(p.flags, 0);
	}
}

/* packet_udp_header(): a full checksum that verifies, or a partial one that completes to it. */
static void test_udp_header(void)
{
	uint8_t pkt[2000], pay[1001];
	uint8_t a4[4] = {10, 0, 0, 1}, b4[4] = {10, 0, 0, 2}, a6[16] = {0xfd, [15] = 1},
	        b6[16] = {0xfd, [15] = 2};

	for (size_t i = 0; i < sizeof(pay); i++)
		pay[i] = (uint8_t)rnd();
	for (int fam = 4; fam <= 6; fam += 2) {
		for (int partial = 0; partial < 2; partial++) {
			struct packet_view v;
			size_t hl = packet_udp_header(pkt, fam, fam == 4 ? a4 : a6, htons(53),
			                              fam == 4 ? b4 : b6, htons(4000), pay,
			                              sizeof(pay), partial);

			T_EQ_INT(hl, (fam == 4 ? 20 : 40) + 8);
			memcpy(pkt + hl, pay, sizeof(pay));
			T_EQ_INT(packet_parse(pkt, hl + sizeof(pay), &v), PACKET_OK);
			T_EQ_INT(v.proto, IPPROTO_UDP);
			if (fam == 4)
				T_ASSERT(ipv4_ok(pkt));
			if (partial) {
				/* what the receiver adds: the sum from the UDP header on */
				uint16_t c = (uint16_t)~packet_csum_fold(
				        packet_csum_add(0, v.l4, v.l4len));
				memcpy(v.l4 + 6, &c, 2);
			}
			T_ASSERT(l4_ok(&v));
		}
	}
}

static void test_rst(void)
{
	uint8_t buf[2000], out[100];
	struct packet_view v, r;
	size_t n = make_tcp(buf, 4, 0), m;

	packet_parse(buf, n, &v);
	v.l4[13] = PACKET_TCP_SYN;
	memcpy(v.l4 + 4, "\x00\x00\x10\x00", 4); /* seq 4096 */
	m = packet_build_rst(out, &v);
	T_EQ_INT(m, 40);
	T_EQ_INT(packet_parse(out, m, &r), PACKET_OK);
	T_ASSERT(ipv4_ok(out));
	T_ASSERT(l4_ok(&r));
	T_EQ_MEM(packet_src(&r), packet_dst(&v), 4);
	T_EQ_MEM(packet_dst(&r), packet_src(&v), 4);
	T_EQ_MEM(r.l4, v.l4 + 2, 2);
	T_EQ_MEM(r.l4 + 2, v.l4, 2);
	T_EQ_INT(r.l4[13], PACKET_TCP_RST | PACKET_TCP_ACK);
	T_EQ_MEM(r.l4 + 8, "\x00\x00\x10\x01", 4); /* SYN counts one */
	/* with ACK: seq from it, no ACK */
	n = make_tcp(buf, 6, 5);
	packet_parse(buf, n, &v);
	v.l4[13] = PACKET_TCP_ACK;
	m = packet_build_rst(out, &v);
	T_EQ_INT(packet_parse(out, m, &r), PACKET_OK);
	T_ASSERT(l4_ok(&r));
	T_EQ_INT(r.l4[13], PACKET_TCP_RST);
	T_EQ_MEM(r.l4 + 4, v.l4 + 8, 4);
}

static void test_echo(void)
{
	uint8_t buf[200];
	struct packet_view v;
	uint8_t a[4] = {10, 1, 1, 1}, b[4] = {10, 1, 1, 2};

	for (int fam = 4; fam <= 6; fam += 2) {
		size_t hl = fam == 4 ? 20 : 40, l4len = 8 + 56, n = hl + l4len;

		memset(buf, 0, sizeof(buf));
		if (fam == 4) {
			buf[0] = 0x45;
			buf[3] = (uint8_t)n;
			buf[8] = 3;
			buf[9] = IPPROTO_ICMP;
			memcpy(buf + 12, a, 4);
			memcpy(buf + 16, b, 4);
			packet_ipv4_csum(buf);
		} else {
			buf[0] = 0x60;
			buf[5] = (uint8_t)l4len;
			buf[6] = IPPROTO_ICMPV6;
			buf[7] = 3;
			buf[23] = 1;
			buf[39] = 2;
		}
		buf[hl] = fam == 4 ? PACKET_ICMP_ECHO : PACKET_ICMP6_ECHO;
		for (size_t i = 4; i < l4len; i++)
			buf[hl + i] = (uint8_t)i;
		{
			uint32_t s = fam == 6 ? naive_pseudo(buf, true, IPPROTO_ICMPV6, l4len) : 0;
			uint16_t c = htons((uint16_t)~naive_sum(s, buf + hl, l4len));
			memcpy(buf + hl + 2, &c, 2);
		}
		T_EQ_INT(packet_parse(buf, n, &v), PACKET_OK);
		T_ASSERT(packet_echo_reply(&v));
		T_EQ_INT(v.l4[0], fam == 4 ? PACKET_ICMP_ECHO_REPLY : PACKET_ICMP6_ECHO_REPLY);
		if (fam == 4) {
			T_ASSERT(ipv4_ok(buf));
			T_EQ_MEM(buf + 12, b, 4);
			T_ASSERT(naive_sum(0, v.l4, v.l4len) == 0xffff);
		} else {
			T_EQ_INT(buf[23], 2);
			T_ASSERT(naive_sum(naive_pseudo(buf, true, IPPROTO_ICMPV6, l4len), v.l4,
			                   v.l4len) == 0xffff);
		}
		T_ASSERT(!packet_echo_reply(&v)); /* a reply is not answered */
	}
}

int main(void)
{
	srandom(12);
	T_RUN(test_parse_tcp);
	T_RUN(test_parse_refusals);
	T_RUN(test_parse_v6_ext);
	T_RUN(test_parse_udp_len);
	T_RUN(test_incremental_equals_full);
	T_RUN(test_vnet);
	T_RUN(test_udp_header);
	T_RUN(test_rst);
	T_RUN(test_echo);
	return t_finish();
}
