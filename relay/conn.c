/* SPDX-License-Identifier: MIT */
/* Connection state machine: handshake → route → resolve → connect → (outbound handshake) → relay. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "conn_internal.h"
#include "log.h"
#include "route.h"
#include "udp.h"
#include "user_acct.h"
#include "access_log.h"

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

int conn_send_all(int fd, const void *buf, size_t len)
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

void conn_arm_poll(struct conn *c, int slot, unsigned op, int fd, unsigned mask)
{
	struct loop *l = &conn_worker(c)->loop;
	struct io_uring_sqe *sqe = loop_prep(l, &c->obj, op);

	io_uring_prep_poll_add(sqe, fd, mask);
	c->ops[slot] = sqe->user_data;
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
 * closes the connection, and the linked poll then never posts one: the pair
 * is counted once (loop_prep_linked()). The poll (slot, op, fd, mask) is
 * queued here so that nothing can come between the two.
 */
void conn_queue_reply(struct conn *c, size_t len, int slot, unsigned op, int fd, unsigned mask)
{
	struct loop *l = &conn_worker(c)->loop;
	struct io_uring_sqe *sqe;

	loop_reserve(l, 2);
	sqe = loop_prep_linked(l, &c->obj, OP_TX);
	io_uring_prep_send(sqe, c->leg[LEG_IN].fd, c->tx, len, MSG_NOSIGNAL | MSG_WAITALL);
	sqe->flags |= IOSQE_IO_LINK | IOSQE_CQE_SKIP_SUCCESS;
	c->ops[OPS_TX] = sqe->user_data;
	conn_arm_poll(c, slot, op, fd, mask);
}

/* Whether a reply of len bytes may go through conn_queue_reply(). */
bool conn_ring_reply_ok(const struct conn *c, size_t len)
{
	return conn_worker(c)->loop.feat.cqe_skip && len && len <= CONN_TX_MAX;
}

/* Both legs are up for a request to forward: the exchange (conn_forward.c) instead of pumps. */
static void start_forward(struct conn *c, const struct http_fwd_req *req)
{
	struct worker *w = conn_worker(c);

	if (!conn_fwd_start(c, req)) {
		conn_fwd_free(c);
		conn_fail(c, CONNECT_GENERAL_FAILURE);
		return;
	}
	conn_hs_free(c);
	c->state = CONN_RELAY;
	c->spliced = w->cfg->splice && c->leg[LEG_IN].spliceable && c->leg[LEG_OUT].spliceable;
	loop_timer_arm(&w->loop, &w->idle_tq, &c->timer);
	conn_fwd_ready(c);
}

/*
 * Both legs are up and one of them transforms (Shadowsocks): each leg gets
 * its transform, the bytes the handshakes took are seeded into the
 * directions they belong to (the client's: plaintext the inbound already
 * opened, then wire bytes still to open; the upstream's: plaintext), and
 * the pumps take over. An absolute-form HTTP request through a transforming
 * outbound is sent rewritten (origin-form, "Connection: close") as the
 * first payload of a tunnel: conn_forward.c writes plain legs only.
 */
