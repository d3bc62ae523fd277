/* SPDX-License-Identifier: MIT */
/* Unit tests for the TUN offloads: TSO splitting (checksums verified), GRO-style coalescing. */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/virtio_net.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "offload.h"
#include "packet.h"
#include "t.h"

T_SUITE("offload");

enum {
	SLOT = 1600,
	HEADROOM = 16, /* the WireGuard header's room, as the device uses it */
	TCP_ACK = 0x10,
	TCP_PSH = 0x08,
	TCP_FIN = 0x01,
	TCP_SYN = 0x02,
	TCP_CWR = 0x80,
};

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

static bool ipv4_csum_ok(const uint8_t *ip)
{
	return naive_sum(0, ip, (size_t)(ip[0] & 15) * 4) == 0xffff;
}

static uint32_t naive_pseudo(const uint8_t *ip, bool v6, uint8_t proto, size_t l4len)
{
	uint8_t ph[40] = {0};

	if (v6) {
		memcpy(ph, ip + 8, 32);
		return naive_sum(
		        naive_sum(0, ph, 32),
		        (uint8_t[]){0, 0, (uint8_t)(l4len >> 8), (uint8_t)l4len, 0, 0, 0, proto},
		        8);
	}
	memcpy(ph, ip + 12, 8);
	ph[9] = proto;
	ph[10] = (uint8_t)(l4len >> 8);
	ph[11] = (uint8_t)l4len;
	return naive_sum(0, ph, 12);
}

/* A received segment's full TCP/UDP checksum verifies. */
static bool l4_csum_ok(const uint8_t *ip, size_t len, bool v6, uint8_t proto)
{
	size_t iphl = v6 ? 40 : (size_t)(ip[0] & 15) * 4;

	return naive_sum(naive_pseudo(ip, v6, proto, len - iphl), ip + iphl, len - iphl) == 0xffff;
}

static uint8_t pattern(size_t i)
{
	return (uint8_t)(i * 7 + (i >> 8) * 13 + 1);
}

/*
 * Builds an IP+TCP packet at out: 12 bytes of TCP options (timestamps, as
 * Linux sends), payload pattern(from + i). Returns its length.
 */
static size_t build_tcp(uint8_t *out, bool v6, uint32_t seq, uint8_t flags, size_t plen,
                        size_t from)
{
	size_t iphl = v6 ? 40 : 20, thl = 32;
	uint8_t *th = out + iphl;
	uint32_t nseq = htonl(seq), ack = htonl(0x01020304);

	memset(out, 0, iphl + thl);
	if (v6) {
		uint16_t pl = htons((uint16_t)(thl + plen));

		out[0] = 0x60;
		memcpy(out + 4, &pl, 2);
		out[6] = IPPROTO_TCP;
		out[7] = 64;
		inet_pton(AF_INET6, "fd00::1", out + 8);
		inet_pton(AF_INET6, "fd00::2", out + 24);
	} else {
		uint16_t tl = htons((uint16_t)(iphl + thl + plen));

		out[0] = 0x45;
		memcpy(out + 2, &tl, 2);
		out[4] = 0x12;
		out[5] = 0x34;
		out[6] = 0x40; /* DF */
		out[8] = 64;
		out[9] = IPPROTO_TCP;
		inet_pton(AF_INET, "10.0.0.1", out + 12);
		inet_pton(AF_INET, "10.0.0.2", out + 16);
		uint16_t c = htons((uint16_t)~naive_sum(0, out, 20));
		memcpy(out + 10, &c, 2);
	}
	th[0] = 0x9c;
	th[1] = 0x40; /* port 40000 */
	th[2] = 0x14;
	th[3] = 0x51; /* 5201 */
	memcpy(th + 4, &nseq, 4);
	memcpy(th + 8, &ack, 4);
	th[12] = (uint8_t)((thl / 4) << 4);
	th[13] = flags;
	th[14] = 0x01;
	th[15] = 0xf5;
	/* NOP NOP TS(10) */
	th[20] = 1;
	th[21] = 1;
	th[22] = 8;
	th[23] = 10;
	for (int i = 24; i < 32; i++)
		th[i] = (uint8_t)i;
	for (size_t i = 0; i < plen; i++)
		out[iphl + thl + i] = pattern(from + i);
	return iphl + thl + plen;
}

