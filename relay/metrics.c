/* SPDX-License-Identifier: MIT */
/* The metrics endpoint: a listener and its clients in worker 0's loop, one request and one answer each. */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "access.h"
#include "http_get.h"
#include "log.h"
#include "metrics.h"
#include "sockaddr.h"
#include "stats.h"
#include "worker.h"

/*
 * Shape: the listener's multishot accept; per client one operation at a
 * time (a poll), with the reads and writes done inline on the
 * non-blocking socket in its completion, as the relay does. The answer is
 * rendered at once into one buffer (the registry read under its lock, a
 * few hundred microseconds for a few hundred series), then written; after
 * it the socket is shut down for writing and read until the client closes
 * (a lingering close: closing with unread input would reset the connection
 * and could destroy the answer still in flight). Served on a relay
 * worker's loop, it costs that worker the rendering, once per scrape.
 */
enum metrics_op {
	OP_ACCEPT = 1,
	OP_ACCEPT_RETRY, /* the pause after EMFILE */
	OP_POLL,         /* a client: readable (request, linger) or writable (answer) */
};

enum { ACCEPT_RETRY_MS = 100 };

enum client_phase { PH_REQUEST = 0, PH_ANSWER, PH_LINGER };

/* Both objects of the kind start with this. */
struct metrics_obj {
	struct loop_obj obj;
	bool client;
	struct worker *w;
	int fd;
};

struct metrics_listener {
	struct metrics_obj m;
	bool stopped;
};

struct metrics_client {
	struct metrics_obj m;
	enum client_phase phase;
	uint64_t op; /* the poll in flight, 0: none */
	struct loop_timer timer;
	struct http_get req;
	size_t len;
	uint8_t *buf; /* the request (HTTP_GET_HEAD_MAX), then the answer */
	size_t out_len, out_off, discarded;
};

/* The endpoint's own counters (worker 0 writes them, a scrape reads them). */
static struct {
	uint64_t answers[5]; /* 200, 400, 404, 405, and clients closed at the deadline */
	uint64_t refused[2]; /* not in allow, over METRICS_CLIENTS */
} counts;

static const struct stats_desc desc[] = {
        {"requests", "requests answered, by status (timeout: closed at the deadline)",
         STATS_COUNTER, "code=\"200\""},
        {"requests", "requests answered, by status (timeout: closed at the deadline)",
         STATS_COUNTER, "code=\"400\""},
        {"requests", "requests answered, by status (timeout: closed at the deadline)",
         STATS_COUNTER, "code=\"404\""},
        {"requests", "requests answered, by status (timeout: closed at the deadline)",
         STATS_COUNTER, "code=\"405\""},
        {"requests", "requests answered, by status (timeout: closed at the deadline)",
         STATS_COUNTER, "code=\"timeout\""},
        {"refused", "connections closed at accept, by reason", STATS_COUNTER, "reason=\"allow\""},
        {"refused", "connections closed at accept, by reason", STATS_COUNTER, "reason=\"busy\""},
};
enum { A_200, A_400, A_404, A_405, A_TIMEOUT };

static void read_counts(const struct stats_group *g, uint64_t *out)
{
	(void)g;
	memcpy(out, counts.answers, sizeof(counts.answers));
	memcpy(out + 5, counts.refused, sizeof(counts.refused));
}

static struct stats_group group = {
        .name = "metrics",
        .family = "metrics",
        .desc = desc,
        .n = sizeof(desc) / sizeof(desc[0]),
        .read = read_counts,
};

int metrics_socket(const struct sockaddr_storage *addr, socklen_t len)
{
	int one = 1, fd = socket(addr->ss_family, SOCK_STREAM | SOCK_CLOEXEC, IPPROTO_TCP), ret;
	char a[SA_STR_MAX];

	if (fd < 0)
		goto fail;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (addr->ss_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(fd, (const struct sockaddr *)addr, len) < 0 || listen(fd, 64) < 0)
		goto fail;
	return fd;
fail:
	ret = -errno;
	log_error("[stats]: cannot listen on %s: %s", sa_str(addr, a), strerror(-ret));
	if (fd >= 0)
		close(fd);
	return ret;
}

int metrics_open(struct worker *w, int fd, struct metrics_listener **out)
{
	struct metrics_listener *m = calloc(1, sizeof(*m));
	static bool registered;
	int ret;

	if (!m || (ret = loop_add(&w->loop, &m->m.obj, LOOP_KIND_METRICS)) < 0) {
		free(m);
		close(fd);
		return -ENOMEM;
	}
	m->m.w = w;
	m->m.fd = fd;
	if (!registered) { /* once per process: the counters outlive every listener */
		registered = true;
		stats_register(&group);
	}
	*out = m;
	return 0;
}

int metrics_fd(const struct metrics_listener *m)
{
	return m->m.fd;
}

