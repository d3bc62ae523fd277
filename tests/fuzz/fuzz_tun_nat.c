/* SPDX-License-Identifier: MIT */
/* libFuzzer target: what a TUN queue does with each read (tun/packet.c's parser and virtio-net checks, tun/nat.c both ways, echo replies, RSTs). */
#include "fuzz.h"
#include "nat.h"
#include "packet.h"

#include <linux/virtio_net.h>

/*
 * Input: [selector] then records [len hi][len lo][bytes], each one TUN read
 * (a virtio_net_hdr then the packet when selector bit 0 is set, as with
 * offloads on). Each read gets what tun_queue.c gives it: parse, header
 * check, then for TCP the NAT in the direction its addresses say, for ICMP
 * an echo reply, and for a SYN the table refuses, a RST. Selector bits 1-2:
 * of each accepted TCP packet, accept its flow (as the listener's accept
 * would, with the rewritten source as the peer), and release it. Bit 3:
 * the clock jumps a second per read, so embryos and lingering entries
 * expire mid-input. Bit 4: new flows go to the second listener. The table is small (64 entries, a pool of 2 IPv4
 * addresses and 2^20 IPv6 ones) and lives across inputs, so a run goes
 * through every state, capacity included. Every read is an exact-size heap
 * block: ASan sees any access outside it.
 */
static struct nat nat;
static uint64_t now = 1000;

static void init(void)
{
	struct nat_cfg c = {.cap = 64, .linger_ms = 2000, .embryo_ms = 3000};
	static const uint8_t l4[4] = {198, 18, 0, 1}, p4[4] = {198, 18, 0, 3};
	static const uint8_t l6[16] = {0xfd, 0xfe, 0x53, 0x70, [15] = 1};
	static const uint8_t p6[16] = {0xfd, 0xfe, 0x53, 0x70, [15] = 3};

	c.fam[0].on = c.fam[1].on = true;
	memcpy(c.fam[0].listen, l4, 4);
	memcpy(c.fam[0].pool, p4, 4);
	c.fam[0].prefixlen = 29;
	c.fam[0].n_pool = 2;
	memcpy(c.fam[1].listen, l6, 16);
	memcpy(c.fam[1].pool, p6, 16);
	c.fam[1].prefixlen = 64;
	c.fam[1].n_pool = 1u << 20;
	c.ports[0] = htons(40000);
	c.ports[1] = htons(40001);
	c.n_ports = 2;
	CHECK(nat_init(&nat, &c, now) == 0);
}

static void peer_of(const struct packet_view *v, struct sockaddr_storage *ss)
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

static void one_read(uint8_t *buf, size_t n, uint8_t sel)
{
	size_t hl = sel & 1 ? PACKET_VNET_HDR : 0;
	struct packet_vnet h = {0};
	struct packet_view v;
	uint8_t out[PACKET_IPV6_HDR + PACKET_TCP_MIN_HDR];

	if (n < hl)
		return;
	if (hl)
		packet_vnet_get(buf, &h);
	if (packet_parse(buf + hl, n - hl, &v) != PACKET_OK)
		return;
	CHECK(v.ip == buf + hl && v.len <= n - hl && v.l4 >= v.ip &&
	      v.l4 + v.l4len == v.ip + v.len);
	if (hl && !packet_vnet_ok(&h, &v))
		return;
	if (v.proto == IPPROTO_ICMP || v.proto == IPPROTO_ICMPV6) {
		if (h.gso_type == VIRTIO_NET_HDR_GSO_NONE) {
			packet_vnet_complete(&h, &v);
			packet_echo_reply(&v);
		}
		return;
	}
	if (v.proto != IPPROTO_TCP)
		return;
	CHECK(v.thl >= PACKET_TCP_MIN_HDR && v.thl <= v.l4len);
	bool partial = h.flags & VIRTIO_NET_HDR_F_NEEDS_CSUM;
	if (nat_is_listener(&nat, &v)) {
		nat_from_listener(&nat, &v, partial);
		return;
	}
	switch (nat_from_app(&nat, &v, partial, now, (sel >> 4) & 1)) {
	case NAT_FULL:
		CHECK(packet_build_rst(out, &v) <= sizeof(out));
		break;
	case NAT_PASS:
		if (sel & 6) {
			struct sockaddr_storage peer;
			struct nat_flow fl;
			uint32_t ref;

			peer_of(&v, &peer);
			if (nat_accept(&nat, (struct sockaddr *)&peer, &fl, &ref, now) == 0) {
				CHECK(fl.dst.ss_family == (v.family == 4 ? AF_INET : AF_INET6));
				if (sel & 4)
					nat_release(&nat, ref, now);
			}
		}
		break;
	default:
		break;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t off = 1;
	uint8_t sel;

	if (!nat.e)
		init();
	if (size < 1)
		return 0;
	sel = data[0];
	while (off + 2 <= size) {
		size_t len = (size_t)data[off] << 8 | data[off + 1];
		uint8_t *buf;

		off += 2;
		if (len > size - off)
			len = size - off;
		buf = malloc(len ? len : 1);
		CHECK(buf);
		memcpy(buf, data + off, len);
		one_read(buf, len, sel);
		free(buf);
		off += len;
		if (sel & 8)
			now += 1000;
		nat_expire(&nat, now);
		CHECK(nat_count(&nat) <= nat.cfg.cap);
	}
	return 0;
}
