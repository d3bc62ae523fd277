/* SPDX-License-Identifier: MIT */
/* Unit tests for relay/pump_xform.c: the transform pump with Shadowsocks legs over TCP on 127.0.0.1. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "pump.h"
#include "shadowsocks.h"
#include "t.h"

T_SUITE("pump_xform");

/*
 * Every allocation of the process is counted (glibc's own functions do the
 * work), so a test can show the pump allocates nothing per chunk. Not under
 * a sanitizer, which has its own allocator.
 */
#if defined(__SANITIZE_ADDRESS__)
#define COUNT_MALLOC 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define COUNT_MALLOC 0
#endif
#endif
#ifndef COUNT_MALLOC
#define COUNT_MALLOC 1
extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t m);
extern void *__libc_realloc(void *p, size_t n);
static atomic_ulong n_alloc;
void *malloc(size_t n)
{
	atomic_fetch_add(&n_alloc, 1);
	return __libc_malloc(n);
}
void *calloc(size_t n, size_t m)
{
	atomic_fetch_add(&n_alloc, 1);
	return __libc_calloc(n, m);
}
void *realloc(void *p, size_t n)
{
	atomic_fetch_add(&n_alloc, 1);
	return __libc_realloc(p, n);
}
#endif

enum { MIB = 1 << 20, BUDGET = 4 << 20 };

static int set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);
	return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

/* A connected TCP pair over 127.0.0.1, both ends non-blocking; rcv: the accepted end's SO_RCVBUF. */
static int tcp_pair(int *cl, int *sv, int rcv)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(sa);
	int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

	*cl = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (rcv)
		setsockopt(l, SOL_SOCKET, SO_RCVBUF, &rcv, sizeof(rcv));
	if (l < 0 || *cl < 0 || bind(l, (struct sockaddr *)&sa, sizeof(sa)) || listen(l, 1) ||
	    getsockname(l, (struct sockaddr *)&sa, &len) ||
	    connect(*cl, (struct sockaddr *)&sa, sizeof(sa)))
		return -1;
	*sv = accept4(l, NULL, NULL, SOCK_CLOEXEC);
	close(l);
	setsockopt(*cl, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return *sv < 0 || set_nonblock(*cl) || set_nonblock(*sv) ? -1 : 0;
}

/*
 * A Shadowsocks leg pair: the server's leg (its response stream seals) and
 * the client's (its opener takes that stream), made by a real handshake.
 */
struct legs {
	struct ss_key key;
	struct ss_leg client, server;
};

static int make_legs(struct legs *lg, enum ss_method m, const char *password)
{
	static uint8_t buf[70 << 10];
	struct xform_ctx ctx = {.unix_s = (uint64_t)time(NULL)};
	struct proto_target t = {.kind = TARGET_DOMAIN, .port = 80};
	uint8_t rnd[SS_RAND_LEN] = {1, 2, 3, 4, 5};
	struct iovec iov[8];
	struct ss_server s;
	size_t off, len, used;

	strcpy(t.host, "example.net");
	if (ss_key_init(&lg->key, m, password, false) ||
	    ss_client_init(&lg->client, &lg->key, &t, rnd))
		return -1;
	lg->client.x.ops->seal_slots(&lg->client, buf, sizeof(buf), iov, 8);
	memcpy(iov[0].iov_base, "x", 1);
	if (lg->client.x.ops->seal(&lg->client, &ctx, buf, 1, &off, &len))
		return -1;
	ss_server_init(&s, &lg->key);
	s.now = ctx.unix_s;
	if (ss_server_feed(&s, buf + off, len, &used) != PROTO_REQUEST)
		return -1;
	rnd[0] = 9;
	return ss_server_leg(&lg->server, &s, rnd);
}

static void free_legs(struct legs *lg)
{
	lg->client.x.ops->destroy(&lg->client);
	lg->server.x.ops->destroy(&lg->server);
}

/*
 * The chain under test: the test writes plaintext into w, pump A (server
 * leg seals) moves it from a to b, pump B (client leg opens) from c to d,
 * and the test reads plaintext at r. b and c are one TCP connection.
 */
struct chain {
	int w, a, b, c, d, r;
	struct buf_pool pool;
	struct pump_dir da, db;
	struct legs lg;
	enum pump_next na, nb;
	int ea, eb;
};