void metrics_arm(struct metrics_listener *m)
{
	struct io_uring_sqe *sqe = loop_prep(&m->m.w->loop, &m->m.obj, OP_ACCEPT);

	io_uring_prep_multishot_accept(sqe, m->m.fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
}

void metrics_stop(struct metrics_listener *m)
{
	struct loop *l = &m->m.w->loop;

	if (m->stopped)
		return;
	m->stopped = true;
	loop_cancel(l, loop_tag_of(l, &m->m.obj, OP_ACCEPT));
	loop_cancel(l, loop_tag_of(l, &m->m.obj, OP_ACCEPT_RETRY));
	loop_close(l, &m->m.obj);
}

/* --- a client --- */

static void client_close(struct metrics_client *c)
{
	struct loop *l = &c->m.w->loop;

	if (c->op)
		loop_cancel(l, c->op);
	c->op = 0;
	loop_timer_stop(&c->timer);
	loop_close(l, &c->m.obj);
}

static void client_poll(struct metrics_client *c, unsigned mask)
{
	struct io_uring_sqe *sqe = loop_prep(&c->m.w->loop, &c->m.obj, OP_POLL);

	io_uring_prep_poll_add(sqe, c->m.fd, mask);
	c->op = sqe->user_data;
}

static void linger(struct metrics_client *c)
{
	uint8_t junk[4096];

	for (;;) {
		ssize_t n = recv(c->m.fd, junk, sizeof(junk), MSG_DONTWAIT);
		if (n < 0 && errno == EAGAIN && c->discarded < METRICS_DISCARD_MAX) {
			client_poll(c, POLLIN | POLLRDHUP);
			return;
		}
		if (n <= 0 || (c->discarded += (size_t)n) >= METRICS_DISCARD_MAX)
			break; /* EOF, an error, or a client that will not stop talking */
	}
	client_close(c);
}

static void write_answer(struct metrics_client *c)
{
	while (c->out_off < c->out_len) {
		ssize_t n = send(c->m.fd, c->buf + c->out_off, c->out_len - c->out_off,
		                 MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n < 0 && errno == EAGAIN) {
			client_poll(c, POLLOUT);
			return;
		}
		if (n <= 0) {
			client_close(c);
			return;
		}
		c->out_off += (size_t)n;
	}
	free(c->buf); /* the answer is in the kernel's hands */
	c->buf = NULL;
	c->phase = PH_LINGER;
	shutdown(c->m.fd, SHUT_WR);
	linger(c);
}

/* The answer: the counters (200) or a one-line reason; one buffer, head and body. */
static void answer(struct metrics_client *c, int code)
{
	const char *reason = code == 200   ? "OK"
	                     : code == 404 ? "Not Found"
	                     : code == 405 ? "Method Not Allowed"
	                                   : "Bad Request";
	char *body = NULL, head[256];
	size_t blen = 0;
	int hlen;
	uint8_t *out;

	if (code == 200) {
		FILE *f = open_memstream(&body, &blen);
		if (!f || stats_render_prom(f) < 0) {
			if (f)
				fclose(f);
			free(body);
			client_close(c); /* out of memory: nothing sensible to say */
			return;
		}
		fclose(f);
	} else {
		const char *text = code == 404   ? "only /metrics is served here\n"
		                   : code == 405 ? "only GET is answered here\n"
		                                 : "malformed request\n";
		body = strdup(text);
		blen = body ? strlen(body) : 0;
	}
	counts.answers[code == 200 ? A_200 : code == 400 ? A_400 : code == 404 ? A_404 : A_405]++;
	hlen = snprintf(head, sizeof(head),
	                "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n%s"
	                "Connection: close\r\n\r\n",
	                code, reason,
	                code == 200 ? "text/plain; version=0.0.4; charset=utf-8"
	                            : "text/plain; charset=utf-8",
	                blen, code == 405 ? "Allow: GET\r\n" : "");
	out = malloc((size_t)hlen + blen);
	if (!out || !body) {
		free(out);
		free(body);
		client_close(c);
		return;
	}
	memcpy(out, head, (size_t)hlen);
	memcpy(out + hlen, body, blen);
	free(body);
	free(c->buf);
	c->buf = out;
	c->out_len = (size_t)hlen + blen;
	c->out_off = 0;
	c->phase = PH_ANSWER;
	write_answer(c);
}

static void read_request(struct metrics_client *c)
{
	for (;;) {
		ssize_t n =
		        recv(c->m.fd, c->buf + c->len, HTTP_GET_HEAD_MAX - c->len, MSG_DONTWAIT);
		enum http_get_result r;

		if (n < 0 && errno == EAGAIN) {
			client_poll(c, POLLIN | POLLRDHUP);
			return;
		}
		if (n <= 0) {
			client_close(c); /* gone before asking: nobody to answer */
			return;
		}
		c->len += (size_t)n;
		r = http_get_parse(&c->req, c->buf, c->len);
		if (r == HTTP_GET_MORE)
			continue; /* read what else is there, or poll */
		if (r == HTTP_GET_BAD)
			answer(c, 400);
		else if (strcmp(c->req.method, "GET") != 0)
			answer(c, 405);
		else if (strcmp(c->req.path, "/metrics") != 0)
			answer(c, 404);
		else
			answer(c, 200);
		return;
	}
}

void metrics_timeout(struct loop *l, struct loop_timer *t)
{
	struct metrics_client *c = list_entry(t, struct metrics_client, timer);

	(void)l;
	counts.answers[A_TIMEOUT]++;
	log_debug_rl("metrics: a client was closed at the %d ms deadline", METRICS_DEADLINE_MS);
	client_close(c);
}

static void client_new(struct worker *w, int fd)
{
	struct metrics_client *c = calloc(1, sizeof(*c));

	if (c)
		c->buf = malloc(HTTP_GET_HEAD_MAX);
	if (!c || !c->buf || loop_add(&w->loop, &c->m.obj, LOOP_KIND_METRICS) < 0) {
		if (c)
			free(c->buf);
		free(c);
		close(fd);
		return;
	}
	c->m.client = true;
	c->m.w = w;
	c->m.fd = fd;
	w->n_metrics_clients++;
	http_get_init(&c->req);
	loop_timer_init(&c->timer);
	loop_timer_arm(&w->loop, &w->metrics_tq, &c->timer);
	read_request(c); /* the request is often there by the time the accept completes */
}

static void on_accept(struct metrics_listener *m, int res, unsigned flags)
{
	struct worker *w = m->m.w;

	if (res >= 0) {
		struct sockaddr_storage peer;
		socklen_t len = sizeof(peer);
		char a[SA_STR_MAX];

		if (getpeername(res, (struct sockaddr *)&peer, &len) < 0 ||
		    !access_in_list(w->cfg->stats_allow, w->cfg->n_stats_allow, &peer)) {
			counts.refused[0]++;
			log_debug_rl("metrics: %s is not in [stats] allow: closed",
			             len ? sa_str(&peer, a) : "?");
			close(res);
		} else if (w->n_metrics_clients >= METRICS_CLIENTS) {
			counts.refused[1]++;
			log_debug_rl("metrics: %d clients already: closed", METRICS_CLIENTS);
			close(res);
		} else {
			client_new(w, res);
		}
	} else if (res != -ECANCELED) {
		log_debug_rl("metrics: accept: %s", strerror(-res));
	}
	if (flags & IORING_CQE_F_MORE)
		return;
	if (res == -EMFILE || res == -ENFILE || res == -ENOBUFS || res == -ENOMEM) {
		static struct __kernel_timespec retry = {.tv_nsec = ACCEPT_RETRY_MS * 1000000LL};
		struct io_uring_sqe *sqe = loop_prep(&w->loop, &m->m.obj, OP_ACCEPT_RETRY);
		io_uring_prep_timeout(sqe, &retry, 0, 0);
		return;
	}
	metrics_arm(m);
}

static void complete(struct loop *l, struct loop_obj *o, unsigned op,
                     const struct io_uring_cqe *cqe)
{
	struct metrics_obj *mo = (struct metrics_obj *)o;
	struct metrics_client *c = (struct metrics_client *)o;

	(void)l;
	if (!mo->client) {
		if (op == OP_ACCEPT)
			on_accept((struct metrics_listener *)o, cqe->res, cqe->flags);
		else
			metrics_arm((struct metrics_listener *)o);
		return;
	}
	c->op = 0;
	if (cqe->res < 0) {
		client_close(c);
		return;
	}
	switch (c->phase) {
	case PH_REQUEST:
		read_request(c);
		break;
	case PH_ANSWER:
		write_answer(c);
		break;
	case PH_LINGER:
		linger(c);
		break;
	}
}

void metrics_close_clients(struct worker *w)
{
	struct loop *l = &w->loop;

	for (uint32_t i = 0; i < l->cap; i++) {
		struct loop_obj *o = l->slots[i];
		if (o && o->kind == LOOP_KIND_METRICS && !o->closed &&
		    ((struct metrics_obj *)o)->client)
			client_close((struct metrics_client *)o);
	}
}

/* A closed listener: a connection accepted as the cancel went in is closed. */
static void discard(struct loop *l, struct loop_obj *o, unsigned op, const struct io_uring_cqe *cqe)
{
	(void)l;
	if (!((struct metrics_obj *)o)->client && op == OP_ACCEPT && cqe->res >= 0)
		close(cqe->res);
}

static void release(struct loop *l, struct loop_obj *o)
{
	struct metrics_obj *mo = (struct metrics_obj *)o;

	(void)l;
	close(mo->fd);
	if (mo->client) {
		mo->w->n_metrics_clients--;
		free(((struct metrics_client *)o)->buf);
	} else if (mo->w->metrics == (struct metrics_listener *)o) {
		mo->w->metrics = NULL;
	}
	free(o);
}

const struct loop_module metrics_module = {
        .name = "metrics",
        .complete = complete,
        .discard = discard,
        .release = release,
};
