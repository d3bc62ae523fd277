/* SPDX-License-Identifier: MIT */
/* An app's DNS query over TCP (RFC 1035 §4.2.2 / RFC 7766), when the outbound to dns-server carries no UDP: a relay connection over a socketpair. */
#include <errno.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "access.h"
#include "conn.h"
#include "log.h"
#include "tun_dev.h"
#include "tun_internal.h"
#include "worker.h"

/*
 * An upstream that refuses UDP (an http proxy; a socks5 one with udp = off
 * or that answers UDP ASSOCIATE with REP 07, as microsocks does) can still
 * carry DNS: over TCP, each message behind its length in two octets. The
 * query does not need a TCP client of its own: one end of a socketpair is
 * handed to the relay as if the tun inbound had accepted it
 * (conn_accept(); inbound_tun.c gives it dns-server as its target), so
 * routing, the outbound's handshake (CONNECT) and the relay are the ones
 * every connection has. This end writes the framed query, waits (a poll
 * SQE, and a TIMEOUT SQE of resolve-timeout) for the framed answer, and
 * writes it to the app as a UDP packet from the address it asked. One
 * connection per query: this is the fallback, not the common path.
 */

enum dns_op { DNS_OP_POLL = 1, DNS_OP_TIMEOUT };
enum { DNS_MSG_MAX = 65535 };

struct tun_dnsq {
	struct loop_obj obj; /* first: the loop hands it back */
	struct tun_queue *q;
	struct list_node node; /* on q->dnsq */
	int fd;
	union udp_addr client, asked;
	uint64_t ops[2];
	struct __kernel_timespec ts;
	uint8_t *buf; /* the answer, with its length prefix */
	size_t len, cap;
	bool answered;
};

static void dnsq_close(struct tun_dnsq *d)
{
	struct loop *l = &d->q->w->loop;

	if (d->obj.closed)
		return;
	for (int i = 0; i < 2; i++)
		if (d->ops[i])
			loop_cancel(l, d->ops[i]);
	if (!d->answered)
		d->q->st->dns_tcp_failed++;
	list_del(&d->node);
	loop_close(l, &d->obj);
}

static void arm_poll(struct tun_dnsq *d)
{
	struct io_uring_sqe *sqe = loop_prep(&d->q->w->loop, &d->obj, DNS_OP_POLL);

	io_uring_prep_poll_add(sqe, d->fd, POLLIN);
	d->ops[0] = sqe->user_data;
}

/* The relay's side of a socketpair, as a connection of inbound i (counted like an accepted one). */
static int relay_side(struct worker *w, unsigned i, int fd)
{
	unsigned n = atomic_fetch_add_explicit(&w->srv->n_conns, 1, memory_order_relaxed);

	if (n >= w->cfg->max_connections) {
		atomic_fetch_sub_explicit(&w->srv->n_conns, 1, memory_order_relaxed);
		w->stats.refused_limit++;
		return -EMFILE;
	}
	w->stats.accepted++;
	conn_accept(w, i, fd, SOURCE_UNCOUNTED); /* takes fd */
	return 0;
}

void tun_dns_tcp(struct tun_queue *q, const union udp_addr *client, const union udp_addr *asked,
                 const uint8_t *query, size_t n)
{
	struct worker *w = q->w;
	struct tun_dnsq *d;
	uint8_t len[2] = {(uint8_t)(n >> 8), (uint8_t)n};
	struct iovec iov[2] = {{len, 2}, {(void *)query, n}};
	struct msghdr mh = {.msg_iov = iov, .msg_iovlen = 2};
	struct io_uring_sqe *sqe;
	int sv[2];

	if (n == 0 || n > DNS_MSG_MAX || w->draining) {
		q->st->drop_udp++;
		return;
	}
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) < 0) {
		q->st->dns_tcp_failed++;
		return;
	}
	/* A socketpair's buffer takes a whole query (64 KiB at most) at once. */
	if (sendmsg(sv[1], &mh, MSG_NOSIGNAL) != (ssize_t)(n + 2) || !(d = calloc(1, sizeof(*d)))) {
		close(sv[0]);
		close(sv[1]);
		q->st->dns_tcp_failed++;
		return;
	}
	if (loop_add(&w->loop, &d->obj, LOOP_KIND_TUN_DNS) < 0) {
		free(d);
		close(sv[0]);
		close(sv[1]);
		q->st->dns_tcp_failed++;
		return;
	}
	d->q = q;
	d->fd = sv[1];
	d->client = *client;
	d->asked = *asked;
	list_add_tail(&q->dnsq, &d->node);
	q->st->dns_tcp++;
	if (relay_side(w, q->inbound, sv[0]) < 0) {
		close(sv[0]);
		dnsq_close(d);
		return;
	}
	/* The answer, or resolve-timeout (the outbound's connect and handshake included). */
	d->ts.tv_sec = w->cfg->resolve_timeout_ms / 1000;
	d->ts.tv_nsec = (long long)(w->cfg->resolve_timeout_ms % 1000) * 1000000;
	sqe = loop_prep(&w->loop, &d->obj, DNS_OP_TIMEOUT);
	io_uring_prep_timeout(sqe, &d->ts, 0, 0);
	d->ops[1] = sqe->user_data;
	arm_poll(d);
}

/* The answer so far; true once it is whole (then written to the app). */
static bool readable(struct tun_dnsq *d)
{
	for (;;) {
		size_t want = d->len < 2 ? 2 : 2 + ((size_t)d->buf[0] << 8 | d->buf[1]);
		ssize_t r;

		if (want > d->cap) {
			uint8_t *b = realloc(d->buf, want);

			if (!b)
				return true; /* no memory: give up on it */
			d->buf = b;
			d->cap = want;
		}
		if (d->len == want && want > 2) {
			d->answered = true;
			tun_udp_reply(d->q, &d->asked, &d->client, d->buf + 2, want - 2);
			return true;
		}
		r = recv(d->fd, d->buf + d->len, want - d->len, MSG_DONTWAIT);
		if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR))
			return true; /* the upstream or the server gave up */
		if (r < 0)
			return false;
		d->len += (size_t)r;
	}
}

static void complete(struct loop *l, struct loop_obj *o, unsigned op,
                     const struct io_uring_cqe *cqe)
{
	struct tun_dnsq *d = (struct tun_dnsq *)o;

	(void)l, (void)cqe;
	if (op == DNS_OP_TIMEOUT) {
		d->ops[1] = 0;
		dnsq_close(d);
		return;
	}
	d->ops[0] = 0;
	if (readable(d))
		dnsq_close(d);
	else
		arm_poll(d);
}

void tun_dns_stop(struct tun_queue *q)
{
	while (!list_empty(&q->dnsq))
		dnsq_close(list_entry(q->dnsq.next, struct tun_dnsq, node));
}

static void release(struct loop *l, struct loop_obj *o)
{
	struct tun_dnsq *d = (struct tun_dnsq *)o;

	(void)l;
	close(d->fd); /* the relay's side sees EOF and ends */
	free(d->buf);
	free(d);
}

const struct loop_module tun_dns_module = {
        .name = "tun-dns",
        .complete = complete,
        .release = release,
};
