/* SPDX-License-Identifier: MIT */
/* Shared by conn.c (handshakes, lifetime), conn_connect.c (resolve, connect) and conn_relay.c (pumps). */
#ifndef SPLICED_CONN_INTERNAL_H
#define SPLICED_CONN_INTERNAL_H

#include <linux/time_types.h>
#include <stddef.h>

#include "conn.h"
#include "http_forward.h"
#include "inbound.h"
#include "outbound.h"
#include "resolve.h"
#include "worker.h"

/*
 * The connection's ops (4 bits). Polls, connects and their linked timeouts
 * post a CQE each; a reply sent through the ring posts one only when it
 * fails, and then its linked poll posts none.
 */
enum conn_op {
	OP_HS_POLL = 1, /* handshake leg readable (the client, or the outbound's server) */
	OP_DIR0_POLL,   /* relay direction 0 (client → target) ready */
	OP_DIR1_POLL,   /* relay direction 1 (target → client) ready */
	OP_TX,          /* a short reply sent through the ring */
	OP_WATCH,       /* the client left while its name was being resolved */
	OP_CONNECT,     /* OP_CONNECT + i: connect attempt i finished */
	OP_LINK_TIMEOUT = OP_CONNECT + CONN_ATTEMPTS, /* + i: attempt i's linked timeout */
	OP_END = OP_LINK_TIMEOUT + CONN_ATTEMPTS,
};
_Static_assert((int)OP_END <= (int)LOOP_OP_MAX, "conn ops fit the tag's 4 bits");

/* Handshake-time state: allocated at accept, freed (wiped) once relaying starts. */
struct conn_hs {
	const struct inbound_ops *in;
	const struct outbound_ops *out;
	void *in_st;  /* in->state_size bytes, in mem[] */
	void *out_st; /* out->state_size bytes, in out_mem */
	uint8_t *out_mem;
	size_t out_mem_len;
	const struct proto_target *target; /* the client's request (in in_st) */
	struct proto_target dest;          /* where the outbound connects */
	struct sockaddr_storage addrs[RESOLVE_MAX_ADDRS];
	int n_addrs, next_addr;
	int n_live;                       /* connect attempts in flight */
	int last_err;                     /* last connect error (negative errno) */
	uint64_t att_turn[CONN_ATTEMPTS]; /* loop turn attempt i was prepared in */
	struct __kernel_timespec connect_ts;
	size_t len, cap;       /* client bytes in buf not yet consumed; size of buf */
	size_t up_len, up_cap; /* the outbound server's bytes in up_buf; its size */
	uint8_t *buf, *up_buf;
	max_align_t mem[]; /* in_st, then buf */
};

static inline struct worker *conn_worker(const struct conn *c)
{
	return c->w;
}

/* The configuration the connection started on: its inbound, outbounds, rules and users. */
static inline const struct config *conn_cfg(const struct conn *c)
{
	return c->snap->cfg;
}

static inline const struct inbound *conn_inbound(const struct conn *c)
{
	return &c->snap->cfg->inbounds[c->inbound];
}

/*
 * n bytes moved in direction d (0: client to target), `copied` of them
 * through a user-space buffer: the worker's counters, the inbound's and
 * the outbound's (all this worker's own rows: plain adds).
 */
static inline void conn_count(struct conn *c, int d, uint64_t n, uint64_t copied)
{
	struct worker *w = c->w;

	*(d ? &w->stats.bytes_down : &w->stats.bytes_up) += n;
	c->irow->bytes[d][PATH_SPLICE] += n - copied;
	c->irow->bytes[d][PATH_BUFFER] += copied;
	if (c->orow) {
		c->orow->bytes[d][PATH_SPLICE] += n - copied;
		c->orow->bytes[d][PATH_BUFFER] += copied;
	}
}

/* conn.c: a one-shot poll for c (slot in c->ops, op its completion's code). */
void conn_arm_poll(struct conn *c, int slot, unsigned op, int fd, unsigned mask);
/* A short reply sent whole, inline: 0 or -errno (-EAGAIN for a short send). */
int conn_send_all(int fd, const void *buf, size_t len);
/* The reply in c->tx (len octets) through the ring, then the poll (slot, op, fd, mask). */
void conn_queue_reply(struct conn *c, size_t len, int slot, unsigned op, int fd, unsigned mask);
/* Whether a reply of len octets may go through conn_queue_reply(). */
bool conn_ring_reply_ok(const struct conn *c, size_t len);
/* The request is parsed: route it, then connect its outbound. */
void conn_start_outbound(struct conn *c);
/* The request is a UDP association: hand the connection over to it (udp.c). */
void conn_start_udp(struct conn *c, enum inbound_udp kind);
/* The outbound leg is connected: its handshake, or the relay. */
void conn_connected(struct conn *c);

/* conn_hs.c: the inbound's handshake. */
/* Tell the client why not (in its protocol), count it, close. */
void conn_fail(struct conn *c, enum proto_connect_result r);
/* The handshake state and buffer, wiped (they may hold credentials) and freed. */
void conn_hs_free(struct conn *c);
/* What an inbound may need beyond its bytes (inbound.h), valid for this turn. */
void conn_hs_env(struct conn *c, struct inbound_env *env);
/* The client leg is readable during the handshake. */
void conn_hs_readable(struct conn *c);
/* Read and drop what is readable; false when the peer closed or reset. */
bool conn_drain_input(int fd);

/* conn_connect.c: from a destination to a connected outbound leg. */
void conn_connect_start(struct conn *c);
void conn_connect_complete(struct conn *c, unsigned op, int res);
/* Closing: cancel what connect still has in flight. */
void conn_connect_cancel(struct conn *c);
/* The descriptors of attempts that lost or were cancelled (at release). */
void conn_connect_release(struct conn *c);
/* OP_WATCH completed: the client left while its name was being resolved. */
void conn_watch_fired(struct conn *c);

/* conn_forward.c: an HTTP request forwarded and its response, then the next request. */
bool conn_fwd_start(struct conn *c, const struct http_fwd_req *req);
void conn_fwd_ready(struct conn *c);
void conn_fwd_free(struct conn *c);
/* conn_hs.c: a handshake again on c's client leg, `left` (n octets) already read from it. */
void conn_restart(struct conn *c, const uint8_t *left, size_t n);
/* conn_relay.c: both legs up, the pumps. */
void conn_relay_ready(struct conn *c, int d);
void conn_relay_end_after_error(struct conn *c);
/* What a relay direction holds (pipe, buffers), given back. */
void conn_dir_release(struct conn *c, int d);

#endif
