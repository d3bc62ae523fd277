/* SPDX-License-Identifier: MIT */
/* UDP sessions (relay/udp_session.c) through a front end with no socket of its own, as a TUN queue's will be: a worker's loop, a real echo socket. */
#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "t.h"
#include "t_config.h"
#include "udp.h"
#include "worker.h"

T_SUITE("udp_session");

/* What the front end saw. */
static struct {
	int delivered, closing, released;
	uint8_t data[64];
	size_t len;
	union udp_addr from;
	bool from_null, had_t;
} seen;

/* The front end's own part of a session: what a TUN front end might keep (here an id). */
struct pkt_sess {
	struct udp_sess s;
	int id;
};

static void pkt_deliver(struct udp_sess *s, const uint8_t *d, size_t n, const struct sockaddr *from,
                        const struct proto_target *t)
{
	seen.delivered++;
	seen.len = n < sizeof(seen.data) ? n : sizeof(seen.data);
	memcpy(seen.data, d, seen.len);
	seen.from_null = !from;
	if (from)
		memcpy(&seen.from, from, udp_endpoint_len(from));
	seen.had_t = t != NULL;
	s->w->stats.udp_down++;
}

static void pkt_closing(struct udp_sess *s)
{
	(void)s;
	seen.closing++;
}

static void pkt_release(struct udp_sess *s)
{
	(void)s;
	seen.released++;
}

static const struct udp_front pkt_front = {
        .deliver = pkt_deliver,
        .closing = pkt_closing,
        .release = pkt_release,
};

/* One worker, run by hand in this thread. */
static struct config *cfg;
static struct server srv;
static struct worker w;

static bool up(const char *ini)
{
	memset(&seen, 0, sizeof(seen));
	cfg = load(ini);
	if (!cfg)
		return false;
	memset(&srv, 0, sizeof(srv));
	srv.cfg = cfg;
	srv.n_workers = 1;
	srv.alog_fd = -1;
	return worker_init(&w, 0, &srv) == 0 && loop_start(&w.loop) == 0;
}

static void turn_until(bool (*cond)(void))
{
	for (int i = 0; i < 200 && !cond(); i++) {
		loop_turn(&w.loop, 10);
		loop_timers_run(&w.loop);
		udp_sess_reap(&w);
	}
}

static bool no_session(void)
{
	return w.n_udp == 0 && w.loop.n_objs == 1; /* the inbox */
}

/* Every session closed and released, then the worker and its config gone. */
static void down(void)
{
	struct loop *l = &w.loop;

	for (uint32_t i = 0; i < l->cap; i++) {
		struct loop_obj *o = l->slots[i];
		if (o && o->kind == LOOP_KIND_UDP && !o->closed)
			udp_sess_close((struct udp_sess *)o);
	}
	turn_until(no_session);
	T_EQ_INT(w.n_udp, 0);
	worker_destroy(&w);
	config_free(cfg);
}

static int open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	if (!d)
		return -1;
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

static struct sockaddr_in v4(const char *ip, uint16_t port)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};

	inet_pton(AF_INET, ip, &a.sin_addr);
	return a;
}

static struct sockaddr_in6 v6(const char *ip, uint16_t port)
{
	struct sockaddr_in6 a = {.sin6_family = AF_INET6, .sin6_port = htons(port)};

	inet_pton(AF_INET6, ip, &a.sin6_addr);
	return a;
}

static const char *ini_plain = "[main]\nworkers = 1\n"
                               "[inbound s]\ntype = socks5\nlisten = 127.0.0.1:1\n";

static void test_endpoints(void)
{
	uint8_t key[SIPHASH_KEY_LEN] = {1, 2, 3};
	struct sockaddr_in a = v4("10.0.0.1", 53), b = v4("10.0.0.1", 54), c = v4("10.0.0.2", 53);
	struct sockaddr_in6 x = v6("fd00::1", 53), y = v6("fd00::1", 53),
	                    m = v6("::ffff:10.0.0.1", 53);

	T_ASSERT(udp_endpoint_eq(&a, &a));
	T_ASSERT(!udp_endpoint_eq(&a, &b)); /* the port counts */
	T_ASSERT(!udp_endpoint_eq(&a, &c));
	T_ASSERT(udp_endpoint_eq(&x, &y));
	T_ASSERT(!udp_endpoint_eq(&a, &m)); /* families differ until unmapped */
	T_ASSERT(udp_endpoint_hash(key, &x) == udp_endpoint_hash(key, &y));
	T_ASSERT(udp_endpoint_hash(key, &a) != udp_endpoint_hash(key, &b));
	T_EQ_INT(udp_endpoint_len(&a), sizeof(a));
	T_EQ_INT(udp_endpoint_len(&x), sizeof(x));
	udp_endpoint_unmap(&m);
	T_ASSERT(udp_endpoint_eq(&a, &m));
	udp_endpoint_unmap(&x); /* not mapped: as it was */
	T_ASSERT(udp_endpoint_eq(&x, &y));
}

