/* SPDX-License-Identifier: MIT */
/* SOCKS5 UDP ASSOCIATE: one relay socket per association, datagrams to and from targets (loop module LOOP_KIND_UDP). */
#ifndef SPLICED_UDP_H
#define SPLICED_UDP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "loop.h"
#include "proto.h"
#include "socks5_addr.h"

struct worker;
struct conn;

/* Datagrams taken per recvmmsg(2); the scratch is UDP_BATCH x UDP_SLOT bytes per worker. */
enum {
	UDP_BATCH = 8,
	UDP_SLOT = 65536 + 512, /* the largest datagram and a header, with room */
};

/*
 * Names a client sends to are looked up once per association and kept
 * (UDP_NAMES of them, the oldest replaced); datagrams wait for their name's
 * answer, at most UDP_QUEUE of them and UDP_QUEUE_BYTES in all.
 */
enum { UDP_NAMES = 4, UDP_QUEUE = 8, UDP_QUEUE_BYTES = 16384 };

enum udp_name_state { NAME_EMPTY = 0, NAME_WAITING, NAME_LOOKUP, NAME_READY, NAME_FAILED };

struct udp_name {
	enum udp_name_state state;
	char host[PROTO_HOST_MAX + 1];
	uint16_t port;                /* of the datagram that asked (the lookup wants one) */
	struct sockaddr_storage addr; /* NAME_READY: the first address */
};

struct udp_queued {
	uint8_t *data; /* the payload, malloc'd */
	size_t len;
	uint16_t port;
	int name; /* index into names[] */
	int outbound;
};

/* The association's polls: the relay socket (the client's side), and one outbound socket a family. */
enum udp_op { UDP_OP_RELAY = 1, UDP_OP_OUT4, UDP_OP_OUT6, UDP_OP_TCP_OUT, UDP_OP_END };

/* UDP-in-TCP: a whole frame fits the input buffer; the output holds what one short write left. */
enum { UDP_TCP_IN_MAX = 3 + SOCKS5_ADDR_MAX + 65535, UDP_TCP_OUT_MAX = UDP_TCP_IN_MAX };

struct udp_assoc {
	struct loop_obj obj; /* first: the loop hands it back */
	struct worker *w;
	unsigned inbound;
	uint32_t conn_slot, conn_gen; /* the control connection (RFC 1928 section 7) */
	int fd;                       /* the relay socket the client sends to */
	bool relay_v6;                /* it is AF_INET6 (dual-stack for an IPv4 client) */
	int out_fd[2];                /* direct: an IPv4 and an IPv6 socket, -1 until needed */
	uint64_t ops[UDP_OP_END];     /* tags of the polls in flight (0: none) */
	/* The client: its TCP peer's address, and the port once declared or first seen. */
	struct sockaddr_storage client;
	bool port_known;
	struct loop_timer timer; /* udp-timeout */
	struct udp_name names[UDP_NAMES];
	unsigned next_name; /* the entry a new name replaces */
	struct udp_queued queue[UDP_QUEUE];
	unsigned n_queued;
	size_t queued_bytes;
	bool lookup; /* a lookup is in flight (for the NAME_LOOKUP entry) */
	/*
	 * UDP-in-TCP (hev-socks5's FWD UDP): the client's datagrams are frames
	 * on its TCP connection (tcp_fd, the connection's; fd is -1). tcp_in
	 * gathers a frame; tcp_out holds the rest of a frame a short write
	 * left, and while it does, replies are dropped.
	 */
	int tcp_fd;
	uint8_t *tcp_in, *tcp_out;
	size_t tcp_in_len, tcp_out_len, tcp_out_off;
};

extern const struct loop_module udp_module;

/*
 * Open the association for control connection c, whose client declared
 * `declared` (often 0.0.0.0:0) and reached us at `local`: a relay socket
 * bound to that address (in udp-ports when set). *bound: what the reply
 * says (udp-advertise, or local, with the relay's port). 0 or -errno.
 */
int udp_assoc_open(struct conn *c, const struct sockaddr_storage *peer,
                   const struct sockaddr_storage *local, const struct proto_target *declared,
                   struct udp_assoc **out, struct sockaddr_storage *bound);
/*
 * UDP-in-TCP for connection c: no relay socket; datagrams are frames on
 * tcp_fd (which stays the connection's). 0 or -errno.
 */
int udp_assoc_open_tcp(struct conn *c, int tcp_fd, struct udp_assoc **out);
/* tcp_fd is readable (the connection's poll): frames in, datagrams out. false: close it. */
bool udp_tcp_readable(struct udp_assoc *a);
/* Bytes the client sent right behind its request (the handshake buffer's): frames too. */
bool udp_tcp_early(struct udp_assoc *a, const uint8_t *d, size_t n);
/* The control connection ended: close the association (no-op if it already is). */
void udp_assoc_close(struct udp_assoc *a);
void udp_timeout(struct loop *l, struct loop_timer *t);
/* Internal to udp.c and udp_tcp.c. */
void udp_arm(struct udp_assoc *a, unsigned op, int fd, unsigned mask);
void udp_send_up(struct udp_assoc *a, const struct proto_target *t, const uint8_t *d, size_t n);
void udp_tcp_down(struct udp_assoc *a, const uint8_t *d, size_t n,
                  const struct sockaddr_storage *src);
void udp_tcp_writable(struct udp_assoc *a);
/* The resolver's answer for association o (a resolver_answer_fn). */
void udp_resolved(struct worker *w, struct loop_obj *o, int err,
                  const struct sockaddr_storage *addrs, int n);

#endif