static int chain_open(struct chain *ch, enum ss_method m, int rcv)
{
	memset(ch, 0, sizeof(*ch));
	if (tcp_pair(&ch->w, &ch->a, 0) || tcp_pair(&ch->b, &ch->c, rcv) ||
	    tcp_pair(&ch->d, &ch->r, rcv) ||
	    buf_pool_init_size(&ch->pool, 4, sizeof(struct xbuf)) ||
	    make_legs(&ch->lg, m, /* a 32-byte PSK: not for 2022-blake3-aes-128-gcm */
	              m >= SS22_AES_128_GCM ? "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="
	                                    : "secret"))
		return -1;
	pump_dir_init(&ch->da);
	pump_dir_init(&ch->db);
	ch->na = ch->nb = PUMP_WAIT_SRC;
	return 0;
}

static void chain_close(struct chain *ch)
{
	int *fds[] = {&ch->w, &ch->a, &ch->b, &ch->c, &ch->d, &ch->r};

	xform_dir_release(&ch->pool, &ch->da);
	xform_dir_release(&ch->pool, &ch->db);
	buf_pool_destroy(&ch->pool);
	free_legs(&ch->lg);
	for (size_t i = 0; i < 6; i++)
		close(*fds[i]);
}

/* One round: each pump that may move does (as its poll would have fired). */
static void chain_step(struct chain *ch, int timeout_ms)
{
	struct xform_ctx ctx = {.unix_s = (uint64_t)time(NULL)};
	struct pollfd p[2] = {
	        {.fd = ch->na == PUMP_WAIT_DST ? ch->b : ch->a,
	         .events = ch->na == PUMP_WAIT_DST ? POLLOUT : POLLIN},
	        {.fd = ch->nb == PUMP_WAIT_DST ? ch->d : ch->c,
	         .events = ch->nb == PUMP_WAIT_DST ? POLLOUT : POLLIN},
	};
	bool a_live = ch->na == PUMP_WAIT_SRC || ch->na == PUMP_WAIT_DST;
	bool b_live = ch->nb == PUMP_WAIT_SRC || ch->nb == PUMP_WAIT_DST;

	if (!a_live)
		p[0].fd = -1;
	if (!b_live)
		p[1].fd = -1;
	if (poll(p, 2, timeout_ms) <= 0)
		return;
	if (a_live && p[0].revents)
		ch->na = xform_pump(&ch->pool, &ch->da, ch->a, ch->b, NULL, &ch->lg.server.x, false,
		                    BUDGET, &ctx, &ch->ea);
	if (b_live && p[1].revents)
		ch->nb = xform_pump(&ch->pool, &ch->db, ch->c, ch->d, &ch->lg.client.x, NULL, false,
		                    BUDGET, &ctx, &ch->eb);
}

/* The writer and reader threads: a pattern out, the same pattern checked in. */
struct io {
	int fd;
	uint64_t total, done;
	bool bad, shut;
};

static uint8_t pat(uint64_t i)
{
	return (uint8_t)(i * 2654435761u >> 13);
}

static void *writer(void *arg)
{
	static uint8_t buf[256 << 10];
	struct io *io = arg;
	int fl = fcntl(io->fd, F_GETFL);

	fcntl(io->fd, F_SETFL, fl & ~O_NONBLOCK);
	while (io->done < io->total) {
		size_t n = io->total - io->done < sizeof(buf) ? io->total - io->done : sizeof(buf);
		ssize_t k;

		for (size_t i = 0; i < n; i++)
			buf[i] = pat(io->done + i);
		/* odd sizes, so that chunks and reads never line up */
		k = send(io->fd, buf, n > 77777 ? 77777 : n, MSG_NOSIGNAL);
		if (k <= 0) {
			io->bad = true;
			break;
		}
		io->done += (uint64_t)k;
	}
	if (io->shut)
		shutdown(io->fd, SHUT_WR);
	return NULL;
}

static void *reader(void *arg)
{
	static uint8_t buf[256 << 10];
	struct io *io = arg;
	int fl = fcntl(io->fd, F_GETFL);

	fcntl(io->fd, F_SETFL, fl & ~O_NONBLOCK);
	for (;;) {
		ssize_t k = recv(io->fd, buf, sizeof(buf), 0);

		if (k <= 0) {
			io->shut = k == 0;
			break;
		}
		for (ssize_t i = 0; i < k; i++) {
			if (buf[i] != pat(io->done + (uint64_t)i)) {
				io->bad = true;
				return NULL;
			}
		}
		io->done += (uint64_t)k;
	}
	return NULL;
}