/* 5,000 endpoints in one table (it grows from 64 buckets), each found; half closed. */
static void test_table(void)
{
	struct udp_sess_table tab;
	enum { N = 5000 };
	static struct udp_sess *s[N];
	bool ok = true;

	if (!up("[main]\nworkers = 1\nudp-max-sessions = 100000\n"
	        "[inbound s]\ntype = socks5\nlisten = 127.0.0.1:1\n")) {
		T_FAILF("set-up");
		return;
	}
	T_EQ_INT(udp_sess_table_init(&tab), 0);
	for (int i = 0; i < N; i++) {
		struct sockaddr_in a = v4(i & 1 ? "192.0.2.1" : "192.0.2.2", (uint16_t)(1000 + i));
		struct sockaddr_in6 b = v6("2001:db8::1", (uint16_t)(1000 + i));

		s[i] = udp_sess_open(&w, UDP_SESS_NO_INBOUND, &pkt_front, sizeof(struct pkt_sess),
		                     i % 3 ? (const void *)&a : (const void *)&b, &tab);
		if (!s[i]) {
			T_FAILF("open %d", i);
			down();
			return;
		}
		((struct pkt_sess *)s[i])->id = i;
	}
	T_EQ_INT(tab.n, N);
	T_ASSERT(tab.mask + 1 >= N / 2); /* grown: chains of two on average */
	for (int i = 0; i < N; i++) {
		struct sockaddr_in a = v4(i & 1 ? "192.0.2.1" : "192.0.2.2", (uint16_t)(1000 + i));
		struct sockaddr_in6 b = v6("2001:db8::1", (uint16_t)(1000 + i));
		struct udp_sess *f =
		        udp_sess_find(&tab, i % 3 ? (const void *)&a : (const void *)&b);

		ok &= f == s[i] && ((struct pkt_sess *)f)->id == i;
	}
	T_ASSERT(ok);
	for (int i = 0; i < N; i += 2)
		udp_sess_close(s[i]);
	T_EQ_INT(tab.n, N / 2);
	T_EQ_INT(seen.closing, N / 2);
	ok = true;
	for (int i = 0; i < N; i++) {
		struct sockaddr_in a = v4(i & 1 ? "192.0.2.1" : "192.0.2.2", (uint16_t)(1000 + i));
		struct sockaddr_in6 b = v6("2001:db8::1", (uint16_t)(1000 + i));
		struct udp_sess *f =
		        udp_sess_find(&tab, i % 3 ? (const void *)&a : (const void *)&b);

		ok &= i % 2 ? f == s[i] : f == NULL;
	}
	T_ASSERT(ok);
	/* No poll was in flight: the closed ones are released at once. */
	T_EQ_INT(seen.released, N / 2);
	/* The table goes first (its front end's socket did): the sessions stay, found by nobody. */
	udp_sess_table_fini(&tab);
	T_ASSERT(s[1]->tab == NULL);
	down();
	T_EQ_INT(seen.released, N);
}

/* A UDP echo on 127.0.0.1: its descriptor and port. */
static int echo_open(struct sockaddr_in *a)
{
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
	socklen_t l = sizeof(*a);

	*a = v4("127.0.0.1", 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)a, sizeof(*a)) < 0 ||
	    getsockname(fd, (struct sockaddr *)a, &l) < 0)
		return -1;
	return fd;
}

/* Echo what waits on fd (within a second). */
static int echo_once(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	uint8_t b[2048];
	struct sockaddr_storage from;
	socklen_t fl = sizeof(from);
	ssize_t n;

	if (poll(&p, 1, 1000) != 1)
		return -1;
	n = recvfrom(fd, b, sizeof(b), 0, (struct sockaddr *)&from, &fl);
	return n < 0 ? -1 : (int)sendto(fd, b, (size_t)n, 0, (struct sockaddr *)&from, fl);
}

static bool delivered(void)
{
	return seen.delivered > 0;
}

static bool released_one(void)
{
	return seen.released == 1;
}

static struct proto_target target_of(const struct sockaddr_in *a)
{
	struct proto_target t;
	struct sockaddr_storage ss = {0};

	memcpy(&ss, a, sizeof(*a));
	proto_target_from_sa(&t, &ss);
	return t;
}

/*
 * A datagram from a client the front end knows only as an endpoint goes out
 * through the direct outbound (the session's one socket), the reply comes
 * back to deliver() with the target's address; closing the session closes
 * that socket.
 */
