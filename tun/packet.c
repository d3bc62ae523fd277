/* SPDX-License-Identifier: MIT */
/* IPv4/IPv6/TCP/UDP/ICMP views, virtio-net headers and Internet checksums (RFC 1071, 1624). */
#include "packet.h"

#include <arpa/inet.h>
#include <linux/virtio_net.h>
#include <netinet/in.h>
#include <string.h>

uint32_t packet_csum_add(uint32_t sum, const void *data, size_t len)
{
	const uint8_t *p = data;
	uint64_t s = sum;

	/* 32 bits at a time into a 64-bit accumulator: no carry is lost before the fold. */
	while (len >= 4) {
		uint32_t w;

		memcpy(&w, p, 4);
		s += w;
		p += 4;
		len -= 4;
	}
	if (len >= 2) {
		uint16_t h;

		memcpy(&h, p, 2);
		s += h;
		p += 2;
		len -= 2;
	}
	if (len) {
		/* the odd last byte, padded with a zero byte (RFC 1071), as a host-order word:
		 * its low byte on a little-endian host, its high byte on a big-endian one */
		uint16_t h = 0;

		memcpy(&h, p, 1);
		s += h;
	}
	while (s >> 32)
		s = (s & 0xffffffffu) + (s >> 32);
	return (uint32_t)s;
}

uint16_t packet_csum_fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)sum;
}

uint32_t packet_pseudo_sum(const uint8_t *ip, bool v6, uint8_t proto, size_t l4len)
{
	uint32_t s;
	uint16_t w[2] = {htons(proto), htons((uint16_t)l4len)};

	if (v6) {
		uint32_t l = htonl((uint32_t)l4len), pr = htonl(proto);

		s = packet_csum_add(0, ip + 8, 32);
		s = packet_csum_add(s, &l, 4);
		return packet_csum_add(s, &pr, 4);
	}
	s = packet_csum_add(0, ip + 12, 8);
	return packet_csum_add(s, w, 4);
}

void packet_ipv4_csum(uint8_t *ip)
{
	size_t ihl = (size_t)(ip[0] & 15) * 4;
	uint16_t c;

	ip[10] = ip[11] = 0;
	c = (uint16_t)~packet_csum_fold(packet_csum_add(0, ip, ihl));
	memcpy(ip + 10, &c, 2);
}

void packet_l4_csum(uint8_t *ip, bool v6, size_t iphl, uint8_t proto, size_t l4len)
{
	uint8_t *l4 = ip + iphl;
	size_t off = proto == IPPROTO_TCP ? PACKET_TCP_CSUM_OFF : PACKET_UDP_CSUM_OFF;
	uint16_t c;

	l4[off] = l4[off + 1] = 0;
	c = (uint16_t)~packet_csum_fold(
	        packet_csum_add(packet_pseudo_sum(ip, v6, proto, l4len), l4, l4len));
	if (proto == IPPROTO_UDP && c == 0)
		c = 0xffff; /* RFC 768: zero means "no checksum", so all ones stands for it */
	memcpy(l4 + off, &c, 2);
}

void packet_csum_replace(uint8_t *csum, const void *old, const void *new_, size_t n, bool partial)
{
	const uint8_t *o = old, *nw = new_;
	uint16_t c;
	uint32_t s;

	memcpy(&c, csum, 2);
	s = partial ? c : (uint16_t)~c;
	for (size_t i = 0; i + 1 < n; i += 2) {
		uint16_t a, b;

		memcpy(&a, o + i, 2);
		memcpy(&b, nw + i, 2);
		s += (uint16_t)~a;
		s += b;
	}
	c = packet_csum_fold(s);
	if (!partial)
		c = (uint16_t)~c;
	memcpy(csum, &c, 2);
}

