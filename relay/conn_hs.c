/* SPDX-License-Identifier: MIT */
/*
 * A connection from accept to its request: the inbound's handshake parser
 * fed from the client leg, logins, refusals (a reply in the client's
 * protocol, or the silent drain of a probe-resistant inbound) and, for
 * HTTP keep-alive, the next request's handshake. What follows the request
 * (route, connect, relay) is conn.c's.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "access_log.h"
#include "conn_internal.h"
#include "log.h"
#include "user_acct.h"

/* Handshake buffers and states may hold credentials (RFC 1929, Proxy-Authorization). */
void conn_hs_free(struct conn *c)
{
	struct conn_hs *hs = c->hs;

	if (!hs)
		return;
	if (hs->out_mem) {
		explicit_bzero(hs->out_mem, hs->out_mem_len);
		free(hs->out_mem);
	}
	explicit_bzero(hs, (size_t)(hs->buf - (uint8_t *)hs) + hs->cap);
	free(hs);
	c->hs = NULL;
}

/* What an inbound may need beyond its bytes (inbound.h), valid for this turn. */
void conn_hs_env(struct conn *c, struct inbound_env *env)
{
	struct worker *w = conn_worker(c);

	env->users = c->snap->users[c->inbound];
	env->replay = server_ss_replay(w->srv, conn_inbound(c));
	env->stats = &w->stats;
	env->unix_s = (uint64_t)time(NULL);
	env->mono_s = w->loop.now_ms / 1000;
}

static size_t hs_state_size(const struct inbound_ops *ops)
{
	return (ops->state_size + sizeof(max_align_t) - 1) / sizeof(max_align_t) *
	       sizeof(max_align_t);
}

/*
 * The parser needs `want` bytes at the front of the buffer (an authentic
 * first chunk longer than the buffer): a bigger one, state and bytes moved
 * along, the old one wiped. 0, or -errno (more than the inbound allows).
 */
static int hs_grow(struct conn *c, size_t want)
{
	struct conn_hs *hs = c->hs, *big;
	size_t st = hs_state_size(hs->in);

	if (want <= hs->cap)
		return 0;
	if (want > hs->in->buf_max)
		return -EMSGSIZE;
	big = malloc(sizeof(*big) + st + want);
	if (!big)
		return -ENOMEM;
	memcpy(big, hs, sizeof(*hs) + st + hs->len);
	big->in_st = big->mem;
	big->buf = (uint8_t *)big->mem + st;
	big->cap = want;
	big->target = NULL; /* set once a request is parsed; none is yet */
	explicit_bzero(hs, sizeof(*hs) + st + hs->cap);
	free(hs);
	c->hs = big;
	return 0;
}

/*
 * Read and drop what the client sent (MSG_TRUNC: TCP discards it without a
 * copy). False when the client closed or reset. Bounded per call; the poll
 * fires again for more.
 */
bool conn_drain_input(int fd)
{
	for (int i = 0; i < 64; i++) {
		ssize_t n = recv(fd, NULL, 1 << 20, MSG_DONTWAIT | MSG_TRUNC);

		if (n > 0)
			continue;
		return n < 0 && (errno == EAGAIN || errno == EINTR);
	}
	return true;
}

/*
 * A probe-resistant inbound refused the handshake: say nothing, keep
 * reading and dropping, and close (a FIN: nothing is left unread) when the
 * handshake deadline armed at accept comes, or at once if the client closes
 * first. When it fails and how much it read tell a prober nothing.
 */
static void hs_drain(struct conn *c)
{
	conn_worker(c)->stats.ss_drained++;
	conn_hs_free(c);
	c->state = CONN_DRAIN;
	if (!conn_drain_input(c->leg[LEG_IN].fd)) {
		conn_close(c, false);
		return;
	}
	conn_arm_poll(c, OPS_HS, OP_HS_POLL, c->leg[LEG_IN].fd, POLLIN);
}

/*
 * Tear down after a failed handshake: the reply (if any) was sent. Unread
 * input makes close(2) send a RST that can destroy the reply in flight, so
 * discard what is readable first.
 */