/* Fills the virtio header of a TSO super-packet as the kernel does (checksum partial). */
static size_t tso_packet(uint8_t *buf, bool v6, uint32_t seq, uint8_t flags, size_t plen,
                         uint16_t mss)
{
	struct virtio_net_hdr h = {0};
	size_t len = build_tcp(buf + sizeof(h), v6, seq, flags, plen, 0);
	size_t iphl = v6 ? 40 : 20;

	h.flags = VIRTIO_NET_HDR_F_NEEDS_CSUM;
	h.gso_type = v6 ? VIRTIO_NET_HDR_GSO_TCPV6 : VIRTIO_NET_HDR_GSO_TCPV4;
	h.gso_size = mss;
	h.hdr_len = (uint16_t)(iphl + 32);
	h.csum_start = (uint16_t)iphl;
	h.csum_offset = 16;
	memcpy(buf, &h, sizeof(h));
	return len + sizeof(h);
}

static void test_csum_helpers(void)
{
	uint8_t buf[1501];

	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 31 + 5);
	for (size_t n = 0; n <= sizeof(buf); n += (n < 70 ? 1 : 97)) {
		/* packet_csum_add works in host order (little endian); fold and swap to compare. */
		uint16_t mine = packet_csum_fold(packet_csum_add(0, buf, n));

		if (ntohs(mine) != naive_sum(0, buf, n))
			T_FAILF("length %zu: 0x%04x != 0x%04x", n, ntohs(mine),
			        naive_sum(0, buf, n));
	}
	/* all-ones input sums to 0xffff without losing carries */
	memset(buf, 0xff, sizeof(buf));
	T_EQ_INT(packet_csum_fold(packet_csum_add(0, buf, 1500)), 0xffff);
	T_EQ_INT(packet_csum_fold(0x1ffffu), 1);
}

/* Splits a TSO packet and checks every segment in full. */
static void check_split(bool v6, size_t plen, uint16_t mss, uint8_t flags)
{
	static uint8_t in[OFFLOAD_MAX_PACKET];
	static uint8_t slots[OFFLOAD_MAX_SEGS * SLOT];
	size_t lens[OFFLOAD_MAX_SEGS], inlen = tso_packet(in, v6, 1000, flags, plen, mss);
	size_t iphl = v6 ? 40 : 20, hdr = iphl + 32, want = (plen + mss - 1) / mss, off = 0;
	int n = offload_segment(in, inlen, slots, SLOT, HEADROOM, OFFLOAD_MAX_SEGS, lens);

	if (n != (int)want) {
		T_FAILF("v6=%d plen=%zu mss=%u: %d segments, expected %zu", v6, plen, mss, n, want);
		return;
	}
	for (int i = 0; i < n; i++) {
		uint8_t *ip = slots + (size_t)i * SLOT + HEADROOM, *th = ip + iphl;
		size_t seg = plen - off < mss ? plen - off : mss;
		uint32_t seq;
		bool last = i == n - 1;

		T_EQ_INT(lens[i], hdr + seg);
		if (v6) {
			T_EQ_INT(ip[4] << 8 | ip[5], 32 + seg);
		} else {
			T_EQ_INT(ip[2] << 8 | ip[3], hdr + seg);
			T_EQ_INT(ip[4] << 8 | ip[5], 0x1234 + i); /* IP ID counts up */
			T_ASSERT(ipv4_csum_ok(ip));
		}
		T_ASSERT(l4_csum_ok(ip, lens[i], v6, IPPROTO_TCP));
		memcpy(&seq, th + 4, 4);
		T_EQ_INT(ntohl(seq), 1000 + off);
		/* FIN/PSH only on the last segment, CWR only on the first */
		T_EQ_INT(th[13] & (TCP_FIN | TCP_PSH), last ? flags & (TCP_FIN | TCP_PSH) : 0);
		T_EQ_INT(th[13] & TCP_CWR, i == 0 ? flags & TCP_CWR : 0);
		T_EQ_INT(th[13] & TCP_ACK, TCP_ACK);
		for (size_t k = 0; k < seg; k++)
			if (ip[hdr + k] != pattern(off + k)) {
				T_FAILF("segment %d byte %zu differs", i, k);
				break;
			}
		off += seg;
	}
}

