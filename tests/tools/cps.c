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

#include "toolkit.h"

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

static struct tk_endpoint proxy, targets[MAX_TARGETS];
static int ntargets, use_proxy, msg_len = 32;
static atomic_bool stop;
static atomic_ulong total_ok, errors[E_COUNT];

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

static int one_conn(int tid, unsigned long k, unsigned char *msg, unsigned char *back)
{
	const struct tk_endpoint *t = &targets[k % ntargets];
	const struct tk_endpoint *dst = use_proxy ? &proxy : t;
	int fd = socket(dst->ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return E_SOCKET;
	int one = 1, rc = -1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	tk_set_timeouts(fd, IO_TIMEOUT_S);
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