static void close_after_reply(struct conn *c)
{
	uint8_t junk[4096];

	shutdown(c->leg[LEG_IN].fd, SHUT_WR);
	for (int i = 0; i < 16; i++) {
		if (recv(c->leg[LEG_IN].fd, junk, sizeof(junk), MSG_DONTWAIT) <= 0)
			break;
	}
	conn_close(c, false);
}

void conn_fail(struct conn *c, enum proto_connect_result r)
{
	struct conn_hs *hs = c->hs;
	size_t len;
	const uint8_t *reply = hs->in->reply(hs->in_st, r, NULL, &len);

	alog_result(c, proto_connect_result_name(r));
	if (r == CONNECT_NOT_ALLOWED)
		conn_worker(c)->stats.blocked++;
	else
		conn_worker(c)->stats.connect_failed++;
	if (c->orow && r > CONNECT_OK && (int)r < SEC_CONNECT_N)
		c->orow->connect_failed[r]++;
	if (len)
		conn_send_all(c->leg[LEG_IN].fd, reply, len);
	/*
	 * A TUN app's connection was established by the kernel before the
	 * outbound was tried: a reset tells it what a refused connect would
	 * have (an orderly close would read as an empty answer).
	 */
	if (conn_inbound(c)->type == INBOUND_TUN) {
		conn_close(c, true);
		return;
	}
	close_after_reply(c);
}

/*
 * The credentials the client sent, unless its source has failed
 * max-auth-failures times this minute: then they are not even looked at,
 * and the answer is the same refusal a wrong password gets.
 */
static bool check_user(struct conn *c)
{
	struct worker *w = conn_worker(c);
	struct users *u = c->snap->users[c->inbound];
	uint64_t now_s = w->loop.now_ms / 1000;
	struct sockaddr_storage peer;
	socklen_t len = sizeof(peer);
	const char *user, *pass;
	char src[64];
	bool ok, log;
	unsigned n;

	if (getpeername(c->leg[LEG_IN].fd, (struct sockaddr *)&peer, &len) < 0)
		peer.ss_family = AF_UNSPEC;
	if (auth_guard_blocked(w->srv->guard, &peer, now_s)) {
		w->stats.auth_throttled++;
		c->irow->hs_failed[HS_AUTH_THROTTLED]++;
		return false;
	}
	c->hs->in->creds(c->hs->in_st, &user, &pass);
	ok = u && users_check(u, user, pass);
	if (ok) {
		alog_user(c, user);
		/*
		 * Its counters and limit; without memory for them, no login (a refusal
		 * like any). A connection is one user's: a later request on it (HTTP
		 * keep-alive) that logs in as someone else is refused.
		 */
		struct user_acct *acct = user_acct_get(w->srv->accts, user);
		if (acct && (!c->user_open || acct == c->user)) {
			c->user = acct;
			return true;
		}
	}
	w->stats.auth_failed++;
	c->irow->hs_failed[HS_AUTH]++;
	alog_result(c, "auth-failed");
	n = auth_guard_failed(w->srv->guard, &peer, now_s, &log);
	/* Once per source and minute: what fail2ban and the like read. */
	if (log)
		log_warn("inbound %s: %u failed logins from %s this minute: its logins are refused "
		         "until the minute is over (max-auth-failures)",
		         conn_inbound(c)->name, n, auth_guard_source_str(&peer, src, sizeof(src)));
	return false;
}