static void test_split_tso(void)
{
	check_split(false, 10000, 1368, TCP_ACK | TCP_PSH);
	check_split(true, 10000, 1348, TCP_ACK | TCP_PSH | TCP_CWR);
	check_split(false, 1368 * 4, 1368, TCP_ACK | TCP_FIN | TCP_CWR); /* exact multiple */
	check_split(false, 1, 1368, TCP_ACK);                            /* one short segment */
	check_split(true, 65000, 1348, TCP_ACK);                         /* 49 segments */
	check_split(false, 999, 100, TCP_ACK | TCP_PSH);                 /* odd sizes */
}

static void test_split_plain(void)
{
	static uint8_t in[2048], slots[2 * SLOT];
	struct virtio_net_hdr h = {0};
	size_t lens[2], len;
	uint8_t *ip = in + sizeof(h), *out = slots + HEADROOM;

	/* No offload at all: copied as is. */
	len = build_tcp(ip, false, 5, TCP_ACK, 100, 0);
	memcpy(in, &h, sizeof(h));
	T_EQ_INT(offload_segment(in, sizeof(h) + len, slots, SLOT, HEADROOM, 2, lens), 1);
	T_EQ_INT(lens[0], len);
	T_EQ_MEM(out, ip, len);

	/* A UDP datagram with a partial checksum (pseudo-header sum in the field) gets it completed. */
	memset(ip, 0, 28 + 333);
	ip[0] = 0x45;
	ip[2] = (28 + 333) >> 8;
	ip[3] = (28 + 333) & 0xff;
	ip[8] = 64;
	ip[9] = IPPROTO_UDP;
	inet_pton(AF_INET, "10.0.0.1", ip + 12);
	inet_pton(AF_INET, "10.0.0.2", ip + 16);
	ip[20] = 0x30;
	ip[22] = 0x30;
	ip[24] = (8 + 333) >> 8;
	ip[25] = (8 + 333) & 0xff;
	for (int i = 0; i < 333; i++)
		ip[28 + i] = pattern((size_t)i);
	{
		uint16_t ps = htons((uint16_t)naive_pseudo(ip, false, IPPROTO_UDP, 8 + 333));

		memcpy(ip + 26, &ps, 2);
	}
	h.flags = VIRTIO_NET_HDR_F_NEEDS_CSUM;
	h.csum_start = 20;
	h.csum_offset = 6;
	memcpy(in, &h, sizeof(h));
	T_EQ_INT(offload_segment(in, sizeof(h) + 28 + 333, slots, SLOT, HEADROOM, 2, lens), 1);
	T_ASSERT(l4_csum_ok(out, lens[0], false, IPPROTO_UDP));
}

