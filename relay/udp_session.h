/* SPDX-License-Identifier: MIT */
/* UDP sessions: one client endpoint's datagrams, routed one by one, for every UDP front end (loop module LOOP_KIND_UDP). */
#ifndef SPLICED_UDP_SESSION_H
#define SPLICED_UDP_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "loop.h"
#include "proto.h"
#include "siphash.h"
#include "socks5_udp.h"

/*
 * A session is what one client endpoint (address and port) sends, whatever
 * front end it came through: a SOCKS5 association's relay socket or its
 * UDP-in-TCP stream (udp.c), a tproxy inbound's socket (udp_tproxy.c), a
 * TUN queue. The session routes each datagram on its own (rules, egress
 * policy), sends it out through its outbound (direct: a socket per family,
 * its own; socks5: a leg of its own to the upstream, udp_up.c; block),
 * looks the names it meets up off the loop and keeps them (udp_names.c),
 * and hands every reply back to its front end (struct udp_front's
 * deliver()), which alone knows how to reach the client. It ends after
 * udp-timeout without a datagram either way (udp-dns-timeout while all it
 * sent went to port 53), when udp-max-sessions is reached in its worker
 * and it is the one idle longest, or when its front end closes it.
 *
 * A front end embeds struct udp_sess first in its own per-session struct
 * and passes that struct's size to udp_sess_open(): one allocation per
 * session. Front ends whose clients share one socket (tproxy, TUN) find
 * sessions by client endpoint in a struct udp_sess_table.
 *
 * A front end's loop:
 *
 *     s = udp_sess_find(&tab, &src);
 *     if (!s && !(s = udp_sess_open(w, inbound, &my_front, sizeof(struct my_sess), &src, &tab)))
 *             w->stats.udp_send_errors++;           (no memory; next datagram)
 *     else
 *             udp_sess_send(s, &target, payload, len);
 *     ...
 *     udp_tx_flush(w);                              (before the payloads' buffer is reused)
 */

/* Datagrams taken per recvmmsg(2); the scratch is UDP_BATCH x UDP_SLOT bytes per worker. */
enum {
	UDP_BATCH = 8,
	UDP_SLOT = 65536 + 512, /* the largest datagram and a header, with room */
};

/* An IPv4 or IPv6 address and port: 28 octets where a sockaddr_storage takes 128. */
union udp_addr {
	struct sockaddr sa;
	struct sockaddr_in in4;
	struct sockaddr_in6 in6;
};

struct worker;
struct udp_sess;
struct udp_sess_table;
struct udp_names;
struct udp_up;
struct user_acct;

/* The session's polls are ops 1 and 2; a front end arms its own from UDP_SESS_OP_FRONT on. */
enum { UDP_SESS_OP_OUT4 = 1, UDP_SESS_OP_OUT6, UDP_SESS_OP_FRONT };
/* Upstream legs a session may have open at once (one per socks5 outbound it routes to). */
enum { UDP_LEGS = 2 };
/* The inbound index of a session that belongs to no [inbound]: rules alone route it. */
enum { UDP_SESS_NO_INBOUND = 0xffffffffu };

/* What a front end does for its sessions. deliver() is required, the rest optional. */
struct udp_front {
	/*
	 * A reply for the client: d[0..n), from `from` (the target's address
	 * and port, AF_INET or AF_INET6, never v4-mapped), or from NULL when a
	 * socks5 upstream's header named the source by a name. t: that header
	 * (its target, as the upstream wrote it), NULL for a direct reply.
	 * d stays valid until udp_tx_flush(w), so udp_tx_add() may queue it.
	 * The front end counts what it sends (udp_down) and what it drops.
	 */
	void (*deliver)(struct udp_sess *s, const uint8_t *d, size_t n, const struct sockaddr *from,
	                const struct proto_target *t);
	/* A poll the front end armed with udp_sess_arm() (op >= UDP_SESS_OP_FRONT) completed. */
	void (*complete)(struct udp_sess *s, unsigned op, const struct io_uring_cqe *cqe);
	/* udp_sess_close(): cancel the front end's polls. s is whole; it is out of its table. */
	void (*closing)(struct udp_sess *s);
	/* Nothing is in flight any more: close the front end's descriptors, free what it holds. */
	void (*release)(struct udp_sess *s);
};

