/* SPDX-License-Identifier: MIT */
/* UDP on a tproxy inbound: a front end of the UDP sessions, for the datagrams nftables TPROXY delivers, each reply sent from its original destination. */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "log.h"
#include "siphash.h"
#include "sockaddr.h"
#include "udp_session.h"
#include "udp_tproxy.h"
#include "worker.h"

/*
 * A tproxy inbound with `udp = on` has, in each worker, one UDP socket on
 * its listen address with IP_TRANSPARENT (it takes datagrams addressed to
 * anyone) and IP_RECVORIGDSTADDR (each says where it was going). The
 * kernel's SO_REUSEPORT hash keeps a flow on one worker.
 *
 * A datagram from a client endpoint (address and port) that has no session
 * in this worker opens one (udp_session.h: the idle timeouts,
 * udp-max-sessions eviction, routing per datagram, direct sockets and
 * socks5 upstream legs a SOCKS5 association has too), found again by
 * client endpoint in the socket's struct udp_sess_table. Every datagram is
 * routed to its own original destination, so one session carries all of a
 * client's flows (a DNS client asking two servers, a game talking to
 * several).
 *
 * A reply must reach the client from the address it sent to: it leaves
 * from a socket bound to that address with IP_TRANSPARENT, and unconnected
 * (TPROXY's socket lookup takes only connected UDP sockets as established,
 * so the client's next datagrams still come to the inbound's socket). One
 * such socket per destination serves every session of the worker that
 * hears from it (a LAN's DNS clients all get answers from one socket bound
 * to the resolver's address), counted by the sessions that use it; a
 * session uses at most UDP_TP_REPLIES, the oldest let go. So a session
 * costs its direct socket and no more. Replies leave with the same
 * sendmmsg batching as the rest.
 */

enum { UDP_TP_RBUCKETS = 1024, UDP_TP_REPLIES = 4 };

/* A socket that sends as one destination, shared by the sessions that hear from it. */
struct udp_tp_reply {
	struct udp_tp *tp; /* whose table holds it; NULL once that is gone */
	struct udp_tp_reply *next;
	unsigned refs;
	int fd;
	union udp_addr from;
};

struct udp_tp {
	struct loop_obj obj; /* first: the loop hands it back */
	struct worker *w;
	unsigned inbound;
	int fd;
	bool stopped;
	uint64_t op;
	struct udp_sess_table sessions;             /* by client endpoint */
	uint8_t key[SIPHASH_KEY_LEN];               /* the reply sockets' table's */
	struct udp_tp_reply *rtab[UDP_TP_RBUCKETS]; /* reply sockets by destination */
};

/* A session of this front end: the reply sockets it holds. */
struct tp_sess {
	struct udp_sess s; /* first: the session layer hands it back */
	unsigned n_replies, next_reply;
	struct udp_tp_reply *reply[UDP_TP_REPLIES];
};

enum { UDP_TP_OP_RECV = 1 };

static const struct udp_front tp_front;

static unsigned rbucket(const struct udp_tp *t, const void *sa)
{
	return (unsigned)(udp_endpoint_hash(t->key, sa) % UDP_TP_RBUCKETS);
}

int udp_tp_open(struct worker *w, unsigned i, struct udp_tp **out)
{
	const struct inbound *in = &w->cfg->inbounds[i];
	struct udp_tp *t = calloc(1, sizeof(*t));
	int one = 1, fd, ret = 0, v6 = in->listen.ss_family == AF_INET6;
	char addr[SA_STR_MAX];

	if (!t)
		return -ENOMEM;
	if (getrandom(t->key, sizeof(t->key), 0) != (ssize_t)sizeof(t->key) ||
	    (ret = udp_sess_table_init(&t->sessions)) < 0) {
		free(t);
		return ret < 0 ? ret : -EAGAIN;
	}
	fd = socket(in->listen.ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		ret = -errno;
		udp_sess_table_fini(&t->sessions);
		free(t);
		return ret;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) < 0 ||
	    (v6 && setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) < 0) ||
	    sock_set_transparent(fd, in->listen.ss_family) < 0 ||
	    setsockopt(fd, v6 ? IPPROTO_IPV6 : IPPROTO_IP,
	               v6 ? IPV6_RECVORIGDSTADDR : IP_RECVORIGDSTADDR, &one, sizeof(one)) < 0 ||
	    bind(fd, (const struct sockaddr *)&in->listen, in->listen_len) < 0)
		goto fail;
	udp_set_buffer(w, fd);
	ret = loop_add(&w->loop, &t->obj, LOOP_KIND_UDP_TP);
	if (ret < 0) {
		errno = -ret;
		goto fail;
	}
	t->w = w;
	t->inbound = i;
	t->fd = fd;
	*out = t;
	return 0;