static void start_relay_xform(struct conn *c, const struct sockaddr *bound,
                              const struct http_fwd_req *fwd)
{
	struct worker *w = conn_worker(c);
	struct conn_hs *hs = c->hs;
	struct inbound_env env;
	size_t len = 0, tx_len = 0, plain = hs->in->early ? hs->in->early(hs->in_st) : hs->len;
	const uint8_t *reply = NULL;
	uint8_t *head = NULL;
	bool seed0 = hs->len > 0, seed1 = hs->up_len > 0;
	int ret = -ENOMEM;

	conn_hs_env(c, &env);
	if (hs->in->xform && !(c->leg[LEG_IN].x = hs->in->xform(hs->in_st, &env)))
		goto reset;
	if (hs->out->xform && !(c->leg[LEG_OUT].x = hs->out->xform(hs->out_st)))
		goto reset;
	if (plain > hs->len)
		plain = hs->len; /* an inbound bug must not become a memory bug */
	if (fwd) {
		static const struct http_fwd_via origin = {.proxy = false};
		size_t cap = fwd->head_len + HTTP_FWD_EXTRA + hs->len - fwd->head_len, n;

		head = malloc(cap);
		n = head ? http_fwd_rewrite(fwd, hs->buf, &origin, head, cap) : 0;
		if (!n)
			goto reset;
		memcpy(head + n, hs->buf + fwd->head_len, hs->len - fwd->head_len);
		ret = xform_seed(&w->xbufs, &c->dir[0], head, n + hs->len - fwd->head_len, NULL, 0);
		seed0 = true;
	} else {
		ret = xform_seed(&w->xbufs, &c->dir[0], hs->buf, plain, hs->buf + plain,
		                 hs->len - plain);
		reply = hs->in->reply(hs->in_st, CONNECT_OK, bound, &len);
	}
	if (ret < 0 ||
	    (ret = xform_seed(&w->xbufs, &c->dir[1], hs->up_buf, hs->up_len, NULL, 0)) < 0)
		goto reset;
	if (len && !seed1 && conn_ring_reply_ok(c, len)) {
		tx_len = len;
		memcpy(c->tx, reply, len); /* hs is freed below */
	} else if (len && (ret = conn_send_all(c->leg[LEG_IN].fd, reply, len)) < 0) {
		goto reset;
	}
	free(head);
	conn_hs_free(c);
	c->state = CONN_RELAY;
	c->spliced = false;
	/* A request header the server is owed waits a moment for payload to go with it. */
	if (!seed0 && c->leg[LEG_OUT].x && c->leg[LEG_OUT].x->ops->seal_owes(c->leg[LEG_OUT].x))
		loop_timer_arm(&w->loop, &w->ff_tq, &c->timer);
	else
		loop_timer_arm(&w->loop, &w->idle_tq, &c->timer);
	if (tx_len)
		conn_queue_reply(c, tx_len, OPS_DIR1, OP_DIR1_POLL, c->leg[LEG_OUT].fd, POLLIN);
	else if (seed1)
		conn_relay_ready(c, 1);
	else
		conn_arm_poll(c, OPS_DIR1, OP_DIR1_POLL, c->leg[LEG_OUT].fd, POLLIN);
	if (c->obj.closed)
		return; /* direction 1 failed at once */
	if (seed0)
		conn_relay_ready(c, 0);
	else
		conn_arm_poll(c, OPS_DIR0, OP_DIR0_POLL, c->leg[LEG_IN].fd, POLLIN);
	return;
reset:
	if (head) {
		explicit_bzero(head, fwd->head_len + HTTP_FWD_EXTRA + hs->len - fwd->head_len);
		free(head);
	}
	log_debug_rl("relay not started: %s", strerror(-ret));
	w->stats.resets++;
	conn_close(c, true);
}

