/* SPDX-License-Identifier: MIT */
/* IPv4/IPv6/TCP/UDP/ICMP views, virtio-net headers and Internet checksums (RFC 1071, 1624) for packets crossing a TUN. */
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
	PACKET_UDP_HDR = 8,
	PACKET_ICMP_HDR = 8, /* type, code, checksum, and the echo's identifier and sequence */
	PACKET_TCP_CSUM_OFF = 16,
	PACKET_UDP_CSUM_OFF = 6,
	PACKET_ICMP_CSUM_OFF = 2,
	PACKET_VNET_HDR = 10, /* struct virtio_net_hdr */
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

/* ICMP types this code answers or recognises. */
enum {
	PACKET_ICMP_ECHO_REPLY = 0,
	PACKET_ICMP_ECHO = 8,
	PACKET_ICMP6_ECHO = 128,
	PACKET_ICMP6_ECHO_REPLY = 129,
};

/*
 * Why packet_parse() refused a packet; each is its own drop counter. A
 * packet that parses is well formed up to its transport header: lengths
 * agree with the buffer, the transport header is whole.
 */
enum packet_err {
	PACKET_OK = 0,
	PACKET_ERR_TRUNCATED, /* shorter than its headers or than its IP length says */
	PACKET_ERR_VERSION,   /* neither IPv4 nor IPv6 */
	PACKET_ERR_LENGTH,    /* a length field that cannot be (IHL < 5, total length < IHL, ...) */
	PACKET_ERR_OPTIONS,   /* IPv4 options, IPv6 extension headers other than HBH/DST */
	PACKET_ERR_FRAGMENT,  /* a fragment: not reassembled */
	PACKET_ERR_N,
};

/*
 * One IP packet: the IP header at ip, its transport header at l4. len is
 * what the IP header says (trailing bytes in the buffer are not part of
 * it). For protocols other than TCP, UDP and ICMP only ip..l4 is checked.
 */
struct packet_view {
	uint8_t *ip;
	uint8_t *l4;
	size_t len;     /* IP total length */
	size_t l4len;   /* transport header + payload */
	uint8_t family; /* 4 or 6 */
	uint8_t proto;  /* IPPROTO_TCP, IPPROTO_UDP, IPPROTO_ICMP, IPPROTO_ICMPV6, ... */
	uint8_t thl;    /* TCP: header length (with options) */
};

/* Parses the packet in buf (len bytes, at least); fills *v. PACKET_OK or why not. */
enum packet_err packet_parse(uint8_t *buf, size_t len, struct packet_view *v);
/* Human-readable name of a parse error, for counters. */
const char *packet_err_name(enum packet_err e);

/* Address size and offsets of a family 4 / 6 view. */
static inline size_t packet_addr_len(const struct packet_view *v)
{
	return v->family == 4 ? 4 : 16;
}
static inline uint8_t *packet_src(const struct packet_view *v)
{
	return v->ip + (v->family == 4 ? 12 : 8);
}
static inline uint8_t *packet_dst(const struct packet_view *v)
{
	return v->ip + (v->family == 4 ? 16 : 24);
}

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

/*
 * A field that is summed by checksum `csum` (2 bytes, in the packet)
 * changes from old to new (n bytes, n even): the checksum follows without
 * a pass over the data.
 *  - full: csum is a complete checksum (complemented), RFC 1624 eqn. 3,
 *    HC' = ~(~HC + ~m + m'), which never produces the -0 of eqn. 2.
 *  - partial: csum holds what the kernel leaves in a CHECKSUM_PARTIAL
 *    packet (virtio-net NEEDS_CSUM): the folded, not complemented, sum of
 *    the pseudo-header, to which the receiver or the NIC adds the sum from
 *    csum_start on. The same one's-complement update applies, without the
 *    complements (the kernel's inet_proto_csum_replace4() with pseudohdr).
 * Call it before overwriting the field. Only pseudo-header fields
 * (addresses) change the partial sum; ports lie inside the summed range.
 */
void packet_csum_replace(uint8_t *csum, const void *old, const void *new_, size_t n, bool partial);

/* The transport checksum field of a TCP or UDP view (NULL for other protocols). */
uint8_t *packet_l4_csum_field(const struct packet_view *v);

/*
 * A virtio_net_hdr (host byte order, as the kernel writes it to a TUN with
 * IFF_VNET_HDR on a little-endian host; see packet_vnet_*() for the
 * legacy big-endian rule, which we never enable).
 */
struct packet_vnet {
	uint8_t flags;    /* VIRTIO_NET_HDR_F_NEEDS_CSUM, _DATA_VALID */
	uint8_t gso_type; /* VIRTIO_NET_HDR_GSO_* (| _ECN) */
	uint16_t hdr_len;
	uint16_t gso_size;
	uint16_t csum_start;
	uint16_t csum_offset;
};
void packet_vnet_get(const uint8_t *buf, struct packet_vnet *h);
void packet_vnet_put(uint8_t *buf, const struct packet_vnet *h);
/*
 * Whether a header read from the TUN agrees with the packet it came with:
 * NEEDS_CSUM points at this protocol's checksum field, GSO is TCP of the
 * packet's family (or UDP_L4 for UDP) with a segment size. False: drop.
 */
bool packet_vnet_ok(const struct packet_vnet *h, const struct packet_view *v);
/*
 * Completes a NEEDS_CSUM packet's transport checksum in software, for a
 * packet that is answered rather than passed on (ICMP, UDP): afterwards
 * the checksum field is a full one and h says so. Only for a packet that
 * is not GSO.
 */
void packet_vnet_complete(struct packet_vnet *h, struct packet_view *v);

/*
 * Builders: a packet written at out (room for at least
 * PACKET_IPV6_HDR + PACKET_TCP_MIN_HDR bytes), addresses and ports given in
 * network order as they sit in packets. Each returns the packet's length.
 */
/* A TCP RST answering the segment in v (which must be TCP): RFC 793 "Reset Generation". */
size_t packet_build_rst(uint8_t *out, const struct packet_view *v);
/*
 * The IP and UDP headers for a payload already placed at out + hdrlen
 * (packet_ip_hdr_len(family) + PACKET_UDP_HDR), from src:sport to
 * dst:dport, with a full UDP checksum. Returns the packet's length.
 */
size_t packet_build_udp(uint8_t *out, int family, const uint8_t *src, uint16_t sport,
                        const uint8_t *dst, uint16_t dport, size_t payload_len);
/*
 * The IP and UDP headers (written at out, returned: their length) for
 * payload d[0..n) from src:sport to dst:dport. partial: the UDP checksum
 * field holds the pseudo-header sum only, for a virtio-net header with
 * NEEDS_CSUM (csum_start = the length returned minus 8, csum_offset 6),
 * so the payload is never read; else the full checksum over d.
 */
size_t packet_udp_header(uint8_t *out, int family, const uint8_t *src, uint16_t sport,
                         const uint8_t *dst, uint16_t dport, const uint8_t *d, size_t n,
                         bool partial);
static inline size_t packet_ip_hdr_len(int family)
{
	return family == 4 ? PACKET_IPV4_MIN_HDR : PACKET_IPV6_HDR;
}
/*
 * Turns an ICMP or ICMPv6 echo request in place into its reply (addresses
 * swapped, type changed, checksum updated incrementally). False if v is not
 * an echo request.
 */
bool packet_echo_reply(struct packet_view *v);

#endif
