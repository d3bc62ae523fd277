/* SPDX-License-Identifier: MIT */
/* TUN offloads in userspace: split TSO super-packets, coalesce TCP segments into GSO writes. */
#include "offload.h"

#include <arpa/inet.h>
#include <errno.h>
#include <linux/virtio_net.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "packet.h"

_Static_assert(sizeof(struct virtio_net_hdr) == OFFLOAD_VNET_HDR_LEN, "virtio_net_hdr size");

enum {
	MAX_TRAIN = 64, /* segments per coalesced write (the kernel's GSO limit) */
};

int offload_segment(const uint8_t *in, size_t inlen, uint8_t *slots, size_t slot_size,
                    size_t headroom, unsigned int max, size_t *lens)
{
	struct virtio_net_hdr h;
	const uint8_t *ip;
	size_t len, iphl, thl, hdrlen, payload, mss;
	bool v6;
	unsigned int nseg;

	if (inlen < sizeof(h) + 1)
		return -EINVAL;
	memcpy(&h, in, sizeof(h));
	ip = in + sizeof(h);
	len = inlen - sizeof(h);
	if (h.gso_type == VIRTIO_NET_HDR_GSO_NONE) {
		uint8_t *out = slots + headroom;

		if (len > slot_size - headroom || max == 0)
			return -EINVAL;
		memcpy(out, ip, len);
		/* CHECKSUM_PARTIAL: sum from csum_start to the end, store at csum_offset. */
		if (h.flags & VIRTIO_NET_HDR_F_NEEDS_CSUM) {
			size_t st = h.csum_start, off = h.csum_offset;
			uint16_t c;

			if (st + off + 2 > len)
				return -EINVAL;
			c = (uint16_t)~packet_csum_fold(packet_csum_add(0, out + st, len - st));
			memcpy(out + st + off, &c, 2);
		}
		lens[0] = len;
		return 1;
	}
	if ((h.gso_type & ~VIRTIO_NET_HDR_GSO_ECN) != VIRTIO_NET_HDR_GSO_TCPV4 &&
	    (h.gso_type & ~VIRTIO_NET_HDR_GSO_ECN) != VIRTIO_NET_HDR_GSO_TCPV6)
		return -EINVAL;
	v6 = (h.gso_type & ~VIRTIO_NET_HDR_GSO_ECN) == VIRTIO_NET_HDR_GSO_TCPV6;
	/* The smallest IPv4 segment; each family's own minimum is checked below. */
	if (len < PACKET_IPV4_MIN_HDR + PACKET_TCP_MIN_HDR)
		return -EINVAL;
	if (v6) {
		if (len < PACKET_IPV6_HDR || (ip[0] >> 4) != 6 || ip[6] != IPPROTO_TCP)
			return -EINVAL; /* extension headers: not produced by the kernel's TSO here */
		iphl = PACKET_IPV6_HDR;
	} else {
		if ((ip[0] >> 4) != 4 || ip[9] != IPPROTO_TCP)
			return -EINVAL;
		iphl = (size_t)(ip[0] & 15) * 4;
		if (iphl < PACKET_IPV4_MIN_HDR)
			return -EINVAL;
	}
	if (len < iphl + PACKET_TCP_MIN_HDR)
		return -EINVAL;
	thl = (size_t)(ip[iphl + 12] >> 4) * 4;
	hdrlen = iphl + thl;
	mss = h.gso_size;
	if (thl < PACKET_TCP_MIN_HDR || len < hdrlen || mss == 0)
		return -EINVAL;
	payload = len - hdrlen;
	nseg = (unsigned int)((payload + mss - 1) / mss);
	if (nseg == 0)
		nseg = 1;
	if (nseg > max)
		return -E2BIG;
	if (hdrlen + mss > slot_size - headroom)
		return -EINVAL;
	{
		uint32_t seq0;
		uint16_t id0 = 0;
		uint8_t flags0 = ip[iphl + 13];

		memcpy(&seq0, ip + iphl + 4, 4);
		seq0 = ntohl(seq0);
		if (!v6) {
			memcpy(&id0, ip + 4, 2);
			id0 = ntohs(id0);
		}
		for (unsigned int i = 0; i < nseg; i++) {
			uint8_t *out = slots + (size_t)i * slot_size + headroom;
			size_t off = (size_t)i * mss;
			size_t plen = payload - off < mss ? payload - off : mss;
			uint8_t *th = out + iphl;
			uint32_t seq = htonl(seq0 + (uint32_t)off);

			memcpy(out, ip, hdrlen);
			memcpy(out + hdrlen, ip + hdrlen + off, plen);
			memcpy(th + 4, &seq, 4);
			/* FIN and PSH belong to the last segment, CWR to the first only. */
			th[13] = flags0;
			if (i + 1 < nseg)
				th[13] &= (uint8_t) ~(PACKET_TCP_FIN | PACKET_TCP_PSH);
			if (i > 0)
				th[13] &= (uint8_t)~PACKET_TCP_CWR;
			if (v6) {
				uint16_t pl = htons((uint16_t)(thl + plen));

				memcpy(out + 4, &pl, 2);
			} else {
				uint16_t tl = htons((uint16_t)(hdrlen + plen)),
				         id = htons((uint16_t)(id0 + i));

				memcpy(out + 2, &tl, 2);
				memcpy(out + 4, &id, 2);
				packet_ipv4_csum(out);
			}
			packet_l4_csum(out, v6, iphl, IPPROTO_TCP, thl + plen);
			lens[i] = hdrlen + plen;
		}
	}
	return (int)nseg;
}

