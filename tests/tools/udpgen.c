/* SPDX-License-Identifier: MIT */
/* udpgen: a UDP load generator through a SOCKS5 proxy's UDP ASSOCIATE, with its own sink (bench/udp). */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "toolkit.h"

/*
 * udpgen -p PROXY -f FLOWS -s SIZE [-r RATE] [-d SECONDS] [-u USER:PASS]
 *
 * Opens FLOWS associations with the SOCKS5 proxy at PROXY (UDP ASSOCIATE
 * for 0.0.0.0:0, RFC 1928 section 7; each its own UDP socket connected to
 * the relay the reply names), and a sink: a UDP socket on 127.0.0.1 that a
 * thread of its own drains with recvmmsg(2). For SECONDS it sends
 * datagrams of SIZE payload octets to the sink through every flow in turn,
 * BATCH at a time with sendmmsg(2), RATE datagrams per second in all
 * (paced every millisecond; 0: as fast as it can). Then it waits 300 ms
 * for stragglers and prints one line of JSON:
 *   {"flows":F,"size":S,"offered_rate":R,"seconds":T,"sent":N,"received":M,
 *    "send_errors":E,"rate":M/T,"gbps":M*S*8/T/1e9,"loss":1-M/N}
 * A payload carries its flow and sequence number; the sink counts only
 * datagrams with the run's tag, so nothing else on the port is counted.
 */

enum { BATCH = 32, MAX_FLOWS = 1024, MAX_SIZE = 65000, HDR = 10 };

struct flow {
	int tcp, udp;
};

static atomic_ullong rx_count, rx_bytes;
static atomic_bool rx_stop;
static int sink_fd;
static uint32_t run_tag;