fail:
	ret = -errno;
	log_error("inbound %s: cannot take UDP on %s: %s%s", in->name, sa_str(&in->listen, addr),
	          strerror(-ret), ret == -EPERM ? " (tproxy needs CAP_NET_ADMIN)" : "");
	close(fd);
	udp_sess_table_fini(&t->sessions);
	free(t);
	return ret;
}

int udp_tp_fd(const struct udp_tp *t)
{
	return t->fd;
}

static void arm(struct udp_tp *t)
{
	struct io_uring_sqe *sqe = loop_prep(&t->w->loop, &t->obj, UDP_TP_OP_RECV);

	io_uring_prep_poll_add(sqe, t->fd, POLLIN);
	t->op = sqe->user_data;
}

void udp_tp_arm(struct udp_tp *t)
{
	arm(t);
}

void udp_tp_stop(struct udp_tp *t)
{
	struct loop *l = &t->w->loop;

	if (t->stopped)
		return;
	t->stopped = true;
	if (t->op)
		loop_cancel(l, t->op);
	t->op = 0;
	loop_close(l, &t->obj);
}

/* A session lets go of a reply socket; the last one closes it. */
static void reply_put(struct udp_tp_reply *r)
{
	struct udp_tp_reply **p;

	if (--r->refs)
		return;
	if (r->tp) {
		for (p = &r->tp->rtab[rbucket(r->tp, &r->from)]; *p; p = &(*p)->next) {
			if (*p == r) {
				*p = r->next;
				break;
			}
		}
	}
	close(r->fd);
	free(r);
}

/* The worker's socket that sends as `from` (the original destination), made on first use. */
static struct udp_tp_reply *reply_get(struct udp_tp *t, const struct sockaddr *from)
{
	int one = 1, v6 = from->sa_family == AF_INET6, fd;
	struct udp_tp_reply *r, **head = &t->rtab[rbucket(t, from)];

	for (r = *head; r; r = r->next)
		if (udp_endpoint_eq(&r->from, from))
			return r;
	fd = socket(from->sa_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return NULL;
	if (sock_set_transparent(fd, from->sa_family) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    (v6 && setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) < 0) ||
	    bind(fd, from, udp_endpoint_len(from)) < 0 || !(r = calloc(1, sizeof(*r)))) {
		log_debug_rl("udp tproxy: no reply socket: %s", strerror(errno));
		close(fd);
		return NULL;
	}
	r->tp = t;
	r->fd = fd;
	memcpy(&r->from, from, udp_endpoint_len(from));
	r->next = *head;
	*head = r;
	return r;
}

/* The session's way back from `from`: a reply socket it holds, or one it takes now. */
static int reply_socket(struct tp_sess *ts, const struct sockaddr *from)
{
	/* The socket's object holds the table (NULL once the socket is gone). */
	struct udp_tp *t = ts->s.tab ? list_entry(ts->s.tab, struct udp_tp, sessions) : NULL;
	struct udp_tp_reply *r;
	unsigned i;

	for (i = 0; i < ts->n_replies; i++)
		if (udp_endpoint_eq(&ts->reply[i]->from, from))
			return ts->reply[i]->fd;
	if (!t || !(r = reply_get(t, from)))
		return -1;
	r->refs++;
	if (ts->n_replies < UDP_TP_REPLIES) {
		i = ts->n_replies++;
	} else {
		/* The batch may still hold a datagram for the socket let go: send it first. */
		udp_tx_flush(ts->s.w);
		i = ts->next_reply++ % UDP_TP_REPLIES;
		reply_put(ts->reply[i]);
	}
	ts->reply[i] = r;
	return r->fd;
}

/*
 * A reply, sent as its source: the target's own address, or the one a
 * socks5 upstream's header names (a name there cannot be sent from:
 * dropped and counted).
 */
