/* SPDX-License-Identifier: MIT */
/* Connection state machine: handshake → route → resolve → connect → (upstream) → relay. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "conn.h"
#include "egress.h"
#include "log.h"
#include "outbound.h"
#include "resolve.h"
#include "route.h"
#include "worker.h"

/*
 * Handshake I/O is readiness-driven like the relay: a one-shot poll SQE, then
 * recv(2)/send(2) inline on the non-blocking socket. (An IORING_OP_RECV on an
 * O_NONBLOCK socket may complete with -EAGAIN instead of waiting, and the
 * splice pump needs the sockets non-blocking anyway.)
 *
 * Replies are sent inline and must go out whole: every reply here is at most
 * PROTO_REPLY_MAX bytes on a socket whose send buffer (>= 4 KiB, tcp_wmem
 * min) is empty, so a short send means the peer is gone. Early payload (bytes
 * the client sent after its request, at most the handshake buffer) goes to a freshly
 * connected socket under the same argument (initial tcp_wmem 16 KiB).
 */

static const struct inbound *inbound_of(struct worker *w, const struct conn *c)
{
	return &w->cfg->inbounds[c->inbound];
}

static int send_all(int fd, const void *buf, size_t len)
{
	while (len) {
		ssize_t n = send(fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if ((size_t)n < len)
			return -EAGAIN;
		len -= (size_t)n;
		buf = (const uint8_t *)buf + n;
	}
	return 0;
}

static void arm_poll(struct worker *w, struct conn *c, int slot, int op, int fd, unsigned mask)
{
	struct io_uring_sqe *sqe = worker_sqe(w);

	io_uring_prep_poll_add(sqe, fd, mask);
	w->n_inflight++;
	c->ops[slot] = worker_tag(w, c, op);
	io_uring_sqe_set_data64(sqe, c->ops[slot]);
}

/*
 * The reply in c->tx (len bytes) to the client through the ring, linked to a
 * poll queued right behind it, which is armed only once every byte is out.
 *
 * Why: a send(2) that wakes the client returns to user space with a
 * reschedule pending, so the worker is preempted in the middle of its batch
 * of completions; queued, the sends of a whole batch go out inside the one
 * io_uring_enter(2) that then waits, and the client runs while the worker
 * would sleep anyway (cps: about 0.5 fewer preemptions per connection).
 * The link keeps the order: nothing else writes to the client until the
 * linked poll completes, and that completion also proves c->tx is free
 * again. Success posts no CQE; a failure (OP_TX, also after a cancel)
 * closes the connection, and the linked poll then never runs (see OP_TX in
 * worker.c for the accounting). The poll (slot, op, fd, mask) is queued here
 * so that nothing can come between the two.
 */
static void queue_reply(struct worker *w, struct conn *c, size_t len, int slot, int op, int fd,
                        unsigned mask)
{
	struct io_uring_sqe *sqe;

	/* Both SQEs in one submission: a link cut by loop_sqe()'s flush would not hold. */
	if (io_uring_sq_space_left(&w->ring) < 2)
		io_uring_submit(&w->ring);
	sqe = worker_sqe(w);
	io_uring_prep_send(sqe, c->fd[LEG_IN], c->tx, len, MSG_NOSIGNAL | MSG_WAITALL);
	sqe->flags |= IOSQE_IO_LINK | IOSQE_CQE_SKIP_SUCCESS;
	c->ops[OPS_TX] = worker_tag(w, c, OP_TX);
	io_uring_sqe_set_data64(sqe, c->ops[OPS_TX]);
	arm_poll(w, c, slot, op, fd, mask);
}

/* Whether a reply of len bytes may go through queue_reply(). */
static bool ring_reply_ok(const struct worker *w, size_t len)
{
	return w->feat.cqe_skip && len <= CONN_TX_MAX;
}

/* Handshake buffers may hold credentials (RFC 1929 bytes, Proxy-Authorization). */
static void hs_free(struct conn *c)
{
	if (!c->hs)
		return;
	explicit_bzero(c->hs, offsetof(struct conn_hs, buf) + c->hs->cap);
	free(c->hs);
	c->hs = NULL;
}

static void hs_queue_add(struct worker *w, struct conn *c)
{
	list_del(&c->link);
	c->deadline_ms = w->now_ms + w->cfg->handshake_timeout_ms;
	list_add_tail(&w->hs_queue, &c->link);
}

/*
 * Tear down after a failed handshake: the reply (if any) was sent. Unread
 * input makes close(2) send a RST that can destroy the reply in flight, so
 * discard what is readable first.
 */
static void close_after_reply(struct worker *w, struct conn *c)
{
	uint8_t junk[4096];

	shutdown(c->fd[LEG_IN], SHUT_WR);
	for (int i = 0; i < 16; i++) {
		if (recv(c->fd[LEG_IN], junk, sizeof(junk), MSG_DONTWAIT) <= 0)
			break;
	}
	conn_close(w, c, false);
}

/* Tell the client the outcome of connecting, in its protocol. 0 or -errno. */
static int reply_connect(struct worker *w, struct conn *c, enum proto_connect_result r,
                         const struct sockaddr *bound)
{
	struct conn_hs *hs = c->hs;

	switch (inbound_of(w, c)->type) {
	case INBOUND_SOCKS5:
		socks5_server_reply(&hs->in.s5, socks5_rep_from_connect(r), bound);
		return send_all(c->fd[LEG_IN], hs->in.s5.reply, hs->in.s5.reply_len);
	case INBOUND_HTTP:
		http_connect_reply(&hs->in.http, r);
		return send_all(c->fd[LEG_IN], hs->in.http.reply, hs->in.http.reply_len);
	case INBOUND_FORWARD:
		break;
	}
	return 0;
}

static void fail(struct worker *w, struct conn *c, enum proto_connect_result r)
{
	if (r == CONNECT_NOT_ALLOWED)
		w->stats.blocked++;
	else
		w->stats.connect_failed++;
	reply_connect(w, c, r, NULL);
	close_after_reply(w, c);
}

/* Both legs are up: reply, flush early bytes, hand over to the splice pump. */
static void start_relay(struct worker *w, struct conn *c, const struct sockaddr *bound)
{
	struct conn_hs *hs = c->hs;
	size_t tx_len = 0; /* not 0: the reply waits in c->tx for queue_reply() */
	int ret;

	if (inbound_of(w, c)->type == INBOUND_SOCKS5 && !hs->len && !hs->up_len) {
		/* The common case: only the reply to send, so it can go through the ring. */
		struct socks5_server *s5 = &hs->in.s5;

		socks5_server_reply(s5, socks5_rep_from_connect(CONNECT_OK), bound);
		if (ring_reply_ok(w, s5->reply_len)) {
			tx_len = s5->reply_len;
			memcpy(c->tx, s5->reply, tx_len); /* hs is freed below */
		}
	}
	if (!tx_len) {
		if (hs->len && (ret = send_all(c->fd[LEG_OUT], hs->buf, hs->len)) < 0)
			goto reset;
		if ((ret = reply_connect(w, c, CONNECT_OK, bound)) < 0)
			goto reset;
		if (hs->up_len && (ret = send_all(c->fd[LEG_IN], hs->up_buf, hs->up_len)) < 0)
			goto reset;
	}
	/* Both legs already have TCP_NODELAY (outbound_socket(), worker_listen()). */
	hs_free(c);
	c->state = CONN_RELAY;
	list_del(&c->link);
	c->active_s = (uint32_t)(w->now_ms / 1000);
	list_add_tail(&w->idle_queue, &c->link);
	/*
	 * Linked behind a queued reply, no relayed byte can overtake it. The
	 * reply goes first in the ring, so if it fails (the client reset), its
	 * CQE closes the connection before the client leg's poll is handled.
	 */
	if (tx_len)
		queue_reply(w, c, tx_len, OPS_DIR1, OP_DIR1_POLL, c->fd[LEG_OUT], POLLIN);
	else
		arm_poll(w, c, OPS_DIR1, OP_DIR1_POLL, c->fd[LEG_OUT], POLLIN);
	arm_poll(w, c, OPS_DIR0, OP_DIR0_POLL, c->fd[LEG_IN], POLLIN);
	return;
reset:
	log_debug_rl("early write failed: %s", strerror(-ret));
	w->stats.resets++;
	conn_close(w, c, true);
}

static void connect_next(struct worker *w, struct conn *c)
{
	struct conn_hs *hs = c->hs;
	const struct outbound *ob = &w->cfg->outbounds[c->outbound];
	struct io_uring_sqe *sqe;
	int fd = -1;

	if (c->fd[LEG_OUT] >= 0) {
		close(c->fd[LEG_OUT]);
		c->fd[LEG_OUT] = -1;
	}
	while (hs->next_addr < hs->n_addrs) {
		struct sockaddr_storage *a = &hs->addrs[hs->next_addr++];
		/* Every address, literal or resolved, target or upstream, before its SYN. */
		if (egress_refused(w->cfg, inbound_of(w, c), ob, &hs->target, a, w->stats.egress)) {
			/* All refused: REP 02 / 403; a connect error of another address wins. */
			if (!hs->last_err)
				hs->last_err = -EACCES;
			continue;
		}
		fd = outbound_socket(ob, a->ss_family);
		if (fd >= 0) {
			hs->connect_addr = *a;
			break;
		}
		hs->last_err = fd == -EAFNOSUPPORT ? -ENETUNREACH : fd;
	}
	if (fd < 0) {
		fail(w, c, proto_connect_result_from_errno(hs->last_err));
		return;
	}
	c->fd[LEG_OUT] = fd;
	c->state = CONN_CONNECTING;
	sqe = worker_sqe(w);
	io_uring_prep_connect(sqe, fd, (struct sockaddr *)&hs->connect_addr,
	                      hs->connect_addr.ss_family == AF_INET ? sizeof(struct sockaddr_in)
	                                                            : sizeof(struct sockaddr_in6));
	sqe->flags |= IOSQE_IO_LINK;
	c->ops[OPS_HS] = worker_tag(w, c, OP_CONNECT);
	io_uring_sqe_set_data64(sqe, c->ops[OPS_HS]);
	hs->connect_ts.tv_sec = w->cfg->connect_timeout_ms / 1000;
	hs->connect_ts.tv_nsec = (long long)(w->cfg->connect_timeout_ms % 1000) * 1000000;
	sqe = worker_sqe(w);
	io_uring_prep_link_timeout(sqe, &hs->connect_ts, 0);
	w->n_inflight += 2; /* the connect and its linked timeout each post a CQE */
	io_uring_sqe_set_data64(sqe, loop_tag(OP_LINK_TIMEOUT, 0, 0));
}

/* The host to connect to: the target (direct) or the upstream proxy (socks5). */
static void resolve_and_connect(struct worker *w, struct conn *c, const char *host, uint16_t port)
{
	struct conn_hs *hs = c->hs;
	struct resolve_req *r;

	hs->n_addrs = hs->next_addr = 0;
	if (inet_pton(AF_INET, host, &((struct sockaddr_in *)&hs->addrs[0])->sin_addr) == 1) {
		hs->addrs[0].ss_family = AF_INET;
		((struct sockaddr_in *)&hs->addrs[0])->sin_port = htons(port);
		hs->n_addrs = 1;
	} else if (inet_pton(AF_INET6, host, &((struct sockaddr_in6 *)&hs->addrs[0])->sin6_addr) ==
	           1) {
		hs->addrs[0].ss_family = AF_INET6;
		((struct sockaddr_in6 *)&hs->addrs[0])->sin6_port = htons(port);
		hs->n_addrs = 1;
	}
	if (hs->n_addrs) {
		connect_next(w, c);
		return;
	}
	r = calloc(1, sizeof(*r));
	if (!r) {
		fail(w, c, CONNECT_GENERAL_FAILURE);
		return;
	}
	r->w = w;
	r->slot = c->slot;
	r->gen = w->gens[c->slot];
	r->port = port;
	snprintf(r->host, sizeof(r->host), "%s", host);
	c->state = CONN_RESOLVING;
	resolver_submit(w->srv->resolver, r);
}

static void start_outbound(struct worker *w, struct conn *c)
{
	struct conn_hs *hs = c->hs;
	const struct outbound *ob;

	c->outbound = (int16_t)route_pick(w->cfg, inbound_of(w, c), &hs->target);
	ob = &w->cfg->outbounds[c->outbound];
	list_del(&c->link); /* connect has its own (linked) timeout */
	switch (ob->type) {
	case OUTBOUND_BLOCK:
		fail(w, c, CONNECT_NOT_ALLOWED);
		return;
	case OUTBOUND_SOCKS5:
		if (socks5_client_init(&hs->up, &hs->target, ob->username, ob->password) < 0) {
			fail(w, c, CONNECT_GENERAL_FAILURE);
			return;
		}
		resolve_and_connect(w, c, ob->server_host, ob->server_port);
		return;
	case OUTBOUND_DIRECT:
		if (hs->target.kind == TARGET_IP) {
			hs->addrs[0] = hs->target.addr;
			hs->n_addrs = 1;
			hs->next_addr = 0;
			connect_next(w, c);
		} else {
			resolve_and_connect(w, c, hs->target.host, hs->target.port);
		}
		return;
	}
}

void conn_resolved(struct worker *w, struct conn *c, int err, const struct sockaddr_storage *addrs,
                   int n)
{
	struct conn_hs *hs = c->hs;

	if (c->state != CONN_RESOLVING || !c->hs)
		return;
	if (err < 0 || n == 0) {
		fail(w, c, proto_connect_result_from_errno(err < 0 ? err : -EHOSTUNREACH));
		return;
	}
	memcpy(hs->addrs, addrs, (size_t)n * sizeof(*addrs));
	hs->n_addrs = n;
	hs->next_addr = 0;
	connect_next(w, c);
}

static bool check_user(struct worker *w, struct conn *c, const char *user, const char *pass)
{
	struct users *u = atomic_load_explicit(&w->srv->users[c->inbound], memory_order_acquire);
	bool ok = u && users_check(u, user, pass);

	if (!ok)
		w->stats.auth_failed++;
	return ok;
}

/* Run the inbound parser over the buffered bytes. */
static void hs_feed(struct worker *w, struct conn *c)
{
	struct conn_hs *hs = c->hs;
	enum inbound_type type = inbound_of(w, c)->type;

	for (;;) {
		size_t used = 0;
		enum proto_res res;
		const uint8_t *reply;
		size_t reply_len;

		if (type == INBOUND_SOCKS5) {
			struct socks5_server *s = &hs->in.s5;
			res = socks5_server_feed(s, hs->buf, hs->len, &used);
			if (res == PROTO_AUTH)
				res = socks5_server_auth_result(s,
				                                check_user(w, c, s->user, s->pass));
			reply = s->reply;
			reply_len = s->reply_len;
			if (res == PROTO_REQUEST)
				hs->target = s->target;
		} else {
			struct http_connect *h = &hs->in.http;
			res = http_connect_feed(h, hs->buf, hs->len, &used);
			if (res == PROTO_AUTH)
				res = http_connect_auth_result(h,
				                               check_user(w, c, h->user, h->pass));
			reply = h->reply;
			reply_len = h->reply_len;
			if (res == PROTO_REQUEST)
				hs->target = h->target;
		}
		if (used > hs->len)
			used = hs->len; /* a parser bug must not become a memory bug */
		memmove(hs->buf, hs->buf + used, hs->len - used);
		hs->len -= used;

		switch (res) {
		case PROTO_NEED_MORE:
			if (hs->len >= hs->cap) {
				/* Unreachable with correct parsers: each bounds its own input. */
				w->stats.hs_bad++;
				conn_close(w, c, false);
				return;
			}
			arm_poll(w, c, OPS_HS, OP_HS_POLL, c->fd[LEG_IN], POLLIN);
			return;
		case PROTO_REPLY:
			if (hs->len == 0 && ring_reply_ok(w, reply_len)) {
				/* Nothing more buffered: the parser needs the client's next message. */
				memcpy(c->tx, reply, reply_len);
				queue_reply(w, c, reply_len, OPS_HS, OP_HS_POLL, c->fd[LEG_IN],
				            POLLIN);
				return;
			}
			if (send_all(c->fd[LEG_IN], reply, reply_len) < 0) {
				conn_close(w, c, false);
				return;
			}
			continue;
		case PROTO_AUTH: /* handled above */
		case PROTO_FAIL:
			w->stats.hs_bad++;
			log_debug_rl("inbound %s: handshake rejected", inbound_of(w, c)->name);
			if (reply_len)
				send_all(c->fd[LEG_IN], reply, reply_len);
			close_after_reply(w, c);
			return;
		case PROTO_REQUEST:
			start_outbound(w, c);
			return;
		}
	}
}

static void hs_readable(struct worker *w, struct conn *c)
{
	struct conn_hs *hs = c->hs;
	ssize_t n = recv(c->fd[LEG_IN], hs->buf + hs->len, hs->cap - hs->len, MSG_DONTWAIT);

	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
		conn_close(w, c, false);
		return;
	}
	if (n < 0) {
		arm_poll(w, c, OPS_HS, OP_HS_POLL, c->fd[LEG_IN], POLLIN);
		return;
	}
	hs->len += (size_t)n;
	hs_feed(w, c);
}

