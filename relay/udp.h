/* SPDX-License-Identifier: MIT */
/* SOCKS5 UDP ASSOCIATE: one relay socket per association, datagrams to and from targets (loop module LOOP_KIND_UDP). */
#ifndef SPLICED_UDP_H
#define SPLICED_UDP_H

#include <stdbool.h>
#include <stdint.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "loop.h"
#include "proto.h"
#include "socks5_addr.h"
#include "socks5_udp.h"

struct worker;
struct conn;
struct outbound;
struct inbound;
struct config;

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

/* The names an association has sent to, and the datagrams waiting for one. */
struct udp_names {
	struct udp_name names[UDP_NAMES];
	unsigned next_name; /* the entry a new name replaces */
	struct udp_queued queue[UDP_QUEUE];
	unsigned n_queued;
	size_t queued_bytes;
	bool lookup; /* a lookup is in flight (for the NAME_LOOKUP entry) */
};

/* The association's polls: the relay socket (the client's side), and one outbound socket a family. */
enum udp_op { UDP_OP_RELAY = 1, UDP_OP_OUT4, UDP_OP_OUT6, UDP_OP_TCP_OUT, UDP_OP_CTL, UDP_OP_END };

/* UDP-in-TCP: a whole frame fits the input buffer; the output holds what one short write left. */
enum { UDP_TCP_IN_MAX = 3 + SOCKS5_ADDR_MAX + 65535, UDP_TCP_OUT_MAX = UDP_TCP_IN_MAX };

/* A stream's frames in, and the rest of one a short write left. */
struct udp_frame_in {
	uint8_t *
	        buf; /* UDP_TCP_IN_MAX octets while part of a frame waits for the rest, else NULL */
	size_t len;
};
struct udp_frame_out {
	uint8_t *buf; /* malloc'd on the first short write */
	size_t len, off;
};

/* Upstream legs an association may have open at once (one per socks5 outbound it routes to). */
enum { UDP_LEGS = 2 };
struct udp_up;

/* An IPv4 or IPv6 address and port: 28 octets where a sockaddr_storage takes 128. */
union udp_addr {
	struct sockaddr sa;
	struct sockaddr_in in4;
	struct sockaddr_in6 in6;
};

