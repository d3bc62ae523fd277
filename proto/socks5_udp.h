/* SPDX-License-Identifier: MIT */
/* SOCKS5 UDP datagrams (RFC 1928 section 7) and hev-socks5's UDP-in-TCP frames: sans-I/O codecs. */
#ifndef SPLICED_SOCKS5_UDP_H
#define SPLICED_SOCKS5_UDP_H

#include "proto.h"
#include "socks5_addr.h"

/*
 * RFC 1928 section 7, one UDP datagram to or from the relay:
 *   RSV(2) = 0  FRAG(1)  ATYP DST.ADDR DST.PORT  DATA
 * hev-socks5's FWD UDP command (CMD 5) carries the same datagrams over the
 * TCP connection itself, each one framed as:
 *   DATLEN(2, big-endian)  HDRLEN(1) = 3 + address length  ATYP ADDR PORT  DATA[DATLEN]
 * (the three octets RFC 1928 spends on RSV and FRAG hold the lengths instead).
 */
enum socks5_udp_limits {
	SOCKS5_UDP_HDR_MIN = 3 + SOCKS5_ADDR_MIN, /* 10: an IPv4 destination */
	SOCKS5_UDP_HDR_MAX = 3 + SOCKS5_ADDR_MAX, /* 262: a 255-octet name */
	/* DATLEN is 16 bits: a frame carries at most 65,535 octets of payload. */
	SOCKS5_TCPUDP_DATA_MAX = 0xffff,
	/* HDRLEN is one octet: 3 + ATYP LEN NAME PORT <= 255 leaves 248 for a name. */
	SOCKS5_TCPUDP_NAME_MAX = 0xff - 3 - 1 - 1 - 2,
};

/* Why a datagram or frame was refused; one counter each. */
enum socks5_udp_error {
	SOCKS5_UDP_OK = 0,
	SOCKS5_UDP_SHORT, /* fewer octets than its header needs */
	SOCKS5_UDP_RSV,   /* RSV not zero */
	SOCKS5_UDP_FRAG,  /* FRAG != 0: fragments are not reassembled (section 7 allows dropping) */
	SOCKS5_UDP_ATYP,  /* unknown address type */
	SOCKS5_UDP_NAME,  /* empty name, or one holding a NUL */
	SOCKS5_UDP_HDRLEN, /* UDP-in-TCP: HDRLEN disagrees with the address it covers */
	SOCKS5_UDP_AGAIN,  /* UDP-in-TCP: the frame is not all there yet (not an error) */
	SOCKS5_UDP_ERR_COUNT,
};

/* A short name for a counter or a log line: "short", "rsv", "frag", ... */
const char *socks5_udp_error_name(enum socks5_udp_error e);

/*
 * Parse the header of one datagram of `len` octets: on SOCKS5_UDP_OK `t` is
 * its address (the destination, from a client; the source, from a relay we
 * are a client of; an IP address is in t->addr only, t->host is then "")
 * and the payload starts at *hdr_len (it may be empty).
 */
enum socks5_udp_error socks5_udp_parse(const uint8_t *d, size_t len, struct proto_target *t,
                                       size_t *hdr_len);

/* Write RSV RSV FRAG=0 and the address into `p` (SOCKS5_UDP_HDR_MAX octets); returns the length. */
size_t socks5_udp_put_header(uint8_t *p, const struct proto_target *t);
size_t socks5_udp_put_header_sa(uint8_t *p, const struct sockaddr *sa);

/*
 * Parse one UDP-in-TCP frame at the start of the `len` octets a stream has
 * delivered: SOCKS5_UDP_AGAIN while it is incomplete (nothing consumed; a
 * caller whose buffer holds SOCKS5_UDP_HDR_MAX + SOCKS5_TCPUDP_DATA_MAX
 * octets always gets a verdict), else on SOCKS5_UDP_OK `t` is the address, the
 * payload is `*data_len` octets at `*hdr_len`, and the frame ends at
 * *hdr_len + *data_len. Any other result: the stream is out of step, close it.
 */
enum socks5_udp_error socks5_tcpudp_parse(const uint8_t *b, size_t len, struct proto_target *t,
                                          size_t *hdr_len, size_t *data_len);

/*
 * Write the frame header for `data_len` (at most SOCKS5_TCPUDP_DATA_MAX)
 * octets to or from `t` (or `sa`) into `p` (SOCKS5_UDP_HDR_MAX octets);
 * returns its length, 0 if data_len is too large or the name is longer than
 * SOCKS5_TCPUDP_NAME_MAX (such a frame could not be parsed back).
 */
size_t socks5_tcpudp_put_header(uint8_t *p, const struct proto_target *t, size_t data_len);
size_t socks5_tcpudp_put_header_sa(uint8_t *p, const struct sockaddr *sa, size_t data_len);

#endif
