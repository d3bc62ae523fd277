/* SPDX-License-Identifier: MIT */
/* A UDP session's leg to a socks5 upstream: our own UDP ASSOCIATE (or hev-socks5's FWD UDP) with it, datagrams both ways. */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "egress.h"
#include "log.h"
#include "outbound.h"
#include "socks5.h"
#include "socks5_udp.h"
#include "sockaddr.h"
#include "udp.h"
#include "worker.h"

/*
 * A leg is spliced as a SOCKS5 client of the upstream, for one session
 * and one socks5 outbound it routes to:
 *  - the server's name is looked up (c-ares) unless it is a literal, its
 *    first address checked by the egress policy and connected to with the
 *    outbound's source address, interface and fwmark;
 *  - the greeting (with RFC 1929 credentials when the outbound has them),
 *    then UDP ASSOCIATE for 0.0.0.0:0 (we do not know our source port
 *    before the reply, and NAT would change it anyway), or FWD UDP;
 *  - UDP ASSOCIATE: a UDP socket connected to the relay address the reply
 *    names (the server's own address when it says 0.0.0.0 or ::), so the
 *    kernel takes datagrams only from there. The control connection is
 *    watched: when the upstream closes it, its association is over, and so
 *    is our session (and a SOCKS5 client's control connection with it);
 *  - FWD UDP: datagrams as frames on the connection itself.
 * Until the upstream has answered, datagrams wait in a queue of UP_QUEUE
 * (UP_QUEUE_BYTES in all); past it they are dropped (udp_queue_full). A
 * leg not up within connect-timeout + handshake-timeout, or refused, ends
 * the session (at the end of the loop's turn: udp_sess_doom()): a SOCKS5
 * client whose upstream is gone learns it from its own control connection
 * closing, as with a TCP CONNECT that fails.
 */

enum up_state { UP_RESOLVE, UP_CONNECT, UP_HANDSHAKE, UP_READY };
enum up_op { UP_OP_CONNECT = 1, UP_OP_TCP_IN, UP_OP_TCP_OUT, UP_OP_UDP, UP_OP_END };
enum { UP_QUEUE = 8, UP_QUEUE_BYTES = 16384, UP_HS_MAX = 600 };

struct udp_up {
	struct loop_obj obj; /* first: the loop hands it back */
	struct worker *w;
	struct udp_sess *s; /* the owner: it closes its legs before it goes */
	const struct outbound *ob;
	bool fwd; /* udp = tcp: FWD UDP frames on tcp_fd */
	enum up_state state;
	int tcp_fd, udp_fd;
	uint64_t ops[UP_OP_END];
	struct loop_timer timer;   /* until UP_READY */
	struct proto_target first; /* the first datagram's target: what egress is asked about */
	struct sockaddr_storage server;
	struct socks5_client sc;
	uint8_t hs[UP_HS_MAX];
	size_t hs_len;
	/* queued datagrams, each its header and payload, encoded for the leg */
	uint8_t *q[UP_QUEUE];
	size_t q_len[UP_QUEUE], q_hl[UP_QUEUE], q_bytes;
	unsigned n_q;
	struct udp_frame_in in;
	struct udp_frame_out out;
};

static void arm(struct udp_up *u, unsigned op, int fd, unsigned mask)
{
	struct io_uring_sqe *sqe = loop_prep(&u->w->loop, &u->obj, op);

	io_uring_prep_poll_add(sqe, fd, mask);
	u->ops[op] = sqe->user_data;
}

static void up_close(struct udp_up *u)
{
	struct loop *l = &u->w->loop;

	if (u->obj.closed)
		return;
	for (unsigned i = 0; i < UP_OP_END; i++) {
		if (u->ops[i])
			loop_cancel(l, u->ops[i]);
		u->ops[i] = 0;
	}
	loop_timer_stop(&u->timer);
	for (unsigned i = 0; i < u->n_q; i++)
		free(u->q[i]);
	u->n_q = 0;
	explicit_bzero(&u->sc, sizeof(u->sc));
	for (unsigned i = 0; i < UDP_LEGS; i++)
		if (u->s->legs[i] == u)
			u->s->legs[i] = NULL;
	u->obj.closed = true;
	loop_close(l, &u->obj);
}