/* Both legs are up: reply, flush early bytes, hand over to the pumps. */
static void start_relay(struct conn *c, const struct sockaddr *bound)
{
	struct worker *w = conn_worker(c);
	struct conn_hs *hs = c->hs;
	size_t len, tx_len = 0; /* not 0: the reply waits in c->tx for conn_queue_reply() */
	const struct http_fwd_req *fwd = hs->in->http_fwd ? hs->in->http_fwd(hs->in_st) : NULL;
	const uint8_t *reply;

	if (hs->in->xform || hs->out->xform) {
		start_relay_xform(c, bound, fwd);
		return;
	}
	if (fwd) {
		start_forward(c, fwd);
		return;
	}
	reply = hs->in->reply(hs->in_st, CONNECT_OK, bound, &len);
	int ret;

	if (!hs->len && !hs->up_len && conn_ring_reply_ok(c, len)) {
		/* The common case: only the reply to send, so it can go through the ring. */
		tx_len = len;
		memcpy(c->tx, reply, len); /* hs is freed below */
	} else {
		if (hs->len && (ret = conn_send_all(c->leg[LEG_OUT].fd, hs->buf, hs->len)) < 0)
			goto reset;
		if (len && (ret = conn_send_all(c->leg[LEG_IN].fd, reply, len)) < 0)
			goto reset;
		if (hs->up_len &&
		    (ret = conn_send_all(c->leg[LEG_IN].fd, hs->up_buf, hs->up_len)) < 0)
			goto reset;
	}
	/* Both legs already have TCP_NODELAY (outbound_socket(), listener_open()). */
	conn_hs_free(c);
	c->state = CONN_RELAY;
	c->spliced = w->cfg->splice && c->leg[LEG_IN].spliceable && c->leg[LEG_OUT].spliceable;
	loop_timer_arm(&w->loop, &w->idle_tq, &c->timer);
	/*
	 * Linked behind a queued reply, no relayed byte can overtake it. The
	 * reply goes first in the ring, so if it fails (the client reset), its
	 * CQE closes the connection before the client leg's poll is handled.
	 */
	if (tx_len)
		conn_queue_reply(c, tx_len, OPS_DIR1, OP_DIR1_POLL, c->leg[LEG_OUT].fd, POLLIN);
	else
		conn_arm_poll(c, OPS_DIR1, OP_DIR1_POLL, c->leg[LEG_OUT].fd, POLLIN);
	conn_arm_poll(c, OPS_DIR0, OP_DIR0_POLL, c->leg[LEG_IN].fd, POLLIN);
	return;
reset:
	log_debug_rl("early write failed: %s", strerror(-ret));
	w->stats.resets++;
	conn_close(c, true);
}

void conn_start_outbound(struct conn *c)
{
	struct worker *w = conn_worker(c);
	struct conn_hs *hs = c->hs;
	const struct outbound *ob;
	enum proto_connect_result r;

	hs->target = hs->in->target(hs->in_st);
	c->outbound = (int16_t)route_pick(conn_cfg(c), conn_inbound(c), hs->target,
	                                  c->user ? c->user->name : NULL);
	ob = &conn_cfg(c)->outbounds[c->outbound];
	if (c->orow) /* a keep-alive connection's earlier request */
		c->orow->closed++;
	c->orow = &c->snap->out_stats[c->outbound]->rows[w->id];
	c->orow->opened++;
	hs->out = outbound_ops(ob->type);
	hs->out_mem_len = hs->out->state_size + hs->out->buf_size;
	if (hs->out_mem_len) {
		hs->out_mem = calloc(1, hs->out_mem_len);
		if (!hs->out_mem) {
			conn_fail(c, CONNECT_GENERAL_FAILURE);
			return;
		}
		hs->out_st = hs->out_mem;
		hs->up_buf = hs->out_mem + hs->out->state_size;
		hs->up_cap = hs->out->buf_size;
	}
	loop_timer_stop(&c->timer); /* the connect has its own (linked) timeout */
	r = hs->out->start(hs->out_st, ob, hs->target, &hs->dest);
	if (r != CONNECT_OK) {
		conn_fail(c, r);
		return;
	}
	conn_connect_start(c);
}

/*
 * A UDP ASSOCIATE (or FWD UDP): open the association, reply with its relay
 * address, and hand the client's connection over to it. From then on the
 * connection only says how long the association lives (RFC 1928 section
 * 7), and the association watches it (udp.c): a struct conn per
 * association would be 280 bytes doing nothing.
 */
