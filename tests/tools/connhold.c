/* SPDX-License-Identifier: MIT */
/* connhold: opens, holds, exercises and verifies many concurrent TCP connections (direct or through a SOCKS5 proxy), and is their echo server. */

/*
 * Usage:
 *   connhold serve [-q] ADDR:PORT...
 *       Echo server (one thread, epoll). Every byte read is written back; EOF
 *       from the peer is answered with shutdown(SHUT_WR) once all is echoed.
 *   connhold [-s PROXY] -t TARGET [-t TARGET...] [-w MS] [-c N] run -n N -b BYTES [-r RATE] [-H 0|1]
 *       Opens N connections (all of them before any data moves, so they are
 *       concurrent), then each sends BYTES of its own pseudo-random stream,
 *       half-closes, and checks that exactly the same bytes come back followed
 *       by EOF. Prints "run ok K fail M bytes B secs S MBps X"; exit 0 iff M == 0.
 *   connhold [-s PROXY] -t TARGET... [-w MS] [-c N] hold
 *       Reads commands from stdin, one per line, answers one line each:
 *         open N      open N more connections   → "opened K failed M [reasons]"
 *         ping        one byte echoed on each   → "ping ok K bad M [reasons]"
 *         check       peer-closed or not        → "check alive K dead M"
 *         close N     close the N oldest        → "closed K left L"
 *         count                                  → "count L"
 *         quit        close all and exit
 *       Connections found dead by ping/check are dropped from the set.
 *
 *   -s HOST:PORT  SOCKS5 proxy (no auth, CONNECT to the target's address);
 *                 without -s connections go straight to the target (forward).
 *   -t HOST:PORT  target; connection i uses target i mod count (spreads the
 *                 4-tuples over several 127.0.0.x addresses).
 *   -w MS         deadline for one command or for the whole run (default 10000 / 120000).
 *   -c N          connects in flight at once (default 256).
 *   -r RATE       per-connection send rate in bytes/s (run; suffixes K M G).
 *   -H 0          run: do not half-close; a connection is done once all bytes
 *                 are back (for proxies that drop a half-closed connection,
 *                 e.g. microsocks). Default -H 1: half-close, expect EOF.
 * IPv4 and [IPv6] literals only. Raises its own RLIMIT_NOFILE soft limit to the hard one.
 */

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "toolkit.h"

enum {
	CHUNK = 64 * 1024,    /* one send/recv */
	ECHO_BUF = 16 * 1024, /* per echo connection, allocated only while bytes wait */
	MAX_TARGETS = 64,
	MAX_REASONS = 8,    /* distinct failure reasons listed per answer */
	DEF_INFLIGHT = 256, /* below the proxy's listen backlog (somaxconn 4096) */
	DEF_CMD_MS = 10000,
	DEF_RUN_MS = 120000,
	EPOLL_BATCH = 512,
	/* Give up when nothing at all progresses for this long, so a wedged proxy
	 * fails a test in seconds instead of at the whole run's deadline. */
	STALL_MS = 15000,
};

enum state {
	ST_IDLE,       /* not yet started */
	ST_CONNECTING, /* non-blocking connect in progress */
	ST_METHOD,     /* greeting sent, want 2 bytes */
	ST_REPLY,      /* request sent, want the reply */
	ST_OPEN,       /* handshake done (or direct), no operation pending */
	ST_XFER,       /* run: data moving */
	ST_PING,       /* ping byte sent, want it back */
	ST_DONE,
	ST_FAILED,
};

struct conn {
	int fd;
	enum state st;
	uint32_t id;
	uint32_t pings;
	unsigned char hs[32]; /* handshake bytes received */
	size_t hs_len, hs_want;
	uint64_t tx, rx;
	bool tx_shut;
	const char *err;
};

static struct tk_endpoint proxy, targets[MAX_TARGETS];
static int ntargets, use_proxy, no_half_close, epfd = -1;
static int inflight_max = DEF_INFLIGHT;
static long deadline_ms = -1;
static struct conn *conns;
static size_t nconns, capconns;
static unsigned char scratch[CHUNK], expect[CHUNK];