/*
 * The leg failed or its upstream ended it: the leg closes now, the
 * session at the end of this turn (it may be mid-call further up).
 */
static void fail(struct udp_up *u, const char *why)
{
	u->w->stats.udp_upstream_failed++;
	log_debug_rl("udp: upstream %s: %s", u->ob->name, why);
	udp_sess_doom(u->s);
	up_close(u);
}

/*
 * One encoded datagram (hdr, then d) onto the leg, counted. UDP ASSOCIATE:
 * queued for the batch's sendmmsg on the relay socket, as the direct
 * outbound's are (the caller flushes before d changes). FWD UDP: a frame
 * written whole or not at all; a failed stream is ended by its own poll.
 */
static void put(struct udp_up *u, const uint8_t *hdr, size_t hl, const uint8_t *d, size_t n)
{
	struct worker *w = u->w;
	int r;

	if (!u->fwd) {
		udp_tx_add(w, u->udp_fd, NULL, 0, hdr, hl, d, n, false);
		return;
	}
	r = udp_frame_write(&u->out, u->tcp_fd, hdr, hl, d, n);
	if (r == 2)
		arm(u, UP_OP_TCP_OUT, u->tcp_fd, POLLOUT);
	if (r > 0)
		w->stats.udp_up++;
	else
		w->stats.udp_send_errors++;
}

static void ready(struct udp_up *u)
{
	struct worker *w = u->w;

	u->state = UP_READY;
	loop_timer_stop(&u->timer);
	for (unsigned i = 0; i < u->n_q; i++)
		put(u, u->q[i], u->q_hl[i], u->q[i] + u->q_hl[i], u->q_len[i] - u->q_hl[i]);
	udp_tx_flush(w); /* the queue's buffers go next */
	for (unsigned i = 0; i < u->n_q; i++)
		free(u->q[i]);
	u->n_q = 0;
	u->q_bytes = 0;
}

/* UDP ASSOCIATE answered: a socket connected to the relay it names. */
static bool open_relay(struct udp_up *u)
{
	struct worker *w = u->w;
	struct sockaddr_storage relay = u->sc.bound;
	bool unspec = relay.ss_family == AF_UNSPEC || udp_addr_unspecified(&relay);
	uint16_t port = relay.ss_family == AF_UNSPEC ? 0 : ((struct sockaddr_in *)&relay)->sin_port;

	if (!port) {
		fail(u, "UDP ASSOCIATE answered without a relay port");
		return false;
	}
	if (unspec) {
		relay = u->server; /* "send to me": the address we reached it at */
		((struct sockaddr_in *)&relay)->sin_port = port;
	}
	if (egress_refused(w->cfg, udp_sess_inbound(u->s), u->ob, &u->first, udp_sess_user(u->s),
	                   &relay, w->stats.egress)) {
		fail(u, "its relay address is refused by the egress policy");
		return false;
	}
	u->udp_fd = outbound_udp_socket(u->ob, relay.ss_family);
	if (u->udp_fd >= 0)
		udp_set_buffer(w, u->udp_fd);
	if (u->udp_fd < 0 ||
	    connect(u->udp_fd, (struct sockaddr *)&relay, sa_len(relay.ss_family)) < 0) {
		fail(u, "cannot open a socket to its relay");
		return false;
	}
	arm(u, UP_OP_UDP, u->udp_fd, POLLIN);
	return true;
}

static bool frame_down(void *ctx, const struct proto_target *t, const uint8_t *d, size_t n);

/* Send what the client state machine has for the upstream (a few octets: all or nothing). */
static bool send_out(struct udp_up *u)
{
	ssize_t n = send(u->tcp_fd, u->sc.out, u->sc.out_len, MSG_DONTWAIT | MSG_NOSIGNAL);

	explicit_bzero(u->sc.out, sizeof(u->sc.out)); /* it may hold the password */
	return n == (ssize_t)u->sc.out_len;
}

