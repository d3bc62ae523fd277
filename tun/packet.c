/* SPDX-License-Identifier: MIT */
/* Internet checksums (RFC 1071) over IPv4/IPv6 headers and TCP/UDP segments. */
#include "packet.h"

#include <arpa/inet.h>
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