/*
 * 64 MiB through a sealing and an opening pump, byte for byte, with half-close
 * at the end; the allocations counted after the first MiB must be none.
 */
static void run_64mib(enum ss_method m)
{
	struct chain ch;
	struct io w = {.total = 64 * MIB, .shut = true}, r = {0};
	pthread_t tw, tr;
	unsigned long base = 0, during = 0;
	bool counting = false;
	time_t t0 = time(NULL);

	(void)base, (void)during, (void)counting; /* without the counter (sanitizers) */

	if (chain_open(&ch, m, 0)) {
		T_FAILF("set-up: %s", strerror(errno));
		return;
	}
	w.fd = ch.w;
	r.fd = ch.r;
	/* A warm pool, as a running worker's is: both pumps' buffers are there. */
	uint8_t *warm[4];
	for (int i = 0; i < 4; i++)
		warm[i] = buf_pool_get(&ch.pool);
	for (int i = 0; i < 4; i++)
		buf_pool_put(&ch.pool, warm[i]);
	pthread_create(&tw, NULL, writer, &w);
	pthread_create(&tr, NULL, reader, &r);
#if COUNT_MALLOC
	counting = true; /* from the first byte on */
	base = atomic_load(&n_alloc);
#endif
	while ((ch.na != PUMP_DONE || ch.nb != PUMP_DONE) && ch.na != PUMP_ERROR &&
	       ch.nb != PUMP_ERROR && time(NULL) - t0 < 60)
		chain_step(&ch, 100);
#if COUNT_MALLOC
	during = atomic_load(&n_alloc) - base;
#endif
	/* the reader sees the EOF pump B passed on */
	shutdown(ch.d, SHUT_WR);
	pthread_join(tw, NULL);
	pthread_join(tr, NULL);
	T_EQ_INT(ch.na, PUMP_DONE);
	T_EQ_INT(ch.nb, PUMP_DONE);
	T_ASSERT(!w.bad && !r.bad);
	T_EQ_INT(r.done, 64 * MIB);
	T_ASSERT(r.shut);                    /* a FIN, passed on through both pumps */
	T_EQ_INT(ch.da.bytes > 64 * MIB, 1); /* the framing's bytes on the wire */
	T_EQ_INT(ch.db.bytes, 64 * MIB);
	/* done: no buffer held by either direction, all back in the pool */
	T_ASSERT(!ch.da.xa && !ch.da.xb && !ch.db.xa && !ch.db.xb);
	T_EQ_INT(ch.pool.in_use, 0);
#if COUNT_MALLOC
	T_ASSERT(counting);
	T_EQ_INT(during, 0);
	printf("# %s: 64 MiB, %llu wire bytes, %lu allocations during the transfer (%llu chunks)\n",
	       ss_method_info(m)->name, (unsigned long long)ch.da.bytes, during,
	       (unsigned long long)(64 * MIB / (ss_method_info(m)->v2022 ? SS22_CHUNK : 16383)));
#endif
	chain_close(&ch);
}

static void test_64mib_aes128(void)
{
	run_64mib(SS_AES_128_GCM);
}

static void test_64mib_chacha_2022(void)
{
	run_64mib(SS22_CHACHA20_POLY1305);
}