struct udp_sess {
	struct loop_obj obj; /* first: the loop hands it back */
	struct worker *w;
	const struct udp_front *front;
	unsigned inbound; /* or UDP_SESS_NO_INBOUND */
	/* The client's endpoint: the table's key (set by udp_sess_open()), or the front end's. */
	union udp_addr client;
	struct udp_sess_table *tab; /* the table that finds it, NULL: none */
	struct udp_sess *next;      /* its chain there */
	int out_fd[2];              /* direct: an IPv4 and an IPv6 socket, -1 until needed */
	uint64_t ops[2];            /* tags of their polls, by op - 1 (0: none) */
	/*
	 * udp-timeout, or udp-dns-timeout while every datagram so far went to
	 * port 53 (dns: 0 none yet, 1 only DNS, 2 something else too).
	 */
	uint8_t dns;
	bool doomed;
	struct loop_timer timer;
	struct list_node doom; /* on w->udp_doomed: closed at the end of the turn */
	struct udp_names *nm;  /* names sent to, on first use (udp_names.c) */
	struct udp_up *legs[UDP_LEGS];
	/*
	 * Who logged in (NULL: nobody): its rules route each datagram; it counts
	 * as one of the user's connections, and the payload bytes each way are
	 * added to the user's when the session ends (udp_sess_set_user()).
	 */
	struct user_acct *user;
	uint64_t user_up, user_down;
};

/*
 * A new session of front end f for inbound (an index into the config's
 * inbounds, or UDP_SESS_NO_INBOUND), `size` octets (>= sizeof(struct
 * udp_sess); the rest, the front end's, zeroed). client: its endpoint
 * (struct sockaddr_in or sockaddr_in6, not v4-mapped), or NULL to fill in
 * later; tab: a table to find it in by that endpoint (one it is not in
 * yet: udp_sess_find() first), or NULL. At udp-max-sessions the worker's
 * session idle longest is closed first (udp_evicted). NULL: no memory.
 */
struct udp_sess *udp_sess_open(struct worker *w, unsigned inbound, const struct udp_front *f,
                               size_t size, const void *client, struct udp_sess_table *tab);
/*
 * A datagram from the client for t: the idle deadline moves, then it is
 * routed and sent (or queued for its name's lookup or its upstream leg's
 * handshake, or dropped and counted). d is read before this returns or
 * before udp_tx_flush(w); call that before d's buffer is reused.
 */
void udp_sess_send(struct udp_sess *s, const struct proto_target *t, const uint8_t *d, size_t n);
/* Close s now (no-op if it is closed): out of its table, its legs closed, released later. */
void udp_sess_close(struct udp_sess *s);
/* Close s at the end of the loop's turn: for a failure found where callers still use it. */
void udp_sess_doom(struct udp_sess *s);
/* The end of the loop's turn: close the doomed (the worker calls it). */
void udp_sess_reap(struct worker *w);
/* The idle deadline moves (a datagram either way); udp_sess_send() does it itself. */
void udp_sess_touch(struct udp_sess *s);
/* s counts as one of u's connections from now on (u from user_acct_open()). */
void udp_sess_set_user(struct udp_sess *s, struct user_acct *u);
/* The name its client logged in with, or NULL. */
const char *udp_sess_user(const struct udp_sess *s);
/* Poll fd for the front end (op >= UDP_SESS_OP_FRONT; its complete() gets it): the tag. */
uint64_t udp_sess_arm(struct udp_sess *s, unsigned op, int fd, unsigned mask);
/* A session's deadline passed (the worker's udp_tq and udp_dns_tq). */
void udp_sess_timeout(struct loop *l, struct loop_timer *t);
extern const struct loop_module udp_sess_module;

