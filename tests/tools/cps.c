/* SPDX-License-Identifier: MIT */
/* cps: measures short connections per second (connect, SOCKS5 handshake, CONNECT, small echo exchange, close) from several client threads. */

/*
 * Usage: cps [-s PROXY] -t TARGET [-t TARGET...] [-j THREADS] [-c CONNS] [-d SECONDS] [-m BYTES]
 *   -s HOST:PORT  SOCKS5 proxy (no auth); without it the target is dialled directly
 *   -t HOST:PORT  echo server; connection k goes to target k mod count
 *   -j N          client threads (default 8)
 *   -c N          connections each thread keeps in flight (default 0: one at a
 *                 time with blocking calls; N >= 1: non-blocking sockets driven
 *                 by one epoll per thread, so a thread sleeps only when all of
 *                 its N connections wait)
 *   -d S          duration in seconds (default 5)
 *   -m N          bytes sent and expected back on each connection (default 32)
 *   -n N          stop once N connections have ended (each counted once, as made
 *                 or failed), or at -d's end, whichever comes first
 * Toward a loopback target, each thread binds its own source address
 * 127.0.0.(10 + thread) so the client side has a full ephemeral port range per thread: at
 * thousands of connections per second the TIME_WAIT sockets of one address
 * would run out of ports. Prints one line:
 *   cps RATE conns N errors E secs S threads T [reason=count...]
 * and exits 0 when at least one connection succeeded.
 */

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "toolkit.h"

enum {
	MAX_THREADS = 64,
	MAX_TARGETS = 32,
	MAX_MSG = 4096,
	IO_TIMEOUT_S = 5, /* a stuck proxy turns into an error, not a hang */
	MAX_CONNS = 256,  /* -c */
};

enum err {
	E_SOCKET,
	E_CONNECT,
	E_GREETING,
	E_REPLY,
	E_ECHO,
	E_COUNT,
};

static const char *const err_name[E_COUNT] = {"socket", "connect", "greeting", "reply", "echo"};

static struct tk_endpoint proxy, targets[MAX_TARGETS];
static int ntargets, use_proxy, msg_len = 32, per_thread;
static atomic_bool stop;
static atomic_ulong total_ok, errors[E_COUNT];
static unsigned long max_conns; /* -n: 0 = no limit */

/* Counts one ended connection (err < 0: made); stops every thread at -n. */
static void count_end(int err)
{
	unsigned long n = 1 + atomic_fetch_add_explicit(err < 0 ? &total_ok : &errors[err], 1,
	                                                memory_order_relaxed);

	if (max_conns) {
		n = atomic_load(&total_ok);
		for (int e = 0; e < E_COUNT; e++)
			n += atomic_load(&errors[e]);
		if (n >= max_conns)
			atomic_store(&stop, true);
	}
}

/* SOCKS5 greeting, method choice, CONNECT request and reply (RFC 1928). */
static int socks_connect(int fd, const struct tk_endpoint *t)
{
	static const unsigned char greet[3] = {5, 1, 0};
	unsigned char req[TK_SOCKS5_REQ_MAX], rep[4 + 1 + 255 + 2]; /* room for a domain BND */
	if (tk_write_full(fd, greet, 3) || tk_read_full(fd, rep, 2) || rep[0] != 5 || rep[1] != 0)
		return E_GREETING;
	size_t n = tk_socks5_request(req, &t->ss);
	if (tk_write_full(fd, req, n) || tk_read_full(fd, rep, TK_SOCKS5_REPLY_HEAD) || rep[1] != 0)
		return E_REPLY;
	/* the rest of BND.ADDR + BND.PORT */
	size_t len = tk_socks5_reply_len(rep);
	if (!len || tk_read_full(fd, rep, len - TK_SOCKS5_REPLY_HEAD))
		return E_REPLY;
	return -1;
}

/*
 * A client socket for connection k (flags: SOCK_NONBLOCK or 0) with
 * TCP_NODELAY and, for IPv4, the thread's own source address (see above);
 * the port is chosen at connect time, per destination. -1 on failure.
 */