/* Wire bytes fed one at a time: the partial chunk is carried from read to read. */
static void test_byte_at_a_time(void)
{
	static uint8_t wire[1 << 20], plain[1 << 20];
	struct xform_ctx ctx = {.unix_s = (uint64_t)time(NULL)};
	struct chain ch;
	struct io r = {0};
	pthread_t tr;
	size_t n = 0, got = 0;
	int err = 0;

	if (chain_open(&ch, SS_CHACHA20_IETF_POLY1305, 0)) {
		T_FAILF("set-up");
		return;
	}
	/* 40000 bytes through pump A, its wire bytes collected at c */
	for (size_t i = 0; i < 40000; i++)
		plain[i] = pat(i);
	T_EQ_INT(send(ch.w, plain, 40000, 0), 40000);
	shutdown(ch.w, SHUT_WR);
	while (ch.na != PUMP_DONE && ch.na != PUMP_ERROR)
		ch.na = xform_pump(&ch.pool, &ch.da, ch.a, ch.b, NULL, &ch.lg.server.x, false,
		                   BUDGET, &ctx, &err);
	for (;;) {
		ssize_t k = recv(ch.c, wire + n, sizeof(wire) - n, 0);
		if (k > 0)
			n += (size_t)k;
		else if (k == 0)
			break;
		else
			poll(&(struct pollfd){.fd = ch.c, .events = POLLIN}, 1, 1000);
	}
	T_ASSERT(n > 40000);
	/* now pump B reads them from a fresh connection, one byte per send */
	close(ch.b);
	close(ch.c);
	tcp_pair(&ch.b, &ch.c, 0);
	r.fd = ch.r;
	pthread_create(&tr, NULL, reader, &r);
	for (size_t i = 0; i < n; i++) {
		T_EQ_INT(send(ch.b, wire + i, 1, 0), 1);
		poll(&(struct pollfd){.fd = ch.c, .events = POLLIN}, 1, 1000);
		ch.nb = xform_pump(&ch.pool, &ch.db, ch.c, ch.d, &ch.lg.client.x, NULL, false,
		                   BUDGET, &ctx, &err);
		if (ch.nb == PUMP_ERROR)
			break;
		/* a buffer is held only for bytes it carries (a chunk not yet complete) */
		T_ASSERT(!ch.db.xa || ch.db.xa->raw_len > 0);
	}
	shutdown(ch.b, SHUT_WR);
	while (ch.nb == PUMP_WAIT_SRC || ch.nb == PUMP_WAIT_DST) {
		poll(&(struct pollfd){.fd = ch.c, .events = POLLIN}, 1, 1000);
		ch.nb = xform_pump(&ch.pool, &ch.db, ch.c, ch.d, &ch.lg.client.x, NULL, false,
		                   BUDGET, &ctx, &err);
	}
	shutdown(ch.d, SHUT_WR);
	pthread_join(tr, NULL);
	got = r.done;
	T_EQ_INT(ch.nb, PUMP_DONE);
	T_EQ_INT(got, 40000);
	T_ASSERT(!r.bad);
	chain_close(&ch);
}

/* A stream cut inside a chunk, or a forged byte, is an error, not an EOF. */
static void test_truncated_and_forged(void)
{
	for (int forged = 0; forged <= 1; forged++) {
		static uint8_t wire[1 << 16], plain[5000];
		struct xform_ctx ctx = {.unix_s = (uint64_t)time(NULL)};
		struct chain ch;
		size_t n = 0;
		int err = 0;

		if (chain_open(&ch, SS_AES_256_GCM, 0)) {
			T_FAILF("set-up");
			return;
		}
		memset(plain, 'p', sizeof(plain));
		send(ch.w, plain, sizeof(plain), 0);
		shutdown(ch.w, SHUT_WR);
		while (ch.na != PUMP_DONE && ch.na != PUMP_ERROR)
			ch.na = xform_pump(&ch.pool, &ch.da, ch.a, ch.b, NULL, &ch.lg.server.x,
			                   false, BUDGET, &ctx, &err);
		for (ssize_t k; (k = recv(ch.c, wire + n, sizeof(wire) - n, 0)) != 0;) {
			if (k > 0)
				n += (size_t)k;
			else
				poll(&(struct pollfd){.fd = ch.c, .events = POLLIN}, 1, 1000);
		}
		close(ch.b);
		close(ch.c);
		tcp_pair(&ch.b, &ch.c, 0);
		if (forged)
			wire[n / 2] ^= 1;
		else
			n -= 7; /* the last chunk cut short */
		send(ch.b, wire, n, 0);
		shutdown(ch.b, SHUT_WR);
		err = 0;
		while (ch.nb == PUMP_WAIT_SRC || ch.nb == PUMP_WAIT_DST) {
			poll(&(struct pollfd){.fd = ch.c, .events = POLLIN}, 1, 1000);
			ch.nb = xform_pump(&ch.pool, &ch.db, ch.c, ch.d, &ch.lg.client.x, NULL,
			                   false, BUDGET, &ctx, &err);
		}
		T_EQ_INT(ch.nb, PUMP_ERROR);
		T_EQ_INT(err, forged ? -EBADMSG : -EPROTO);
		T_ASSERT(!ch.db.wr_err); /* the source's fault */
		xform_dir_release(&ch.pool, &ch.db);
		T_EQ_INT(ch.pool.in_use, 0);
		chain_close(&ch);
	}
}