uint8_t *packet_l4_csum_field(const struct packet_view *v)
{
	if (v->proto == IPPROTO_TCP)
		return v->l4 + PACKET_TCP_CSUM_OFF;
	if (v->proto == IPPROTO_UDP)
		return v->l4 + PACKET_UDP_CSUM_OFF;
	return NULL;
}

/* IPv6 extension headers that may precede the transport header and carry no address. */
static bool skippable_ext(uint8_t nh)
{
	return nh == IPPROTO_HOPOPTS || nh == IPPROTO_DSTOPTS;
}

static enum packet_err parse_v6(uint8_t *buf, size_t len, struct packet_view *v)
{
	size_t plen, off = PACKET_IPV6_HDR;
	uint8_t nh;

	if (len < PACKET_IPV6_HDR)
		return PACKET_ERR_TRUNCATED;
	plen = (size_t)buf[4] << 8 | buf[5];
	/* 0: a jumbogram (RFC 2675) or BIG TCP's, never on a TUN with a 64 KiB GSO limit */
	if (plen == 0)
		return PACKET_ERR_LENGTH;
	if (PACKET_IPV6_HDR + plen > len)
		return PACKET_ERR_TRUNCATED;
	v->len = PACKET_IPV6_HDR + plen;
	nh = buf[6];
	/* Walk hop-by-hop and destination options (8-octet units, RFC 8200 §4.3, §4.6). */
	while (skippable_ext(nh)) {
		size_t elen;

		if (off + 8 > v->len)
			return PACKET_ERR_TRUNCATED;
		elen = ((size_t)buf[off + 1] + 1) * 8;
		if (off + elen > v->len)
			return PACKET_ERR_TRUNCATED;
		nh = buf[off];
		off += elen;
	}
	if (nh == IPPROTO_FRAGMENT)
		return PACKET_ERR_FRAGMENT;
	/* Routing headers (they carry addresses the NAT would have to follow) and the rest. */
	if (nh == IPPROTO_ROUTING || nh == IPPROTO_AH || nh == IPPROTO_ESP || nh == 135 ||
	    nh == 139 || nh == 140)
		return PACKET_ERR_OPTIONS;
	v->proto = nh;
	v->l4 = buf + off;
	v->l4len = v->len - off;
	return PACKET_OK;
}

static enum packet_err parse_v4(uint8_t *buf, size_t len, struct packet_view *v)
{
	size_t ihl, tot;

	if (len < PACKET_IPV4_MIN_HDR)
		return PACKET_ERR_TRUNCATED;
	ihl = (size_t)(buf[0] & 15) * 4;
	tot = (size_t)buf[2] << 8 | buf[3];
	if (ihl < PACKET_IPV4_MIN_HDR || tot < ihl)
		return PACKET_ERR_LENGTH;
	if (tot > len || ihl > len)
		return PACKET_ERR_TRUNCATED;
	/* MF set, or an offset: a fragment (RFC 791). DF alone is fine. */
	if ((buf[6] & 0x3f) || buf[7])
		return PACKET_ERR_FRAGMENT;
	/* Options (source routes, record route) carry addresses; the kernel's own stacks send none. */
	if (ihl != PACKET_IPV4_MIN_HDR)
		return PACKET_ERR_OPTIONS;
	v->len = tot;
	v->proto = buf[9];
	v->l4 = buf + ihl;
	v->l4len = tot - ihl;
	return PACKET_OK;
}

enum packet_err packet_parse(uint8_t *buf, size_t len, struct packet_view *v)
{
	enum packet_err e;

