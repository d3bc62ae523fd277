/* SPDX-License-Identifier: MIT */
/* Outbound protocols as ops tables (where to connect, and the handshake on that leg), and their socket. */
#ifndef SPLICED_OUTBOUND_H
#define SPLICED_OUTBOUND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "config.h"
#include "proto.h"

/*
 * An outbound is a thin adapter over a proto/ client state machine. The
 * connection resolves and connects to the destination the outbound names,
 * then runs the outbound's handshake (if it has one) on that leg with the
 * proto.h feed convention. Adding an outbound protocol is a file with one of
 * these and an entry in outbound.c's table.
 */
struct outbound_ops {
	const char *name;
	size_t state_size; /* handshake state, zeroed by the connection */
	size_t buf_size;   /* for the server's handshake messages (0: no handshake) */
	/*
	 * The client wants t through ob: where to connect (*dest: t itself, or a
	 * proxy server), or why not (block: CONNECT_NOT_ALLOWED).
	 */
	enum proto_connect_result (*start)(void *st, const struct outbound *ob,
	                                   const struct proto_target *t, struct proto_target *dest);
	/* The TCP leg is up: the first bytes to send (NULL: no handshake, relay at once). */
	const uint8_t *(*greeting)(void *st, size_t *len);
	/*
	 * The server's unconsumed bytes: PROTO_NEED_MORE, PROTO_REPLY (send
	 * pending(), then feed again), PROTO_REQUEST (the tunnel is up; bytes
	 * after *used are payload for the client) or PROTO_FAIL (failure()).
	 */
	enum proto_res (*feed)(void *st, const uint8_t *buf, size_t len, size_t *used);
	const uint8_t *(*pending)(const void *st, size_t *len);
	/* After PROTO_FAIL: what to tell the client. */
	enum proto_connect_result (*failure)(const void *st);
	/* After PROTO_REQUEST: the address the server bound for us (NULL: unknown). */
	const struct sockaddr *(*bound)(const void *st);
	/*
	 * Optional, once the leg is up (and its handshake done): the leg's
	 * transform (malloc'd; NULL: out of memory). Bytes to and from the
	 * server then go through it (Shadowsocks).
	 */
	struct xform *(*xform)(void *st);
};

/* The ops of an outbound type (never NULL for a type the config accepts). */
const struct outbound_ops *outbound_ops(enum outbound_type type);

extern const struct outbound_ops outbound_socks5_ops;
extern const struct outbound_ops outbound_http_ops;
extern const struct outbound_ops outbound_ss_ops;
struct xform;

/*
 * A non-blocking TCP socket of `family` for ob, with TCP_NODELAY, keepalive
 * (ob's own when it sets one, else keepalive_s; 0: none), ob's
 * TCP_USER_TIMEOUT, and the outbound's source address, interface and
 * fwmark. fd or -errno (-EAFNOSUPPORT when bind-address is of the other
 * family).
 */
int outbound_socket(const struct outbound *ob, int family, unsigned keepalive_s);
/*
 * A non-blocking UDP socket of `family` for ob (IPV6_V6ONLY for IPv6), with
 * the same source address, interface and fwmark as outbound_socket(). fd or
 * -errno.
 */
int outbound_udp_socket(const struct outbound *ob, int family);
/*
 * SO_KEEPALIVE: probe after secs without traffic, then every secs / 3,
 * 3 probes, so a peer gone without a word (a NAT that forgot us) is
 * dropped about 2 x secs after it went quiet. Set on a listener, accepted
 * sockets inherit it.
 */
void tcp_keepalive(int fd, unsigned secs);
/* TCP_USER_TIMEOUT: data unacknowledged this long ends the connection (0: leave the kernel's). */
void tcp_user_timeout(int fd, unsigned ms);

#endif
