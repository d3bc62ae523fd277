/* SPDX-License-Identifier: MIT */
/* probe: sends chosen (often malformed) bytes on one TCP connection and reports what came back and how the connection ended. */

/*
 * Usage: probe HOST:PORT [options] [chunks...]
 *   -x HEX     a chunk given in hex ("050100")
 *   -a TEXT    a chunk as text with \r \n \\ \xHH escapes
 *   -z N       a chunk of N pseudo-random bytes (from the seed of -S, default 0)
 *   -S SEED    seed for the following -z chunks
 *   -R N       a chunk of N copies of the byte given by the next -x (e.g. -R 300 -x 41)
 *   -d MS      pause before each chunk after the first (default 0)
 *   -1         send every chunk one byte at a time (with -d between bytes)
 *   -h         shutdown(SHUT_WR) after the last chunk
 *   -k         close right after sending, without reading (prints end=closed)
 *   -r         like -k, but abortively (SO_LINGER 0: the peer gets a RST, so
 *              whatever it answers fails to send; prints end=rst-sent)
 *   -w MS      how long to wait for the peer to close after the last send (default 5000)
 * Prints one line:
 *   reply=HEX|- bytes=N end=eof|reset|timeout|closed ms=T total_ms=T2 [http=CODE]
 * ms counts from the last byte sent (or from the connect when nothing was
 * sent), total_ms from the connect. The peer closing while we still send is
 * reported the same way (end=eof or reset). Exit 0 unless the connect fails (1)
 * or usage is wrong (2).
 */

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
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
	MAX_PAYLOAD = 1 << 20,
	SHOW_BYTES = 64, /* reply bytes printed in hex */
	KEEP_BYTES = 4096,
};

static unsigned char payload[MAX_PAYLOAD];
static size_t chunk_end[256], nchunks, plen;
static unsigned char reply[KEEP_BYTES];
static size_t rlen, rtotal;

static int put(unsigned char b)
{
	if (plen == MAX_PAYLOAD)
		return -ENOSPC;
	payload[plen++] = b;
	return 0;
}

static int add_hex(const char *s)
{
	for (; s[0] && s[1]; s += 2) {
		int h = tk_hexval(s[0]), l = tk_hexval(s[1]);
		if (h < 0 || l < 0 || put((unsigned char)(h << 4 | l)))
			return -EINVAL;
	}
	return s[0] ? -EINVAL : 0;
}

static int add_text(const char *s)
{
	for (; *s; s++) {
		int b = (unsigned char)*s;
		if (*s == '\\' && s[1]) {
			s++;
			if (*s == 'r')
				b = '\r';
			else if (*s == 'n')
				b = '\n';
			else if (*s == 'x' && tk_hexval(s[1]) >= 0 && tk_hexval(s[2]) >= 0) {
				b = tk_hexval(s[1]) << 4 | tk_hexval(s[2]);
				s += 2;
			} else
				b = (unsigned char)*s;
		}
		if (put((unsigned char)b))
			return -ENOSPC;
	}
	return 0;
}

static void end_chunk(void)
{
	if (nchunks < sizeof(chunk_end) / sizeof(chunk_end[0]))
		chunk_end[nchunks++] = plen;
}

/* Reads whatever is there for up to ms; returns 0 open, 1 eof, 2 reset. */
static int drain(int fd, int ms)
{
	int64_t until = tk_now_ms() + ms;
	for (;;) {
		int64_t left = until - tk_now_ms();
		struct pollfd p = {.fd = fd, .events = POLLIN};
		if (left < 0)
			left = 0;
		int n = poll(&p, 1, (int)left);
		if (n <= 0)
			return 0;
		unsigned char buf[4096];
		ssize_t r = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (r == 0)
			return 1;
		if (r < 0) {
			if (errno == EAGAIN || errno == EINTR)
				continue;
			return 2;
		}
		size_t keep = rlen + r > KEEP_BYTES ? KEEP_BYTES - rlen : (size_t)r;
		memcpy(reply + rlen, buf, keep);
		rlen += keep;
		rtotal += r;
	}
}