static void test_split_rejects(void)
{
	static uint8_t in[OFFLOAD_MAX_PACKET], slots[4 * SLOT];
	struct virtio_net_hdr h;
	size_t lens[4], len;

	/* too short for a header and one byte */
	T_EQ_INT(offload_segment(in, 10, slots, SLOT, HEADROOM, 4, lens), -EINVAL);
	/* more segments than room */
	len = tso_packet(in, false, 1, TCP_ACK, 10000, 1368);
	T_EQ_INT(offload_segment(in, len, slots, SLOT, HEADROOM, 4, lens), -E2BIG);
	/* max 0 for an unsegmented packet */
	memset(&h, 0, sizeof(h));
	memcpy(in, &h, sizeof(h));
	T_EQ_INT(offload_segment(in, 100, slots, SLOT, HEADROOM, 0, lens), -EINVAL);
	/* an unsegmented packet larger than a slot */
	T_EQ_INT(offload_segment(in, sizeof(h) + SLOT, slots, SLOT, HEADROOM, 4, lens), -EINVAL);
	/* NEEDS_CSUM pointing past the end */
	h.flags = VIRTIO_NET_HDR_F_NEEDS_CSUM;
	h.csum_start = 90;
	h.csum_offset = 16;
	memcpy(in, &h, sizeof(h));
	T_EQ_INT(offload_segment(in, sizeof(h) + 100, slots, SLOT, HEADROOM, 4, lens), -EINVAL);
	/* gso_size 0 */
	len = tso_packet(in, false, 1, TCP_ACK, 3000, 0);
	T_EQ_INT(offload_segment(in, len, slots, SLOT, HEADROOM, 4, lens), -EINVAL);
	/* mss larger than a slot */
	len = tso_packet(in, false, 1, TCP_ACK, 3000, 2000);
	T_EQ_INT(offload_segment(in, len, slots, SLOT, HEADROOM, 4, lens), -EINVAL);
	/* UDP GSO is not something a TUN hands us here */
	len = tso_packet(in, false, 1, TCP_ACK, 3000, 1000);
	memcpy(&h, in, sizeof(h));
	h.gso_type = VIRTIO_NET_HDR_GSO_UDP;
	memcpy(in, &h, sizeof(h));
	T_EQ_INT(offload_segment(in, len, slots, SLOT, HEADROOM, 4, lens), -EINVAL);
	/* TCPV4 declared, IPv6 packet inside; TCPV6 declared, IPv4 inside */
	len = tso_packet(in, true, 1, TCP_ACK, 3000, 1000);
	memcpy(&h, in, sizeof(h));
	h.gso_type = VIRTIO_NET_HDR_GSO_TCPV4;
	memcpy(in, &h, sizeof(h));
	T_EQ_INT(offload_segment(in, len, slots, SLOT, HEADROOM, 4, lens), -EINVAL);
	len = tso_packet(in, false, 1, TCP_ACK, 3000, 1000);
	memcpy(&h, in, sizeof(h));
	h.gso_type = VIRTIO_NET_HDR_GSO_TCPV6;
	memcpy(in, &h, sizeof(h));
	T_EQ_INT(offload_segment(in, len, slots, SLOT, HEADROOM, 4, lens), -EINVAL);
	/* not TCP inside */
	len = tso_packet(in, false, 1, TCP_ACK, 3000, 1000);
	in[sizeof(h) + 9] = IPPROTO_UDP;
	T_EQ_INT(offload_segment(in, len, slots, SLOT, HEADROOM, 4, lens), -EINVAL);
	/* TCP data offset below 5 words, and headers cut short */
	len = tso_packet(in, false, 1, TCP_ACK, 3000, 1000);
	in[sizeof(h) + 20 + 12] = 0x40;
	T_EQ_INT(offload_segment(in, len, slots, SLOT, HEADROOM, 4, lens), -EINVAL);
	len = tso_packet(in, false, 1, TCP_ACK, 3000, 1000);
	T_EQ_INT(offload_segment(in, sizeof(h) + 45, slots, SLOT, HEADROOM, 4, lens), -EINVAL);
	/* IPv4 IHL below 5 */
	in[sizeof(h)] = 0x44;
	T_EQ_INT(offload_segment(in, len, slots, SLOT, HEADROOM, 4, lens), -EINVAL);
}

/* Reads one message of the SEQPACKET socket the coalescer wrote to; 0 when none is left. */
static ssize_t next_write(int fd, uint8_t *buf, size_t cap)
{
	ssize_t n = recv(fd, buf, cap, MSG_DONTWAIT);

	return n < 0 ? 0 : n;
}

struct pkts {
	uint8_t *mem;
	struct offload_pkt p[OFFLOAD_MAX_SEGS];
	unsigned int n;
};

static void pkts_add(struct pkts *s, bool v6, uint32_t seq, uint8_t flags, size_t plen, size_t from)
{
	uint8_t *d = s->mem + (size_t)s->n * SLOT + HEADROOM;

	s->p[s->n].data = d;
	s->p[s->n].len = build_tcp(d, v6, seq, flags, plen, from);
	s->n++;
}