void conn_start_udp(struct conn *c, enum inbound_udp kind)
{
	struct conn_hs *hs = c->hs;
	struct sockaddr_storage peer, local, bound;
	socklen_t pl = sizeof(peer), ll = sizeof(local);
	struct udp_assoc *a;
	const uint8_t *reply;
	size_t len;
	int ret, fd = c->leg[LEG_IN].fd;

	if (getpeername(fd, (struct sockaddr *)&peer, &pl) < 0 ||
	    getsockname(fd, (struct sockaddr *)&local, &ll) < 0) {
		conn_close(c, false);
		return;
	}
	bound = local; /* UDP-in-TCP: the datagrams come this way */
	if (kind == INBOUND_UDP_IN_TCP)
		ret = udp_assoc_open_tcp(c, fd, &a);
	else
		ret = udp_assoc_open(c, &peer, &local, hs->in->target(hs->in_st), &a, &bound);
	if (ret < 0) {
		log_debug_rl("udp: no association: %s", strerror(-ret));
		conn_fail(c, CONNECT_GENERAL_FAILURE);
		return;
	}
	reply = hs->in->reply(hs->in_st, CONNECT_OK, (const struct sockaddr *)&bound, &len);
	if (conn_send_all(fd, reply, len) < 0) {
		udp_assoc_close(a);
		conn_close(c, false);
		return;
	}
	/* The association owns the connection from here on; this struct conn goes. */
	udp_assoc_adopt(a, fd, c->src_slot);
	if (c->user_open)
		udp_sess_set_user(&a->s, c->user);
	c->user_open = false;
	c->leg[LEG_IN].fd = -1;
	c->src_slot = SOURCE_UNCOUNTED;
	c->handed_over = true;
	/* Frames the client sent right behind its request. */
	if (kind == INBOUND_UDP_IN_TCP && hs->len && !udp_tcp_early(a, hs->buf, hs->len))
		udp_assoc_close(a);
	conn_close(c, false);
}

/* The upstream's handshake failed (why: enum sec_out_hs_failed): counted, then as conn_fail(). */
static void out_hs_fail(struct conn *c, int why, enum proto_connect_result r)
{
	if (c->orow)
		c->orow->hs_failed[why]++;
	conn_fail(c, r);
}

/* The outbound's server answered (part of) its handshake. */
static void out_readable(struct conn *c)
{
	struct conn_hs *hs = c->hs;
	int fd = c->leg[LEG_OUT].fd;
	ssize_t n = recv(fd, hs->up_buf + hs->up_len, hs->up_cap - hs->up_len, MSG_DONTWAIT);

	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
		out_hs_fail(c, OUT_HS_CLOSED, CONNECT_GENERAL_FAILURE);
		return;
	}
	if (n < 0) {
		conn_arm_poll(c, OPS_HS, OP_HS_POLL, fd, POLLIN);
		return;
	}
	hs->up_len += (size_t)n;
	for (;;) {
		size_t used = 0, len;
		enum proto_res res = hs->out->feed(hs->out_st, hs->up_buf, hs->up_len, &used);
		const uint8_t *out;

		if (used > hs->up_len)
			used = hs->up_len;
		memmove(hs->up_buf, hs->up_buf + used, hs->up_len - used);
		hs->up_len -= used;
		switch (res) {
		case PROTO_NEED_MORE:
			if (hs->up_len >= hs->up_cap) { /* an answer longer than its protocol's */
				out_hs_fail(c, OUT_HS_REFUSED, CONNECT_GENERAL_FAILURE);
				return;
			}
			conn_arm_poll(c, OPS_HS, OP_HS_POLL, fd, POLLIN);
			return;
		case PROTO_REPLY:
			out = hs->out->pending(hs->out_st, &len);
			if (conn_send_all(fd, out, len) < 0) {
				out_hs_fail(c, OUT_HS_CLOSED, CONNECT_GENERAL_FAILURE);
				return;
			}
			continue;
		case PROTO_REQUEST:
			start_relay(c, hs->out->bound(hs->out_st));
			return;
		case PROTO_AUTH:
		case PROTO_FAIL:
		default:
			/* Pass the server's verdict on, in the client's protocol. */
			out_hs_fail(c, OUT_HS_REFUSED, hs->out->failure(hs->out_st));
			return;
		}
	}
}