int main(int argc, char **argv)
{
	struct tk_endpoint ep;
	int delay = 0, wait_ms = 5000;
	bool bytewise = false, half = false, kill_after = false, rst_after = false;
	unsigned repeat = 0;
	uint32_t seed = 0;

	signal(SIGPIPE, SIG_IGN);
	if (argc < 2 || tk_parse_endpoint(argv[1], &ep, true))
		goto usage;
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "-1")) {
			bytewise = true;
		} else if (!strcmp(a, "-h")) {
			half = true;
		} else if (!strcmp(a, "-k")) {
			kill_after = true;
		} else if (!strcmp(a, "-r")) {
			kill_after = rst_after = true;
		} else if (!v) {
			goto usage;
		} else if (!strcmp(a, "-x")) {
			size_t start = plen;
			if (add_hex(v))
				goto usage;
			size_t once = plen - start;
			for (unsigned r = 1; r < repeat; r++)
				for (size_t k = start; k < start + once; k++)
					if (put(payload[k]))
						goto usage;
			repeat = 0;
			end_chunk();
			i++;
		} else if (!strcmp(a, "-a")) {
			if (add_text(v))
				goto usage;
			end_chunk();
			i++;
		} else if (!strcmp(a, "-z")) {
			uint32_t x = 0x9e3779b9u ^ (uint32_t)plen ^ (seed * 2654435761u);
			for (long k = atol(v); k > 0; k--) {
				x ^= x << 13, x ^= x >> 17, x ^= x << 5;
				if (put((unsigned char)x))
					goto usage;
			}
			end_chunk();
			i++;
		} else if (!strcmp(a, "-S")) {
			seed = (uint32_t)strtoul(v, NULL, 0);
			i++;
		} else if (!strcmp(a, "-R")) {
			repeat = (unsigned)atoi(v);
			i++;
		} else if (!strcmp(a, "-d")) {
			delay = atoi(v);
			i++;
		} else if (!strcmp(a, "-w")) {
			wait_ms = atoi(v);
			i++;
		} else {
			goto usage;
		}
	}

	int fd = socket(ep.ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&ep.ss, ep.len)) {
		printf("reply=- bytes=0 end=connect-%s ms=0 total_ms=0\n", strerror(errno));
		return 1;
	}
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	int64_t t0 = tk_now_ms(), tlast = t0;
	int end = 0;
	size_t off = 0;
	for (size_t c = 0; c < nchunks && !end; c++) {
		while (off < chunk_end[c] && !end) {
			if (off > 0 && delay > 0)
				end = drain(fd, delay);
			if (end)
				break;
			size_t n = bytewise ? 1 : chunk_end[c] - off;
			ssize_t w = send(fd, payload + off, n, MSG_NOSIGNAL);
			if (w < 0) {
				/* the peer closed on us: find out how */
				end = drain(fd, 200);
				if (!end)
					end = 2;
				break;
			}
			off += w;
			tlast = tk_now_ms();
		}
	}
	const char *how;
	if (kill_after && !end) {
		static const struct linger abort_linger = {.l_onoff = 1, .l_linger = 0};
		how = "closed";
		if (rst_after) {
			setsockopt(fd, SOL_SOCKET, SO_LINGER, &abort_linger, sizeof(abort_linger));
			how = "rst-sent";
		}
	} else {
		if (!end && half)
			shutdown(fd, SHUT_WR);
		if (!end)
			end = drain(fd, wait_ms);
		how = end == 1 ? "eof" : end == 2 ? "reset" : "timeout";
	}
	int64_t t1 = tk_now_ms();
	close(fd);

	printf("reply=");
	if (!rlen)
		printf("-");
	for (size_t i = 0; i < rlen && i < SHOW_BYTES; i++)
		printf("%02x", reply[i]);
	printf(" bytes=%zu sent=%zu end=%s ms=%lld total_ms=%lld", rtotal, off, how,
	       (long long)(t1 - tlast), (long long)(t1 - t0));
	if (rlen >= 12 && !memcmp(reply, "HTTP/1.", 7))
		printf(" http=%.3s", (const char *)reply + 9);
	printf("\n");
	return 0;
usage:
	fprintf(stderr,
	        "usage: probe HOST:PORT [-x HEX] [-a TEXT] [-z N] [-S SEED] [-R N -x HEX] [-d MS] [-1] [-h] [-k] [-r] [-w MS]\n");
	return 2;
}