/* An upstream's SOCKS5 REP in the terms of the client's protocol (HTTP 403/502/504). */
static enum proto_connect_result connect_result_from_rep(enum socks5_rep rep)
{
	switch (rep) {
	case SOCKS5_REP_NOT_ALLOWED:
		return CONNECT_NOT_ALLOWED;
	case SOCKS5_REP_NET_UNREACHABLE:
		return CONNECT_NET_UNREACHABLE;
	case SOCKS5_REP_HOST_UNREACHABLE:
		return CONNECT_HOST_UNREACHABLE;
	case SOCKS5_REP_CONN_REFUSED:
		return CONNECT_REFUSED;
	case SOCKS5_REP_TTL_EXPIRED:
		return CONNECT_TIMEOUT;
	default:
		return CONNECT_GENERAL_FAILURE;
	}
}

/* The upstream SOCKS5 proxy answered (part of) our handshake. */
static void upstream_readable(struct worker *w, struct conn *c)
{
	struct conn_hs *hs = c->hs;
	ssize_t n = recv(c->fd[LEG_OUT], hs->up_buf + hs->up_len, sizeof(hs->up_buf) - hs->up_len,
	                 MSG_DONTWAIT);

	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
		fail(w, c, CONNECT_GENERAL_FAILURE);
		return;
	}
	if (n < 0) {
		arm_poll(w, c, OPS_HS, OP_HS_POLL, c->fd[LEG_OUT], POLLIN);
		return;
	}
	hs->up_len += (size_t)n;
	for (;;) {
		size_t used = 0;
		enum proto_res res = socks5_client_feed(&hs->up, hs->up_buf, hs->up_len, &used);

		if (used > hs->up_len)
			used = hs->up_len;
		memmove(hs->up_buf, hs->up_buf + used, hs->up_len - used);
		hs->up_len -= used;
		switch (res) {
		case PROTO_NEED_MORE:
			if (hs->up_len >= sizeof(hs->up_buf)) {
				fail(w, c, CONNECT_GENERAL_FAILURE);
				return;
			}
			arm_poll(w, c, OPS_HS, OP_HS_POLL, c->fd[LEG_OUT], POLLIN);
			return;
		case PROTO_REPLY:
			if (send_all(c->fd[LEG_OUT], hs->up.out, hs->up.out_len) < 0) {
				fail(w, c, CONNECT_GENERAL_FAILURE);
				return;
			}
			continue;
		case PROTO_REQUEST:
			start_relay(w, c, (const struct sockaddr *)&hs->up.bound);
			return;
		case PROTO_AUTH:
		case PROTO_FAIL:
		default:
			/* Pass the upstream's verdict on (its REP maps to ours one to one). */
			w->stats.connect_failed++;
			if (inbound_of(w, c)->type == INBOUND_SOCKS5) {
				socks5_server_reply(&hs->in.s5, hs->up.rep, NULL);
				send_all(c->fd[LEG_IN], hs->in.s5.reply, hs->in.s5.reply_len);
			} else {
				reply_connect(w, c, connect_result_from_rep(hs->up.rep), NULL);
			}
			close_after_reply(w, c);
			return;
		}
	}
}