/* A run of full segments of one flow becomes one GSO write that splits back into the same segments. */
static void check_train(bool v6)
{
	static uint8_t mem[OFFLOAD_MAX_SEGS * SLOT], scratch[OFFLOAD_MAX_PACKET],
	        got[OFFLOAD_MAX_PACKET], slots[OFFLOAD_MAX_SEGS * SLOT];
	struct pkts s = {.mem = mem};
	size_t iphl = v6 ? 40 : 20, hdr = iphl + 32, mss = 1300, lens[OFFLOAD_MAX_SEGS];
	struct virtio_net_hdr h;
	int sv[2];
	ssize_t n;

	T_ASSERT(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv) == 0);
	int big = 1 << 20;
	setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &big, sizeof(big));
	for (int i = 0; i < 5; i++)
		pkts_add(&s, v6, 7000 + (uint32_t)(i * mss), TCP_ACK | (i == 4 ? TCP_PSH : 0),
		         i == 4 ? 200 : mss, (size_t)i * mss);
	T_EQ_INT(offload_coalesce_write(sv[0], s.p, s.n, scratch), 0);
	n = next_write(sv[1], got, sizeof(got));
	T_EQ_INT(n, sizeof(h) + hdr + 4 * mss + 200);
	memcpy(&h, got, sizeof(h));
	T_EQ_INT(h.gso_type, v6 ? VIRTIO_NET_HDR_GSO_TCPV6 : VIRTIO_NET_HDR_GSO_TCPV4);
	T_EQ_INT(h.gso_size, mss);
	T_EQ_INT(h.hdr_len, hdr);
	T_EQ_INT(h.csum_start, iphl);
	T_EQ_INT(h.csum_offset, 16);
	T_ASSERT(h.flags & VIRTIO_NET_HDR_F_NEEDS_CSUM);
	if (!v6)
		T_ASSERT(ipv4_csum_ok(got + sizeof(h)));
	/* the train carries the last segment's PSH */
	T_ASSERT(got[sizeof(h) + iphl + 13] & TCP_PSH);
	/* the checksum field holds the pseudo-header sum of the whole train (CHECKSUM_PARTIAL) */
	{
		uint8_t *ip = got + sizeof(h);
		uint16_t field = (uint16_t)(ip[iphl + 16] << 8 | ip[iphl + 17]);

		T_EQ_INT(field, naive_pseudo(ip, v6, IPPROTO_TCP, (size_t)n - sizeof(h) - iphl));
	}
	for (size_t k = 0; k < 4 * mss + 200; k++)
		if (got[sizeof(h) + hdr + k] != pattern(k)) {
			T_FAILF("train byte %zu differs", k);
			break;
		}
	/* and the kernel's view: split it again, the same five segments come out */
	T_EQ_INT(offload_segment(got, (size_t)n, slots, SLOT, HEADROOM, OFFLOAD_MAX_SEGS, lens), 5);
	for (unsigned int i = 0; i < 5; i++) {
		uint8_t *a = slots + (size_t)i * SLOT + HEADROOM;

		T_EQ_INT(lens[i], s.p[i].len);
		/* TCP header and payload as sent (the originals carry no checksum: skip it) */
		T_EQ_MEM(a + iphl, s.p[i].data + iphl, 16);
		T_EQ_MEM(a + iphl + 18, s.p[i].data + iphl + 18, lens[i] - iphl - 18);
		T_ASSERT(l4_csum_ok(a, lens[i], v6, IPPROTO_TCP));
	}
	T_EQ_INT(next_write(sv[1], got, sizeof(got)), 0);
	close(sv[0]);
	close(sv[1]);
}

static void test_coalesce_train(void)
{
	check_train(false);
	check_train(true);
}