	memset(v, 0, sizeof(*v));
	if (len < 1)
		return PACKET_ERR_TRUNCATED;
	v->ip = buf;
	switch (buf[0] >> 4) {
	case 4:
		v->family = 4;
		e = parse_v4(buf, len, v);
		break;
	case 6:
		v->family = 6;
		e = parse_v6(buf, len, v);
		break;
	default:
		return PACKET_ERR_VERSION;
	}
	if (e != PACKET_OK)
		return e;
	switch (v->proto) {
	case IPPROTO_TCP:
		if (v->l4len < PACKET_TCP_MIN_HDR)
			return PACKET_ERR_TRUNCATED;
		v->thl = (uint8_t)((v->l4[12] >> 4) * 4);
		if (v->thl < PACKET_TCP_MIN_HDR)
			return PACKET_ERR_LENGTH;
		if (v->thl > v->l4len)
			return PACKET_ERR_TRUNCATED;
		break;
	case IPPROTO_UDP: {
		size_t ulen;

		if (v->l4len < PACKET_UDP_HDR)
			return PACKET_ERR_TRUNCATED;
		ulen = (size_t)v->l4[4] << 8 | v->l4[5];
		/* The UDP length must be the IP payload's (a shorter one would hide bytes). */
		if (ulen != v->l4len)
			return PACKET_ERR_LENGTH;
		break;
	}
	case IPPROTO_ICMP:
	case IPPROTO_ICMPV6:
		if (v->l4len < PACKET_ICMP_HDR)
			return PACKET_ERR_TRUNCATED;
		break;
	default:
		break;
	}
	return PACKET_OK;
}

const char *packet_err_name(enum packet_err e)
{
	static const char *const names[PACKET_ERR_N] = {
	        [PACKET_OK] = "ok",
	        [PACKET_ERR_TRUNCATED] = "truncated",
	        [PACKET_ERR_VERSION] = "version",
	        [PACKET_ERR_LENGTH] = "length",
	        [PACKET_ERR_OPTIONS] = "options",
	        [PACKET_ERR_FRAGMENT] = "fragment",
	};
	return (unsigned)e < PACKET_ERR_N ? names[e] : "?";
}

_Static_assert(sizeof(struct virtio_net_hdr) == PACKET_VNET_HDR, "virtio_net_hdr size");
#ifndef VIRTIO_NET_HDR_GSO_UDP_L4
#define VIRTIO_NET_HDR_GSO_UDP_L4 5 /* USO, Linux 6.2 (older headers lack it) */
#endif

void packet_vnet_get(const uint8_t *buf, struct packet_vnet *h)
{
	struct virtio_net_hdr r;

	memcpy(&r, buf, sizeof(r));
	h->flags = r.flags;
	h->gso_type = r.gso_type;
	h->hdr_len = r.hdr_len;
	h->gso_size = r.gso_size;
	h->csum_start = r.csum_start;
	h->csum_offset = r.csum_offset;
}

void packet_vnet_put(uint8_t *buf, const struct packet_vnet *h)
{
	struct virtio_net_hdr r = {
	        .flags = h->flags,
	        .gso_type = h->gso_type,
	        .hdr_len = h->hdr_len,
	        .gso_size = h->gso_size,
	        .csum_start = h->csum_start,
	        .csum_offset = h->csum_offset,
	};

	memcpy(buf, &r, sizeof(r));
}

bool packet_vnet_ok(const struct packet_vnet *h, const struct packet_view *v)
{
	size_t l4off = (size_t)(v->l4 - v->ip);
	uint8_t gso = h->gso_type & (uint8_t)~VIRTIO_NET_HDR_GSO_ECN;

	if (h->flags & VIRTIO_NET_HDR_F_NEEDS_CSUM) {
		if (h->csum_start != l4off)
			return false;
		if (v->proto == IPPROTO_TCP   ? h->csum_offset != PACKET_TCP_CSUM_OFF
		    : v->proto == IPPROTO_UDP ? h->csum_offset != PACKET_UDP_CSUM_OFF
		                              : (size_t)h->csum_offset + 2 > v->l4len)
			return false;
	}
	switch (gso) {
	case VIRTIO_NET_HDR_GSO_NONE:
		return true;
	case VIRTIO_NET_HDR_GSO_TCPV4:
	case VIRTIO_NET_HDR_GSO_TCPV6:
		return v->proto == IPPROTO_TCP && (h->flags & VIRTIO_NET_HDR_F_NEEDS_CSUM) &&
		       h->gso_size && (gso == VIRTIO_NET_HDR_GSO_TCPV4) == (v->family == 4);
	case VIRTIO_NET_HDR_GSO_UDP_L4:
		return v->proto == IPPROTO_UDP && (h->flags & VIRTIO_NET_HDR_F_NEEDS_CSUM) &&
		       h->gso_size;
	default:
		return false;
	}
}

