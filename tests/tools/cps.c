/* SPDX-License-Identifier: MIT */
/* cps: measures short connections per second (connect, SOCKS5 handshake, CONNECT, small echo exchange, close) from several client threads. */

/*
 * Usage: cps [-s PROXY] -t TARGET [-t TARGET...] [-j THREADS] [-d SECONDS] [-m BYTES]
 *   -s HOST:PORT  SOCKS5 proxy (no auth); without it the target is dialled directly
 *   -t HOST:PORT  echo server; connection k goes to target k mod count
 *   -j N          client threads (default 8)
 *   -d S          duration in seconds (default 5)
 *   -m N          bytes sent and expected back on each connection (default 32)
 * Each thread binds its own source address 127.0.0.(10 + thread) (loopback
 * only) so the client side has a full ephemeral port range per thread: at
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
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum {
	MAX_THREADS = 64,
	MAX_TARGETS = 32,
	MAX_MSG = 4096,
	IO_TIMEOUT_S = 5, /* a stuck proxy turns into an error, not a hang */
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

struct endpoint {
	struct sockaddr_storage ss;
	socklen_t len;
};

static struct endpoint proxy, targets[MAX_TARGETS];
static int ntargets, use_proxy, msg_len = 32;
static atomic_bool stop;
static atomic_ulong total_ok, errors[E_COUNT];

static int parse_endpoint(const char *s, struct endpoint *ep)
{
	char host[128];
	const char *colon = strrchr(s, ':');
	if (!colon || (size_t)(colon - s) >= sizeof(host))
		return -EINVAL;
	size_t hl = colon - s;
	if (s[0] == '[' && hl >= 2 && s[hl - 1] == ']') {
		memcpy(host, s + 1, hl - 2);
		host[hl - 2] = 0;
	} else {
		memcpy(host, s, hl);
		host[hl] = 0;
	}
	int port = atoi(colon + 1);
	memset(ep, 0, sizeof(*ep));
	struct sockaddr_in *a4 = (struct sockaddr_in *)&ep->ss;
	struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&ep->ss;
	if (port > 0 && port < 65536 && inet_pton(AF_INET, host, &a4->sin_addr) == 1) {
		a4->sin_family = AF_INET;
		a4->sin_port = htons(port);
		ep->len = sizeof(*a4);
		return 0;
	}
	if (port > 0 && port < 65536 && inet_pton(AF_INET6, host, &a6->sin6_addr) == 1) {
		a6->sin6_family = AF_INET6;
		a6->sin6_port = htons(port);
		ep->len = sizeof(*a6);
		return 0;
	}
	return -EINVAL;
}

static int read_full(int fd, void *p, size_t n)
{
	size_t got = 0;
	while (got < n) {
		ssize_t r = recv(fd, (char *)p + got, n - got, 0);
		if (r <= 0)
			return -1;
		got += r;
	}
	return 0;
}

static int write_full(int fd, const void *p, size_t n)
{
	return send(fd, p, n, MSG_NOSIGNAL) == (ssize_t)n ? 0 : -1;
}

/* SOCKS5 greeting, method choice, CONNECT request and reply (RFC 1928). */
static int socks_connect(int fd, const struct endpoint *t)
{
	static const unsigned char greet[3] = {5, 1, 0};
	unsigned char req[22] = {5, 1, 0}, rep[22];
	size_t n;
	if (write_full(fd, greet, 3) || read_full(fd, rep, 2) || rep[0] != 5 || rep[1] != 0)
		return E_GREETING;
	if (t->ss.ss_family == AF_INET) {
		const struct sockaddr_in *a = (const struct sockaddr_in *)&t->ss;
		req[3] = 1;
		memcpy(req + 4, &a->sin_addr, 4);
		memcpy(req + 8, &a->sin_port, 2);
		n = 10;
	} else {
		const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)&t->ss;
		req[3] = 4;
		memcpy(req + 4, &a->sin6_addr, 16);
		memcpy(req + 20, &a->sin6_port, 2);
		n = 22;
	}
	if (write_full(fd, req, n) || read_full(fd, rep, 5) || rep[1] != 0)
		return E_REPLY;
	/* rest of BND.ADDR + BND.PORT: 4+2-1 for IPv4, 16+2-1 for IPv6 */
	size_t rest = rep[3] == 1 ? 5 : rep[3] == 4 ? 17 : rep[3] == 3 ? rep[4] + 2u : 0;
	if (!rest || read_full(fd, rep, rest))
		return E_REPLY;
	return -1;
}