static int client_socket(int tid, const struct tk_endpoint *dst, int flags)
{
	int one = 1, fd = socket(dst->ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | flags, 0);

	if (fd < 0)
		return -1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (dst->ss.ss_family == AF_INET &&
	    (ntohl(((const struct sockaddr_in *)&dst->ss)->sin_addr.s_addr) >> 24) == 127) {
		struct sockaddr_in src = {.sin_family = AF_INET};
		src.sin_addr.s_addr = htonl(0x7f000000u | (10u + (unsigned)tid));
		setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof(one));
		bind(fd, (struct sockaddr *)&src, sizeof(src));
	}
	return fd;
}

static int one_conn(int tid, unsigned long k, unsigned char *msg, unsigned char *back)
{
	const struct tk_endpoint *t = &targets[k % ntargets];
	const struct tk_endpoint *dst = use_proxy ? &proxy : t;
	int fd = client_socket(tid, dst, 0), rc = -1;
	if (fd < 0)
		return E_SOCKET;
	tk_set_timeouts(fd, IO_TIMEOUT_S);
	if (connect(fd, (struct sockaddr *)&dst->ss, dst->len)) {
		rc = E_CONNECT;
		goto out;
	}
	if (use_proxy && (rc = socks_connect(fd, t)) >= 0)
		goto out;
	msg[0] = (unsigned char)k;
	if (tk_write_full(fd, msg, msg_len) || tk_read_full(fd, back, msg_len) ||
	    memcmp(msg, back, msg_len)) {
		rc = E_ECHO;
		goto out;
	}
	rc = -1;
out:
	close(fd);
	return rc;
}

static void *worker(void *arg)
{
	int tid = (int)(intptr_t)arg;
	unsigned char msg[MAX_MSG], back[MAX_MSG];
	unsigned long k = (unsigned long)tid;
	for (int i = 0; i < MAX_MSG; i++)
		msg[i] = (unsigned char)(i * 31 + tid);
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		count_end(one_conn(tid, k, msg, back));
		k += MAX_THREADS;
	}
	return NULL;
}

/* ---- -c N: non-blocking connections driven by epoll ---- */

enum ev_state { EV_CONNECT, EV_GREETING, EV_REPLY, EV_ECHO };

struct ev_conn {
	int fd;
	enum ev_state state;
	size_t got;
	unsigned long k;
	int64_t deadline_ms;
	unsigned char
	        buf[MAX_MSG > 262 ? MAX_MSG : 262]; /* a reply with a domain BND, or the echo */
};

/*
 * The first message (greeting, or the echo bytes without a proxy) straight
 * after connect(): on loopback the handshake has usually completed inside
 * connect(), so this saves the EPOLLOUT round (wake-up, SO_ERROR, EPOLL_CTL_MOD)
 * and keeps the load generator's share of the CPU small. 1 sent, 0 not
 * connected yet (EAGAIN: wait for EPOLLOUT), -1 failed.
 */
static int ev_first_send(struct ev_conn *c, const unsigned char *msg)
{
	static const unsigned char greet[3] = {5, 1, 0};
	const unsigned char *b = use_proxy ? greet : msg;
	size_t len = use_proxy ? sizeof(greet) : (size_t)msg_len;
	ssize_t n = send(c->fd, b, len, MSG_NOSIGNAL);

	if (n < 0 && errno == EAGAIN)
		return 0;
	if (n != (ssize_t)len)
		return -1; /* small first writes on a fresh socket go out whole */
	c->state = use_proxy ? EV_GREETING : EV_ECHO;
	return 1;
}

static void ev_open(int tid, int ep, struct ev_conn *c, unsigned long k, const unsigned char *msg)
{
	const struct tk_endpoint *t = &targets[k % ntargets];
	const struct tk_endpoint *dst = use_proxy ? &proxy : t;
	struct epoll_event ev = {.events = EPOLLOUT, .data.ptr = c};
	int sent = -1;

	c->k = k;
	c->got = 0;
	c->state = EV_CONNECT;
	c->deadline_ms = tk_now_ms() + IO_TIMEOUT_S * 1000;
	c->fd = client_socket(tid, dst, SOCK_NONBLOCK);
	if (c->fd < 0) {
		atomic_fetch_add_explicit(&errors[E_SOCKET], 1, memory_order_relaxed);
		return;
	}
	if (!connect(c->fd, (struct sockaddr *)&dst->ss, dst->len) || errno == EINPROGRESS)
		sent = ev_first_send(c, msg);
	if (sent > 0)
		ev.events = EPOLLIN;
	if (sent < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev)) {
		atomic_fetch_add_explicit(&errors[E_CONNECT], 1, memory_order_relaxed);
		close(c->fd);
		c->fd = -1;
	}
}

