/* SPDX-License-Identifier: MIT */
/* Unit tests for relay/splice.c: the pipe pool and splice_pump over real TCP sockets on 127.0.0.1. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "t.h"
#include "splice.h"

/* The buffer pool every pump call falls back on (the copy mode when no pipe can be had). */
static struct buf_pool bp;

T_SUITE("splice");

/*
 * What splice.c keeps private, restated here: the fairness budget per call
 * (PUMP_BUDGET) and the capacity assumed when pipe_size is 0.
 */
enum {
	BUDGET = 4 << 20,
	DEFAULT_CAP = 65536,
	MIB = 1 << 20,
	DEADLINE_MS = 10000, /* per transfer: a healthy run takes milliseconds */
	MAX_FILL = 1024,     /* descriptors dup()ed to reach RLIMIT_NOFILE */
};

/*
 * a → b is the client leg (the test writes into a, the pump reads b);
 * c → d is the target leg (the pump writes c, the test reads d).
 */
struct legs {
	int a, b, c, d;
};

/* Socket buffer sizes (0 = kernel default) for the four ends. */
struct bufs {
	int a_snd, b_rcv, c_snd, d_rcv;
};

static int set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);
	return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

/* SO_*BUFFORCE (root) so sizes above net.core.[rw]mem_max are honoured too. */
static void set_buf(int fd, int opt, int force_opt, int bytes)
{
	if (bytes > 0 && setsockopt(fd, SOL_SOCKET, force_opt, &bytes, sizeof(bytes)) < 0)
		setsockopt(fd, SOL_SOCKET, opt, &bytes, sizeof(bytes));
}