static void test_roundtrip(void)
{
	struct sockaddr_in echo, client = v4("10.9.9.9", 4242);
	struct udp_sess_table tab;
	struct udp_sess *s;
	struct proto_target t;
	int efd, fds0;

	if (!up(ini_plain) || (efd = echo_open(&echo)) < 0) {
		T_FAILF("set-up");
		return;
	}
	T_EQ_INT(udp_sess_table_init(&tab), 0);
	fds0 = open_fds();
	s = udp_sess_open(&w, UDP_SESS_NO_INBOUND, &pkt_front, sizeof(struct pkt_sess), &client,
	                  &tab);
	T_ASSERT(s && udp_sess_find(&tab, &client) == s);
	t = target_of(&echo);
	udp_sess_send(s, &t, (const uint8_t *)"ping", 4);
	udp_tx_flush(&w);
	T_EQ_INT(w.stats.udp_up, 1);
	T_EQ_INT(open_fds(), fds0 + 1); /* the direct socket: the session's only descriptor */
	T_EQ_INT(echo_once(efd), 4);
	turn_until(delivered);
	T_EQ_INT(seen.delivered, 1);
	T_EQ_INT(seen.len, 4);
	T_EQ_MEM(seen.data, "ping", 4);
	T_ASSERT(!seen.from_null && !seen.had_t);
	T_ASSERT(udp_endpoint_eq(&seen.from, &echo)); /* the reply's source: the target */
	/* A second datagram, to the same target: the same socket, no new descriptor. */
	udp_sess_send(s, &t, (const uint8_t *)"pong!", 5);
	udp_tx_flush(&w);
	T_EQ_INT(open_fds(), fds0 + 1);
	T_EQ_INT(echo_once(efd), 5);
	seen.delivered = 0;
	turn_until(delivered);
	T_EQ_MEM(seen.data, "pong!", 5);
	udp_sess_close(s);
	T_ASSERT(udp_sess_find(&tab, &client) == NULL);
	T_EQ_INT(seen.closing, 1);
	turn_until(released_one); /* after the cancelled poll's completion */
	T_EQ_INT(seen.released, 1);
	T_EQ_INT(open_fds(), fds0);
	udp_sess_table_fini(&tab);
	close(efd);
	down();
}

/*
 * A reply an upstream's header names by address reaches deliver() with that
 * address as `from` (never v4-mapped) and the header as t; one named by a
 * name, with from NULL.
 */
static void test_deliver_sources(void)
{
	struct sockaddr_in6 m = v6("::ffff:192.0.2.7", 99);
	struct sockaddr_in plain = v4("192.0.2.7", 99);
	struct proto_target t = {.kind = TARGET_IP, .port = 99};
	struct udp_sess *s;

	if (!up(ini_plain)) {
		T_FAILF("set-up");
		return;
	}
	s = udp_sess_open(&w, UDP_SESS_NO_INBOUND, &pkt_front, sizeof(struct pkt_sess), NULL, NULL);
	T_ASSERT(s != NULL);
	memcpy(&t.addr, &m, sizeof(m));
	udp_sess_deliver(s, (const uint8_t *)"x", 1, NULL, &t);
	T_ASSERT(!seen.from_null && seen.had_t);
	T_ASSERT(udp_endpoint_eq(&seen.from, &plain));
	t.kind = TARGET_DOMAIN;
	snprintf(t.host, sizeof(t.host), "example.test");
	udp_sess_deliver(s, (const uint8_t *)"y", 1, NULL, &t);
	T_ASSERT(seen.from_null && seen.had_t);
	T_EQ_INT(seen.delivered, 2);
	T_EQ_INT(s->user_down, 2);
	down();
}

/* Rules route each datagram: block drops and counts; nothing is opened for it. */
static void test_block(void)
{
	struct sockaddr_in client = v4("10.9.9.9", 4242), dst = v4("127.0.0.1", 9);
	struct udp_sess *s;
	struct proto_target t;
	int fds0;

	if (!up("[main]\nworkers = 1\n[inbound s]\ntype = socks5\nlisten = 127.0.0.1:1\n"
	        "[outbound no]\ntype = block\n[route]\nrule = port 9 -> no\n")) {
		T_FAILF("set-up");
		return;
	}
	fds0 = open_fds();
	s = udp_sess_open(&w, UDP_SESS_NO_INBOUND, &pkt_front, sizeof(struct pkt_sess), &client,
	                  NULL);
	t = target_of(&dst);
	udp_sess_send(s, &t, (const uint8_t *)"z", 1);
	udp_tx_flush(&w);
	T_EQ_INT(w.stats.udp_blocked, 1);
	T_EQ_INT(w.stats.udp_up, 0);
	T_EQ_INT(open_fds(), fds0);
	down();
}