/* Ends c with `err` (-1: success) and frees its slot for the next connection. */
static void ev_end(struct ev_conn *c, int err)
{
	count_end(err);
	close(c->fd); /* also leaves the epoll set */
	c->fd = -1;
}

/* Reads toward `want` bytes; true once they are all there. -1 in *err on EOF/error. */
static bool ev_read(struct ev_conn *c, size_t want, int fail, int *err)
{
	ssize_t n = recv(c->fd, c->buf + c->got, want - c->got, 0);

	if (n > 0)
		c->got += (size_t)n;
	else if (n == 0 || errno != EAGAIN)
		*err = fail;
	return c->got == want;
}

/* One readiness event: advance c's exchange. Returns the error, or -2 to continue. */
static int ev_step(struct ev_conn *c, int ep, const unsigned char *msg)
{
	const struct tk_endpoint *t = &targets[c->k % ntargets];
	unsigned char req[TK_SOCKS5_REQ_MAX];
	int err = -2, soerr = 0;
	socklen_t len = sizeof(soerr);
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
	size_t want;

	switch (c->state) {
	case EV_CONNECT:
		if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &soerr, &len) || soerr ||
		    ev_first_send(c, msg) <= 0 || epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev))
			return E_CONNECT;
		return -2;
	case EV_GREETING:
		if (!ev_read(c, 2, E_GREETING, &err))
			return err;
		if (c->buf[0] != 5 || c->buf[1] != 0)
			return E_GREETING;
		len = (socklen_t)tk_socks5_request(req, &t->ss);
		if (send(c->fd, req, len, MSG_NOSIGNAL) != (ssize_t)len)
			return E_REPLY;
		c->state = EV_REPLY;
		c->got = 0;
		return -2;
	case EV_REPLY:
		/*
		 * One read for the whole reply, whatever its BND length: nothing
		 * may follow it until the echo bytes are sent, so bytes beyond
		 * the reply are a proxy error.
		 */
		ev_read(c, sizeof(c->buf), E_REPLY, &err);
		if (err >= 0)
			return err;
		if (c->got < TK_SOCKS5_REPLY_HEAD)
			return -2;
		if (c->buf[0] != 5 || c->buf[1] != 0 || !(want = tk_socks5_reply_len(c->buf)) ||
		    c->got > want)
			return E_REPLY;
		if (c->got < want)
			return -2;
		if (send(c->fd, msg, (size_t)msg_len, MSG_NOSIGNAL) != msg_len)
			return E_ECHO;
		c->state = EV_ECHO;
		c->got = 0;
		return -2;
	case EV_ECHO:
		if (!ev_read(c, (size_t)msg_len, E_ECHO, &err))
			return err;
		return memcmp(c->buf, msg, (size_t)msg_len) ? E_ECHO : -1;
	}
	return -2;
}