void conn_connected(struct conn *c)
{
	struct worker *w = conn_worker(c);
	struct conn_hs *hs = c->hs;
	struct sockaddr_storage bound;
	socklen_t len = sizeof(bound);
	size_t glen;
	const uint8_t *greeting = hs->out->greeting(hs->out_st, &glen);

	alog_remote(c, c->leg[LEG_OUT].fd);

	/*
	 * A plain-HTTP request through an http upstream is sent to it as a proxy
	 * request (absolute-form; conn_forward.c), not tunnelled with a CONNECT
	 * that an upstream may refuse for port 80.
	 */
	if (glen && hs->in->http_fwd && hs->in->http_fwd(hs->in_st) &&
	    conn_cfg(c)->outbounds[c->outbound].type == OUTBOUND_HTTP)
		glen = 0;
	if (glen) {
		c->state = CONN_OUT_HANDSHAKE;
		loop_timer_arm(&w->loop, &w->hs_tq, &c->timer);
		if (conn_send_all(c->leg[LEG_OUT].fd, greeting, glen) < 0) {
			out_hs_fail(c, OUT_HS_CLOSED, CONNECT_GENERAL_FAILURE);
			return;
		}
		conn_arm_poll(c, OPS_HS, OP_HS_POLL, c->leg[LEG_OUT].fd, POLLIN);
		return;
	}
	if (getsockname(c->leg[LEG_OUT].fd, (struct sockaddr *)&bound, &len) < 0)
		bound.ss_family = AF_UNSPEC;
	start_relay(c, bound.ss_family == AF_UNSPEC ? NULL : (struct sockaddr *)&bound);
}

static void complete(struct loop *l, struct loop_obj *o, unsigned op,
                     const struct io_uring_cqe *cqe)
{
	struct conn *c = (struct conn *)o;

	(void)l;
	switch (op) {
	case OP_TX:
		/* A failure (or cancellation): the linked poll never runs, nor posts a CQE. */
		c->ops[OPS_TX] = 0;
		c->ops[c->state == CONN_RELAY ? OPS_DIR1 : OPS_HS] = 0;
		log_debug_rl("reply not sent: %s",
		             cqe->res < 0 ? strerror(-cqe->res) : "short write");
		conn_worker(c)->stats.resets++;
		conn_close(c, true);
		return;
	case OP_HS_POLL:
		c->ops[OPS_HS] = 0;
		c->ops[OPS_TX] = 0; /* a reply linked ahead of this poll is out */
		if (c->state == CONN_HANDSHAKE)
			conn_hs_readable(c);
		else if (c->state == CONN_OUT_HANDSHAKE)
			out_readable(c);
		else if (c->state == CONN_DRAIN && !conn_drain_input(c->leg[LEG_IN].fd))
			conn_close(c, false); /* the client closed: so do we */
		else if (c->state == CONN_DRAIN)
			conn_arm_poll(c, OPS_HS, OP_HS_POLL, c->leg[LEG_IN].fd, POLLIN);
		return;
	case OP_WATCH:
		conn_watch_fired(c);
		return;
	case OP_DIR0_POLL:
	case OP_DIR1_POLL: {
		int d = op == OP_DIR1_POLL;
		c->ops[d] = 0;
		if (c->fwd) { /* a request being forwarded: one poll at a time, in slot 0 */
			conn_fwd_ready(c);
			return;
		}
		if (d)
			c->ops[OPS_TX] = 0; /* a reply linked ahead of this poll is out */
		conn_relay_ready(c, d);
		return;
	}
	default: /* a connect attempt or its linked timeout */
		conn_connect_complete(c, op, cqe->res);
		return;
	}
}

void conn_hs_timeout(struct loop *l, struct loop_timer *t)
{
	struct conn *c = list_entry(t, struct conn, timer);

	(void)l;
	if (c->state == CONN_DRAIN) {
		/* The deadline of a refused probe-resistant handshake: a FIN, nothing left unread. */
		conn_drain_input(c->leg[LEG_IN].fd);
		conn_close(c, false);
		return;
	}
	conn_worker(c)->stats.hs_timeouts++;
	c->irow->hs_failed[HS_TIMEOUT]++;
	alog_result(c, "handshake-timeout");
	if (c->state == CONN_OUT_HANDSHAKE)
		out_hs_fail(c, OUT_HS_TIMEOUT, CONNECT_TIMEOUT);
	else if (c->state == CONN_HANDSHAKE && c->hs && c->hs->in->probe_resistant) {
		/* Incomplete or refused: the same close, at the same time. */
		conn_drain_input(c->leg[LEG_IN].fd);
		conn_close(c, false);
	} else
		conn_close(c, false);
}