/* Run the inbound's parser over the buffered bytes. */
static void hs_feed(struct conn *c)
{
	struct worker *w = conn_worker(c);
	struct conn_hs *hs = c->hs;

	for (;;) {
		size_t used = 0, reply_len;
		enum proto_res res;
		const uint8_t *reply;

		if (hs->in->bind) {
			struct inbound_env env;

			conn_hs_env(c, &env);
			hs->in->bind(hs->in_st, &env);
		}
		res = hs->in->feed(hs->in_st, hs->buf, hs->len, &used);

		if (res == PROTO_AUTH)
			res = hs->in->auth_result(hs->in_st, check_user(c));
		reply = hs->in->pending(hs->in_st, &reply_len);
		if (used > hs->len)
			used = hs->len; /* a parser bug must not become a memory bug */
		if (used) { /* a client sending one byte at a time must not cost a copy per byte */
			memmove(hs->buf, hs->buf + used, hs->len - used);
			hs->len -= used;
		}

		switch (res) {
		case PROTO_NEED_MORE:
			if (hs->in->want && hs_grow(c, hs->in->want(hs->in_st)) < 0) {
				w->stats.hs_bad++;
				conn_close(c, false);
				return;
			}
			hs = c->hs;
			if (hs->len >= hs->cap) {
				/* Unreachable with correct parsers: each bounds its own input. */
				w->stats.hs_bad++;
				c->irow->hs_failed[HS_BAD]++;
				conn_close(c, false);
				return;
			}
			conn_arm_poll(c, OPS_HS, OP_HS_POLL, c->leg[LEG_IN].fd, POLLIN);
			return;
		case PROTO_REPLY:
			if (hs->len == 0 && conn_ring_reply_ok(c, reply_len)) {
				/* Nothing more buffered: the parser needs the client's next message. */
				memcpy(c->tx, reply, reply_len);
				conn_queue_reply(c, reply_len, OPS_HS, OP_HS_POLL,
				                 c->leg[LEG_IN].fd, POLLIN);
				return;
			}
			if (conn_send_all(c->leg[LEG_IN].fd, reply, reply_len) < 0) {
				conn_close(c, false);
				return;
			}
			continue;
		case PROTO_AUTH: /* handled above */
		case PROTO_FAIL:
			w->stats.hs_bad++;
			c->irow->hs_failed[HS_BAD]++;
			alog_result(c, "bad-request");
			if (hs->in->probe_resistant) {
				hs_drain(c);
				return;
			}
			log_debug_rl("inbound %s: handshake rejected", conn_inbound(c)->name);
			if (reply_len)
				conn_send_all(c->leg[LEG_IN].fd, reply, reply_len);
			close_after_reply(c);
			return;
		case PROTO_REQUEST:
			alog_target(c, hs->in->target(hs->in_st));
			/* A connection's first request takes its user's slot; the next ones have it. */
			if (c->user && !c->user_open) {
				if (!user_acct_open(c->user)) {
					w->stats.refused_user++;
					c->irow->refused[REFUSED_USER]++;
					alog_result(c, "user-limit");
					log_debug_rl(
					        "inbound %s: user %s is at its max-connections",
					        conn_inbound(c)->name, c->user->name);
					conn_fail(c, CONNECT_NOT_ALLOWED);
					return;
				}
				c->user_open = true;
			}
			if (hs->in->udp && hs->in->udp(hs->in_st) != INBOUND_UDP_NONE)
				conn_start_udp(c, hs->in->udp(hs->in_st));
			else
				conn_start_outbound(c);
			return;
		}
	}
}

void conn_hs_readable(struct conn *c)
{
	struct conn_hs *hs = c->hs;
	ssize_t n = recv(c->leg[LEG_IN].fd, hs->buf + hs->len, hs->cap - hs->len, MSG_DONTWAIT);

	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
		conn_close(c, false);
		return;
	}
	if (n < 0) {
		conn_arm_poll(c, OPS_HS, OP_HS_POLL, c->leg[LEG_IN].fd, POLLIN);
		return;
	}
	hs->len += (size_t)n;
	hs_feed(c);
}

/* A fresh handshake state for c's inbound (at accept, and before each HTTP request after the first). */
static int hs_new(struct conn *c)
{
	struct worker *w = conn_worker(c);
	const struct inbound_ops *ops = inbound_ops(conn_inbound(c)->type);
	size_t st = hs_state_size(ops);
	/* The buffers need no clearing; the states start zeroed. */
	struct conn_hs *hs = malloc(sizeof(*hs) + st + ops->buf_size);

	if (!hs)
		return -ENOMEM;
	memset(hs, 0, sizeof(*hs) + st);
	hs->in = ops;
	hs->in_st = hs->mem;
	hs->buf = (uint8_t *)hs->mem + st;
	hs->cap = ops->buf_size;
	c->hs = hs;
	c->state = CONN_HANDSHAKE;
	loop_timer_arm(&w->loop, &w->hs_tq, &c->timer);
	return 0;
}