static void connected(struct worker *w, struct conn *c)
{
	struct conn_hs *hs = c->hs;
	const struct outbound *ob = &w->cfg->outbounds[c->outbound];
	struct sockaddr_storage bound;
	socklen_t len = sizeof(bound);

	if (ob->type == OUTBOUND_SOCKS5) {
		c->state = CONN_UPSTREAM;
		hs_queue_add(w, c);
		if (send_all(c->fd[LEG_OUT], hs->up.out, hs->up.out_len) < 0) {
			fail(w, c, CONNECT_GENERAL_FAILURE);
			return;
		}
		arm_poll(w, c, OPS_HS, OP_HS_POLL, c->fd[LEG_OUT], POLLIN);
		return;
	}
	if (getsockname(c->fd[LEG_OUT], (struct sockaddr *)&bound, &len) < 0)
		bound.ss_family = AF_UNSPEC;
	start_relay(w, c, bound.ss_family == AF_UNSPEC ? NULL : (struct sockaddr *)&bound);
}

static void relay_ready(struct worker *w, struct conn *c, int d)
{
	struct splice_dir *dir = &c->dir[d];
	int src = c->fd[d], dst = c->fd[!d];
	int err = 0;
	uint64_t before = dir->bytes;
	enum splice_next next = splice_pump(&w->pipes, dir, src, dst, c->dir[!d].done, &err);
	uint32_t now_s = (uint32_t)(w->now_ms / 1000);

	w->stats.bytes[d] += dir->bytes - before;
	if (dir->bytes != before && now_s != c->active_s) {
		/* Coarse (1 s) move-to-tail keeps the idle queue sorted at O(1) cost. */
		c->active_s = now_s;
		list_del(&c->link);
		list_add_tail(&w->idle_queue, &c->link);
	}
	switch (next) {
	case SPLICE_WAIT_SRC:
		arm_poll(w, c, d, d ? OP_DIR1_POLL : OP_DIR0_POLL, src, POLLIN);
		return;
	case SPLICE_WAIT_DST:
		arm_poll(w, c, d, d ? OP_DIR1_POLL : OP_DIR0_POLL, dst, POLLOUT);
		return;
	case SPLICE_DONE:
		if (c->dir[!d].done) {
			w->stats.completed++;
			conn_close(w, c, false);
		}
		return;
	case SPLICE_ERROR:
		if (err == -EMFILE || err == -ENFILE || err == -ENOMEM)
			w->stats.no_pipe++;
		else
			w->stats.resets++;
		log_debug_rl("relay ended: %s", strerror(-err));
		conn_close(w, c, true);
		return;
	}
}