/* The upstream's handshake bytes. */
static void handshake(struct udp_up *u)
{
	ssize_t n = recv(u->tcp_fd, u->hs + u->hs_len, sizeof(u->hs) - u->hs_len, MSG_DONTWAIT);
	size_t off = 0;

	if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
		arm(u, UP_OP_TCP_IN, u->tcp_fd, POLLIN);
		return;
	}
	if (n <= 0) {
		fail(u, n == 0 ? "closed during the handshake" : strerror(errno));
		return;
	}
	u->hs_len += (size_t)n;
	for (;;) {
		size_t used = 0;
		enum proto_res r = socks5_client_feed(&u->sc, u->hs + off, u->hs_len - off, &used);

		off += used;
		if (r == PROTO_NEED_MORE) {
			if (u->hs_len == sizeof(u->hs)) {
				fail(u, "handshake too long");
				return;
			}
			break;
		}
		if (r == PROTO_FAIL) {
			char why[64];

			snprintf(why, sizeof(why), "handshake failed (error %d, REP %u)",
			         (int)u->sc.error, (unsigned)u->sc.rep);
			fail(u, why);
			return;
		}
		if (r == PROTO_REPLY) {
			if (!send_out(u)) {
				fail(u, "cannot send the handshake");
				return;
			}
			continue;
		}
		/* PROTO_REQUEST: it is up; what follows is frames (FWD UDP) or nothing. */
		if (u->fwd) {
			/* Frames behind the reply: the stream starts with them. */
			if (u->hs_len > off && !udp_frames_parse(u->w, &u->in, u->hs + off,
			                                         u->hs_len - off, frame_down, u)) {
				if (!u->obj.closed)
					fail(u, "a bad frame");
				return;
			}
		} else if (!open_relay(u)) {
			return;
		}
		u->hs_len = 0;
		ready(u);
		if (!u->obj.closed)
			arm(u, UP_OP_TCP_IN, u->tcp_fd, POLLIN);
		return;
	}
	memmove(u->hs, u->hs + off, u->hs_len - off);
	u->hs_len -= off;
	arm(u, UP_OP_TCP_IN, u->tcp_fd, POLLIN);
}

static void connect_to(struct udp_up *u, const struct sockaddr_storage *addr)
{
	struct worker *w = u->w;
	struct proto_target zero = {.kind = TARGET_IP};

	u->server = *addr;
	if (egress_refused(w->cfg, udp_sess_inbound(u->s), u->ob, &u->first, udp_sess_user(u->s),
	                   addr, w->stats.egress)) {
		fail(u, "refused by the egress policy");
		return;
	}
	u->tcp_fd = outbound_socket(u->ob, addr->ss_family, w->cfg->keepalive_ms / 1000);
	if (u->tcp_fd < 0) {
		fail(u, strerror(-u->tcp_fd));
		return;
	}
	if (connect(u->tcp_fd, (const struct sockaddr *)addr, sa_len(addr->ss_family)) < 0 &&
	    errno != EINPROGRESS) {
		fail(u, strerror(errno));
		return;
	}
	/* What we will send from is not known yet: 0.0.0.0:0, as RFC 1928 allows. */
	zero.addr.ss_family = AF_INET;
	if (socks5_client_init(&u->sc, &zero, u->ob->username, u->ob->password) < 0 ||
	    socks5_client_command(&u->sc, u->fwd ? SOCKS5_CMD_FWD_UDP : SOCKS5_CMD_UDP_ASSOCIATE) <
	            0) {
		fail(u, "bad credentials");
		return;
	}
	u->state = UP_CONNECT;
	arm(u, UP_OP_CONNECT, u->tcp_fd, POLLOUT);
}

void udp_up_resolved(struct worker *w, struct loop_obj *o, int err,
                     const struct sockaddr_storage *addrs, int n)
{
	struct udp_up *u = (struct udp_up *)o;

	(void)w;
	if (err || n < 1) {
		fail(u, "its name did not resolve");
		return;
	}
	connect_to(u, &addrs[0]);
}