/*
 * A keep-alive connection's next request takes the configuration in force
 * now, as a new connection would (routes, users), as long as its inbound
 * is still there with the same type; else it stays on the one it has.
 */
static void take_current_snapshot(struct conn *c)
{
	struct worker *w = conn_worker(c);
	struct snapshot *old = c->snap;
	int i;

	if (old == w->snap)
		return;
	i = snapshot_inbound(w->snap, conn_inbound(c)->name);
	if (i < 0 || w->snap->cfg->inbounds[i].type != conn_inbound(c)->type)
		return;
	c->snap = worker_snap_hold(w);
	c->inbound = (uint16_t)i;
	c->irow = &c->snap->in_stats[i]->rows[w->id]; /* the same name's: the same counters */
	worker_snap_drop(w, old);
}

void conn_restart(struct conn *c, const uint8_t *left, size_t n)
{
	struct conn_hs *hs;

	take_current_snapshot(c);
	if (hs_new(c) < 0) {
		conn_close(c, true);
		return;
	}
	hs = c->hs;
	hs->in->start(hs->in_st, conn_inbound(c), c->leg[LEG_IN].fd);
	if (n > hs->cap) { /* cannot happen: left holds at most a handshake buffer */
		conn_close(c, true);
		return;
	}
	hs->len = n;
	if (n) {
		memcpy(hs->buf, left, n);
		hs_feed(c);
	} else {
		conn_hs_readable(c);
	}
}

void conn_accept(struct worker *w, unsigned inbound, int fd, uint32_t src_slot)
{
	const struct inbound *in = &w->snap->cfg->inbounds[inbound];
	const struct inbound_ops *ops = inbound_ops(in->type);
	struct conn *c = calloc(1, sizeof(*c));
	struct conn_hs *hs;

	if (!c || loop_add(&w->loop, &c->obj, LOOP_KIND_CONN) < 0) {
		free(c);
		close(fd);
		source_limit_put(w->srv->per_source, src_slot);
		atomic_fetch_sub(&w->srv->n_conns, 1);
		return;
	}
	w->n_conns++;
	c->w = w;
	c->snap = worker_snap_hold(w);
	c->irow = &c->snap->in_stats[inbound]->rows[w->id];
	c->irow->opened++;
	c->outbound = -1;
	c->inbound = (uint16_t)inbound;
	c->src_slot = src_slot;
	c->leg[LEG_IN] = (struct leg){.fd = fd, .spliceable = true};
	c->leg[LEG_OUT] = (struct leg){.fd = -1, .spliceable = false};
	for (int i = 0; i < CONN_ATTEMPTS; i++)
		c->att_fd[i] = -1;
	alog_begin(c);
	pump_dir_init(&c->dir[0]);
	pump_dir_init(&c->dir[1]);
	loop_timer_init(&c->timer);
	if (hs_new(c) < 0) {
		conn_close(c, true);
		return;
	}
	hs = c->hs;
	enum proto_res started = ops->start(hs->in_st, in, fd);

	if (ops->hold)
		c->held = ops->hold(hs->in_st);
	if (ops->client && c->log) {
		struct sockaddr_storage who;

		if (ops->client(hs->in_st, &who))
			alog_client(c, &who);
	}
	switch (started) {
	case PROTO_REQUEST:
		if (in->type != INBOUND_FORWARD) /* a forward's target is in the config */
			alog_target(c, hs->in->target(hs->in_st));
		conn_start_outbound(c);
		return;
	case PROTO_FAIL: /* redirect/tproxy: the socket cannot say where it was going */
		w->stats.no_original_dst++;
		c->irow->hs_failed[HS_NO_ORIGINAL_DST]++;
		alog_result(c, "no-original-destination");
		log_debug_rl("inbound %s: no original destination (not redirected?)", in->name);
		conn_close(c, false);
		return;
	default:
		break;
	}
	/*
	 * Clients speak first and usually at once: the greeting is often
	 * queued by the time the accept completes, so read before paying for a
	 * poll round trip (EAGAIN arms the poll).
	 */
	conn_hs_readable(c);
}