/* What a packet looks like to the coalescer; valid only for plain TCP without IP options. */
struct tcp_view {
	bool ok, v6;
	size_t iphl, thl, hdrlen, plen;
	uint32_t seq;
	uint8_t flags;
};

static struct tcp_view view(const uint8_t *ip, size_t len)
{
	struct tcp_view v = {0};

	if (len < PACKET_IPV4_MIN_HDR + PACKET_TCP_MIN_HDR)
		return v;
	if ((ip[0] >> 4) == 4) {
		uint16_t tot, frag;

		if ((ip[0] & 15) != 5 || ip[9] != IPPROTO_TCP)
			return v;
		memcpy(&tot, ip + 2, 2);
		memcpy(&frag, ip + 6, 2);
		/* Fragments (MF or an offset) never coalesce. */
		if (ntohs(tot) != len || (ntohs(frag) & 0x3fff))
			return v;
		v.iphl = PACKET_IPV4_MIN_HDR;
	} else if ((ip[0] >> 4) == 6) {
		uint16_t pl;

		if (len < PACKET_IPV6_HDR + PACKET_TCP_MIN_HDR || ip[6] != IPPROTO_TCP)
			return v;
		memcpy(&pl, ip + 4, 2);
		if ((size_t)ntohs(pl) + PACKET_IPV6_HDR != len)
			return v;
		v.iphl = PACKET_IPV6_HDR;
		v.v6 = true;
	} else {
		return v;
	}
	v.thl = (size_t)(ip[v.iphl + 12] >> 4) * 4;
	if (v.thl < PACKET_TCP_MIN_HDR || v.iphl + v.thl > len)
		return v;
	v.hdrlen = v.iphl + v.thl;
	v.plen = len - v.hdrlen;
	memcpy(&v.seq, ip + v.iphl + 4, 4);
	v.seq = ntohl(v.seq);
	v.flags = ip[v.iphl + 13];
	v.ok = v.plen > 0 && !(v.flags & (PACKET_TCP_SYN | PACKET_TCP_RST | PACKET_TCP_URG |
	                                  PACKET_TCP_FIN | PACKET_TCP_CWR | PACKET_TCP_ECE));
	return v;
}

/*
 * Can b follow a in one GSO packet? Same addresses, ports, ack, window,
 * options and IP fields (except length/id/checksum), contiguous sequence
 * numbers, and a carried exactly mss bytes.
 */
static bool follows(const uint8_t *a, const struct tcp_view *va, const uint8_t *b,
                    const struct tcp_view *vb, size_t mss)
{
	if (!vb->ok || vb->v6 != va->v6 || vb->thl != va->thl || va->plen != mss ||
	    vb->plen > mss || vb->seq != va->seq + (uint32_t)va->plen)
		return false;
	if (va->flags & PACKET_TCP_PSH)
		return false; /* PSH ends a train, as in the kernel's GRO */
	if (va->v6) {
		/* version/class/flow label, next header/hop limit, both addresses */
		if (memcmp(a, b, 4) || memcmp(a + 6, b + 6, 34))
			return false;
	} else {
		/* tos, flags/fragment, ttl/proto, addresses (not length, id or checksum) */
		if (a[1] != b[1] || memcmp(a + 6, b + 6, 4) || memcmp(a + 12, b + 12, 8))
			return false;
	}
	/* ports, ack, window, options: everything but seq, flags' PSH and the checksum */
	if (memcmp(a + va->iphl, b + vb->iphl, 4) ||
	    memcmp(a + va->iphl + 8, b + vb->iphl + 8, 5) ||
	    (a[va->iphl + 13] & ~PACKET_TCP_PSH) != (b[vb->iphl + 13] & ~PACKET_TCP_PSH) ||
	    memcmp(a + va->iphl + 14, b + vb->iphl + 14, 2) ||
	    memcmp(a + va->iphl + 18, b + vb->iphl + 18, va->thl - 18))
		return false;
	return true;
}