static uint64_t parse_size(const char *s)
{
	char *end;
	double v = strtod(s, &end);
	switch (*end) {
	case 'k':
	case 'K':
		v *= 1024;
		break;
	case 'm':
	case 'M':
		v *= 1024 * 1024;
		break;
	case 'g':
	case 'G':
		v *= 1024.0 * 1024 * 1024;
		break;
	}
	return (uint64_t)v;
}

static void raise_nofile(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/* splitmix64: a cheap, well-mixed function of (connection, 8-byte block). */
static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/* The stream of connection id: byte at offset off. Fills n bytes. */
static void pattern(uint32_t id, uint64_t off, unsigned char *out, size_t n)
{
	uint64_t seed = (uint64_t)id << 40;
	size_t i = 0;
	while (i < n) {
		uint64_t blk = (off + i) >> 3;
		uint64_t w = mix(seed ^ blk);
		unsigned sh = (unsigned)((off + i) & 7);
		for (; sh < 8 && i < n; sh++, i++)
			out[i] = (unsigned char)(w >> (sh * 8));
	}
}

/* ---- echo server ---- */

struct echo {
	unsigned char *buf;
	size_t len, off;
	uint32_t events; /* the epoll mask registered now */
	bool listener, rd_eof, drained;
};

static void echo_close(struct echo *e, int fd)
{
	free(e->buf);
	memset(e, 0, sizeof(*e));
	close(fd);
}

/* Nothing left to read for now: give the buffer back so idle conns cost nothing. */
static void echo_idle(struct echo *e)
{
	e->drained = false;
	free(e->buf);
	e->buf = NULL;
}

/* Move bytes for one echo connection; returns false when it was closed. */
static bool echo_step(struct echo *e, int fd)
{
	for (;;) {
		if (e->len > e->off) {
			ssize_t w = send(fd, e->buf + e->off, e->len - e->off, MSG_NOSIGNAL);
			if (w < 0 && errno == EAGAIN)
				break;
			if (w < 0) {
				echo_close(e, fd);
				return false;
			}
			e->off += w;
			continue;
		}
		e->len = e->off = 0;
		if (e->drained) {
			/*
			 * The last read came up short, so the queue was empty:
			 * epoll is level-triggered, so wait for it rather than
			 * pay for a read that would say EAGAIN.
			 */
			echo_idle(e);
			break;
		}
		if (e->rd_eof) {
			shutdown(fd, SHUT_WR);
			echo_close(e, fd);
			return false;
		}
		if (!e->buf && !(e->buf = malloc(ECHO_BUF))) {
			echo_close(e, fd);
			return false;
		}
		ssize_t r = recv(fd, e->buf, ECHO_BUF, 0);
		if (r < 0 && errno == EAGAIN) {
			echo_idle(e);
			break;
		}
		if (r <= 0) {
			if (r == 0) {
				e->rd_eof = true;
				continue;
			}
			echo_close(e, fd);
			return false;
		}
		e->len = r;
		e->drained = r < ECHO_BUF;
	}
	struct epoll_event ev = {.events = e->len > e->off ? EPOLLOUT : EPOLLIN, .data.fd = fd};
	if (ev.events != e->events && !epoll_ctl(epfd, EPOLL_CTL_MOD, fd, &ev))
		e->events = ev.events;
	return true;
}

static int serve(int argc, char **argv)
{
	bool quiet = false;
	struct rlimit rl;
	getrlimit(RLIMIT_NOFILE, &rl);
	size_t maxfd = rl.rlim_cur + 16;
	struct echo *tab = calloc(maxfd, sizeof(*tab));
	epfd = epoll_create1(EPOLL_CLOEXEC);
	if (!tab || epfd < 0)
		return 1;
	for (int i = 0; i < argc; i++) {
		struct tk_endpoint ep;
		if (!strcmp(argv[i], "-q")) {
			quiet = true;
			continue;
		}
		if (tk_parse_endpoint(argv[i], &ep, false)) {
			fprintf(stderr, "connhold: bad address %s\n", argv[i]);
			return 2;
		}
		int one = 1;
		int fd = socket(ep.ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (fd < 0 || bind(fd, (struct sockaddr *)&ep.ss, ep.len) || listen(fd, 4096)) {
			fprintf(stderr, "connhold: listen %s: %s\n", argv[i], strerror(errno));
			return 1;
		}
		tab[fd].listener = true;
		struct epoll_event ev = {.events = EPOLLIN, .data.fd = fd};
		epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev);
		if (!quiet)
			printf("listening %s\n", argv[i]);
	}
	fflush(stdout);
	struct epoll_event evs[EPOLL_BATCH];
	for (;;) {
		int n = epoll_wait(epfd, evs, EPOLL_BATCH, -1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return 1;
		for (int i = 0; i < n; i++) {
			int fd = evs[i].data.fd;
			if (!tab[fd].listener) {
				echo_step(&tab[fd], fd);
				continue;
			}
			for (;;) {
				int c = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
				if (c < 0)
					break; /* EAGAIN, or EMFILE: retried on the next event */
				if ((size_t)c >= maxfd) {
					close(c);
					continue;
				}
				memset(&tab[c], 0, sizeof(tab[c]));
				tab[c].events = EPOLLIN;
				struct epoll_event ev = {.events = EPOLLIN, .data.fd = c};
				epoll_ctl(epfd, EPOLL_CTL_ADD, c, &ev);
			}
		}
	}
}

/* ---- client side ---- */

static void fail(struct conn *c, const char *why)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	c->st = ST_FAILED;
	c->err = why;
}

static void want(struct conn *c, uint32_t events)
{
	struct epoll_event ev = {.events = events, .data.u64 = c - conns};
	if (epoll_ctl(epfd, EPOLL_CTL_MOD, c->fd, &ev) && errno == ENOENT)
		epoll_ctl(epfd, EPOLL_CTL_ADD, c->fd, &ev);
}

static int start_connect(struct conn *c)
{
	const struct tk_endpoint *dst = use_proxy ? &proxy : &targets[c->id % ntargets];
	c->fd = socket(dst->ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (c->fd < 0) {
		fail(c, errno == EMFILE ? "client-emfile" : "socket");
		return -1;
	}
	int one = 1;
	setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	c->st = ST_CONNECTING;
	struct epoll_event ev = {.events = EPOLLOUT, .data.u64 = c - conns};
	epoll_ctl(epfd, EPOLL_CTL_ADD, c->fd, &ev);
	if (connect(c->fd, (struct sockaddr *)&dst->ss, dst->len) && errno != EINPROGRESS) {
		fail(c, errno == ECONNREFUSED ? "refused" : "connect");
		return -1;
	}
	return 0;
}

static void send_all_small(struct conn *c, const void *p, size_t n)
{
	/* Handshake messages are tiny and the socket buffer is empty. */
	if (send(c->fd, p, n, MSG_NOSIGNAL) != (ssize_t)n)
		fail(c, errno == EPIPE || errno == ECONNRESET ? "reset" : "send");
}

static void socks_request(struct conn *c)
{
	unsigned char req[TK_SOCKS5_REQ_MAX];
	size_t n = tk_socks5_request(req, &targets[c->id % ntargets].ss);
	send_all_small(c, req, n);
	c->st = ST_REPLY;
	c->hs_len = 0;
	c->hs_want = TK_SOCKS5_REPLY_HEAD; /* up to the domain length byte */
}

/* Reads handshake bytes; returns true once hs_want bytes are in. */
static bool hs_read(struct conn *c)
{
	ssize_t r = recv(c->fd, c->hs + c->hs_len, c->hs_want - c->hs_len, 0);
	if (r < 0 && errno == EAGAIN)
		return false;
	if (r <= 0) {
		fail(c, r == 0 ? "eof" : "reset");
		return false;
	}
	c->hs_len += r;
	return c->hs_len == c->hs_want;
}

static void on_handshake(struct conn *c, uint32_t events)
{
	static char reason[MAX_REASONS][16];
	static unsigned next_reason;
	if (c->st == ST_CONNECTING) {
		int err = 0;
		socklen_t l = sizeof(err);
		getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &l);
		if (err) {
			fail(c, err == ECONNREFUSED ? "refused" : "connect");
			return;
		}
		if (!use_proxy) {
			c->st = ST_OPEN;
			want(c, 0);
			return;
		}
		static const unsigned char greet[3] = {5, 1, 0};
		send_all_small(c, greet, sizeof(greet));
		if (c->st == ST_FAILED)
			return;
		c->st = ST_METHOD;
		c->hs_len = 0;
		c->hs_want = 2;
		want(c, EPOLLIN);
		return;
	}
	if (!(events & (EPOLLIN | EPOLLERR | EPOLLHUP)) || !hs_read(c))
		return;
	if (c->st == ST_METHOD) {
		if (c->hs[0] != 5 || c->hs[1] != 0) {
			fail(c, c->hs[1] == 0xff ? "method-ff" : "bad-method");
			return;
		}
		socks_request(c);
		return;
	}
	/* ST_REPLY */
	if (c->hs[0] != 5 || c->hs[1] != 0) {
		char *r = reason[next_reason++ % MAX_REASONS];
		snprintf(r, sizeof(reason[0]), "rep-%02x", c->hs[1]);
		fail(c, r);
		return;
	}
	size_t total = tk_socks5_reply_len(c->hs);
	if (!total || total > sizeof(c->hs)) {
		fail(c, "bad-atyp");
		return;
	}
	if (c->hs_want < total) {
		c->hs_want = total;
		return;
	}
	c->st = ST_OPEN;
	want(c, 0);
}

struct tally {
	size_t ok, bad;
	const char *why[MAX_REASONS];
	size_t nwhy[MAX_REASONS];
};

static void tally_fail(struct tally *t, const char *why)
{
	t->bad++;
	for (int i = 0; i < MAX_REASONS; i++) {
		if (t->why[i] && !strcmp(t->why[i], why)) {
			t->nwhy[i]++;
			return;
		}
		if (!t->why[i]) {
			t->why[i] = why;
			t->nwhy[i] = 1;
			return;
		}
	}
}

static void tally_print(const char *what, const char *okw, const char *badw, struct tally *t)
{
	printf("%s%s%s %zu %s %zu", what, *okw ? " " : "", okw, t->ok, badw, t->bad);
	for (int i = 0; i < MAX_REASONS && t->why[i]; i++)
		printf(" %s=%zu", t->why[i], t->nwhy[i]);
	printf("\n");
	fflush(stdout);
}

static struct conn *add_conns(size_t n)
{
	if (nconns + n > capconns) {
		size_t cap = (nconns + n) * 2;
		struct conn *p = realloc(conns, cap * sizeof(*p));
		if (!p)
			return NULL;
		conns = p;
		capconns = cap;
	}
	static uint32_t next_id;
	for (size_t i = 0; i < n; i++) {
		struct conn *c = &conns[nconns + i];
		memset(c, 0, sizeof(*c));
		c->fd = -1;
		c->id = next_id++;
		c->st = ST_IDLE;
	}
	nconns += n;
	return &conns[nconns - n];
}

/* Drives conns[from, nconns) through connect + handshake; at most inflight_max at once. */
static void open_batch(size_t from, int64_t until)
{
	size_t next = from, pending = 0;
	int64_t progress = tk_now_ms();
	struct epoll_event evs[EPOLL_BATCH];
	for (;;) {
		while (next < nconns && pending < (size_t)inflight_max) {
			if (start_connect(&conns[next]) == 0)
				pending++;
			next++;
		}
		if (!pending && next == nconns)
			break;
		int64_t left = until - tk_now_ms();
		if (left <= 0 || tk_now_ms() - progress > STALL_MS)
			break;
		int n = epoll_wait(epfd, evs, EPOLL_BATCH, left > 100 ? 100 : (int)left);
		if (n > 0)
			progress = tk_now_ms();
		for (int i = 0; i < n; i++) {
			struct conn *c = &conns[evs[i].data.u64];
			if (c->st < ST_CONNECTING || c->st > ST_REPLY) {
				/* an held connection hung up: stop its level-triggered
				 * HUP from crowding out handshakes; ping/check see it */
				epoll_ctl(epfd, EPOLL_CTL_DEL, c->fd, NULL);
				continue;
			}
			on_handshake(c, evs[i].events);
			if (c->st == ST_OPEN || c->st == ST_FAILED)
				pending--;
		}
	}
	for (size_t i = from; i < nconns; i++)
		if (conns[i].st != ST_OPEN && conns[i].st != ST_FAILED)
			fail(&conns[i], conns[i].st == ST_IDLE ? "not-started" : "timeout");
}

/* Drops failed connections from the set, keeping order (oldest first). */
static void compact(void)
{
	size_t j = 0;
	for (size_t i = 0; i < nconns; i++) {
		if (conns[i].st == ST_FAILED)
			continue;
		conns[j] = conns[i];
		if (conns[j].fd >= 0)
			want(&conns[j], 0); /* re-key epoll data to the new slot */
		j++;
	}
	nconns = j;
}

static void cmd_open(size_t n, int64_t until)
{
	size_t from = nconns;
	if (!add_conns(n)) {
		printf("opened 0 failed %zu oom=%zu\n", n, n);
		return;
	}
	open_batch(from, until);
	struct tally t = {0};
	for (size_t i = from; i < nconns; i++) {
		if (conns[i].st == ST_OPEN)
			t.ok++;
		else
			tally_fail(&t, conns[i].err);
	}
	tally_print("opened", "", "failed", &t);
	compact();
}

static void cmd_ping(int64_t until)
{
	struct tally t = {0};
	size_t pending = 0;
	for (size_t i = 0; i < nconns; i++) {
		struct conn *c = &conns[i];
		unsigned char b;
		pattern(c->id, c->pings, &b, 1);
		if (send(c->fd, &b, 1, MSG_NOSIGNAL) != 1) {
			fail(c, "send");
			continue;
		}
		c->st = ST_PING;
		want(c, EPOLLIN);
		pending++;
	}
	struct epoll_event evs[EPOLL_BATCH];
	while (pending && tk_now_ms() < until) {
		int n = epoll_wait(epfd, evs, EPOLL_BATCH, 100);
		for (int i = 0; i < n; i++) {
			struct conn *c = &conns[evs[i].data.u64];
			if (c->st != ST_PING)
				continue;
			unsigned char b, e;
			ssize_t r = recv(c->fd, &b, 1, 0);
			if (r < 0 && errno == EAGAIN)
				continue;
			pending--;
			pattern(c->id, c->pings, &e, 1);
			if (r <= 0) {
				fail(c, r == 0 ? "eof" : "reset");
			} else if (b != e) {
				fail(c, "mismatch");
			} else {
				c->pings++;
				c->st = ST_OPEN;
				want(c, 0);
			}
		}
	}
	for (size_t i = 0; i < nconns; i++) {
		if (conns[i].st == ST_PING)
			fail(&conns[i], "timeout");
		if (conns[i].st == ST_OPEN)
			t.ok++;
		else
			tally_fail(&t, conns[i].err);
	}
	tally_print("ping", "ok", "bad", &t);
	compact();
}

static void cmd_check(void)
{
	struct tally t = {0};
	for (size_t i = 0; i < nconns; i++) {
		struct conn *c = &conns[i];
		unsigned char b;
		ssize_t r = recv(c->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
		if (r < 0 && errno == EAGAIN)
			t.ok++;
		else if (r > 0)
			fail(c, "unexpected-data");
		else
			fail(c, r == 0 ? "eof" : "reset");
		if (c->st == ST_FAILED)
			tally_fail(&t, c->err);
	}
	tally_print("check", "alive", "dead", &t);
	compact();
}

static int hold(long cmd_ms)
{
	char line[128];
	while (fgets(line, sizeof(line), stdin)) {
		int64_t until = tk_now_ms() + cmd_ms;
		unsigned long n = 0;
		if (sscanf(line, "open %lu", &n) == 1) {
			cmd_open(n, until);
		} else if (!strncmp(line, "ping", 4)) {
			cmd_ping(until);
		} else if (!strncmp(line, "check", 5)) {
			cmd_check();
		} else if (sscanf(line, "close %lu", &n) == 1) {
			size_t k = n < nconns ? n : nconns;
			for (size_t i = 0; i < k; i++)
				close(conns[i].fd);
			memmove(conns, conns + k, (nconns - k) * sizeof(*conns));
			nconns -= k;
			for (size_t i = 0; i < nconns; i++)
				want(&conns[i], 0);
			printf("closed %zu left %zu\n", k, nconns);
		} else if (!strncmp(line, "count", 5)) {
			printf("count %zu\n", nconns);
		} else if (!strncmp(line, "quit", 4)) {
			break;
		} else {
			printf("error unknown command\n");
		}
		fflush(stdout);
	}
	for (size_t i = 0; i < nconns; i++)
		close(conns[i].fd);
	return 0;
}

/* One step of the data phase; rate limits tx to `allowed` bytes so far. */
static void xfer_step(struct conn *c, uint64_t total, uint64_t allowed, uint32_t events)
{
	if (c->tx < total && c->tx < allowed && (events & EPOLLOUT)) {
		uint64_t n = total - c->tx;
		if (n > allowed - c->tx)
			n = allowed - c->tx;
		if (n > CHUNK)
			n = CHUNK;
		pattern(c->id, c->tx, scratch, n);
		ssize_t w = send(c->fd, scratch, n, MSG_NOSIGNAL);
		if (w < 0 && errno != EAGAIN) {
			fail(c, errno == EPIPE || errno == ECONNRESET ? "reset-tx" : "send");
			return;
		}
		if (w > 0)
			c->tx += w;
	}
	if (c->tx == total && !c->tx_shut && !no_half_close) {
		shutdown(c->fd, SHUT_WR);
		c->tx_shut = true;
	}
	if (events & (EPOLLIN | EPOLLERR | EPOLLHUP)) {
		ssize_t r = recv(c->fd, scratch, CHUNK, 0);
		if (r < 0 && errno != EAGAIN) {
			fail(c, "reset-rx");
			return;
		}
		if (r == 0) {
			if (c->rx == total)
				c->st = ST_DONE;
			else
				fail(c, c->rx < total ? "short" : "long");
			if (c->st == ST_DONE) {
				close(c->fd);
				c->fd = -1;
			}
			return;
		}
		if (r > 0) {
			if (c->rx + r > total) {
				fail(c, "long");
				return;
			}
			pattern(c->id, c->rx, expect, r);
			if (memcmp(scratch, expect, r)) {
				fail(c, "mismatch");
				return;
			}
			c->rx += r;
			if (no_half_close && c->rx == total) {
				close(c->fd);
				c->fd = -1;
				c->st = ST_DONE;
				return;
			}
		}
	}
	uint32_t ev = EPOLLIN;
	if (c->tx < total && c->tx < allowed)
		ev |= EPOLLOUT;
	want(c, ev);
}

static int run(size_t n, uint64_t bytes, uint64_t rate, long run_ms)
{
	int64_t t0 = tk_now_ms(), until = t0 + run_ms;
	if (!add_conns(n))
		return 1;
	open_batch(0, until);
	struct tally t = {0};
	size_t active = 0;
	for (size_t i = 0; i < nconns; i++) {
		if (conns[i].st != ST_OPEN)
			continue;
		conns[i].st = ST_XFER;
		want(&conns[i], EPOLLIN | EPOLLOUT);
		active++;
	}
	int64_t x0 = tk_now_ms(), progress = x0;
	struct epoll_event evs[EPOLL_BATCH];
	while (active && tk_now_ms() < until && tk_now_ms() - progress < STALL_MS) {
		int nev = epoll_wait(epfd, evs, EPOLL_BATCH, rate ? 5 : 100);
		if (nev > 0)
			progress = tk_now_ms();
		uint64_t allowed =
		        rate ? (uint64_t)((tk_now_ms() - x0) * (double)rate / 1000) + 1 : bytes;
		for (int i = 0; i < nev; i++) {
			struct conn *c = &conns[evs[i].data.u64];
			if (c->st != ST_XFER)
				continue;
			xfer_step(c, bytes, allowed, evs[i].events);
			if (c->st != ST_XFER)
				active--;
		}
		if (rate) /* throttled senders have EPOLLOUT off: poke them */
			for (size_t i = 0; i < nconns; i++)
				if (conns[i].st == ST_XFER && conns[i].tx < bytes &&
				    conns[i].tx < allowed)
					want(&conns[i], EPOLLIN | EPOLLOUT);
	}
	uint64_t moved = 0;
	for (size_t i = 0; i < nconns; i++) {
		struct conn *c = &conns[i];
		if (c->st == ST_XFER)
			fail(c, tk_now_ms() - progress >= STALL_MS ? "stalled" : "timeout");
		moved += c->rx;
		if (c->st == ST_DONE)
			t.ok++;
		else
			tally_fail(&t, c->err);
	}
	double secs = (tk_now_ms() - t0) / 1000.0;
	printf("run ok %zu fail %zu bytes %llu secs %.2f MBps %.1f", t.ok, t.bad,
	       (unsigned long long)moved, secs, moved / 1e6 / (secs > 0 ? secs : 1));
	for (int i = 0; i < MAX_REASONS && t.why[i]; i++)
		printf(" %s=%zu", t.why[i], t.nwhy[i]);
	printf("\n");
	return t.bad ? 1 : 0;
}

static int usage(void)
{
	fprintf(stderr,
	        "usage: connhold serve [-q] ADDR:PORT...\n"
	        "       connhold [-s PROXY] -t TARGET... [-w MS] [-c N] run -n N -b BYTES [-r RATE] [-H 0|1]\n"
	        "       connhold [-s PROXY] -t TARGET... [-w MS] [-c N] hold\n");
	return 2;
}

int main(int argc, char **argv)
{
	signal(SIGPIPE, SIG_IGN);
	setvbuf(stdout, NULL, _IOLBF, 0);
	raise_nofile();
	if (argc > 1 && !strcmp(argv[1], "serve"))
		return serve(argc - 2, argv + 2);
	int i = 1;
	size_t n = 1;
	uint64_t bytes = 0, rate = 0;
	for (; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "run") || !strcmp(a, "hold"))
			break;
		if (!v)
			return usage();
		i++;
		if (!strcmp(a, "-s")) {
			if (tk_parse_endpoint(v, &proxy, false))
				return usage();
			use_proxy = 1;
		} else if (!strcmp(a, "-t")) {
			if (ntargets == MAX_TARGETS ||
			    tk_parse_endpoint(v, &targets[ntargets++], false))
				return usage();
		} else if (!strcmp(a, "-w")) {
			deadline_ms = atol(v);
		} else if (!strcmp(a, "-c")) {
			inflight_max = atoi(v) > 0 ? atoi(v) : 1;
		} else {
			return usage();
		}
	}
	if (i >= argc || !ntargets)
		return usage();
	epfd = epoll_create1(EPOLL_CLOEXEC);
	if (!strcmp(argv[i], "hold"))
		return hold(deadline_ms > 0 ? deadline_ms : DEF_CMD_MS);
	for (i++; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "-n"))
			n = strtoul(argv[i + 1], NULL, 10);
		else if (!strcmp(argv[i], "-b"))
			bytes = parse_size(argv[i + 1]);
		else if (!strcmp(argv[i], "-r"))
			rate = parse_size(argv[i + 1]);
		else if (!strcmp(argv[i], "-H"))
			no_half_close = atoi(argv[i + 1]) == 0;
		else
			return usage();
	}
	if (i != argc)
		return usage();
	return run(n, bytes, rate, deadline_ms > 0 ? deadline_ms : DEF_RUN_MS);
}