/* What must not coalesce: each case writes the listed number of packets. */
static void test_coalesce_breaks(void)
{
	static uint8_t mem[OFFLOAD_MAX_SEGS * SLOT], scratch[OFFLOAD_MAX_PACKET],
	        got[OFFLOAD_MAX_PACKET];
	struct virtio_net_hdr h;
	int sv[2], big = 4 << 20;
	size_t mss = 1000;

	T_ASSERT(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv) == 0);
	setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &big, sizeof(big));

	struct {
		const char *what;
		unsigned int writes;
	} cases[] = {
	        {"gap in sequence", 2},  {"other flow", 2},       {"psh ends train", 2},
	        {"short ends train", 2}, {"syn alone", 3},        {"v4 then v6", 2},
	        {"ipv4 fragment", 3},    {"64 segment limit", 2}, {"udp single", 1},
	};
	for (unsigned int c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		struct pkts s = {.mem = mem};
		unsigned int writes = 0;
		ssize_t n;

		switch (c) {
		case 0:
			pkts_add(&s, false, 0, TCP_ACK, mss, 0);
			pkts_add(&s, false, (uint32_t)mss + 1, TCP_ACK, mss, 0);
			break;
		case 1:
			pkts_add(&s, false, 0, TCP_ACK, mss, 0);
			pkts_add(&s, false, (uint32_t)mss, TCP_ACK, mss, 0);
			s.p[1].data[20 + 1]++; /* source port */
			break;
		case 2:
			pkts_add(&s, false, 0, TCP_ACK | TCP_PSH, mss, 0);
			pkts_add(&s, false, (uint32_t)mss, TCP_ACK, mss, 0);
			break;
		case 3:
			/* a shorter segment ends the train; what follows starts a new write */
			pkts_add(&s, false, 0, TCP_ACK, mss, 0);
			pkts_add(&s, false, (uint32_t)mss, TCP_ACK, 500, 0);
			pkts_add(&s, false, (uint32_t)mss + 500, TCP_ACK, mss, 0);
			break;
		case 4:
			pkts_add(&s, false, 0, TCP_ACK, mss, 0);
			pkts_add(&s, false, (uint32_t)mss, TCP_SYN | TCP_ACK, mss, 0);
			pkts_add(&s, false, 2 * (uint32_t)mss, TCP_ACK, mss, 0);
			break;
		case 5:
			pkts_add(&s, false, 0, TCP_ACK, mss, 0);
			pkts_add(&s, true, (uint32_t)mss, TCP_ACK, mss, 0);
			break;
		case 6:
			pkts_add(&s, false, 0, TCP_ACK, mss, 0);
			pkts_add(&s, false, (uint32_t)mss, TCP_ACK, mss, 0);
			s.p[1].data[6] |= 0x20; /* more fragments */
			pkts_add(&s, false, 2 * (uint32_t)mss, TCP_ACK, mss, 0);
			break;
		case 7:
			for (unsigned int i = 0; i < 65; i++)
				pkts_add(&s, false, i * 500u, TCP_ACK, 500, 0);
			break;
		case 8:
			pkts_add(&s, false, 0, TCP_ACK, 100, 0);
			s.p[0].data[9] = IPPROTO_UDP;
			break;
		}
		T_EQ_INT(offload_coalesce_write(sv[0], s.p, s.n, scratch), 0);
		while ((n = next_write(sv[1], got, sizeof(got))) > 0) {
			memcpy(&h, got, sizeof(h));
			/* singles go out marked checksum-valid (the AEAD authenticated them) */
			if (h.gso_type == VIRTIO_NET_HDR_GSO_NONE &&
			    !(h.flags & VIRTIO_NET_HDR_F_DATA_VALID))
				T_FAILF("%s: single write not DATA_VALID", cases[c].what);
			writes++;
		}
		if (writes != cases[c].writes)
			T_FAILF("%s: %u writes, expected %u", cases[c].what, writes,
			        cases[c].writes);
	}
	close(sv[0]);
	close(sv[1]);
}

/* A write failing (closed peer) is counted, not fatal. */
static void test_coalesce_errors(void)
{
	static uint8_t mem[4 * SLOT], scratch[OFFLOAD_MAX_PACKET];
	struct pkts s = {.mem = mem};
	int sv[2];

	T_ASSERT(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv) == 0);
	close(sv[1]);
	pkts_add(&s, false, 0, TCP_ACK, 100, 0);
	pkts_add(&s, false, 5000, TCP_ACK, 100, 0);
	signal(SIGPIPE, SIG_IGN);
	T_EQ_INT(offload_coalesce_write(sv[0], s.p, s.n, scratch), 2);
	close(sv[0]);
}

int main(void)
{
	T_RUN(test_csum_helpers);
	T_RUN(test_split_tso);
	T_RUN(test_split_plain);
	T_RUN(test_split_rejects);
	T_RUN(test_coalesce_train);
	T_RUN(test_coalesce_breaks);
	T_RUN(test_coalesce_errors);
	return t_finish();
}
