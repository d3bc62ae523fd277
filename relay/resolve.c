/* SPDX-License-Identifier: MIT */
/* Name resolution on the worker's loop: c-ares queries, its sockets polled through the ring. */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "log.h"
#include "resolve.h"
#include "worker.h"

/*
 * Why c-ares rather than getaddrinfo() in threads (review H3): a thread
 * parked in a lookup per pending name does not scale to a zone that never
 * answers, queues behind it, and cannot be cancelled; c-ares keeps every
 * query in the worker as a timer and a few sockets, honours per-try
 * timeouts, and reads /etc/hosts and /etc/resolv.conf as the C library
 * does. Debian and OpenWrt both package it. What the worker adds: the
 * sockets go through the ring like every other (a one-shot poll, then
 * c-ares reads inline), and c-ares' close is deferred until the poll on
 * the socket has completed, so no SQE can name a closed descriptor.
 */

enum { OP_POLL = 1 };

/* A socket c-ares opened (one per name server; TCP when an answer is truncated). */
struct rsock {
	struct loop_obj obj; /* first: the loop hands it back */
	struct resolver *r;
	struct rsock *next;
	int fd;
	bool want_read, want_write;
	unsigned armed;  /* poll mask in flight (0: none) */
	bool in_process; /* inside ares_process_fd() for this socket: close after it returns */
	bool closing;
};

/* One lookup: who asked. */
struct query {
	struct resolver *r;
	uint8_t kind;
	uint32_t slot, gen;
};

int resolver_global_init(void)
{
	return ares_library_init(ARES_LIB_INIT_ALL) == ARES_SUCCESS ? 0 : -ENOMEM;
}

void resolver_global_cleanup(void)
{
	ares_library_cleanup();
}

static struct rsock *find(struct resolver *r, int fd)
{
	for (struct rsock *s = r->socks; s; s = s->next)
		if (s->fd == fd)
			return s;
	return NULL;
}

/* One poll in flight per socket, for what c-ares currently wants. */
static void arm(struct rsock *s)
{
	struct loop *l = &s->r->w->loop;
	unsigned mask = (s->want_read ? POLLIN : 0) | (s->want_write ? POLLOUT : 0);

	if (s->closing || s->armed == mask)
		return;
	if (s->armed) {
		/* Wanted something else: its completion (-ECANCELED) re-arms. */
		loop_cancel(l, loop_tag_of(l, &s->obj, OP_POLL));
		return;
	}
	io_uring_prep_poll_add(loop_prep(l, &s->obj, OP_POLL), s->fd, mask);
	s->armed = mask;
}

static void sock_state(void *data, ares_socket_t fd, int readable, int writable)
{
	struct rsock *s = find(data, fd);

	if (!s)
		return;
	s->want_read = readable;
	s->want_write = writable;
	arm(s);
}

static void complete(struct loop *l, struct loop_obj *o, unsigned op,
                     const struct io_uring_cqe *cqe)
{
	struct rsock *s = (struct rsock *)o;
	int res = cqe->res;

	(void)op;
	s->armed = 0;
	if (res > 0) {
		/* An error or hang-up is for c-ares to read (recvfrom reports it). */
		bool rd = res & (POLLIN | POLLERR | POLLHUP),
		     wr = res & (POLLOUT | POLLERR | POLLHUP);
		s->in_process = true;
		ares_process_fd(s->r->ch, rd ? s->fd : ARES_SOCKET_BAD,
		                wr ? s->fd : ARES_SOCKET_BAD);
		s->in_process = false;
	}
	if (s->closing)
		loop_close(l, &s->obj);
	else
		arm(s);
}

static void release(struct loop *l, struct loop_obj *o)
{
	struct rsock *s = (struct rsock *)o;

	(void)l;
	close(s->fd);
	for (struct rsock **p = &s->r->socks; *p; p = &(*p)->next) {
		if (*p == s) {
			*p = s->next;
			break;
		}
	}
	free(s);
}

