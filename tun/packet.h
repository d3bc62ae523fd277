/* SPDX-License-Identifier: MIT */
/* IPv4/IPv6/TCP/UDP header layout and Internet checksums (RFC 1071) for packets crossing a TUN. */
#ifndef SPLICED_TUN_PACKET_H
#define SPLICED_TUN_PACKET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Header sizes and field offsets, in bytes. */
enum {
	PACKET_IPV4_MIN_HDR = 20,
	PACKET_IPV6_HDR = 40,
	PACKET_TCP_MIN_HDR = 20,
	PACKET_TCP_CSUM_OFF = 16,
	PACKET_UDP_CSUM_OFF = 6,
};

/* TCP flags (byte 13 of the header). */
enum {
	PACKET_TCP_FIN = 0x01,
	PACKET_TCP_SYN = 0x02,
	PACKET_TCP_RST = 0x04,
	PACKET_TCP_PSH = 0x08,
	PACKET_TCP_ACK = 0x10,
	PACKET_TCP_URG = 0x20,
	PACKET_TCP_ECE = 0x40,
	PACKET_TCP_CWR = 0x80,
};

/*
 * Adds len bytes to a running one's-complement sum. Works on 16-bit words in
 * host order, either endianness (RFC 1071 section 2(B)): the folded result is
 * the checksum as it sits in memory, ready to be copied into the packet.
 */
uint32_t packet_csum_add(uint32_t sum, const void *data, size_t len);
/* Folds a running sum into 16 bits (not complemented). */
uint16_t packet_csum_fold(uint32_t sum);
/* Sum of the TCP/UDP pseudo-header (addresses, protocol, l4len) of the IP packet at ip. */
uint32_t packet_pseudo_sum(const uint8_t *ip, bool v6, uint8_t proto, size_t l4len);
/* Recomputes the IPv4 header checksum in place. */
void packet_ipv4_csum(uint8_t *ip);
/* Recomputes the full TCP or UDP checksum of the segment after iphl bytes of IP header. */
void packet_l4_csum(uint8_t *ip, bool v6, size_t iphl, uint8_t proto, size_t l4len);

#endif