static void die(const char *what)
{
	fprintf(stderr, "udpgen: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void *sink_main(void *arg)
{
	static uint8_t bufs[BATCH][MAX_SIZE + 64];
	struct mmsghdr mm[BATCH];
	struct iovec iov[BATCH];
	struct timeval tv = {.tv_usec = 100000};

	(void)arg;
	setsockopt(sink_fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	while (!atomic_load(&rx_stop)) {
		int n;

		for (int i = 0; i < BATCH; i++) {
			iov[i] = (struct iovec){.iov_base = bufs[i], .iov_len = sizeof(bufs[i])};
			mm[i].msg_hdr = (struct msghdr){.msg_iov = &iov[i], .msg_iovlen = 1};
		}
		n = recvmmsg(sink_fd, mm, BATCH, MSG_WAITFORONE, NULL);
		for (int i = 0; i < n; i++) {
			uint32_t tag;

			if (mm[i].msg_len < 4)
				continue;
			memcpy(&tag, bufs[i], 4);
			if (tag != run_tag)
				continue;
			atomic_fetch_add_explicit(&rx_count, 1, memory_order_relaxed);
			atomic_fetch_add_explicit(&rx_bytes, mm[i].msg_len, memory_order_relaxed);
		}
	}
	return NULL;
}

/* One association: greeting (with RFC 1929 credentials if given), UDP ASSOCIATE, relay socket. */
static void associate(struct flow *f, const struct tk_endpoint *proxy, const char *user,
                      const char *pass)
{
	unsigned char b[600], rep[262];
	struct tk_endpoint relay;
	size_t n;

	f->tcp = socket(proxy->ss.ss_family, SOCK_STREAM, 0);
	if (f->tcp < 0 || connect(f->tcp, (const struct sockaddr *)&proxy->ss, proxy->len) < 0)
		die("connect to the proxy");
	tk_set_timeouts(f->tcp, 10);
	if (user) {
		b[0] = 5, b[1] = 1, b[2] = 2;
		if (tk_write_full(f->tcp, b, 3) || tk_read_full(f->tcp, b, 2) || b[1] != 2)
			die("greeting (user/pass refused)");
		n = 0;
		b[n++] = 1;
		b[n++] = (unsigned char)strlen(user);
		memcpy(b + n, user, strlen(user));
		n += strlen(user);
		b[n++] = (unsigned char)strlen(pass);
		memcpy(b + n, pass, strlen(pass));
		n += strlen(pass);
		if (tk_write_full(f->tcp, b, n) || tk_read_full(f->tcp, b, 2) || b[1] != 0)
			die("authentication");
	} else {
		b[0] = 5, b[1] = 1, b[2] = 0;
		if (tk_write_full(f->tcp, b, 3) || tk_read_full(f->tcp, b, 2) || b[1] != 0)
			die("greeting");
	}
	memcpy(b, "\x05\x03\x00\x01\x00\x00\x00\x00\x00\x00", 10);
	if (tk_write_full(f->tcp, b, 10) || tk_read_full(f->tcp, rep, TK_SOCKS5_REPLY_HEAD))
		die("UDP ASSOCIATE");
	if (rep[1] != 0) {
		fprintf(stderr, "udpgen: UDP ASSOCIATE refused: REP %u\n", rep[1]);
		exit(1);
	}
	n = tk_socks5_reply_len(rep);
	if (!n || tk_read_full(f->tcp, rep + TK_SOCKS5_REPLY_HEAD, n - TK_SOCKS5_REPLY_HEAD))
		die("UDP ASSOCIATE reply");
	memset(&relay, 0, sizeof(relay));
	if (rep[3] == 1) {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&relay.ss;

		s4->sin_family = AF_INET;
		memcpy(&s4->sin_addr, rep + 4, 4);
		memcpy(&s4->sin_port, rep + 8, 2);
		if (s4->sin_addr.s_addr == 0) /* "send to me" */
			s4->sin_addr = ((const struct sockaddr_in *)&proxy->ss)->sin_addr;
		relay.len = sizeof(*s4);
	} else if (rep[3] == 4) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&relay.ss;

		s6->sin6_family = AF_INET6;
		memcpy(&s6->sin6_addr, rep + 4, 16);
		memcpy(&s6->sin6_port, rep + 20, 2);
		relay.len = sizeof(*s6);
	} else {
		fprintf(stderr, "udpgen: the relay is named, not numbered (ATYP %u)\n", rep[3]);
		exit(1);
	}
	f->udp = socket(relay.ss.ss_family, SOCK_DGRAM, 0);
	if (f->udp < 0 || connect(f->udp, (const struct sockaddr *)&relay.ss, relay.len) < 0)
		die("connect to the relay");
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	const char *proxy_s = NULL, *creds = NULL;
	char *user = NULL, *pass = NULL;
	unsigned flows = 1, size = 1400;
	double rate = 0, seconds = 5;
	struct tk_endpoint proxy;
	struct sockaddr_in sink = {.sin_family = AF_INET,
	                           .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t sl = sizeof(sink);
	static uint8_t dg[BATCH][HDR + MAX_SIZE];
	struct mmsghdr mm[BATCH];
	struct iovec iov[BATCH];
	struct flow *f;
	unsigned long long sent = 0, errs = 0, rx;
	pthread_t th;
	int sndbuf = 4 << 20, rcvbuf = 16 << 20, c;
	double t0, t1, elapsed;
	unsigned cur = 0;

	while ((c = getopt(argc, argv, "p:f:s:r:d:u:h")) != -1) {
		switch (c) {
		case 'p':
			proxy_s = optarg;
			break;
		case 'f':
			flows = (unsigned)atoi(optarg);
			break;
		case 's':
			size = (unsigned)atoi(optarg);
			break;
		case 'r':
			rate = atof(optarg);
			break;
		case 'd':
			seconds = atof(optarg);
			break;
		case 'u':
			creds = optarg;
			break;
		default:
			fprintf(stderr,
			        "usage: udpgen -p PROXY-HOST:PORT [-f FLOWS] [-s SIZE] [-r RATE] "
			        "[-d SECONDS] [-u USER:PASS]\n");
			return c == 'h' ? 0 : 2;
		}
	}
	if (!proxy_s || flows < 1 || flows > MAX_FLOWS || size < 16 || size > MAX_SIZE ||
	    seconds <= 0 || rate < 0) {
		fprintf(stderr, "udpgen: -p is required; 1 <= -f <= %d, 16 <= -s <= %d, -d > 0\n",
		        MAX_FLOWS, MAX_SIZE);
		return 2;
	}
	if (tk_parse_endpoint(proxy_s, &proxy, false) < 0) {
		fprintf(stderr, "udpgen: bad proxy address %s\n", proxy_s);
		return 2;
	}
	if (creds) {
		user = strdup(creds);
		pass = strchr(user, ':');
		if (!pass) {
			fprintf(stderr, "udpgen: -u wants USER:PASS\n");
			return 2;
		}
		*pass++ = '\0';
	}
	srand((unsigned)time(NULL) ^ (unsigned)getpid());
	run_tag = (uint32_t)rand() | 1u;
	sink_fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (sink_fd < 0 || bind(sink_fd, (struct sockaddr *)&sink, sizeof(sink)) < 0 ||
	    getsockname(sink_fd, (struct sockaddr *)&sink, &sl) < 0)
		die("sink socket");
	setsockopt(sink_fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof(rcvbuf));
	f = calloc(flows, sizeof(*f));
	for (unsigned i = 0; i < flows; i++) {
		associate(&f[i], &proxy, user, pass);
		setsockopt(f[i].udp, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
	}
	/* The header: RSV RSV FRAG ATYP=1 127.0.0.1 sink-port; then tag, flow, sequence. */
	for (int i = 0; i < BATCH; i++) {
		uint8_t *p = dg[i];

		p[0] = p[1] = p[2] = 0;
		p[3] = 1;
		memcpy(p + 4, &sink.sin_addr, 4);
		memcpy(p + 8, &sink.sin_port, 2);
		memset(p + HDR, 0x5a, size);
		memcpy(p + HDR, &run_tag, 4);
		iov[i] = (struct iovec){.iov_base = p, .iov_len = HDR + size};
		mm[i].msg_hdr = (struct msghdr){.msg_iov = &iov[i], .msg_iovlen = 1};
	}
	if (pthread_create(&th, NULL, sink_main, NULL))
		die("sink thread");
	t0 = now_s();
	for (;;) {
		unsigned want = BATCH;
		int n;

		elapsed = now_s() - t0;
		if (elapsed >= seconds)
			break;
		if (rate > 0) {
			double due = rate * elapsed;

			if ((double)sent + (double)errs >= due) {
				struct timespec ms = {.tv_nsec = 200000};

				nanosleep(&ms, NULL);
				continue;
			}
			if (due - (double)(sent + errs) < BATCH)
				want = (unsigned)(due - (double)(sent + errs)) + 1;
		}
		for (unsigned i = 0; i < want; i++) {
			uint32_t seq = (uint32_t)(sent + i);

			memcpy(dg[i] + HDR + 4, &cur, 4);
			memcpy(dg[i] + HDR + 8, &seq, 4);
		}
		n = sendmmsg(f[cur].udp, mm, want, 0);
		if (n < 0) {
			errs += want;
		} else {
			sent += (unsigned)n;
			errs += want - (unsigned)n;
		}
		cur = (cur + 1) % flows;
	}
	t1 = now_s();
	usleep(300000);
	atomic_store(&rx_stop, true);
	pthread_join(th, NULL);
	rx = atomic_load(&rx_count);
	elapsed = t1 - t0;
	printf("{\"flows\":%u,\"size\":%u,\"offered_rate\":%.0f,\"seconds\":%.3f,\"sent\":%llu,"
	       "\"received\":%llu,\"send_errors\":%llu,\"rate\":%.0f,\"gbps\":%.4f,\"loss\":%.6f}\n",
	       flows, size, rate, elapsed, sent, rx, errs, (double)rx / elapsed,
	       (double)rx * size * 8 / elapsed / 1e9, sent ? 1.0 - (double)rx / (double)sent : 0.0);
	for (unsigned i = 0; i < flows; i++) {
		close(f[i].udp);
		close(f[i].tcp);
	}
	free(f);
	free(user);
	return 0;
}