/*
 * Back-pressure: a destination that takes nothing stops the direction
 * (PUMP_WAIT_DST, the sealed bytes held), and nothing more is read from the
 * source meanwhile; once it drains, everything arrives.
 */
static void test_back_pressure(void)
{
	static uint8_t plain[8 * MIB], sink[1 << 16];
	struct xform_ctx ctx = {.unix_s = (uint64_t)time(NULL)};
	struct chain ch;
	int err = 0, queued = 0, queued2 = 0;
	size_t got = 0;

	if (chain_open(&ch, SS_AES_128_GCM, 64 << 10)) {
		T_FAILF("set-up");
		return;
	}
	for (size_t i = 0; i < sizeof(plain); i++)
		plain[i] = pat(i);
	/* as much as the client leg's buffers take */
	size_t sent = 0;
#define SEND_MORE()                                                                           \
	for (ssize_t k;                                                                       \
	     sent < sizeof(plain) &&                                                          \
	     (k = send(ch.w, plain + sent,                                                    \
	               sizeof(plain) - sent < 65536 ? sizeof(plain) - sent : 65536, 0)) > 0;) \
	sent += (size_t)k
	/* a small send buffer at b: the destination fills up after a few batches */
	int small = 32 << 10;
	setsockopt(ch.b, SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
	for (int i = 0; i < 2000 && ch.na != PUMP_WAIT_DST; i++) {
		SEND_MORE();
		ch.na = xform_pump(&ch.pool, &ch.da, ch.a, ch.b, NULL, &ch.lg.server.x, false,
		                   BUDGET, &ctx, &err);
	}
	T_EQ_INT(ch.na, PUMP_WAIT_DST);
	T_ASSERT(ch.da.xb != NULL && ch.da.held > 0);
	/* more from the client, which pump A must leave in the socket */
	SEND_MORE();
	ioctl(ch.a, FIONREAD, &queued);
	ch.na = xform_pump(&ch.pool, &ch.da, ch.a, ch.b, NULL, &ch.lg.server.x, false, BUDGET, &ctx,
	                   &err);
	ioctl(ch.a, FIONREAD, &queued2);
	T_EQ_INT(ch.na, PUMP_WAIT_DST);
	T_EQ_INT(queued2, queued); /* not a byte read while dst is full */
	T_ASSERT(queued > 0);
	/* drain c with pump B into d, read d: the direction goes on */
	shutdown(ch.w, SHUT_WR);
	for (int rounds = 0; rounds < 100000 && ch.nb != PUMP_DONE && ch.nb != PUMP_ERROR;
	     rounds++) {
		ssize_t k;

		chain_step(&ch, 10);
		while ((k = recv(ch.r, sink, sizeof(sink), 0)) > 0) {
			for (ssize_t i = 0; i < k && !err; i++)
				if (sink[i] != pat(got + (size_t)i)) {
					err = -EILSEQ;
					printf("# byte %zu differs\n", got + (size_t)i);
				}
			got += (size_t)k;
		}
		if (ch.nb == PUMP_DONE)
			break;
	}
	T_EQ_INT(err, 0);
	T_EQ_INT(got, sent);
	chain_close(&ch);
}

/* Seeded bytes (what a handshake read) go first; an owed request header is flushed on demand. */
static void test_seed_and_flush(void)
{
	static uint8_t buf[1 << 16];
	struct xform_ctx ctx = {.unix_s = (uint64_t)time(NULL)};
	struct buf_pool pool;
	struct pump_dir d;
	struct ss_key k;
	struct ss_leg cl;
	struct proto_target t = {.kind = TARGET_DOMAIN, .port = 443};
	uint8_t rnd[SS_RAND_LEN] = {7};
	int a, b, c, e, err = 0;
	ssize_t n;

	strcpy(t.host, "example.org");
	T_EQ_INT(buf_pool_init_size(&pool, 2, sizeof(struct xbuf)), 0);
	T_ASSERT(!tcp_pair(&a, &b, 0) && !tcp_pair(&c, &e, 0));
	T_ASSERT(!ss_key_init(&k, SS_AES_128_GCM, "secret", false));
	/* 1. nothing from the client yet: flush sends the salt and the address chunk alone */
	T_EQ_INT(ss_client_init(&cl, &k, &t, rnd), 0);
	pump_dir_init(&d);
	T_EQ_INT(xform_pump(&pool, &d, b, c, NULL, &cl.x, false, BUDGET, &ctx, &err),
	         PUMP_WAIT_SRC);
	T_EQ_INT(d.bytes, 0); /* the header waits for payload */
	d.flush = true;
	T_EQ_INT(xform_pump(&pool, &d, b, c, NULL, &cl.x, false, BUDGET, &ctx, &err),
	         PUMP_WAIT_SRC);
	T_EQ_INT(d.bytes, 16 + 18 + 1 + 1 + 11 + 2 + 16); /* salt, len chunk, example.org:443 */
	T_ASSERT(!d.xa && !d.xb);
	poll(&(struct pollfd){.fd = e, .events = POLLIN}, 1, 1000);
	T_EQ_INT(recv(e, buf, sizeof(buf), 0), (ssize_t)d.bytes);
	cl.x.ops->destroy(&cl);
	/* 2. seeded plaintext goes with the header in one send */
	T_EQ_INT(ss_client_init(&cl, &k, &t, rnd), 0);
	pump_dir_init(&d);
	T_EQ_INT(xform_seed(&pool, &d, (const uint8_t *)"GET / HTTP/1.0\r\n\r\n", 18, NULL, 0), 0);
	T_EQ_INT(xform_pump(&pool, &d, b, c, NULL, &cl.x, false, BUDGET, &ctx, &err),
	         PUMP_WAIT_SRC);
	T_EQ_INT(d.bytes, 16 + 18 + 15 + 16 + 18 + 18 + 16);
	poll(&(struct pollfd){.fd = e, .events = POLLIN}, 1, 1000);
	n = recv(e, buf, sizeof(buf), 0);
	T_EQ_INT(n, (ssize_t)d.bytes);
	/* 3. EOF without a byte of payload: the header still goes, then the FIN */
	cl.x.ops->destroy(&cl);
	T_EQ_INT(ss_client_init(&cl, &k, &t, rnd), 0);
	pump_dir_init(&d);
	shutdown(a, SHUT_WR);
	poll(&(struct pollfd){.fd = b, .events = POLLIN}, 1, 1000);
	T_EQ_INT(xform_pump(&pool, &d, b, c, NULL, &cl.x, false, BUDGET, &ctx, &err), PUMP_DONE);
	T_EQ_INT(d.bytes, 16 + 18 + 15 + 16);
	poll(&(struct pollfd){.fd = e, .events = POLLIN}, 1, 1000);
	T_EQ_INT(recv(e, buf, sizeof(buf), 0), (ssize_t)d.bytes);
	poll(&(struct pollfd){.fd = e, .events = POLLIN}, 1, 1000);
	T_EQ_INT(recv(e, buf, sizeof(buf), 0), 0);
	cl.x.ops->destroy(&cl);
	T_EQ_INT(pool.in_use, 0);
	buf_pool_destroy(&pool);
	close(a), close(b), close(c), close(e);
}

/* The budget: a direction yields after that many bytes, though the source has more. */
static void test_budget(void)
{
	static uint8_t plain[1 << 20];
	struct xform_ctx ctx = {.unix_s = (uint64_t)time(NULL)};
	struct chain ch;
	struct io r = {0};
	pthread_t tr;
	int err = 0;

	if (chain_open(&ch, SS_AES_256_GCM, 0)) {
		T_FAILF("set-up");
		return;
	}
	r.fd = ch.c;
	pthread_create(&tr, NULL, reader, &r); /* wire bytes: only counted */
	memset(plain, 1, sizeof(plain));
	send(ch.w, plain, sizeof(plain), 0);
	poll(&(struct pollfd){.fd = ch.a, .events = POLLIN}, 1, 1000);
	usleep(20000);
	T_EQ_INT(xform_pump(&ch.pool, &ch.da, ch.a, ch.b, NULL, &ch.lg.server.x, false, 100000,
	                    &ctx, &err),
	         PUMP_WAIT_SRC);
	T_ASSERT(ch.da.bytes >= 100000 && ch.da.bytes < 400000);
	shutdown(ch.b, SHUT_RDWR);
	pthread_join(tr, NULL);
	chain_close(&ch);
}

int main(void)
{
	T_RUN(test_64mib_aes128);
	T_RUN(test_64mib_chacha_2022);
	T_RUN(test_byte_at_a_time);
	T_RUN(test_truncated_and_forged);
	T_RUN(test_back_pressure);
	T_RUN(test_seed_and_flush);
	T_RUN(test_budget);
	return t_finish();
}