void conn_complete(struct worker *w, struct conn *c, int op, int res)
{
	switch (op) {
	case OP_TX:
		/* A failure (or cancellation): the linked poll never runs, nor posts a CQE. */
		c->ops[OPS_TX] = 0;
		c->ops[c->state == CONN_RELAY ? OPS_DIR1 : OPS_HS] = 0;
		log_debug_rl("reply not sent: %s", res < 0 ? strerror(-res) : "short write");
		w->stats.resets++;
		conn_close(w, c, true);
		return;
	case OP_HS_POLL:
		c->ops[OPS_HS] = 0;
		c->ops[OPS_TX] = 0; /* a reply linked ahead of this poll is out */
		if (c->state == CONN_HANDSHAKE)
			hs_readable(w, c);
		else if (c->state == CONN_UPSTREAM)
			upstream_readable(w, c);
		return;
	case OP_CONNECT:
		c->ops[OPS_HS] = 0;
		if (res == 0) {
			connected(w, c);
			return;
		}
		/* The linked timeout cancels the connect: report it as a timeout. */
		c->hs->last_err = res == -ECANCELED ? -ETIMEDOUT : res;
		connect_next(w, c);
		return;
	case OP_DIR0_POLL:
	case OP_DIR1_POLL: {
		int d = op == OP_DIR1_POLL;
		c->ops[d] = 0;
		if (d)
			c->ops[OPS_TX] = 0; /* a reply linked ahead of this poll is out */
		relay_ready(w, c, d);
		return;
	}
	}
}