const struct loop_module resolver_module = {
        .name = "resolver",
        .complete = complete,
        .release = release,
};

/* The socket functions c-ares uses: plain syscalls, but a close waits for our poll. */
static ares_socket_t s_socket(int domain, int type, int protocol, void *data)
{
	struct resolver *r = data;
	struct rsock *s = calloc(1, sizeof(*s));
	int fd;

	if (!s)
		return ARES_SOCKET_BAD;
	fd = socket(domain, type | SOCK_NONBLOCK | SOCK_CLOEXEC, protocol);
	/* auto-route: the resolver's queries must not loop into spliced's own TUN either */
	if (fd >= 0 && r->w->cfg->auto_mark)
		setsockopt(fd, SOL_SOCKET, SO_MARK, &r->w->cfg->auto_mark,
		           sizeof(r->w->cfg->auto_mark));
	if (fd < 0 || loop_add(&r->w->loop, &s->obj, LOOP_KIND_RESOLVER) < 0) {
		if (fd >= 0)
			close(fd);
		free(s);
		errno = fd < 0 ? errno : ENOMEM;
		return ARES_SOCKET_BAD;
	}
	s->r = r;
	s->fd = fd;
	s->next = r->socks;
	r->socks = s;
	return fd;
}

static int s_close(ares_socket_t fd, void *data)
{
	struct resolver *r = data;
	struct rsock *s = find(r, fd);

	if (!s)
		return close(fd);
	s->closing = true;
	if (s->armed)
		loop_cancel(&r->w->loop, loop_tag_of(&r->w->loop, &s->obj, OP_POLL));
	if (!s->in_process)
		loop_close(&r->w->loop, &s->obj); /* closes fd once the poll is back */
	return 0;
}

static int s_connect(ares_socket_t fd, const struct sockaddr *sa, ares_socklen_t len, void *data)
{
	(void)data;
	return connect(fd, sa, len);
}

static ares_ssize_t s_recvfrom(ares_socket_t fd, void *buf, size_t len, int flags,
                               struct sockaddr *from, ares_socklen_t *from_len, void *data)
{
	(void)data;
	return recvfrom(fd, buf, len, flags, from, from_len);
}

static ares_ssize_t s_sendv(ares_socket_t fd, const struct iovec *iov, int n, void *data)
{
	(void)data;
	return writev(fd, iov, n);
}

static const struct ares_socket_functions socket_functions = {
        .asocket = s_socket,
        .aclose = s_close,
        .aconnect = s_connect,
        .arecvfrom = s_recvfrom,
        .asendv = s_sendv,
};

int resolver_init(struct resolver *r, struct worker *w, unsigned timeout_ms, unsigned max_pending)
{
	memset(r, 0, sizeof(*r));
	r->w = w;
	r->timeout_ms = timeout_ms;
	r->max_pending = max_pending ? max_pending : 1;
	return 0;
}

/*
 * The c-ares channel, made at the first lookup rather than at start: an
 * idle worker (and a relay whose clients only send addresses) never loads
 * c-ares' code or reads /etc/resolv.conf (bench/idle, docs/benchmarks.md).
 * A failure is logged and tried again at the next lookup.
 */
static int channel_init(struct resolver *r)
{
	struct ares_options o = {0};
	int rc;

	o.sock_state_cb = sock_state;
	o.sock_state_cb_data = r;
	/*
	 * Two tries, the second twice the first (c-ares doubles it): half of
	 * resolve-timeout each way makes c-ares give up at 1.5 times it, so the
	 * connection's own deadline always comes first and says so
	 * (resolve_timeouts); the query's slot is free by then.
	 */
	o.timeout = r->timeout_ms / 2 ? (int)(r->timeout_ms / 2) : 1;
	o.tries = 2;
	rc = ares_init_options(&r->ch, &o,
	                       ARES_OPT_SOCK_STATE_CB | ARES_OPT_TIMEOUTMS | ARES_OPT_TRIES);
	if (rc != ARES_SUCCESS) {
		log_error("resolver: %s", ares_strerror(rc));
		return rc == ARES_ENOMEM ? -ENOMEM : -EINVAL;
	}
	ares_set_socket_functions(r->ch, &socket_functions, r);
	r->ready = true;
	return 0;
}

