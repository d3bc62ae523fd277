/* SPDX-License-Identifier: MIT */
/* From a destination to a connected outbound leg: resolution with a deadline, staggered connect attempts (RFC 8305). */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conn_internal.h"
#include "access_log.h"
#include "egress.h"
#include "user_acct.h"
#include "log.h"
#include "sockaddr.h"

/*
 * Resolution (review H3): the connection waits on its own resolve-timeout
 * deadline, watches the client leg meanwhile (a client that leaves frees
 * its slot at once, not when the name resolves), and the resolver refuses
 * at once when too many lookups are pending.
 *
 * Connecting (RFC 8305 §5): the addresses alternate between families,
 * starting with the first one the resolver gave (§4); an attempt starts
 * every CONN_STAGGER_MS, earlier ones keep running, a failed one starts
 * the next at once, the first to connect wins and the others are
 * cancelled. Each attempt has connect-timeout as its linked timeout. A
 * literal, or a name with one address, costs what a plain connect does.
 */

/* The connect of attempt i and its linked timeout, into one submission. */
static bool launch(struct conn *c)
{
	struct worker *w = conn_worker(c);
	struct conn_hs *hs = c->hs;
	const struct outbound *ob = &conn_cfg(c)->outbounds[c->outbound];
	struct io_uring_sqe *sqe;
	int i, fd = -1;

	for (i = 0; i < CONN_ATTEMPTS && c->att_fd[i] >= 0; i++)
		;
	if (i == CONN_ATTEMPTS)
		return false;
	while (fd < 0 && hs->next_addr < hs->n_addrs) {
		struct sockaddr_storage *a = &hs->addrs[hs->next_addr++];
		/* Every address, literal or resolved, target or upstream, before its SYN. */
		if (egress_refused(conn_cfg(c), conn_inbound(c), ob, hs->target,
		                   c->user ? c->user->name : NULL, a, w->stats.egress)) {
			/* All refused: REP 02 / 403; a connect error of another address wins. */
			if (!hs->last_err)
				hs->last_err = -EACCES;
			continue;
		}
		fd = outbound_socket(ob, a->ss_family, w->cfg->keepalive_ms / 1000);
		if (fd < 0) {
			hs->last_err = fd == -EAFNOSUPPORT ? -ENETUNREACH : fd;
			continue;
		}
		c->att_fd[i] = fd;
		hs->att_turn[i] = w->loop.turns;
		hs->n_live++;
		loop_reserve(&w->loop, 2);
		sqe = loop_prep(&w->loop, &c->obj, OP_CONNECT + (unsigned)i);
		io_uring_prep_connect(sqe, fd, (struct sockaddr *)a, sa_len(a->ss_family));
		sqe->flags |= IOSQE_IO_LINK;
		sqe = loop_prep(&w->loop, &c->obj, OP_LINK_TIMEOUT + (unsigned)i);
		io_uring_prep_link_timeout(sqe, &hs->connect_ts, 0);
	}
	return fd >= 0;
}

/* Alternate the families, keeping each family's order (RFC 8305 §4, First Address Family Count 1). */
static void interleave(struct conn_hs *hs)
{
	struct sockaddr_storage a[RESOLVE_MAX_ADDRS], b[RESOLVE_MAX_ADDRS];
	int na = 0, nb = 0, first = hs->addrs[0].ss_family, n = 0;

	for (int i = 0; i < hs->n_addrs; i++) {
		if (hs->addrs[i].ss_family == first)
			a[na++] = hs->addrs[i];
		else
			b[nb++] = hs->addrs[i];
	}
	for (int i = 0; i < na || i < nb; i++) {
		if (i < na)
			hs->addrs[n++] = a[i];
		if (i < nb)
			hs->addrs[n++] = b[i];
	}
}

static void connect_addrs(struct conn *c)
{
	struct worker *w = conn_worker(c);
	struct conn_hs *hs = c->hs;

	c->state = CONN_CONNECTING;
	hs->next_addr = 0;
	hs->connect_ts.tv_sec = w->cfg->connect_timeout_ms / 1000;
	hs->connect_ts.tv_nsec = (long long)(w->cfg->connect_timeout_ms % 1000) * 1000000;
	if (hs->n_addrs > 1)
		interleave(hs);
	if (!launch(c)) {
		conn_fail(c, proto_connect_result_from_errno(hs->last_err));
		return;
	}
	if (hs->next_addr < hs->n_addrs)
		loop_timer_arm(&w->loop, &w->stagger_tq, &c->timer);
}

void conn_stagger_timeout(struct loop *l, struct loop_timer *t)
{
	struct conn *c = list_entry(t, struct conn, timer);

	(void)l;
	if (c->state != CONN_CONNECTING)
		return;
	launch(c);
	if (c->hs->next_addr < c->hs->n_addrs)
		loop_timer_arm(&conn_worker(c)->loop, &conn_worker(c)->stagger_tq, &c->timer);
}