/*
 * udp-max-sessions: a new session closes the one idle longest. Time is the
 * loop's (set by hand here): a session that sent a second later moves to
 * the back.
 */
static void test_evict_lru(void)
{
	struct sockaddr_in c[4] = {v4("10.0.0.1", 1), v4("10.0.0.1", 2), v4("10.0.0.1", 3),
	                           v4("10.0.0.1", 4)};
	struct sockaddr_in dst = v4("127.0.0.1", 9);
	struct udp_sess_table tab;
	struct proto_target t = target_of(&dst);

	if (!up("[main]\nworkers = 1\nudp-max-sessions = 3\n"
	        "[inbound s]\ntype = socks5\nlisten = 127.0.0.1:1\n"
	        "[outbound no]\ntype = block\n[route]\nrule = port 9 -> no\n")) {
		T_FAILF("set-up");
		return;
	}
	T_EQ_INT(udp_sess_table_init(&tab), 0);
	for (int i = 0; i < 3; i++)
		T_ASSERT(udp_sess_open(&w, UDP_SESS_NO_INBOUND, &pkt_front, sizeof(struct pkt_sess),
		                       &c[i], &tab) != NULL);
	w.loop.now_ms += 1500;
	udp_sess_send(udp_sess_find(&tab, &c[0]), &t, (const uint8_t *)"a", 1); /* c0: recent */
	T_ASSERT(udp_sess_open(&w, UDP_SESS_NO_INBOUND, &pkt_front, sizeof(struct pkt_sess), &c[3],
	                       &tab) != NULL);
	T_EQ_INT(w.stats.udp_evicted, 1);
	T_EQ_INT(w.n_udp, 3);
	T_ASSERT(udp_sess_find(&tab, &c[0]) != NULL);
	T_ASSERT(udp_sess_find(&tab, &c[1]) == NULL); /* the idlest */
	T_ASSERT(udp_sess_find(&tab, &c[2]) != NULL);
	T_ASSERT(udp_sess_find(&tab, &c[3]) != NULL);
	udp_sess_table_fini(&tab);
	down();
}

/* udp-timeout, and udp-dns-timeout for a session that only ever sent to port 53. */
static void test_timeouts(void)
{
	struct sockaddr_in c1 = v4("10.0.0.1", 1), c2 = v4("10.0.0.1", 2);
	struct sockaddr_in dns = v4("127.0.0.1", 53), other = v4("127.0.0.1", 9);
	struct udp_sess_table tab;
	struct proto_target td = target_of(&dns), to = target_of(&other);

	if (!up("[main]\nworkers = 1\nudp-timeout = 10s\nudp-dns-timeout = 2s\n"
	        "[inbound s]\ntype = socks5\nlisten = 127.0.0.1:1\n"
	        "[outbound no]\ntype = block\n[route]\nrule = port 9 -> no\n"
	        "rule = port 53 -> no\n")) {
		T_FAILF("set-up");
		return;
	}
	T_EQ_INT(udp_sess_table_init(&tab), 0);
	udp_sess_send(udp_sess_open(&w, UDP_SESS_NO_INBOUND, &pkt_front, sizeof(struct pkt_sess),
	                            &c1, &tab),
	              &td, (const uint8_t *)"q", 1);
	udp_sess_send(udp_sess_open(&w, UDP_SESS_NO_INBOUND, &pkt_front, sizeof(struct pkt_sess),
	                            &c2, &tab),
	              &td, (const uint8_t *)"q", 1);
	udp_sess_send(udp_sess_find(&tab, &c2), &to, (const uint8_t *)"q", 1); /* not only DNS */
	w.loop.now_ms += 3000;
	loop_timers_run(&w.loop);
	T_ASSERT(udp_sess_find(&tab, &c1) == NULL);
	T_ASSERT(udp_sess_find(&tab, &c2) != NULL);
	T_EQ_INT(w.stats.udp_timeouts, 1);
	w.loop.now_ms += 8000;
	loop_timers_run(&w.loop);
	T_ASSERT(udp_sess_find(&tab, &c2) == NULL);
	T_EQ_INT(w.stats.udp_timeouts, 2);
	T_EQ_INT(seen.released, 2);
	udp_sess_table_fini(&tab);
	down();
}

int main(void)
{
	T_RUN(test_endpoints);
	T_RUN(test_table);
	T_RUN(test_roundtrip);
	T_RUN(test_deliver_sources);
	T_RUN(test_block);
	T_RUN(test_evict_lru);
	T_RUN(test_timeouts);
	return t_finish();
}
