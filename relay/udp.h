/* SPDX-License-Identifier: MIT */
/* SOCKS5 UDP associations (a front end of the UDP sessions), UDP-in-TCP frames, and what the session layer's files share. */
#ifndef SPLICED_UDP_H
#define SPLICED_UDP_H

#include <stdbool.h>
#include <stdint.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "loop.h"
#include "proto.h"
#include "socks5_addr.h"
#include "socks5_udp.h"
#include "udp_session.h"

struct worker;
struct conn;
struct outbound;

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

/* The association's own polls, after the session's: the relay socket, UDP-in-TCP out, the control connection. */
enum udp_op { UDP_OP_RELAY = UDP_SESS_OP_FRONT, UDP_OP_TCP_OUT, UDP_OP_CTL, UDP_OP_END };

/*
 * A SOCKS5 association (RFC 1928 section 7): a session whose client is
 * the one that asked on a TCP connection, and whose datagrams come to a
 * relay socket of its own, or as frames on that connection (hev-socks5's
 * FWD UDP).
 */
struct udp_assoc {
	struct udp_sess s; /* first: the session layer hands it back */
	/*
	 * The control connection, taken over from the connection that asked
	 * (udp_assoc_adopt()): the association ends when it does. It still
	 * counts as a connection (max-connections, per source).
	 */
	int ctl_fd;
	uint32_t src_slot;
	bool counted;
	bool relay_v6;   /* the relay socket is AF_INET6 (dual-stack for an IPv4 client) */
	bool port_known; /* s.client's port: declared, or its first datagram's */
	int fd;          /* the relay socket the client sends to */
	uint64_t ops[UDP_OP_END - UDP_SESS_OP_FRONT]; /* tags of its polls in flight (0: none) */
	/*
	 * UDP-in-TCP: the client's datagrams are frames on its TCP connection
	 * (tcp_fd, which is ctl_fd; fd is -1). tcp_in gathers a frame; tcp_out
	 * holds the rest of a frame a short write left, and while it does,
	 * replies are dropped.
	 */
	int tcp_fd;
	struct udp_frame_in tcp_in;
	struct udp_frame_out tcp_out;
};

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
/* Close the association and its control connection (no-op if it is closed already). */
void udp_assoc_close(struct udp_assoc *a);
/* Bytes the client sent right behind its request (the handshake buffer's): frames too. */
bool udp_tcp_early(struct udp_assoc *a, const uint8_t *d, size_t n);

/* Within the association's files (udp.c, udp_tcp.c). */
void udp_assoc_arm(struct udp_assoc *a, unsigned op, int fd, unsigned mask);
/* tcp_fd is readable: frames in, datagrams out. false: close it. */
bool udp_tcp_readable(struct udp_assoc *a);
/* A frame to the client: its header (hl octets, 0: could not be framed), then d. */
void udp_tcp_down(struct udp_assoc *a, const uint8_t *hdr, size_t hl, const uint8_t *d, size_t n);
void udp_tcp_writable(struct udp_assoc *a);

/* An RFC 1928 datagram header; false: dropped and counted (udp_frag, udp_malformed). */
bool udp_parse(struct worker *w, const uint8_t *d, size_t n, struct proto_target *t, size_t *hl);
/* 0.0.0.0 or :: (any port). */
bool udp_addr_unspecified(const void *sa);

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

/* ---- within the session layer (udp_session.c, udp_names.c, udp_up.c) ---- */

/* The session's [inbound], or NULL (UDP_SESS_NO_INBOUND). */
const struct inbound *udp_sess_inbound(const struct udp_sess *s);
/* Send a payload to addr (t's address, or its name's) through the direct ob, if egress says yes. */
void udp_sess_send_to(struct udp_sess *s, const struct outbound *ob, const struct proto_target *t,
                      const struct sockaddr_storage *addr, const uint8_t *d, size_t n);
/* A reply to the client, from sa (a target's address) or else t (an upstream's header). */
void udp_sess_deliver(struct udp_sess *s, const uint8_t *d, size_t n, const struct sockaddr *sa,
                      const struct proto_target *t);

/*
 * Names a client sends to are looked up once per session and kept
 * (udp_names.c); datagrams wait for their name's answer in a small queue.
 */
void udp_names_send(struct udp_sess *s, const struct outbound *ob, const struct proto_target *t,
                    const uint8_t *d, size_t n);
void udp_names_free(struct udp_sess *s);
/* The resolver's answer for session o (a resolver_answer_fn). */
void udp_resolved(struct worker *w, struct loop_obj *o, int err,
                  const struct sockaddr_storage *addrs, int n);

/*
 * The socks5 upstream (udp_up.c): a datagram for t through outbound ob,
 * over a leg of s's own (opened on first use: a TCP connection to the
 * upstream with UDP ASSOCIATE, or FWD UDP for `udp = tcp`; datagrams wait
 * for it in a small queue).
 */
void udp_up_send(struct udp_sess *s, const struct outbound *ob, const struct proto_target *t,
                 const uint8_t *d, size_t n);
/* The session is closing: close its legs. */
void udp_up_close_all(struct udp_sess *s);
extern const struct loop_module udp_up_module;
void udp_up_resolved(struct worker *w, struct loop_obj *o, int err,
                     const struct sockaddr_storage *addrs, int n);
/* A leg not up within connect-timeout + handshake-timeout (w->udp_up_tq). */
void udp_up_timeout(struct loop *l, struct loop_timer *t);

#endif