struct udp_assoc {
	struct loop_obj obj; /* first: the loop hands it back */
	struct worker *w;
	struct snapshot *snap; /* the configuration it started on: routes every datagram */
	unsigned inbound;
	/*
	 * The control connection (RFC 1928 section 7), taken over from the
	 * connection that asked (udp_assoc_adopt()): the association ends when
	 * it does. It still counts as a connection (max-connections, per source).
	 */
	int ctl_fd;
	uint32_t src_slot;
	bool counted;
	int fd;                   /* the relay socket the client sends to */
	bool relay_v6;            /* it is AF_INET6 (dual-stack for an IPv4 client) */
	int out_fd[2];            /* direct: an IPv4 and an IPv6 socket, -1 until needed */
	uint64_t ops[UDP_OP_END]; /* tags of the polls in flight (0: none) */
	/* The client: its TCP peer's address, and the port once declared or first seen. */
	union udp_addr client;
	bool port_known;
	/*
	 * udp-timeout, or udp-dns-timeout while every datagram so far went to
	 * port 53 (dns: 0 none yet, 1 only DNS, 2 something else too).
	 */
	uint8_t dns;
	struct loop_timer timer;
	struct udp_names *nm; /* names sent to, on first use (udp_names.c) */
	/*
	 * UDP-in-TCP (hev-socks5's FWD UDP): the client's datagrams are frames
	 * on its TCP connection (tcp_fd, which is ctl_fd; fd is -1). tcp_in
	 * gathers a frame; tcp_out holds the rest of a frame a short write
	 * left, and while it does, replies are dropped.
	 */
	int tcp_fd;
	struct udp_frame_in tcp_in;
	struct udp_frame_out tcp_out;
	/* socks5 upstreams: an association of our own with each (udp_up.c) */
	struct udp_up *legs[UDP_LEGS];
	/* To be closed at the end of the turn (on w->udp_doomed): udp_assoc_doom(). */
	bool doomed;
	struct list_node doom;
	/*
	 * Who logged in on the control connection (NULL: nobody): its rules
	 * route each datagram; it counts as one of the user's connections, and
	 * the payload bytes queued each way are added to the user's at the end.
	 */
	struct user_acct *user;
	uint64_t user_up, user_down;
	/* A tproxy inbound's session (udp_tproxy.c): no control connection, no relay socket. */
	struct udp_tp_sess *tp;
};
/* tproxy (udp_tproxy.c): a tproxy inbound's UDP socket in one worker, and its sessions. */
struct udp_tp;
struct udp_tp_sess;
extern const struct loop_module udp_tp_module;
/* Main thread, before the worker runs: the socket for inbound i. 0 or -errno (logged). */
int udp_tp_open(struct worker *w, unsigned i, struct udp_tp **out);
/* The socket alone (IP_TRANSPARENT, bound): fd or -errno (logged). */
int udp_tp_socket(const struct config *cfg, const struct inbound *in);
/* The object around fd (taken) for inbound i. 0 or -errno (fd closed). */
int udp_tp_adopt(struct worker *w, unsigned i, int fd, struct udp_tp **out);
/* A reload kept the socket for what is now inbound i. */
void udp_tp_reinbound(struct udp_tp *t, unsigned i);
int udp_tp_fd(const struct udp_tp *t);
void udp_tp_arm(struct udp_tp *t);
void udp_tp_stop(struct udp_tp *t);
/* A reply from sa (the target) to a tproxy session's client, sent as sa. */
void udp_tp_deliver(struct udp_assoc *a, const uint8_t *d, size_t n, const struct sockaddr *sa);
/* The session is closing: out of its table; released: its reply sockets. */
void udp_tp_unlink(struct udp_assoc *a);
void udp_tp_free(struct udp_assoc *a);
/* A session object for inbound i (no control connection, no relay socket); NULL: no memory. */
struct udp_assoc *udp_assoc_new_session(struct worker *w, unsigned inbound);
/* The name the association's client logged in with, or NULL. */
const char *udp_user(const struct udp_assoc *a);

/* Datagrams queued for one socket, sent with one sendmmsg(2) (udp_tx.c); the worker's. */
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
/* Send what is queued; before the buffers the payloads point into change. */
void udp_tx_flush(struct worker *w);

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
/* UDP-in-TCP for connection c: no relay socket; datagrams are frames on tcp_fd. 0 or -errno. */
int udp_assoc_open_tcp(struct conn *c, int tcp_fd, struct udp_assoc **out);
/*
 * The reply is out: a takes over the client's TCP connection (fd, and its
 * max-connections-per-source slot, and its place in max-connections),
 * watches it and closes it when the association ends; the struct conn
 * that asked can go (conn_handed_over()).
 */
void udp_assoc_adopt(struct udp_assoc *a, int fd, uint32_t src_slot);
/* It also takes over the connection's place among its user's connections (user_acct_open()). */
void udp_assoc_adopt_user(struct udp_assoc *a, struct user_acct *u);
/* tcp_fd is readable: frames in, datagrams out. false: close it. */
bool udp_tcp_readable(struct udp_assoc *a);
/* Bytes the client sent right behind its request (the handshake buffer's): frames too. */
bool udp_tcp_early(struct udp_assoc *a, const uint8_t *d, size_t n);
/* Close the association and its control connection (no-op if it is closed already). */
void udp_assoc_close(struct udp_assoc *a);
void udp_timeout(struct loop *l, struct loop_timer *t);
/* A datagram either way: the association's idle deadline moves (its queue: udp_tq or udp_dns_tq). */
void udp_touch(struct udp_assoc *a);
/*
 * Close a at the end of the loop's turn (udp_reap()), for a failure found
 * deep in a call whose callers still use the association or its connection.
 */