/*
 * Sessions by client endpoint, for front ends whose clients all reach one
 * socket or queue. SipHash with a random key per table (the endpoints are
 * the clients' to choose); the buckets double as the table fills. A
 * session leaves its table when it closes.
 */
struct udp_sess_table {
	uint8_t key[SIPHASH_KEY_LEN];
	struct udp_sess **b;
	uint32_t mask; /* buckets - 1 */
	uint32_t n;
};
/* 0, or -errno (no memory, no randomness). */
int udp_sess_table_init(struct udp_sess_table *t);
/*
 * The table goes (its owner does; not used again): sessions still in it
 * stay open, found by nobody, their tab NULL.
 */
void udp_sess_table_fini(struct udp_sess_table *t);
/* The open session of this client endpoint (sockaddr_in or sockaddr_in6), or NULL. */
struct udp_sess *udp_sess_find(const struct udp_sess_table *t, const void *client);

/* Endpoints (sockaddr_in, sockaddr_in6, union udp_addr): equal; keyed hash (address and port). */
bool udp_endpoint_eq(const void *x, const void *y);
uint64_t udp_endpoint_hash(const uint8_t key[SIPHASH_KEY_LEN], const void *sa);
/* struct sockaddr_in's or sockaddr_in6's size, by family. */
socklen_t udp_endpoint_len(const void *sa);
/* ::ffff:a.b.c.d:port as a.b.c.d:port, in place (sockaddr_in6 room); any other left as it is. */
void udp_endpoint_unmap(void *sa);

/* ---- batched I/O (udp_batch.c), for every UDP socket of the relay ---- */

/* One recvmmsg(2) batch into the worker's scratch: the datagrams and their sources. */
struct udp_rx {
	struct mmsghdr mm[UDP_BATCH];
	struct iovec iov[UDP_BATCH];
	struct sockaddr_storage src[UDP_BATCH];
};
/* Control-message room per datagram, for callers that want some (IP_ORIGDSTADDR). */
enum { UDP_RX_CTL = 64 };
/*
 * Up to UDP_BATCH datagrams from fd (non-blocking): their number, or <= 0.
 * ctl: NULL, or UDP_BATCH buffers for each datagram's control messages.
 */
int udp_recv_batch(struct worker *w, int fd, struct udp_rx *rx,
                   uint8_t (*ctl)[CMSG_SPACE(UDP_RX_CTL)]);
/* recvmmsg(2) scratch: UDP_BATCH x UDP_SLOT octets, the worker's; NULL without memory. */
uint8_t *udp_scratch(struct worker *w);
/* SO_RCVBUF = udp-buffer on a UDP socket of the relay. */
void udp_set_buffer(struct worker *w, int fd);

/* Datagrams queued for one socket, sent with one sendmmsg(2); the worker's. */
enum { UDP_TX_MAX = UDP_BATCH };
struct udp_tx {
	int fd;
	unsigned n;
	bool down[UDP_TX_MAX]; /* counted as udp_down (to the client), else udp_up */
	struct mmsghdr mm[UDP_TX_MAX];
	struct iovec iov[UDP_TX_MAX][2];
	union udp_addr to[UDP_TX_MAX];
	uint8_t hdr[UDP_TX_MAX][SOCKS5_UDP_HDR_MAX];
};
/*
 * Queue a datagram (hdr, then d: both must stay as they are until the
 * flush) for fd, to `to` (to_len 0: a connected socket). A queue for
 * another socket, or a full one, is flushed first.
 */
void udp_tx_add(struct worker *w, int fd, const void *to, socklen_t to_len, const uint8_t *hdr,
                size_t hl, const uint8_t *d, size_t n, bool down);
/* Send what is queued; before the buffers the payloads point into change, or a socket closes. */
void udp_tx_flush(struct worker *w);

#endif