static void deliver(struct udp_sess *s, const uint8_t *d, size_t n, const struct sockaddr *from,
                    const struct proto_target *t)
{
	int fd = from ? reply_socket((struct tp_sess *)s, from) : -1;

	(void)t;
	if (fd < 0) {
		s->w->stats.udp_send_errors++;
		return;
	}
	udp_tx_add(s->w, fd, &s->client, udp_endpoint_len(&s->client), NULL, 0, d, n, true);
}

/* Released (the session layer sent what the batch held first): its reply sockets go. */
static void sess_release(struct udp_sess *s)
{
	struct tp_sess *ts = (struct tp_sess *)s;

	for (unsigned i = 0; i < ts->n_replies; i++)
		reply_put(ts->reply[i]);
}

static const struct udp_front tp_front = {
        .deliver = deliver,
        .release = sess_release,
};

/* The original destination in a datagram's control messages (NULL: none). */
static const struct sockaddr_storage *orig_dst(struct msghdr *m, struct sockaddr_storage *out)
{
	for (struct cmsghdr *c = CMSG_FIRSTHDR(m); c; c = CMSG_NXTHDR(m, c)) {
		if ((c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_ORIGDSTADDR &&
		     c->cmsg_len >= CMSG_LEN(sizeof(struct sockaddr_in))) ||
		    (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_ORIGDSTADDR &&
		     c->cmsg_len >= CMSG_LEN(sizeof(struct sockaddr_in6)))) {
			memset(out, 0, sizeof(*out));
			memcpy(out, CMSG_DATA(c), c->cmsg_len - CMSG_LEN(0));
			return out;
		}
	}
	return NULL;
}

static void drain(struct udp_tp *t)
{
	struct worker *w = t->w;
	struct udp_rx rx;
	uint8_t ctl[UDP_BATCH][CMSG_SPACE(UDP_RX_CTL)];

	for (int round = 0; round < 4; round++) {
		int n = udp_recv_batch(w, t->fd, &rx, ctl);

		if (n <= 0)
			return;
		for (int i = 0; i < n; i++) {
			struct sockaddr_storage dst;
			struct proto_target tg;
			struct udp_sess *s;

			if (rx.mm[i].msg_hdr.msg_flags & (MSG_TRUNC | MSG_CTRUNC) ||
			    !orig_dst(&rx.mm[i].msg_hdr, &dst) ||
			    !proto_target_from_sa(&tg, &dst)) {
				w->stats.udp_malformed++;
				continue;
			}
			s = udp_sess_find(&t->sessions, &rx.src[i]);
			if (!s)
				s = udp_sess_open(w, t->inbound, &tp_front, sizeof(struct tp_sess),
				                  &rx.src[i], &t->sessions);
			if (!s) {
				w->stats.udp_send_errors++; /* no memory */
				continue;
			}
			udp_sess_send(s, &tg, rx.iov[i].iov_base, rx.mm[i].msg_len);
		}
		udp_tx_flush(w); /* before the next round reuses the buffers */
		if (n < UDP_BATCH)
			return;
	}
}

static void complete(struct loop *l, struct loop_obj *o, unsigned op,
                     const struct io_uring_cqe *cqe)
{
	struct udp_tp *t = (struct udp_tp *)o;

	(void)l, (void)op;
	t->op = 0;
	if (t->stopped)
		return;
	if (cqe->res < 0) {
		log_warn("inbound %s: UDP poll failed: %s", t->w->cfg->inbounds[t->inbound].name,
		         strerror(-cqe->res));
		return;
	}
	drain(t);
	if (!t->stopped)
		arm(t);
}

static void release(struct loop *l, struct loop_obj *o)
{
	struct udp_tp *t = (struct udp_tp *)o;

	(void)l;
	/* Sessions still open (a drain closes them) and their reply sockets lose the tables. */
	udp_sess_table_fini(&t->sessions);
	for (size_t i = 0; i < UDP_TP_RBUCKETS; i++)
		for (struct udp_tp_reply *r = t->rtab[i]; r; r = r->next)
			r->tp = NULL;
	close(t->fd);
	t->w->udp_tps[t->inbound] = NULL;
	free(t);
}

const struct loop_module udp_tp_module = {
        .name = "udp-tproxy",
        .complete = complete,
        .release = release,
};