void packet_vnet_complete(struct packet_vnet *h, struct packet_view *v)
{
	uint16_t c;
	uint8_t *p;

	if (!(h->flags & VIRTIO_NET_HDR_F_NEEDS_CSUM))
		return;
	/* packet_vnet_ok() checked csum_start (= the transport header) and csum_offset. */
	p = v->l4 + h->csum_offset;
	c = (uint16_t)~packet_csum_fold(packet_csum_add(0, v->l4, v->l4len));
	if (v->proto == IPPROTO_UDP && c == 0)
		c = 0xffff;
	memcpy(p, &c, 2);
	h->flags = (uint8_t)(h->flags & ~VIRTIO_NET_HDR_F_NEEDS_CSUM);
	h->csum_start = h->csum_offset = 0;
}

/* An IPv4 header with no options (TTL 64, DF) or an IPv6 header, for l4len bytes of proto. */
static size_t ip_header(uint8_t *out, int family, const uint8_t *src, const uint8_t *dst,
                        uint8_t proto, size_t l4len)
{
	if (family == 4) {
		size_t tot = PACKET_IPV4_MIN_HDR + l4len;

		memset(out, 0, PACKET_IPV4_MIN_HDR);
		out[0] = 0x45;
		out[2] = (uint8_t)(tot >> 8);
		out[3] = (uint8_t)tot;
		out[6] = 0x40; /* DF */
		out[8] = 64;
		out[9] = proto;
		memcpy(out + 12, src, 4);
		memcpy(out + 16, dst, 4);
		packet_ipv4_csum(out);
		return PACKET_IPV4_MIN_HDR;
	}
	memset(out, 0, PACKET_IPV6_HDR);
	out[0] = 0x60;
	out[4] = (uint8_t)(l4len >> 8);
	out[5] = (uint8_t)l4len;
	out[6] = proto;
	out[7] = 64;
	memcpy(out + 8, src, 16);
	memcpy(out + 24, dst, 16);
	return PACKET_IPV6_HDR;
}

static uint32_t load32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void store32(uint8_t *p, uint32_t x)
{
	p[0] = (uint8_t)(x >> 24);
	p[1] = (uint8_t)(x >> 16);
	p[2] = (uint8_t)(x >> 8);
	p[3] = (uint8_t)x;
}

size_t packet_build_rst(uint8_t *out, const struct packet_view *v)
{
	const uint8_t *th = v->l4;
	size_t hl, seglen = v->l4len - v->thl;
	uint8_t *t;

	hl = ip_header(out, v->family, packet_dst(v), packet_src(v), IPPROTO_TCP,
	               PACKET_TCP_MIN_HDR);
	t = out + hl;
	memset(t, 0, PACKET_TCP_MIN_HDR);
	memcpy(t, th + 2, 2); /* ports swapped */
	memcpy(t + 2, th, 2);
	t[12] = 5 << 4;
	/*
	 * RFC 793 p. 36: if the segment has ACK, the RST takes its sequence
	 * number from the ACK field; otherwise seq 0 and ACK = SEG.SEQ + SEG.LEN
	 * (SYN and FIN count one each).
	 */
	if (th[13] & PACKET_TCP_ACK) {
		memcpy(t + 4, th + 8, 4);
		t[13] = PACKET_TCP_RST;
	} else {
		uint32_t ack = load32(th + 4) + (uint32_t)seglen + !!(th[13] & PACKET_TCP_SYN) +
		               !!(th[13] & PACKET_TCP_FIN);

		store32(t + 8, ack);
		t[13] = PACKET_TCP_RST | PACKET_TCP_ACK;
	}
	packet_l4_csum(out, v->family == 6, hl, IPPROTO_TCP, PACKET_TCP_MIN_HDR);
	return hl + PACKET_TCP_MIN_HDR;
}