void conn_accept(struct worker *w, unsigned inbound, int fd)
{
	const struct inbound *in = &w->cfg->inbounds[inbound];
	struct conn *c = worker_conn_alloc(w);

	if (!c) {
		close(fd);
		atomic_fetch_sub(&w->srv->n_conns, 1);
		return;
	}
	c->inbound = (uint16_t)inbound;
	c->fd[LEG_IN] = fd;
	size_t cap = in->type == INBOUND_HTTP ? CONN_HS_BUF_HTTP : CONN_HS_BUF_SOCKS5;
	c->hs = malloc(offsetof(struct conn_hs, buf) + cap);
	if (!c->hs) {
		conn_close(w, c, true);
		return;
	}
	memset(c->hs, 0, offsetof(struct conn_hs, up_buf)); /* the buffers need no clearing */
	c->hs->cap = cap;
	c->hs->len = 0;
	c->hs->up_len = 0;
	c->state = CONN_HANDSHAKE;
	hs_queue_add(w, c);
	switch (in->type) {
	case INBOUND_SOCKS5:
		socks5_server_init(&c->hs->in.s5, inbound_requires_auth(in));
		/*
		 * Clients speak first and usually at once: the greeting is often
		 * queued by the time the accept completes, so read before
		 * paying for a poll round trip (EAGAIN arms the poll).
		 */
		hs_readable(w, c);
		break;
	case INBOUND_HTTP:
		http_connect_init(&c->hs->in.http, inbound_requires_auth(in));
		hs_readable(w, c);
		break;
	case INBOUND_FORWARD:
		c->hs->target.kind = TARGET_DOMAIN;
		c->hs->target.port = in->target_port;
		snprintf(c->hs->target.host, sizeof(c->hs->target.host), "%s", in->target_host);
		proto_target_ip_literal(&c->hs->target); /* so CIDR rules see an IP target */
		start_outbound(w, c);
		break;
	}
}