/* A connected TCP pair over 127.0.0.1; the buffer sizes are set before connect (window scale). */
static int tcp_pair(int *cl, int *sv, int cl_snd, int sv_rcv)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(sa);
	int l = -1, c = -1, s = -1, one = 1;

	l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (l < 0 || c < 0)
		goto fail;
	set_buf(l, SO_RCVBUF, SO_RCVBUFFORCE, sv_rcv);
	set_buf(c, SO_SNDBUF, SO_SNDBUFFORCE, cl_snd);
	if (bind(l, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(l, 1) < 0 ||
	    getsockname(l, (struct sockaddr *)&sa, &len) < 0)
		goto fail;
	if (connect(c, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		goto fail;
	s = accept4(l, NULL, NULL, SOCK_CLOEXEC);
	if (s < 0)
		goto fail;
	close(l);
	setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	*cl = c;
	*sv = s;
	return 0;
fail:
	perror("tcp_pair");
	if (l >= 0)
		close(l);
	if (c >= 0)
		close(c);
	return -1;
}

/* b and c are what the engine owns: non-blocking, like its accepted/connected sockets. */
static int legs_open(struct legs *lg, const struct bufs *bf)
{
	lg->a = lg->b = lg->c = lg->d = -1;
	if (tcp_pair(&lg->a, &lg->b, bf ? bf->a_snd : 0, bf ? bf->b_rcv : 0) < 0)
		return -1;
	if (tcp_pair(&lg->c, &lg->d, bf ? bf->c_snd : 0, bf ? bf->d_rcv : 0) < 0)
		return -1;
	if (set_nonblock(lg->a) || set_nonblock(lg->b) || set_nonblock(lg->c) ||
	    set_nonblock(lg->d))
		return -1;
	return 0;
}

static void legs_close(struct legs *lg)
{
	int *fds[] = {&lg->a, &lg->b, &lg->c, &lg->d};

	for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++) {
		if (*fds[i] >= 0)
			close(*fds[i]);
		*fds[i] = -1;
	}
}

static bool fd_is_open(int fd)
{
	return fd >= 0 && fcntl(fd, F_GETFD) >= 0;
}

/* Deterministic, non-repeating-looking bytes (xorshift64), so a shifted or lost block shows. */
static uint8_t *pattern(size_t n, uint64_t seed)
{
	uint8_t *p = malloc(n ? n : 1);
	uint64_t x = seed | 1;

	if (!p)
		abort();
	for (size_t i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		p[i] = (uint8_t)(x >> 24);
	}
	return p;
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * One relay direction driven like the engine drives it: the pump runs when
 * the poll it asked for fires. The test side writes `src` into a and reads
 * d into `dst`. Everything is non-blocking and single-threaded.
 */
struct xfer {
	const uint8_t *src;
	uint8_t *dst;
	size_t size, sent, recvd;
	bool shut_a; /* shutdown(a, SHUT_WR) once all is sent */
	bool read_d; /* drain d (false: leave the destination full) */
	bool d_eof;  /* d read EOF */
	bool last;   /* tell the pump the other direction is done */
	enum pump_next next;
	int err;
	unsigned pumps, wait_dst;
	uint32_t max_in_pipe;
	uint64_t copied; /* d->bytes while the pool had made no pipe yet (fresh pools only) */
};

static void xfer_init(struct xfer *x, const uint8_t *src, uint8_t *dst, size_t size)
{
	memset(x, 0, sizeof(*x));
	x->src = src;
	x->dst = dst;
	x->size = size;
	x->shut_a = true;
	x->read_d = true;
	x->next = PUMP_WAIT_SRC;
}

static void pump_once(struct pipe_pool *pp, struct pump_dir *d, struct legs *lg, struct xfer *x)
{
	x->next = splice_pump(pp, &bp, d, lg->b, lg->c, x->last, &x->err);
	x->pumps++;
	x->wait_dst += x->next == PUMP_WAIT_DST;
	if (d->held > x->max_in_pipe)
		x->max_in_pipe = d->held;
	if (pp->created == 0)
		x->copied = d->bytes;
}

/* Reads what d has; returns false on a read error. */
static bool drain_d(struct xfer *x, int d)
{
	for (;;) {
		uint8_t scratch[4096];
		size_t room = x->size - x->recvd;
		/* past the expected size: read into scratch so excess bytes are seen */
		ssize_t n = room ? recv(d, x->dst + x->recvd, room, 0)
		                 : recv(d, scratch, sizeof(scratch), 0);
		if (n > 0 && room) {
			x->recvd += (size_t)n;
		} else if (n > 0) {
			x->recvd += (size_t)n; /* overflow: counted, not stored */
			return false;
		} else if (n == 0) {
			x->d_eof = true;
			return true;
		} else {
			return errno == EAGAIN;
		}
	}
}

/*
 * Runs until `stop` holds, the pump says DONE/ERROR, or the deadline. Returns
 * true unless the deadline passed or a socket call failed.
 */
static bool run(struct pipe_pool *pp, struct pump_dir *d, struct legs *lg, struct xfer *x,
                bool (*stop)(const struct xfer *))
{
	long long end = now_ms() + DEADLINE_MS;

	if (x->shut_a && x->sent == x->size)
		shutdown(lg->a, SHUT_WR); /* nothing (left) to send */
	while (now_ms() < end) {
		struct pollfd pf[4] = {
		        {.fd = lg->a, .events = x->sent < x->size ? POLLOUT : 0},
		        {.fd = lg->b, .events = x->next == PUMP_WAIT_SRC ? POLLIN : 0},
		        {.fd = lg->c, .events = x->next == PUMP_WAIT_DST ? POLLOUT : 0},
		        {.fd = x->read_d && !x->d_eof ? lg->d : -1, .events = POLLIN},
		};

		if (stop && stop(x))
			return true;
		if (x->next == PUMP_ERROR)
			return true;
		if (x->next == PUMP_DONE && (!x->read_d || x->d_eof))
			return true;
		if (x->next == PUMP_DONE)
			pf[1].events = pf[2].events = 0;
		if (poll(pf, 4, 1000) < 0 && errno != EINTR)
			return false;
		if (pf[0].revents & POLLOUT) {
			ssize_t n = send(lg->a, x->src + x->sent, x->size - x->sent, MSG_NOSIGNAL);
			if (n > 0)
				x->sent += (size_t)n;
			else if (n < 0 && errno != EAGAIN)
				return false;
			if (x->sent == x->size && x->shut_a)
				shutdown(lg->a, SHUT_WR);
		}
		if (pf[1].revents || pf[2].revents)
			pump_once(pp, d, lg, x);
		if ((pf[3].revents & (POLLIN | POLLHUP | POLLERR)) && !drain_d(x, lg->d))
			return false;
	}
	printf("  deadline: sent %zu recvd %zu pumps %u next %d\n", x->sent, x->recvd, x->pumps,
	       x->next);
	return false;
}

static bool all_received(const struct xfer *x)
{
	return x->recvd >= x->size;
}

/* One whole transfer a → d of `size` bytes through pipes of `pipe_size`; checks every byte. */
static void transfer(unsigned pipe_size, size_t size, uint64_t seed)
{
	struct pipe_pool pp = {0};
	struct pump_dir d;
	struct legs lg;
	struct xfer x;
	uint8_t *src = pattern(size, seed), *dst = malloc(size ? size : 1);

	T_EQ_INT(pipe_pool_init(&pp, 4, pipe_size), 0);
	pump_dir_init(&d);
	T_EQ_INT(legs_open(&lg, NULL), 0);
	xfer_init(&x, src, dst, size);
	T_ASSERT(run(&pp, &d, &lg, &x, NULL));
	if (x.next == PUMP_ERROR)
		printf("  size %zu: PUMP_ERROR %d (%s)\n", size, x.err, strerror(-x.err));
	T_EQ_INT(x.next, PUMP_DONE);
	T_ASSERT(x.d_eof);
	T_EQ_INT(x.recvd, size);
	T_EQ_INT(d.bytes, size);
	/* the count never claims more than the pipe can hold */
	T_ASSERT(x.max_in_pipe <= (pipe_size ? pipe_size : DEFAULT_CAP));
	if (x.recvd == size && memcmp(src, dst, size) != 0) {
		size_t i = 0;
		while (src[i] == dst[i])
			i++;
		T_FAILF("size %zu (pipe %u): first differing byte at %zu", size, pipe_size, i);
	}
	T_ASSERT(d.done && d.eof);
	T_EQ_INT(d.held, 0);
	/* the empty pipe went back to the pool: an idle direction holds none */
	T_EQ_INT(d.pipe[0], -1);
	T_EQ_INT(pp.in_use, 0);
	T_EQ_INT(pp.n_free, 1);
	T_EQ_INT(pp.copy_fallbacks, 0);
	T_ASSERT(d.buf == NULL);
	splice_dir_release(&pp, &bp, &d);
	legs_close(&lg);
	pipe_pool_destroy(&pp);
	free(src);
	free(dst);
}

/* --- the pool --- */

static void test_pool_reuse(void)
{
	struct pipe_pool pp = {0};
	int p[2], q[2], first[2];

	T_EQ_INT(pipe_pool_init(&pp, 4, 0), 0);
	T_EQ_INT(pipe_pool_get(&pp, p), 0);
	T_ASSERT(fd_is_open(p[0]) && fd_is_open(p[1]));
	T_EQ_INT(pp.created, 1);
	T_EQ_INT(pp.in_use, 1);
	/* the pipe works and is non-blocking both ways */
	T_EQ_INT(write(p[1], "xy", 2), 2);
	char b[4];
	T_EQ_INT(read(p[0], b, sizeof(b)), 2);
	T_EQ_INT(read(p[0], b, sizeof(b)), -1);
	T_EQ_INT(errno, EAGAIN);
	T_ASSERT(fcntl(p[0], F_GETFL) & O_NONBLOCK);
	T_ASSERT(fcntl(p[1], F_GETFL) & O_NONBLOCK);
	T_ASSERT(fcntl(p[0], F_GETFD) & FD_CLOEXEC);
	first[0] = p[0];
	first[1] = p[1];
	pipe_pool_put(&pp, p, true);
	T_EQ_INT(p[0], -1);
	T_EQ_INT(p[1], -1);
	T_EQ_INT(pp.in_use, 0);
	T_EQ_INT(pp.n_free, 1);
	T_ASSERT(fd_is_open(first[0]) && fd_is_open(first[1]));
	/* the same pipe comes back, nothing new is created */
	T_EQ_INT(pipe_pool_get(&pp, q), 0);
	T_EQ_INT(q[0], first[0]);
	T_EQ_INT(q[1], first[1]);
	T_EQ_INT(pp.created, 1);
	T_EQ_INT(pp.n_free, 0);
	/* pool empty: a second one is created */
	T_EQ_INT(pipe_pool_get(&pp, p), 0);
	T_ASSERT(p[0] != q[0]);
	T_EQ_INT(pp.created, 2);
	T_EQ_INT(pp.in_use, 2);
	pipe_pool_put(&pp, p, true);
	pipe_pool_put(&pp, q, true);
	T_EQ_INT(pp.n_free, 2);
	/* a stack: the last one put is the first one got (warm in cache) */
	T_EQ_INT(pipe_pool_get(&pp, q), 0);
	T_EQ_INT(pp.created, 2);
	T_EQ_INT(q[0], first[0]);
	pipe_pool_put(&pp, q, true);
	pipe_pool_destroy(&pp);
	T_ASSERT(!fd_is_open(first[0]) && !fd_is_open(first[1]));
	T_ASSERT(pp.free == NULL);
	T_EQ_INT(pp.n_free, 0);
}

static void test_pool_nonempty_closed(void)
{
	struct pipe_pool pp = {0};
	int p[2], q[2], r0, w0;

	T_EQ_INT(pipe_pool_init(&pp, 4, 0), 0);
	T_EQ_INT(pipe_pool_get(&pp, p), 0);
	r0 = p[0];
	w0 = p[1];
	T_EQ_INT(write(p[1], "secret", 6), 6);
	pipe_pool_put(&pp, p, false);
	T_EQ_INT(p[0], -1);
	T_EQ_INT(pp.n_free, 0);
	T_EQ_INT(pp.in_use, 0);
	T_ASSERT(!fd_is_open(r0));
	T_ASSERT(!fd_is_open(w0));
	/* the next user gets a fresh, empty pipe */
	T_EQ_INT(pipe_pool_get(&pp, q), 0);
	T_EQ_INT(pp.created, 2);
	char b[8];
	T_EQ_INT(read(q[0], b, sizeof(b)), -1);
	T_EQ_INT(errno, EAGAIN);
	pipe_pool_put(&pp, q, true);
	pipe_pool_destroy(&pp);
}

static void test_pool_cap(void)
{
	struct pipe_pool pp = {0};
	int p[3][2], kept[3][2];

	T_EQ_INT(pipe_pool_init(&pp, 2, 0), 0);
	for (int i = 0; i < 3; i++) {
		T_EQ_INT(pipe_pool_get(&pp, p[i]), 0);
		kept[i][0] = p[i][0];
		kept[i][1] = p[i][1];
	}
	T_EQ_INT(pp.in_use, 3);
	for (int i = 0; i < 3; i++)
		pipe_pool_put(&pp, p[i], true);
	T_EQ_INT(pp.in_use, 0);
	T_EQ_INT(pp.n_free, 2);
	/* the first two were kept, the third closed (over the cap) */
	T_ASSERT(fd_is_open(kept[0][0]) && fd_is_open(kept[1][0]));
	T_ASSERT(!fd_is_open(kept[2][0]) && !fd_is_open(kept[2][1]));
	for (int i = 0; i < 3; i++)
		T_EQ_INT(pipe_pool_get(&pp, p[i]), 0);
	T_EQ_INT(pp.created, 4);
	for (int i = 0; i < 3; i++)
		pipe_pool_put(&pp, p[i], true);
	pipe_pool_destroy(&pp);
	T_ASSERT(!fd_is_open(kept[0][0]) && !fd_is_open(kept[1][0]));

	/* a cap of 0 keeps nothing */
	T_EQ_INT(pipe_pool_init(&pp, 0, 0), 0);
	T_EQ_INT(pipe_pool_get(&pp, p[0]), 0);
	kept[0][0] = p[0][0];
	pipe_pool_put(&pp, p[0], true);
	T_EQ_INT(pp.n_free, 0);
	T_ASSERT(!fd_is_open(kept[0][0]));
	pipe_pool_destroy(&pp);
}

static void test_pool_pipe_size(void)
{
	struct pipe_pool pp = {0};
	int p[2];

	T_EQ_INT(pipe_pool_init(&pp, 1, MIB), 0);
	T_EQ_INT(pipe_pool_get(&pp, p), 0);
	T_EQ_INT(fcntl(p[0], F_GETPIPE_SZ), MIB);
	T_EQ_INT(pp.pipe_size, MIB);
	pipe_pool_put(&pp, p, true);
	pipe_pool_destroy(&pp);

	/* 0: the kernel default (16 pages) */
	T_EQ_INT(pipe_pool_init(&pp, 1, 0), 0);
	T_EQ_INT(pipe_pool_get(&pp, p), 0);
	T_EQ_INT(fcntl(p[0], F_GETPIPE_SZ), 16 * sysconf(_SC_PAGESIZE));
	pipe_pool_put(&pp, p, true);
	pipe_pool_destroy(&pp);
}

/*
 * An unprivileged user past pipe-user-pages-soft (64 MiB by default) gets
 * EPERM from F_SETPIPE_SZ, and its new pipes keep a small size: the pool
 * must then say the size they have, or the pump takes every short splice
 * for a drained socket (review L16). Run as nobody in a child, since the
 * suite runs as root, whom the limit does not bind.
 */
static void test_pool_pipe_size_denied(void)
{
	pid_t pid;
	int status = 0;

	if (getuid() != 0) {
		printf("SKIP: splice/test_pool_pipe_size_denied (needs root to become nobody)\n");
		return;
	}
	pid = fork();
	if (pid == 0) {
		struct pipe_pool pp = {0};
		int p[96][2], n = 0, actual;

		if (setgid(65534) || setuid(65534) || pipe_pool_init(&pp, 0, MIB))
			_exit(2);
		while (n < 96 && pipe_pool_get(&pp, p[n]) == 0)
			n++;
		actual = n ? fcntl(p[n - 1][0], F_GETPIPE_SZ) : -1;
		/* 3: the limit never hit (more than 96 MiB allowed); 0: the pool followed the kernel */
		if (actual == MIB)
			_exit(3);
		_exit(pp.pipe_size == (unsigned)actual ? 0 : 1);
	}
	T_ASSERT(pid > 0);
	waitpid(pid, &status, 0);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 3) {
		printf("SKIP: splice/test_pool_pipe_size_denied (pipe-user-pages-soft allows 96 MiB)\n");
		return;
	}
	T_ASSERT(WIFEXITED(status));
	T_EQ_INT(WEXITSTATUS(status), 0);
}

/* pipe_pool_init() must set every counter: a pool on the stack or reused after destroy. */
static void test_pool_init_counters(void)
{
	struct pipe_pool pp;

	memset(&pp, 0xa5, sizeof(pp));
	T_EQ_INT(pipe_pool_init(&pp, 2, 0), 0);
	T_EQ_INT(pp.n_free, 0);
	T_EQ_INT(pp.in_use, 0);
	T_EQ_INT(pp.created, 0);
	T_EQ_INT(pp.copy_fallbacks, 0);
	pipe_pool_destroy(&pp);
}

/* --- the pump --- */

static void test_pump_sizes_default_pipe(void)
{
	static const size_t sizes[] = {0,
	                               1,
	                               4095,
	                               DEFAULT_CAP - 1,
	                               DEFAULT_CAP,
	                               DEFAULT_CAP + 1,
	                               2 * DEFAULT_CAP,
	                               2 * DEFAULT_CAP + 1};

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		transfer(0, sizes[i], 1000 + i);
}

static void test_pump_sizes_big_pipe(void)
{
	static const size_t sizes[] = {MIB - 1, MIB, MIB + 1, 3 * MIB + 7};

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		transfer(MIB, sizes[i], 2000 + i);
	/* a pipe smaller than one TCP segment's pages still moves everything */
	transfer(4096, 256 << 10, 2100);
}

static void test_pump_multi_mb(void)
{
	transfer(MIB, 24 * (size_t)MIB + 12345, 3000);
	transfer(0, 8 * (size_t)MIB + 1, 3001);
}

/* EOF on the source: DONE, dst shut for writing, while both reverse directions still work. */
static void test_pump_eof_half_close(void)
{
	struct pipe_pool pp = {0};
	struct pump_dir d;
	struct legs lg;
	struct xfer x;
	uint8_t *src = pattern(1000, 4000), dst[1000], b[16];
	struct pollfd pf;
	int err = 0;

	T_EQ_INT(pipe_pool_init(&pp, 4, 0), 0);
	pump_dir_init(&d);
	T_EQ_INT(legs_open(&lg, NULL), 0);
	xfer_init(&x, src, dst, sizeof(dst));
	T_ASSERT(run(&pp, &d, &lg, &x, NULL));
	T_EQ_INT(x.next, PUMP_DONE);
	T_ASSERT(x.d_eof);
	T_EQ_INT(x.recvd, sizeof(dst));
	T_EQ_MEM(src, dst, sizeof(dst));
	T_ASSERT(d.done);
	/* d read EOF, but can still send to c (the target's reply direction) */
	T_EQ_INT(send(lg.d, "pong", 4, MSG_NOSIGNAL), 4);
	pf = (struct pollfd){.fd = lg.c, .events = POLLIN};
	T_EQ_INT(poll(&pf, 1, 2000), 1);
	T_EQ_INT(recv(lg.c, b, sizeof(b), 0), 4);
	T_EQ_MEM(b, "pong", 4);
	/* and the client leg's other direction (b → a) is untouched */
	T_EQ_INT(send(lg.b, "ping", 4, MSG_NOSIGNAL), 4);
	pf = (struct pollfd){.fd = lg.a, .events = POLLIN};
	T_EQ_INT(poll(&pf, 1, 2000), 1);
	T_EQ_INT(recv(lg.a, b, sizeof(b), 0), 4);
	T_EQ_MEM(b, "ping", 4);
	/* a second call after DONE does not move or invent bytes */
	enum pump_next n = splice_pump(&pp, &bp, &d, lg.b, lg.c, false, &err);
	T_ASSERT(n == PUMP_DONE || n == PUMP_WAIT_SRC);
	T_EQ_INT(d.bytes, sizeof(dst));
	splice_dir_release(&pp, &bp, &d);
	legs_close(&lg);
	pipe_pool_destroy(&pp);
	free(src);
}

/* Waits until fd reports one of `ev`; false after 5 s. */
static bool wait_ev(int fd, short ev)
{
	struct pollfd pf = {.fd = fd, .events = ev};
	return poll(&pf, 1, 5000) == 1;
}

static bool pump_done(const struct xfer *x)
{
	return x->next == PUMP_DONE;
}

/*
 * `last` (the other direction already ended): EOF is reported as DONE with
 * every byte forwarded, but dst is not shut down, because the caller closes
 * it next and close(2) sends the FIN.
 */
static void test_pump_eof_last_no_shutdown(void)
{
	struct pipe_pool pp = {0};
	struct pump_dir d;
	struct legs lg;
	struct xfer x;
	uint8_t *src = pattern(3000, 4100), dst[3000];
	struct pollfd pf;

	T_EQ_INT(pipe_pool_init(&pp, 4, 0), 0);
	pump_dir_init(&d);
	T_EQ_INT(legs_open(&lg, NULL), 0);
	xfer_init(&x, src, dst, sizeof(dst));
	x.last = true;
	T_ASSERT(run(&pp, &d, &lg, &x, pump_done));
	T_EQ_INT(x.next, PUMP_DONE);
	T_ASSERT(d.done && d.eof);
	T_EQ_INT(d.bytes, sizeof(dst));
	/* every byte arrives, but no EOF while c is open */
	while (x.recvd < sizeof(dst)) {
		pf = (struct pollfd){.fd = lg.d, .events = POLLIN};
		T_ASSERT(poll(&pf, 1, 2000) == 1);
		T_ASSERT(drain_d(&x, lg.d));
		if (x.d_eof)
			break;
	}
	T_EQ_INT(x.recvd, sizeof(dst));
	T_ASSERT(!x.d_eof);
	pf = (struct pollfd){.fd = lg.d, .events = POLLIN};
	T_EQ_INT(poll(&pf, 1, 200), 0);
	/* the caller's close(2) is what ends the stream */
	close(lg.c);
	lg.c = -1;
	T_ASSERT(wait_ev(lg.d, POLLIN));
	T_ASSERT(drain_d(&x, lg.d));
	T_ASSERT(x.d_eof);
	T_EQ_MEM(src, dst, sizeof(dst));
	splice_dir_release(&pp, &bp, &d);
	legs_close(&lg);
	pipe_pool_destroy(&pp);
	free(src);
}

/* Aborts the a end with an RST (SO_LINGER 0) after sending `pre` bytes. */
static void reset_a(struct legs *lg, size_t pre)
{
	struct linger lin = {.l_onoff = 1, .l_linger = 0};
	uint8_t *p = pattern(pre, 5000);

	if (pre)
		T_EQ_INT(send(lg->a, p, pre, MSG_NOSIGNAL), pre);
	free(p);
	T_EQ_INT(setsockopt(lg->a, SOL_SOCKET, SO_LINGER, &lin, sizeof(lin)), 0);
	close(lg->a);
	lg->a = -1;
}

/* Pumps on readiness until it says DONE or ERROR (bounded). */
static enum pump_next pump_until_end(struct pipe_pool *pp, struct pump_dir *d, struct legs *lg,
                                     int *err)
{
	enum pump_next n = PUMP_WAIT_SRC;

	for (int i = 0; i < 1000 && (n == PUMP_WAIT_SRC || n == PUMP_WAIT_DST); i++) {
		if (!wait_ev(n == PUMP_WAIT_SRC ? lg->b : lg->c,
		             n == PUMP_WAIT_SRC ? POLLIN : POLLOUT))
			break;
		n = splice_pump(pp, &bp, d, lg->b, lg->c, false, err);
	}
	return n;
}

static void test_pump_reset_source(void)
{
	static const size_t pre[] = {0, 3000};

	for (size_t i = 0; i < sizeof(pre) / sizeof(pre[0]); i++) {
		struct pipe_pool pp = {0};
		struct pump_dir d;
		struct legs lg;
		int err = 0;

		T_EQ_INT(pipe_pool_init(&pp, 4, 0), 0);
		pump_dir_init(&d);
		T_EQ_INT(legs_open(&lg, NULL), 0);
		reset_a(&lg, pre[i]);
		T_ASSERT(wait_ev(lg.b, POLLIN));
		enum pump_next n = pump_until_end(&pp, &d, &lg, &err);
		if (n != PUMP_ERROR)
			printf("  pre %zu: next %d, %llu bytes moved\n", pre[i], n,
			       (unsigned long long)d.bytes);
		/* a reset is not an EOF: it must never be forwarded as a clean half-close */
		T_EQ_INT(n, PUMP_ERROR);
		T_EQ_INT(err, -ECONNRESET);
		T_ASSERT(!d.done);
		/* the pump did not shut the destination down: d has no EOF waiting */
		uint8_t b[8192];
		ssize_t r;
		while ((r = recv(lg.d, b, sizeof(b), 0)) > 0)
			;
		T_ASSERT(r < 0 && errno == EAGAIN);
		splice_dir_release(&pp, &bp, &d);
		T_EQ_INT(pp.in_use, 0);
		legs_close(&lg);
		pipe_pool_destroy(&pp);
	}
}

/* The destination resets: the pump reports an error instead of spinning or dropping silently. */
static void test_pump_reset_destination(void)
{
	struct pipe_pool pp = {0};
	struct pump_dir d;
	struct legs lg;
	struct linger lin = {.l_onoff = 1, .l_linger = 0};
	uint8_t *p = pattern(200000, 5100);
	size_t sent = 0;
	int err = 0;
	enum pump_next n = PUMP_WAIT_SRC;

	T_EQ_INT(pipe_pool_init(&pp, 4, 0), 0);
	pump_dir_init(&d);
	T_EQ_INT(legs_open(&lg, NULL), 0);
	T_EQ_INT(setsockopt(lg.d, SOL_SOCKET, SO_LINGER, &lin, sizeof(lin)), 0);
	close(lg.d);
	lg.d = -1;
	T_ASSERT(wait_ev(lg.c, POLLERR));
	for (int i = 0; i < 1000 && (n == PUMP_WAIT_SRC || n == PUMP_WAIT_DST); i++) {
		if (sent < 200000) {
			ssize_t w = send(lg.a, p + sent, 200000 - sent, MSG_NOSIGNAL);
			if (w > 0)
				sent += (size_t)w;
		}
		if (!wait_ev(n == PUMP_WAIT_SRC ? lg.b : lg.c,
		             n == PUMP_WAIT_SRC ? POLLIN : POLLOUT))
			break;
		n = splice_pump(&pp, &bp, &d, lg.b, lg.c, false, &err);
	}
	T_EQ_INT(n, PUMP_ERROR);
	T_ASSERT(err == -ECONNRESET || err == -EPIPE);
	splice_dir_release(&pp, &bp, &d);
	T_EQ_INT(pp.in_use, 0);
	T_EQ_INT(pp.n_free, 0); /* whatever was left in the pipe is not pooled */
	legs_close(&lg);
	pipe_pool_destroy(&pp);
	free(p);
}

static bool saw_wait_dst(const struct xfer *x)
{
	return x->next == PUMP_WAIT_DST;
}

/* A destination that does not read: WAIT_DST with bytes held in the pipe, then a clean resume. */
static void test_pump_full_destination(void)
{
	const size_t size = 2 * (size_t)MIB + 333;
	const struct bufs bf = {.c_snd = 16 << 10, .d_rcv = 16 << 10, .b_rcv = 4 * MIB};
	struct pipe_pool pp = {0};
	struct pump_dir d;
	struct legs lg;
	struct xfer x;
	uint8_t *src = pattern(size, 6000), *dst = malloc(size);
	int err = 0;

	T_EQ_INT(pipe_pool_init(&pp, 4, MIB), 0);
	pump_dir_init(&d);
	T_EQ_INT(legs_open(&lg, &bf), 0);
	xfer_init(&x, src, dst, size);
	x.read_d = false;
	T_ASSERT(run(&pp, &d, &lg, &x, saw_wait_dst));
	T_EQ_INT(x.next, PUMP_WAIT_DST);
	T_ASSERT(d.held > 0);
	T_ASSERT(d.pipe[0] >= 0);
	T_EQ_INT(pp.in_use, 1);
	/* the pipe really holds what the pump says it holds */
	int queued = -1;
	T_EQ_INT(ioctl(d.pipe[0], FIONREAD, &queued), 0);
	T_EQ_INT(queued, d.held);
	/* pumping again while the destination stays full keeps the bytes and the count in step */
	uint64_t bytes = d.bytes;
	T_EQ_INT(splice_pump(&pp, &bp, &d, lg.b, lg.c, false, &err), PUMP_WAIT_DST);
	T_ASSERT(d.bytes >= bytes);
	T_ASSERT(d.held > 0);
	T_EQ_INT(ioctl(d.pipe[0], FIONREAD, &queued), 0);
	T_EQ_INT(queued, d.held);
	T_ASSERT(d.bytes + d.held <= x.sent);
	/* now read: the rest arrives in order */
	x.read_d = true;
	T_ASSERT(run(&pp, &d, &lg, &x, NULL));
	T_EQ_INT(x.next, PUMP_DONE);
	T_EQ_INT(x.recvd, size);
	T_ASSERT(x.recvd == size && memcmp(src, dst, size) == 0);
	T_ASSERT(x.wait_dst > 0);
	T_EQ_INT(d.pipe[0], -1);
	T_EQ_INT(pp.in_use, 0);
	splice_dir_release(&pp, &bp, &d);
	legs_close(&lg);
	pipe_pool_destroy(&pp);
	free(src);
	free(dst);
}

/* A direction with far more than the budget queued returns before moving it all. */
static void test_pump_budget(void)
{
	const size_t size = 12 * (size_t)MIB;
	const struct bufs bf = {
	        .a_snd = 64 * MIB, .b_rcv = 64 * MIB, .c_snd = 64 * MIB, .d_rcv = 64 * MIB};
	struct pipe_pool pp = {0};
	struct pump_dir d;
	struct legs lg;
	struct xfer x;
	uint8_t *src = pattern(size, 7000), *dst = malloc(size);
	size_t queued = 0;
	int err = 0;

	T_EQ_INT(pipe_pool_init(&pp, 4, MIB), 0);
	pump_dir_init(&d);
	T_EQ_INT(legs_open(&lg, &bf), 0);
	/* queue everything before the first pump (the buffers above hold it) */
	for (int i = 0; i < 10000 && queued < size; i++) {
		ssize_t n = send(lg.a, src + queued, size - queued, MSG_NOSIGNAL);
		if (n > 0)
			queued += (size_t)n;
		else if (!wait_ev(lg.a, POLLOUT))
			break;
	}
	T_EQ_INT(queued, size);
	shutdown(lg.a, SHUT_WR);
	T_ASSERT(wait_ev(lg.b, POLLIN));
	enum pump_next n = splice_pump(&pp, &bp, &d, lg.b, lg.c, false, &err);
	/* yielded: not everything, and at most one pipe-full past the budget */
	T_ASSERT(n == PUMP_WAIT_SRC || n == PUMP_WAIT_DST);
	T_ASSERT(d.bytes < size);
	T_ASSERT(d.bytes > 0);
	T_ASSERT(d.bytes <= (uint64_t)BUDGET + MIB);
	printf("  first call moved %llu of %zu bytes\n", (unsigned long long)d.bytes, size);
	/* the rest, driven by polls, byte-exact */
	xfer_init(&x, src, dst, size);
	x.sent = size;
	x.next = n;
	T_ASSERT(run(&pp, &d, &lg, &x, NULL));
	T_EQ_INT(x.next, PUMP_DONE);
	T_EQ_INT(x.recvd, size);
	T_ASSERT(x.recvd == size && memcmp(src, dst, size) == 0);
	/* 12 MiB at <= 5 MiB per call: at least three calls */
	T_ASSERT(x.pumps + 1 >= 3);
	splice_dir_release(&pp, &bp, &d);
	legs_close(&lg);
	pipe_pool_destroy(&pp);
	free(src);
	free(dst);
}

/*
 * Exhausts the descriptor table: RLIMIT_NOFILE lowered to just above the
 * highest descriptor, the holes below it filled with dup(). Undone by
 * fd_restore().
 */
struct fd_fill {
	struct rlimit old;
	int fds[MAX_FILL];
	int n;
};

static int fd_exhaust(struct fd_fill *f, int highest)
{
	struct rlimit lim;

	f->n = 0;
	if (getrlimit(RLIMIT_NOFILE, &f->old) < 0)
		return -errno;
	lim = f->old;
	lim.rlim_cur = (rlim_t)highest + 8;
	if (setrlimit(RLIMIT_NOFILE, &lim) < 0)
		return -errno;
	while (f->n < MAX_FILL) {
		int fd = dup(0);
		if (fd < 0)
			break;
		f->fds[f->n++] = fd;
	}
	return f->n < MAX_FILL ? 0 : -ENOSPC;
}

static void fd_restore(struct fd_fill *f)
{
	while (f->n > 0)
		close(f->fds[--f->n]);
	setrlimit(RLIMIT_NOFILE, &f->old);
}

static int highest_fd(const struct legs *lg)
{
	int h = lg->a;
	h = lg->b > h ? lg->b : h;
	h = lg->c > h ? lg->c : h;
	return lg->d > h ? lg->d : h;
}

/*
 * A pool, a direction and two connected legs with every spare descriptor
 * taken, so that pipe_pool_get() meets EMFILE until fd_restore(e->fill).
 */
struct emfile {
	struct pipe_pool pp;
	struct pump_dir d;
	struct legs lg;
	struct fd_fill *fill;
};

static void emfile_open(struct emfile *e, unsigned pipe_size, const struct bufs *bf)
{
	memset(e, 0, sizeof(*e));
	e->fill = calloc(1, sizeof(*e->fill));
	T_ASSERT(e->fill != NULL);
	T_EQ_INT(pipe_pool_init(&e->pp, 4, pipe_size), 0);
	pump_dir_init(&e->d);
	T_EQ_INT(legs_open(&e->lg, bf), 0);
	T_EQ_INT(fd_exhaust(e->fill, highest_fd(&e->lg)), 0);
}

static void emfile_close(struct emfile *e)
{
	splice_dir_release(&e->pp, &bp, &e->d);
	legs_close(&e->lg);
	pipe_pool_destroy(&e->pp);
	free(e->fill);
}

/* No pipe to be had (EMFILE): the bytes still move, through the copy buffer; pipes come back. */
static void test_pump_copy_fallback(void)
{
	const size_t size = 3 * (size_t)MIB + 99;
	struct emfile e;
	struct xfer x;
	uint8_t *src = pattern(size, 8000), *dst = malloc(size);
	int p[2];

	emfile_open(&e, MIB, NULL);
	T_EQ_INT(pipe_pool_get(&e.pp, p), -EMFILE);
	T_EQ_INT(e.pp.in_use, 0);

	/* phase 1: the first 1 MiB with no descriptor to spare */
	xfer_init(&x, src, dst, MIB);
	x.shut_a = false;
	T_ASSERT(run(&e.pp, &e.d, &e.lg, &x, all_received));
	T_EQ_INT(x.recvd, MIB);
	T_ASSERT(memcmp(src, dst, MIB) == 0);
	/* every byte went through the copy buffer: not one pipe was made */
	T_ASSERT(e.pp.copy_fallbacks >= 1);
	T_EQ_INT(e.pp.created, 0);
	T_EQ_INT(e.d.bytes, MIB);
	T_EQ_INT(e.d.held, 0);
	T_ASSERT(e.d.buf == NULL); /* drained: the next call may try for a pipe again */

	/* descriptors again: the next pump takes a pipe */
	fd_restore(e.fill);
	unsigned long fallbacks = e.pp.copy_fallbacks;
	x.size = size;
	x.shut_a = true;
	T_ASSERT(run(&e.pp, &e.d, &e.lg, &x, NULL));
	T_EQ_INT(x.next, PUMP_DONE);
	T_EQ_INT(x.recvd, size);
	T_ASSERT(x.recvd == size && memcmp(src, dst, size) == 0);
	/* no copy any more: pipes again */
	T_EQ_INT(e.pp.copy_fallbacks, fallbacks);
	T_ASSERT(e.pp.created >= 1);
	T_ASSERT(e.d.done);
	T_ASSERT(e.d.buf == NULL);
	emfile_close(&e);
	free(src);
	free(dst);
}

/*
 * Copy mode meets a full destination (bytes held in the copy buffer), the
 * descriptors come back meanwhile: the held bytes go first and nothing is
 * reordered when the direction goes back to pipes.
 */
static void test_pump_copy_fallback_dst_full(void)
{
	const size_t size = 2 * (size_t)MIB + 5;
	const struct bufs bf = {.c_snd = 16 << 10, .d_rcv = 16 << 10};
	struct emfile e;
	struct xfer x;
	uint8_t *src = pattern(size, 9000), *dst = malloc(size);

	emfile_open(&e, 0, &bf);
	xfer_init(&x, src, dst, size);
	x.read_d = false;
	T_ASSERT(run(&e.pp, &e.d, &e.lg, &x, saw_wait_dst));
	T_EQ_INT(x.next, PUMP_WAIT_DST);
	T_ASSERT(e.d.buf != NULL);
	T_ASSERT(e.d.held > 0);
	T_EQ_INT(e.d.pipe[0], -1);
	T_ASSERT(e.pp.copy_fallbacks >= 1);
	T_EQ_INT(e.pp.created, 0);
	fd_restore(e.fill);
	unsigned long fallbacks = e.pp.copy_fallbacks;
	x.read_d = true;
	T_ASSERT(run(&e.pp, &e.d, &e.lg, &x, NULL));
	T_EQ_INT(x.next, PUMP_DONE);
	T_ASSERT(x.d_eof);
	T_EQ_INT(x.recvd, size);
	T_ASSERT(x.recvd == size && memcmp(src, dst, size) == 0);
	T_EQ_INT(e.d.bytes, size);
	T_EQ_INT(e.pp.copy_fallbacks, fallbacks);
	splice_dir_release(&e.pp, &bp, &e.d);
	T_EQ_INT(e.pp.in_use, 0);
	emfile_close(&e);
	free(src);
	free(dst);
}

static bool all_sent_and_dst_full(const struct xfer *x)
{
	return x->next == PUMP_WAIT_DST && x->sent == x->size;
}

/*
 * "It tries for a pipe again once the buffer is empty" (splice.c): with the
 * whole stream already queued on the source, descriptors back and the held
 * bytes sent, the rest should go through a pipe, not 16 KiB copies.
 */
static void test_pump_copy_fallback_backlog(void)
{
	const size_t size = 2 * (size_t)MIB;
	const struct bufs bf = {
	        .a_snd = 8 * MIB, .b_rcv = 8 * MIB, .c_snd = 16 << 10, .d_rcv = 16 << 10};
	struct emfile e;
	struct xfer x;
	uint8_t *src = pattern(size, 9050), *dst = malloc(size);

	emfile_open(&e, 0, &bf);
	xfer_init(&x, src, dst, size);
	x.read_d = false;
	T_ASSERT(run(&e.pp, &e.d, &e.lg, &x, all_sent_and_dst_full));
	T_EQ_INT(x.sent, size);
	T_EQ_INT(x.next, PUMP_WAIT_DST);
	T_ASSERT(e.d.buf != NULL && e.d.held > 0);
	T_EQ_INT(e.pp.created, 0);
	fd_restore(e.fill);
	uint64_t held = e.d.bytes + e.d.held;
	x.read_d = true;
	T_ASSERT(run(&e.pp, &e.d, &e.lg, &x, NULL));
	T_EQ_INT(x.next, PUMP_DONE);
	T_EQ_INT(x.recvd, size);
	T_ASSERT(x.recvd == size && memcmp(src, dst, size) == 0);
	if (e.pp.created == 0 || x.copied > held)
		T_FAILF("descriptors back after %llu bytes, but %llu of %zu went through the copy "
		        "buffer (pipes made: %lu)",
		        (unsigned long long)held, (unsigned long long)x.copied, size, e.pp.created);
	emfile_close(&e);
	free(src);
	free(dst);
}

/* max_in_use caps the pipes held at once (pipe-memory); a pipe given back frees its place. */
static void test_pool_budget(void)
{
	struct pipe_pool pp;
	int a[2], b[2];

	T_EQ_INT(pipe_pool_init(&pp, 4, 0), 0);
	pp.max_in_use = 1;
	T_EQ_INT(pipe_pool_get(&pp, a), 0);
	T_EQ_INT(pipe_pool_get(&pp, b), -ENOBUFS);
	pipe_pool_put(&pp, a, true);
	T_EQ_INT(pipe_pool_get(&pp, b), 0);
	pipe_pool_put(&pp, b, true);
	pipe_pool_destroy(&pp);
}

/*
 * Past pipe-memory a direction copies through one pooled buffer instead: a
 * stalled reader then pins 32 KiB, not a pipe (review M3). Every byte
 * still arrives, and the direction tries for a pipe again later.
 */
static void test_pump_over_budget(void)
{
	const size_t size = 3 * (size_t)MIB + 7;
	struct pipe_pool pp;
	struct pump_dir d;
	struct legs lg;
	struct xfer x;
	uint8_t *src = pattern(size, 4242), *dst = malloc(size);
	int other[2];

	T_EQ_INT(pipe_pool_init(&pp, 4, 0), 0);
	pp.max_in_use = 1;
	T_EQ_INT(pipe_pool_get(&pp, other), 0); /* the one pipe another direction holds */
	pump_dir_init(&d);
	T_EQ_INT(legs_open(&lg, NULL), 0);
	xfer_init(&x, src, dst, size);
	T_ASSERT(run(&pp, &d, &lg, &x, NULL));
	T_EQ_INT(x.next, PUMP_DONE);
	T_EQ_INT(x.recvd, size);
	T_ASSERT(x.recvd == size && memcmp(src, dst, size) == 0);
	T_ASSERT(pp.copy_fallbacks >= 1);
	T_EQ_INT(pp.over_budget, pp.copy_fallbacks);
	T_EQ_INT(pp.created, 1); /* no second pipe was ever made */
	T_ASSERT(d.buf == NULL);
	splice_dir_release(&pp, &bp, &d);
	pipe_pool_put(&pp, other, true);
	legs_close(&lg);
	pipe_pool_destroy(&pp);
	free(src);
	free(dst);
}

/* EOF while in copy mode: DONE and a half-close, exactly as with a pipe. */
static void test_pump_copy_fallback_eof(void)
{
	struct emfile e;
	struct xfer x;
	uint8_t *src = pattern(100000, 9100), dst[100000];

	emfile_open(&e, 0, NULL);
	xfer_init(&x, src, dst, sizeof(dst));
	T_ASSERT(run(&e.pp, &e.d, &e.lg, &x, NULL));
	fd_restore(e.fill);
	T_EQ_INT(x.next, PUMP_DONE);
	T_ASSERT(x.d_eof);
	T_EQ_INT(x.recvd, sizeof(dst));
	T_EQ_MEM(src, dst, sizeof(dst));
	T_ASSERT(e.d.done);
	T_ASSERT(e.d.buf == NULL);
	T_EQ_INT(e.pp.created, 0);
	emfile_close(&e);
	free(src);
}

/* Releasing a direction whose pipe still holds bytes closes that pipe. */
static void test_release_nonempty(void)
{
	const struct bufs bf = {.c_snd = 16 << 10, .d_rcv = 16 << 10};
	struct pipe_pool pp = {0};
	struct pump_dir d;
	struct legs lg;
	struct xfer x;
	uint8_t *src = pattern(MIB, 9200), *dst = malloc(MIB);
	int r, w;

	T_EQ_INT(pipe_pool_init(&pp, 4, 0), 0);
	pump_dir_init(&d);
	T_EQ_INT(legs_open(&lg, &bf), 0);
	xfer_init(&x, src, dst, MIB);
	x.read_d = false;
	T_ASSERT(run(&pp, &d, &lg, &x, saw_wait_dst));
	T_ASSERT(d.held > 0);
	r = d.pipe[0];
	w = d.pipe[1];
	splice_dir_release(&pp, &bp, &d);
	T_EQ_INT(pp.n_free, 0);
	T_EQ_INT(pp.in_use, 0);
	T_EQ_INT(d.held, 0);
	T_EQ_INT(d.pipe[0], -1);
	T_ASSERT(!fd_is_open(r) && !fd_is_open(w));
	legs_close(&lg);
	pipe_pool_destroy(&pp);
	free(src);
	free(dst);
}

int main(void)
{
	/* as spliced does: a peer gone mid-write is an error return, not a signal */
	signal(SIGPIPE, SIG_IGN);
	if (buf_pool_init(&bp, 4) < 0)
		return 1;
	T_RUN(test_pool_reuse);
	T_RUN(test_pool_nonempty_closed);
	T_RUN(test_pool_cap);
	T_RUN(test_pool_pipe_size);
	T_RUN(test_pool_pipe_size_denied);
	T_RUN(test_pool_init_counters);
	T_RUN(test_pool_budget);
	T_RUN(test_pump_over_budget);
	T_RUN(test_pump_sizes_default_pipe);
	T_RUN(test_pump_sizes_big_pipe);
	T_RUN(test_pump_multi_mb);
	T_RUN(test_pump_eof_half_close);
	T_RUN(test_pump_eof_last_no_shutdown);
	T_RUN(test_pump_reset_source);
	T_RUN(test_pump_reset_destination);
	T_RUN(test_pump_full_destination);
	T_RUN(test_pump_budget);
	T_RUN(test_pump_copy_fallback);
	T_RUN(test_pump_copy_fallback_dst_full);
	T_RUN(test_pump_copy_fallback_backlog);
	T_RUN(test_pump_copy_fallback_eof);
	T_RUN(test_release_nonempty);
	return t_finish();
}