size_t packet_build_udp(uint8_t *out, int family, const uint8_t *src, uint16_t sport,
                        const uint8_t *dst, uint16_t dport, size_t payload_len)
{
	size_t ulen = PACKET_UDP_HDR + payload_len;
	size_t hl = ip_header(out, family, src, dst, IPPROTO_UDP, ulen);
	uint8_t *u = out + hl;

	memcpy(u, &sport, 2);
	memcpy(u + 2, &dport, 2);
	u[4] = (uint8_t)(ulen >> 8);
	u[5] = (uint8_t)ulen;
	packet_l4_csum(out, family == 6, hl, IPPROTO_UDP, ulen);
	return hl + ulen;
}

size_t packet_udp_header(uint8_t *out, int family, const uint8_t *src, uint16_t sport,
                         const uint8_t *dst, uint16_t dport, const uint8_t *d, size_t n,
                         bool partial)
{
	size_t ulen = PACKET_UDP_HDR + n;
	size_t hl = ip_header(out, family, src, dst, IPPROTO_UDP, ulen);
	uint8_t *u = out + hl;
	uint32_t sum = packet_pseudo_sum(out, family == 6, IPPROTO_UDP, ulen);
	uint16_t c;

	memcpy(u, &sport, 2);
	memcpy(u + 2, &dport, 2);
	u[4] = (uint8_t)(ulen >> 8);
	u[5] = (uint8_t)ulen;
	u[6] = u[7] = 0;
	if (partial) {
		c = packet_csum_fold(sum);
	} else {
		sum = packet_csum_add(sum, u, PACKET_UDP_HDR);
		/* the header is 8 bytes: the payload's words keep their alignment */
		c = (uint16_t)~packet_csum_fold(packet_csum_add(sum, d, n));
		if (c == 0)
			c = 0xffff;
	}
	memcpy(u + 6, &c, 2);
	return hl + PACKET_UDP_HDR;
}

bool packet_echo_reply(struct packet_view *v)
{
	uint8_t tmp[16], *csum = v->l4 + PACKET_ICMP_CSUM_OFF;
	size_t alen = packet_addr_len(v);
	uint8_t old[2] = {v->l4[0], v->l4[1]}, nw[2];

	if (v->family == 4 && (v->proto != IPPROTO_ICMP || v->l4[0] != PACKET_ICMP_ECHO))
		return false;
	if (v->family == 6 && (v->proto != IPPROTO_ICMPV6 || v->l4[0] != PACKET_ICMP6_ECHO))
		return false;
	if (v->l4[1] != 0)
		return false; /* echo has code 0 */
	/* Swapping the addresses leaves every sum over them (ICMPv6's pseudo-header) unchanged. */
	memcpy(tmp, packet_src(v), alen);
	memcpy(packet_src(v), packet_dst(v), alen);
	memcpy(packet_dst(v), tmp, alen);
	nw[0] = v->family == 4 ? PACKET_ICMP_ECHO_REPLY : PACKET_ICMP6_ECHO_REPLY;
	nw[1] = 0;
	packet_csum_replace(csum, old, nw, 2, false);
	v->l4[0] = nw[0];
	if (v->family == 4) { /* a fresh TTL: it is a new packet */
		uint8_t ot[2] = {v->ip[8], v->ip[9]}, nt[2] = {64, v->ip[9]};

		packet_csum_replace(v->ip + 10, ot, nt, 2, false);
		v->ip[8] = 64;
	} else {
		v->ip[7] = 64;
	}
	return true;
}