void resolver_destroy(struct resolver *r)
{
	if (!r->ready)
		return;
	r->ready = false;
	/* Answers every pending query with ARES_EDESTRUCTION and closes the sockets. */
	ares_destroy(r->ch);
}

static int errno_from_status(int status)
{
	switch (status) {
	case ARES_ENOMEM:
		return -ENOMEM;
	default:
		/*
		 * No such name, no data, a server that failed, refused or never
		 * answered, a malformed name: to the client the host is
		 * unreachable (SOCKS5 REP 04, HTTP 502), as with getaddrinfo.
		 */
		return -EHOSTUNREACH;
	}
}

static void answered(void *arg, int status, int timeouts, struct ares_addrinfo *res)
{
	struct query *q = arg;
	struct resolver *r = q->r;
	struct sockaddr_storage addrs[RESOLVE_MAX_ADDRS];
	int n = 0, err = 0;
	struct loop_obj *o;

	(void)timeouts;
	r->pending--;
	if (status == ARES_EDESTRUCTION || status == ARES_ECANCELLED)
		goto out; /* the worker is stopping */
	if (status == ARES_SUCCESS && res) {
		for (struct ares_addrinfo_node *a = res->nodes; a && n < RESOLVE_MAX_ADDRS;
		     a = a->ai_next) {
			if ((a->ai_family == AF_INET || a->ai_family == AF_INET6) &&
			    a->ai_addrlen <= sizeof(addrs[0])) {
				memset(&addrs[n], 0, sizeof(addrs[n]));
				memcpy(&addrs[n++], a->ai_addr, a->ai_addrlen);
			}
		}
		if (!n)
			err = -EHOSTUNREACH;
	} else {
		err = errno_from_status(status);
		r->failures++;
	}
	o = loop_obj_at(&r->w->loop, q->kind, q->slot, q->gen);
	if (o && r->answer[q->kind])
		r->answer[q->kind](r->w, o, err, addrs, n);
out:
	if (res)
		ares_freeaddrinfo(res);
	free(q);
}

void resolver_on_answer(struct resolver *r, enum loop_kind kind, resolver_answer_fn *fn)
{
	r->answer[kind] = fn;
}

int resolver_lookup(struct resolver *r, const struct loop_obj *o, const char *host, uint16_t port)
{
	struct ares_addrinfo_hints hints = {.ai_flags = ARES_AI_NUMERICSERV,
	                                    .ai_family = AF_UNSPEC,
	                                    .ai_socktype = SOCK_STREAM};
	char service[8];
	struct query *q;
	int ret;

	if (r->pending >= r->max_pending)
		return -EAGAIN;
	if (!r->ready && (ret = channel_init(r)) < 0)
		return ret;
	q = malloc(sizeof(*q));
	if (!q)
		return -ENOMEM;
	*q = (struct query){
	        .r = r, .kind = o->kind, .slot = o->slot, .gen = r->w->loop.gens[o->slot]};
	snprintf(service, sizeof(service), "%u", port);
	r->pending++;
	r->lookups++;
	ares_getaddrinfo(r->ch, host, service, &hints, answered, q);
	return 0;
}

uint64_t resolver_next_ms(struct resolver *r)
{
	struct timeval tv, *t;

	if (!r->ready || !r->pending)
		return UINT64_MAX;
	t = ares_timeout(r->ch, NULL, &tv);
	if (!t)
		return UINT64_MAX;
	return (uint64_t)t->tv_sec * 1000 + (uint64_t)t->tv_usec / 1000;
}

void resolver_tick(struct resolver *r)
{
	if (r->ready)
		ares_process_fd(r->ch, ARES_SOCKET_BAD, ARES_SOCKET_BAD);
}