void conn_first_flight_timeout(struct loop *l, struct loop_timer *t)
{
	struct conn *c = list_entry(t, struct conn, timer);
	struct worker *w = conn_worker(c);
	struct xform *x = c->leg[LEG_OUT].x;

	loop_timer_arm(l, &w->idle_tq, &c->timer);
	if (c->state != CONN_RELAY || c->dir[0].done || !x || !x->ops->seal_owes(x))
		return;
	/*
	 * No payload came: the header goes alone. The pump does it; its poll on
	 * the client is cancelled so that it runs now (its completion calls it).
	 */
	c->dir[0].flush = true;
	if (c->ops[OPS_DIR0])
		loop_cancel(&w->loop, c->ops[OPS_DIR0]);
}

void conn_idle_timeout(struct loop *l, struct loop_timer *t)
{
	struct conn *c = list_entry(t, struct conn, timer);

	(void)l;
	conn_worker(c)->stats.idle_timeouts++;
	alog_result(c, "idle-timeout");
	conn_close(c, false);
}

void conn_linger_timeout(struct loop *l, struct loop_timer *t)
{
	struct conn *c = list_entry(t, struct conn, timer);

	(void)l;
	/* Either the other direction's time after an error is over, or a flush check is due. */
	if (c->dir[0].done && c->dir[1].done)
		conn_relay_end_after_error(c);
	else
		conn_close(c, true);
}

void conn_close(struct conn *c, bool rst)
{
	struct worker *w = conn_worker(c);

	for (int i = 0; i < OPS_N; i++) {
		if (c->ops[i])
			loop_cancel(&w->loop, c->ops[i]);
		c->ops[i] = 0;
	}
	conn_connect_cancel(c);
	c->rst = rst;
	loop_timer_stop(&c->timer);
	/*
	 * The descriptors and buffers stay until the cancelled ops have
	 * completed (release()): an op still queued in the ring must not find
	 * its descriptor number reused, nor its reply buffer freed.
	 */
	loop_close(&w->loop, &c->obj);
}

static void release(struct loop *l, struct loop_obj *o)
{
	static const struct linger abort_linger = {.l_onoff = 1, .l_linger = 0};
	struct conn *c = (struct conn *)o;
	struct worker *w = conn_worker(c);

	(void)l;
	alog_end(c);
	for (int leg = 0; leg < 2; leg++) {
		if (c->leg[leg].fd < 0)
			continue;
		if (c->rst)
			setsockopt(c->leg[leg].fd, SOL_SOCKET, SO_LINGER, &abort_linger,
			           sizeof(abort_linger));
		close(c->leg[leg].fd);
	}
	conn_connect_release(c);
	conn_dir_release(c, 0);
	conn_dir_release(c, 1);
	for (int leg = 0; leg < 2; leg++) {
		struct xform *x = c->leg[leg].x;

		if (x) {
			x->ops->destroy(x); /* the keys are wiped */
			free(x);
			c->leg[leg].x = NULL;
		}
	}
	conn_hs_free(c);
	conn_fwd_free(c);
	if (c->user_open)
		user_acct_close(c->user, c->dir[0].bytes, c->dir[1].bytes);
	if (c->held)
		inbound_ops(conn_inbound(c)->type)->release(conn_inbound(c), c->held);
	if (!c->handed_over) {
		source_limit_put(w->srv->per_source, c->src_slot);
		w->n_conns--;
		atomic_fetch_sub_explicit(&w->srv->n_conns, 1, memory_order_relaxed);
		c->irow->closed++;
	}
	if (c->orow)
		c->orow->closed++;
	worker_snap_drop(w, c->snap);
	free(c);
}

const struct loop_module conn_module = {
        .name = "conn",
        .complete = complete,
        .release = release,
};