void conn_timeout(struct worker *w, struct conn *c)
{
	switch (c->state) {
	case CONN_HANDSHAKE:
		w->stats.hs_timeouts++;
		conn_close(w, c, false);
		return;
	case CONN_UPSTREAM:
		w->stats.hs_timeouts++;
		fail(w, c, CONNECT_TIMEOUT);
		return;
	case CONN_RELAY:
		w->stats.idle_timeouts++;
		conn_close(w, c, false);
		return;
	case CONN_RESOLVING:
	case CONN_CONNECTING:
		return; /* not queued: the resolver and the linked timeout bound these */
	}
}

void conn_close(struct worker *w, struct conn *c, bool rst)
{
	static const struct linger abort_linger = {.l_onoff = 1, .l_linger = 0};
	bool tx = c->ops[OPS_TX] != 0;

	for (int i = 0; i < OPS_N; i++) {
		if (!c->ops[i])
			continue;
		struct io_uring_sqe *sqe = worker_sqe(w);
		io_uring_prep_cancel64(sqe, c->ops[i], 0);
		io_uring_sqe_set_data64(sqe, loop_tag(OP_CANCEL, 0, 0));
		sqe->flags |= IOSQE_CQE_SKIP_SUCCESS;
		c->ops[i] = 0;
	}
	/*
	 * A reply still queued or waiting for room reads c->tx, which is about
	 * to be freed, and needs the descriptor: submit now, so it goes out
	 * before the close or is cancelled before it can touch the memory.
	 */
	if (tx)
		io_uring_submit(&w->ring);
	for (int leg = 0; leg < 2; leg++) {
		if (c->fd[leg] < 0)
			continue;
		if (rst)
			setsockopt(c->fd[leg], SOL_SOCKET, SO_LINGER, &abort_linger,
			           sizeof(abort_linger));
		close(c->fd[leg]);
		c->fd[leg] = -1;
	}
	splice_dir_release(&w->pipes, &c->dir[0]);
	splice_dir_release(&w->pipes, &c->dir[1]);
	hs_free(c);
	list_del(&c->link);
	worker_conn_free(w, c);
}