static struct udp_up *leg_open(struct udp_sess *s, const struct outbound *ob,
                               const struct proto_target *t)
{
	struct worker *w = s->w;
	struct udp_up *u;
	struct proto_target dest = {.kind = TARGET_DOMAIN, .port = ob->server_port};
	int slot = -1;

	for (int i = 0; i < UDP_LEGS; i++)
		if (!s->legs[i]) {
			slot = i;
			break;
		}
	if (slot < 0 || !(u = calloc(1, sizeof(*u))))
		return NULL;
	if (loop_add(&w->loop, &u->obj, LOOP_KIND_UDP_UP) < 0) {
		free(u);
		return NULL;
	}
	u->w = w;
	u->s = s;
	u->ob = ob;
	u->fwd = ob->udp_mode == OUTBOUND_UDP_TCP;
	u->tcp_fd = u->udp_fd = -1;
	u->first = *t;
	s->legs[slot] = u;
	loop_timer_init(&u->timer);
	loop_timer_arm(&w->loop, &w->udp_up_tq, &u->timer);
	w->stats.udp_upstreams++;
	snprintf(dest.host, sizeof(dest.host), "%s", ob->server_host);
	if (proto_target_ip_literal(&dest)) {
		connect_to(u, &dest.addr);
	} else if (resolver_lookup(&w->res, &u->obj, dest.host, dest.port) < 0) {
		w->stats.resolve_full++;
		fail(u, "the resolver is full");
	}
	return s->doomed ? NULL : u; /* failed at once: u is gone */
}

void udp_up_send(struct udp_sess *s, const struct outbound *ob, const struct proto_target *t,
                 const uint8_t *d, size_t n)
{
	struct worker *w = s->w;
	struct udp_up *u = NULL;
	uint8_t hdr[SOCKS5_UDP_HDR_MAX];
	size_t hl;

	if (s->doomed) {
		w->stats.udp_send_errors++; /* its upstream failed: the session is ending */
		return;
	}
	for (int i = 0; i < UDP_LEGS; i++)
		if (s->legs[i] && s->legs[i]->ob == ob)
			u = s->legs[i];
	if (!u) {
		u = leg_open(s, ob, t);
		if (!u) {
			if (!s->doomed)
				w->stats.udp_unsupported++; /* more upstreams than UDP_LEGS, or no memory */
			return;
		}
	}
	hl = u->fwd ? socks5_tcpudp_put_header(hdr, t, n) : socks5_udp_put_header(hdr, t);
	if (!hl) {
		w->stats.udp_send_errors++; /* a frame cannot carry it */
		return;
	}
	if (u->state == UP_READY) {
		put(u, hdr, hl, d, n);
		return;
	}
	if (u->n_q == UP_QUEUE || u->q_bytes + hl + n > UP_QUEUE_BYTES ||
	    !(u->q[u->n_q] = malloc(hl + n))) {
		w->stats.udp_queue_full++;
		return;
	}
	memcpy(u->q[u->n_q], hdr, hl);
	memcpy(u->q[u->n_q] + hl, d, n);
	u->q_hl[u->n_q] = hl;
	u->q_len[u->n_q++] = hl + n;
	u->q_bytes += hl + n;
}

void udp_up_close_all(struct udp_sess *s)
{
	for (int i = 0; i < UDP_LEGS; i++)
		if (s->legs[i])
			up_close(s->legs[i]);
}

void udp_up_timeout(struct loop *l, struct loop_timer *t)
{
	struct udp_up *u = list_entry(t, struct udp_up, timer);

	(void)l;
	fail(u, "no answer within connect-timeout + handshake-timeout");
}

/* A reply from the upstream, with the target it came from: to the client. */
static bool frame_down(void *ctx, const struct proto_target *t, const uint8_t *d, size_t n)
{
	struct udp_up *u = ctx;

	udp_sess_deliver(u->s, d, n, NULL, t);
	return !u->obj.closed;
}