void conn_connect_complete(struct conn *c, unsigned op, int res)
{
	struct conn_hs *hs = c->hs;
	int i = (int)(op - OP_CONNECT);

	if (op >= OP_LINK_TIMEOUT)
		return; /* the connect reports the timeout (-ECANCELED) */
	if (c->state != CONN_CONNECTING) {
		/* An attempt that lost, cancelled: its socket goes now. */
		if (c->att_fd[i] >= 0)
			close(c->att_fd[i]);
		c->att_fd[i] = -1;
		return;
	}
	hs->n_live--;
	if (res == 0) {
		c->leg[LEG_OUT].fd = c->att_fd[i];
		c->leg[LEG_OUT].spliceable = true;
		c->att_fd[i] = -1;
		loop_timer_stop(&c->timer);
		conn_connect_cancel(c);
		conn_connected(c);
		return;
	}
	close(c->att_fd[i]);
	c->att_fd[i] = -1;
	/* The linked timeout cancels the connect: report it as a timeout. */
	hs->last_err = res == -ECANCELED ? -ETIMEDOUT : res;
	/* A failure starts the next attempt at once (RFC 8305 §5). */
	if (launch(c) || hs->n_live)
		return;
	loop_timer_stop(&c->timer);
	conn_fail(c, proto_connect_result_from_errno(hs->last_err));
}

void conn_connect_cancel(struct conn *c)
{
	struct worker *w = conn_worker(c);
	bool fresh = false;

	for (int i = 0; i < CONN_ATTEMPTS; i++) {
		if (c->att_fd[i] < 0)
			continue;
		loop_cancel(&w->loop, loop_tag_of(&w->loop, &c->obj, OP_CONNECT + (unsigned)i));
		fresh |= c->hs && c->hs->att_turn[i] == w->loop.turns;
	}
	/*
	 * An attempt prepared in this very turn is not submitted yet, and its
	 * SQE still points at c->hs, which may be freed before the next
	 * submit: submit now, so the kernel has copied what it needs.
	 */
	if (fresh)
		loop_submit(&w->loop);
}

void conn_connect_release(struct conn *c)
{
	for (int i = 0; i < CONN_ATTEMPTS; i++)
		if (c->att_fd[i] >= 0)
			close(c->att_fd[i]);
}

/* The resolver's answer (resolver_answer_fn), if the connection still waits for it. */
void conn_resolved(struct worker *w, struct loop_obj *o, int err,
                   const struct sockaddr_storage *addrs, int n)
{
	struct conn *c = (struct conn *)o; /* the loop object is its first member */
	struct conn_hs *hs = c->hs;

	(void)w;
	if (c->state != CONN_RESOLVING || !hs)
		return;
	loop_timer_stop(&c->timer);
	if (c->ops[OPS_DIR0]) /* the watch on the client: no longer needed */
		loop_cancel(&conn_worker(c)->loop, c->ops[OPS_DIR0]);
	c->ops[OPS_DIR0] = 0;
	if (err < 0 || n == 0) {
		conn_fail(c, proto_connect_result_from_errno(err < 0 ? err : -EHOSTUNREACH));
		return;
	}
	memcpy(hs->addrs, addrs, (size_t)n * sizeof(*addrs));
	hs->n_addrs = n;
	connect_addrs(c);
}

/* The destination is a name: resolve it on the loop, then connect. */
static void resolve(struct conn *c, const char *host, uint16_t port)
{
	struct worker *w = conn_worker(c);
	int ret;

	c->state = CONN_RESOLVING;
	loop_timer_arm(&w->loop, &w->resolve_tq, &c->timer);
	/* POLLRDHUP (and POLLERR/POLLHUP, always reported): the client left. */
	conn_arm_poll(c, OPS_DIR0, OP_WATCH, c->leg[LEG_IN].fd, POLLRDHUP);
	/* Last: the answer may come right away (a literal, /etc/hosts) and move c on. */
	ret = resolver_lookup(&w->res, &c->obj, host, port);
	if (ret < 0) {
		if (ret == -EAGAIN) {
			w->stats.resolve_full++;
			log_debug_rl("max-resolving reached: refusing a lookup");
		}
		conn_resolved(w, &c->obj, ret == -EAGAIN ? -EBUSY : ret, NULL, 0);
	}
}

void conn_connect_start(struct conn *c)
{
	struct conn_hs *hs = c->hs;

	hs->n_addrs = 0;
	if (hs->dest.kind == TARGET_IP) {
		hs->addrs[hs->n_addrs++] = hs->dest.addr;
		connect_addrs(c);
	} else {
		resolve(c, hs->dest.host, hs->dest.port);
	}
}

void conn_resolve_timeout(struct loop *l, struct loop_timer *t)
{
	struct conn *c = list_entry(t, struct conn, timer);

	(void)l;
	if (c->state != CONN_RESOLVING)
		return;
	conn_worker(c)->stats.resolve_timeouts++;
	alog_result(c, "resolve-timeout");
	/* As when the resolver itself gives up: the host is unreachable (REP 04, HTTP 502). */
	conn_resolved(conn_worker(c), &c->obj, -EHOSTUNREACH, NULL, 0);
}

/* The watch fired: the client closed or reset while its name was being resolved. */
void conn_watch_fired(struct conn *c)
{
	if (c->state != CONN_RESOLVING)
		return; /* a cancelled watch, or one that raced the answer */
	c->ops[OPS_DIR0] = 0;
	conn_worker(c)->stats.client_gone++;
	conn_close(c, false);
}