static void *ev_worker(void *arg)
{
	int tid = (int)(intptr_t)arg;
	unsigned char msg[MAX_MSG];
	struct ev_conn *conns = calloc((size_t)per_thread, sizeof(*conns));
	struct epoll_event evs[MAX_CONNS];
	unsigned long k = (unsigned long)tid;
	int ep = epoll_create1(EPOLL_CLOEXEC);

	for (int i = 0; i < MAX_MSG; i++)
		msg[i] = (unsigned char)(i * 31 + tid);
	if (!conns || ep < 0) {
		atomic_fetch_add_explicit(&errors[E_SOCKET], 1, memory_order_relaxed);
		return NULL;
	}
	for (int i = 0; i < per_thread; i++) {
		ev_open(tid, ep, &conns[i], k, msg);
		k += MAX_THREADS;
	}
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		int n = epoll_wait(ep, evs, per_thread, 100);
		for (int i = 0; i < n; i++) {
			struct ev_conn *c = evs[i].data.ptr;
			int rc = c->fd < 0 ? -2 : ev_step(c, ep, msg);
			if (rc == -2)
				continue;
			ev_end(c, rc);
			ev_open(tid, ep, c, k, msg);
			k += MAX_THREADS;
		}
		int64_t now = tk_now_ms();
		for (int i = 0; i < per_thread; i++) {
			struct ev_conn *c = &conns[i];
			if (c->fd >= 0 && now < c->deadline_ms)
				continue;
			if (c->fd >= 0) /* stuck: count it where it stalled */
				ev_end(c, c->state == EV_CONNECT    ? E_CONNECT
				          : c->state == EV_GREETING ? E_GREETING
				          : c->state == EV_REPLY    ? E_REPLY
				                                    : E_ECHO);
			ev_open(tid, ep, c, k, msg); /* also retries a slot whose socket failed */
			k += MAX_THREADS;
		}
	}
	for (int i = 0; i < per_thread; i++)
		if (conns[i].fd >= 0)
			close(conns[i].fd); /* in flight at the end: neither counted nor failed */
	close(ep);
	free(conns);
	return NULL;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	int nthreads = 8;
	double dur = 5;
	signal(SIGPIPE, SIG_IGN);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!v)
			goto usage;
		i++;
		if (!strcmp(a, "-s")) {
			if (tk_parse_endpoint(v, &proxy, false))
				goto usage;
			use_proxy = 1;
		} else if (!strcmp(a, "-t")) {
			if (ntargets == MAX_TARGETS ||
			    tk_parse_endpoint(v, &targets[ntargets++], false))
				goto usage;
		} else if (!strcmp(a, "-j")) {
			nthreads = atoi(v);
		} else if (!strcmp(a, "-d")) {
			dur = atof(v);
		} else if (!strcmp(a, "-c")) {
			per_thread = atoi(v);
		} else if (!strcmp(a, "-m")) {
			msg_len = atoi(v);
		} else if (!strcmp(a, "-n")) {
			max_conns = strtoul(v, NULL, 10);
		} else {
			goto usage;
		}
	}
	if (!ntargets || nthreads < 1 || nthreads > MAX_THREADS || msg_len < 1 ||
	    msg_len > MAX_MSG || per_thread < 0 || per_thread > MAX_CONNS)
		goto usage;

	pthread_t th[MAX_THREADS];
	double t0 = now_s();
	for (int i = 0; i < nthreads; i++)
		pthread_create(&th[i], NULL, per_thread ? ev_worker : worker, (void *)(intptr_t)i);
	/* -d's end, or -n's count (the threads set stop): whichever comes first */
	while (!atomic_load(&stop) && now_s() - t0 < dur) {
		struct timespec d = {.tv_nsec = 10 * 1000 * 1000};
		nanosleep(&d, NULL);
	}
	atomic_store(&stop, true);
	for (int i = 0; i < nthreads; i++)
		pthread_join(th[i], NULL);
	double secs = now_s() - t0;
	unsigned long ok = atomic_load(&total_ok), bad = 0;
	for (int e = 0; e < E_COUNT; e++)
		bad += atomic_load(&errors[e]);
	printf("cps %.0f conns %lu errors %lu secs %.2f threads %d", ok / secs, ok, bad, secs,
	       nthreads);
	if (per_thread)
		printf(" conns_per_thread %d", per_thread);
	for (int e = 0; e < E_COUNT; e++)
		if (atomic_load(&errors[e]))
			printf(" %s=%lu", err_name[e], atomic_load(&errors[e]));
	printf("\n");
	return ok ? 0 : 1;
usage:
	fprintf(stderr,
	        "usage: cps [-s PROXY] -t TARGET... [-j THREADS] [-c CONNS] [-d SECONDS] [-m BYTES] "
	        "[-n CONNS]\n");
	return 2;
}