static int one_conn(int tid, unsigned long k, unsigned char *msg, unsigned char *back)
{
	const struct endpoint *t = &targets[k % ntargets];
	const struct endpoint *dst = use_proxy ? &proxy : t;
	int fd = socket(dst->ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return E_SOCKET;
	int one = 1, rc = -1;
	struct timeval tv = {.tv_sec = IO_TIMEOUT_S};
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (dst->ss.ss_family == AF_INET) {
		struct sockaddr_in src = {.sin_family = AF_INET};
		src.sin_addr.s_addr = htonl(0x7f000000u | (10u + (unsigned)tid));
		/* choose the port at connect time, per destination */
		setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof(one));
		bind(fd, (struct sockaddr *)&src, sizeof(src));
	}
	if (connect(fd, (struct sockaddr *)&dst->ss, dst->len)) {
		rc = E_CONNECT;
		goto out;
	}
	if (use_proxy && (rc = socks_connect(fd, t)) >= 0)
		goto out;
	msg[0] = (unsigned char)k;
	if (write_full(fd, msg, msg_len) || read_full(fd, back, msg_len) ||
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
		int rc = one_conn(tid, k, msg, back);
		if (rc < 0)
			atomic_fetch_add_explicit(&total_ok, 1, memory_order_relaxed);
		else
			atomic_fetch_add_explicit(&errors[rc], 1, memory_order_relaxed);
		k += MAX_THREADS;
	}
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
			if (parse_endpoint(v, &proxy))
				goto usage;
			use_proxy = 1;
		} else if (!strcmp(a, "-t")) {
			if (ntargets == MAX_TARGETS || parse_endpoint(v, &targets[ntargets++]))
				goto usage;
		} else if (!strcmp(a, "-j")) {
			nthreads = atoi(v);
		} else if (!strcmp(a, "-d")) {
			dur = atof(v);
		} else if (!strcmp(a, "-m")) {
			msg_len = atoi(v);
		} else {
			goto usage;
		}
	}
	if (!ntargets || nthreads < 1 || nthreads > MAX_THREADS || msg_len < 1 || msg_len > MAX_MSG)
		goto usage;

	pthread_t th[MAX_THREADS];
	double t0 = now_s();
	for (int i = 0; i < nthreads; i++)
		pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i);
	struct timespec d = {.tv_sec = (time_t)dur, .tv_nsec = (long)((dur - (time_t)dur) * 1e9)};
	nanosleep(&d, NULL);
	atomic_store(&stop, true);
	for (int i = 0; i < nthreads; i++)
		pthread_join(th[i], NULL);
	double secs = now_s() - t0;
	unsigned long ok = atomic_load(&total_ok), bad = 0;
	for (int e = 0; e < E_COUNT; e++)
		bad += atomic_load(&errors[e]);
	printf("cps %.0f conns %lu errors %lu secs %.2f threads %d", ok / secs, ok, bad, secs,
	       nthreads);
	for (int e = 0; e < E_COUNT; e++)
		if (atomic_load(&errors[e]))
			printf(" %s=%lu", err_name[e], atomic_load(&errors[e]));
	printf("\n");
	return ok ? 0 : 1;
usage:
	fprintf(stderr,
	        "usage: cps [-s PROXY] -t TARGET... [-j THREADS] [-d SECONDS] [-m BYTES]\n");
	return 2;
}