static int write_single(int fd, struct offload_pkt *p)
{
	struct virtio_net_hdr h = {.flags = VIRTIO_NET_HDR_F_DATA_VALID};
	uint8_t *start = p->data - sizeof(h);

	memcpy(start, &h, sizeof(h));
	return write(fd, start, p->len + sizeof(h)) < 0 ? -1 : 0;
}

/* One GSO write of pkts[0..k): the first packet's headers, everybody's payload. */
static int write_train(int fd, struct offload_pkt *pkts, unsigned int k, const struct tcp_view *v0,
                       uint8_t *hdrbuf)
{
	struct virtio_net_hdr h = {0};
	struct iovec iov[MAX_TRAIN + 1];
	uint8_t *ip = hdrbuf + sizeof(h);
	size_t total = v0->hdrlen;
	uint32_t ps;
	uint16_t c;

	memcpy(ip, pkts[0].data, v0->hdrlen);
	for (unsigned int i = 0; i < k; i++) {
		size_t pl = pkts[i].len - v0->hdrlen;

		iov[i + 1].iov_base = pkts[i].data + v0->hdrlen;
		iov[i + 1].iov_len = pl;
		total += pl;
	}
	/* The last segment's PSH survives on the whole train. */
	ip[v0->iphl + 13] |= pkts[k - 1].data[v0->iphl + 13] & PACKET_TCP_PSH;
	if (v0->v6) {
		uint16_t pl = htons((uint16_t)(total - PACKET_IPV6_HDR));

		memcpy(ip + 4, &pl, 2);
	} else {
		uint16_t tl = htons((uint16_t)total);

		memcpy(ip + 2, &tl, 2);
		packet_ipv4_csum(ip);
	}
	/* CHECKSUM_PARTIAL: the field holds the pseudo-header sum, not complemented. */
	ps = packet_pseudo_sum(ip, v0->v6, IPPROTO_TCP, total - v0->iphl);
	c = packet_csum_fold(ps);
	memcpy(ip + v0->iphl + PACKET_TCP_CSUM_OFF, &c, 2);
	h.flags = VIRTIO_NET_HDR_F_NEEDS_CSUM;
	h.gso_type = v0->v6 ? VIRTIO_NET_HDR_GSO_TCPV6 : VIRTIO_NET_HDR_GSO_TCPV4;
	h.hdr_len = (uint16_t)v0->hdrlen;
	h.gso_size = (uint16_t)v0->plen;
	h.csum_start = (uint16_t)v0->iphl;
	h.csum_offset = PACKET_TCP_CSUM_OFF;
	memcpy(hdrbuf, &h, sizeof(h));
	iov[0].iov_base = hdrbuf;
	iov[0].iov_len = sizeof(h) + v0->hdrlen;
	return writev(fd, iov, (int)k + 1) < 0 ? -1 : 0;
}

unsigned int offload_coalesce_write(int fd, struct offload_pkt *pkts, unsigned int n,
                                    uint8_t *scratch)
{
	unsigned int fails = 0, i = 0;

	while (i < n) {
		struct tcp_view v0 = view(pkts[i].data, pkts[i].len), prev = v0;
		unsigned int k = 1;
		size_t total = pkts[i].len;

		if (v0.ok) {
			while (i + k < n && k < MAX_TRAIN) {
				struct tcp_view vk = view(pkts[i + k].data, pkts[i + k].len);

				if (total + vk.plen > 65535 - 64 ||
				    !follows(pkts[i + k - 1].data, &prev, pkts[i + k].data, &vk,
				             v0.plen))
					break;
				total += vk.plen;
				prev = vk;
				k++;
			}
		}
		if (k == 1)
			fails += write_single(fd, &pkts[i]) < 0;
		else
			fails += write_train(fd, &pkts[i], k, &v0, scratch) < 0;
		i += k;
	}
	return fails;
}