void udp_assoc_doom(struct udp_assoc *a);
void udp_reap(struct worker *w);
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
/* An RFC 1928 datagram header; false: dropped and counted (udp_frag, udp_malformed). */
bool udp_parse(struct worker *w, const uint8_t *d, size_t n, struct proto_target *t, size_t *hl);
/* 0.0.0.0 or :: (any port). */
bool udp_addr_unspecified(const void *sa);
/* Internal to udp*.c. SO_RCVBUF = udp-buffer on a UDP socket of an association. */
void udp_set_buffer(struct worker *w, int fd);
void udp_arm(struct udp_assoc *a, unsigned op, int fd, unsigned mask);
void udp_send_up(struct udp_assoc *a, const struct proto_target *t, const uint8_t *d, size_t n);
/* A frame to the client: its header (hl octets, 0: could not be framed), then d. */
void udp_tcp_down(struct udp_assoc *a, const uint8_t *hdr, size_t hl, const uint8_t *d, size_t n);
void udp_tcp_writable(struct udp_assoc *a);
/* A reply to the client, from sa (a target's address) or else t (an upstream's header). */
void udp_deliver(struct udp_assoc *a, const uint8_t *d, size_t n, const struct sockaddr *sa,
                 const struct proto_target *t);
/* recvmmsg(2) scratch: UDP_BATCH x UDP_SLOT octets, the worker's; NULL without memory. */
uint8_t *udp_scratch(struct worker *w);

/* Frame I/O shared by both ends of UDP-in-TCP (udp_tcp.c). fn: false stops (the owner closed). */
typedef bool udp_frame_fn(void *ctx, const struct proto_target *t, const uint8_t *d, size_t n);
/*
 * Every whole frame in d[0..n) (bytes that came before any read: behind a
 * request) to fn; the start of the next kept in `in`. false: out of step.
 */
bool udp_frames_parse(struct worker *w, struct udp_frame_in *in, const uint8_t *d, size_t n,
                      udp_frame_fn *fn, void *ctx);
/* Read what fd holds and parse it. false: close the stream (EOF, error, bad frame, fn said stop). */
bool udp_frames_read(struct worker *w, int fd, struct udp_frame_in *in, udp_frame_fn *fn,
                     void *ctx);
/*
 * Write one frame whole, or nothing: 1 sent; 0 dropped (nothing went, it
 * could not be framed, or the last is still going); 2 part went, the rest
 * is kept in o: poll fd for POLLOUT, then udp_frame_flush(); -1 the stream
 * failed; -2 no memory for the rest.
 */
int udp_frame_write(struct udp_frame_out *o, int fd, const uint8_t *hdr, size_t hl,
                    const uint8_t *d, size_t n);
/* More of the kept rest: 1 done, 2 some is left (poll again), -1 the stream failed. */
int udp_frame_flush(struct udp_frame_out *o, int fd);

/*
 * The socks5 upstream (udp_up.c): a datagram for t through outbound ob,
 * over a leg of a's own (opened on first use: a TCP connection to the
 * upstream with UDP ASSOCIATE, or FWD UDP for `udp = tcp`; datagrams wait
 * for it in a small queue).
 */
void udp_up_send(struct udp_assoc *a, const struct outbound *ob, const struct proto_target *t,
                 const uint8_t *d, size_t n);
/* The association is closing: close its legs. */
void udp_up_close_all(struct udp_assoc *a);
extern const struct loop_module udp_up_module;
void udp_up_resolved(struct worker *w, struct loop_obj *o, int err,
                     const struct sockaddr_storage *addrs, int n);
/* A leg not up within connect-timeout + handshake-timeout (w->udp_up_tq). */
void udp_up_timeout(struct loop *l, struct loop_timer *t);
/* Send a payload to addr (t's address, or its name's) through the direct ob, if egress says yes. */
void udp_send_to(struct udp_assoc *a, const struct outbound *ob, const struct proto_target *t,
                 const struct sockaddr_storage *addr, const uint8_t *d, size_t n);
/* A datagram to a name (udp_names.c): sent when the name is known, else queued for its lookup. */
void udp_up_name(struct udp_assoc *a, const struct outbound *ob, const struct proto_target *t,
                 const uint8_t *d, size_t n);
void udp_names_free(struct udp_assoc *a);
/* The resolver's answer for association o (a resolver_answer_fn). */
void udp_resolved(struct worker *w, struct loop_obj *o, int err,
                  const struct sockaddr_storage *addrs, int n);

#endif