/* The relay's datagrams, UDP_BATCH per recvmmsg(2), at most four rounds a poll. */
static void relay_in(struct udp_up *u)
{
	struct worker *w = u->w;
	struct udp_rx rx;

	for (int round = 0; round < 4; round++) {
		int n = udp_recv_batch(w, u->udp_fd, &rx, NULL);

		if (n <= 0)
			return;
		udp_sess_touch(u->s);
		for (int i = 0; i < n && !u->obj.closed; i++) {
			const uint8_t *d = rx.iov[i].iov_base;
			struct proto_target t;
			size_t hl = 0;

			if (rx.mm[i].msg_hdr.msg_flags & MSG_TRUNC)
				w->stats.udp_malformed++;
			else if (udp_parse(w, d, rx.mm[i].msg_len, &t, &hl))
				udp_sess_deliver(u->s, d + hl, rx.mm[i].msg_len - hl, NULL, &t);
		}
		udp_tx_flush(w); /* before the next round reuses the buffers */
		if (n < UDP_BATCH)
			return;
	}
}

/* The control connection after the reply: FWD UDP frames, or (UDP ASSOCIATE) only its end. */
static void control_in(struct udp_up *u)
{
	uint8_t junk[512];
	ssize_t n;

	if (u->fwd) {
		if (!udp_frames_read(u->w, u->tcp_fd, &u->in, frame_down, u)) {
			if (!u->obj.closed)
				fail(u, "the upstream ended the stream");
			return;
		}
		if (!u->obj.closed)
			udp_sess_touch(u->s);
	} else {
		n = recv(u->tcp_fd, junk, sizeof(junk), MSG_DONTWAIT);
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
			fail(u, "the upstream closed its association");
			return;
		}
	}
	if (!u->obj.closed)
		arm(u, UP_OP_TCP_IN, u->tcp_fd, POLLIN);
}

static void complete(struct loop *l, struct loop_obj *o, unsigned op,
                     const struct io_uring_cqe *cqe)
{
	struct udp_up *u = (struct udp_up *)o;
	int e = 0;
	socklen_t el = sizeof(e);

	(void)l;
	u->ops[op] = 0;
	if (cqe->res < 0) {
		fail(u, strerror(-cqe->res));
		return;
	}
	switch (op) {
	case UP_OP_CONNECT:
		if (getsockopt(u->tcp_fd, SOL_SOCKET, SO_ERROR, &e, &el) < 0 || e) {
			fail(u, strerror(e ? e : errno));
			return;
		}
		u->state = UP_HANDSHAKE;
		if (!send_out(u)) {
			fail(u, "cannot send the greeting");
			return;
		}
		arm(u, UP_OP_TCP_IN, u->tcp_fd, POLLIN);
		break;
	case UP_OP_TCP_IN:
		if (u->state == UP_HANDSHAKE)
			handshake(u);
		else
			control_in(u);
		break;
	case UP_OP_TCP_OUT: {
		int r = udp_frame_flush(&u->out, u->tcp_fd);

		if (r < 0)
			fail(u, "sending failed");
		else if (r == 2)
			arm(u, UP_OP_TCP_OUT, u->tcp_fd, POLLOUT);
		break;
	}
	case UP_OP_UDP:
		if (cqe->res & POLLERR) {
			getsockopt(u->udp_fd, SOL_SOCKET, SO_ERROR, &e, &el); /* an ICMP report */
		}
		relay_in(u);
		if (!u->obj.closed)
			arm(u, UP_OP_UDP, u->udp_fd, POLLIN);
		break;
	}
}

static void release(struct loop *l, struct loop_obj *o)
{
	struct udp_up *u = (struct udp_up *)o;

	(void)l;
	if (u->tcp_fd >= 0)
		close(u->tcp_fd);
	if (u->udp_fd >= 0)
		close(u->udp_fd);
	free(u->in.buf);
	free(u->out.buf);
	free(u);
}

const struct loop_module udp_up_module = {
        .name = "udp-up",
        .complete = complete,
        .release = release,
};
