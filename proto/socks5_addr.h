/* SPDX-License-Identifier: MIT */
/* SOCKS5 (RFC 1928) address field ATYP ADDR PORT: one codec for requests, replies and datagrams. */
#ifndef SPLICED_SOCKS5_ADDR_H
#define SPLICED_SOCKS5_ADDR_H

#include "proto.h"

enum socks5_addr_limits {
	SOCKS5_ADDR_MIN = 1 + 4 + 2,                  /* ATYP IPv4 PORT */
	SOCKS5_ADDR_MAX = 1 + 1 + PROTO_HOST_MAX + 2, /* ATYP LEN NAME PORT = 259 */
};

/*
 * Octets of the whole field at `p` (ATYP included) when `avail` octets are
 * there: 0 when more are needed to know, -1 for an unknown ATYP.
 */
long socks5_addr_len(const uint8_t *p, size_t avail);

/*
 * Decode a field socks5_addr_len() measured as complete into `t` (wiped
 * first). An IP gets its text form in t->host; a name that is an IP literal
 * in any spelling becomes TARGET_IP (proto_target_ip_literal()). Returns 0,
 * or -1 for an empty name or one holding a NUL.
 */
int socks5_addr_get(const uint8_t *p, struct proto_target *t);
/*
 * The same for the datagram path, per datagram: an IP address is not
 * spelled out (host is "" for TARGET_IP) and only what the kind uses is
 * cleared, so parsing costs no formatting and no 400-octet memset.
 */
int socks5_addr_get_bare(const uint8_t *p, struct proto_target *t);

/*
 * Encode `sa` (NULL or a family other than IPv4/IPv6: 0.0.0.0:0; an
 * IPv4-mapped IPv6 address as IPv4) into `p`, which has SOCKS5_ADDR_MAX
 * octets. Returns the length written.
 */
size_t socks5_addr_put_sockaddr(uint8_t *p, const struct sockaddr *sa);

/*
 * Encode `t`: a name as ATYP 3 (1..255 octets, checked by the caller), an IP
 * as socks5_addr_put_sockaddr() does, with t->port where addr's port is 0.
 */
size_t socks5_addr_put_target(uint8_t *p, const struct proto_target *t);

#endif
