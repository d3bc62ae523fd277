/* SPDX-License-Identifier: MIT */
/* httpblob: an HTTP/1.1 origin for benchmarks: every GET gets N random octets, sent with sendfile(2). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <unistd.h>

#include "toolkit.h"

/*
 * httpblob ADDR:PORT SIZE[k|m|g]: listens; each connection's request head
 * (up to the blank line) is read, and the answer is "200 OK" with
 * Content-Length SIZE, "Connection: close", then SIZE octets of a random
 * 64 MiB block repeated, through sendfile(2) from a memfd so the origin costs
 * little CPU next to what it feeds. One connection at a time.
 */

enum { BLOCK = 64 << 20 };

static int make_block(void)
{
	int fd = memfd_create("httpblob", MFD_CLOEXEC);
	uint8_t *p;
	uint64_t x = 0x9e3779b97f4a7c15ull;

	if (fd < 0 || ftruncate(fd, BLOCK) < 0)
		return -1;
	p = mmap(NULL, BLOCK, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return -1;
	for (size_t i = 0; i < BLOCK; i += 8) { /* xorshift: the same bytes every run */
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		memcpy(p + i, &x, 8);
	}
	munmap(p, BLOCK);
	return fd;
}

static unsigned long long parse_size(const char *s)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 10);

	switch (*end) {
	case 'k':
		return v << 10;
	case 'm':
		return v << 20;
	case 'g':
		return v << 30;
	default:
		return *end ? 0 : v;
	}
}

static int serve(int c, int blk, unsigned long long size)
{
	char head[16384], hdr[160];
	size_t got = 0;
	int n;

	while (got < sizeof(head) - 1) {
		ssize_t r = recv(c, head + got, sizeof(head) - 1 - got, 0);
		if (r <= 0)
			return -1;
		got += (size_t)r;
		head[got] = '\0';
		if (strstr(head, "\r\n\r\n"))
			break;
	}
	n = snprintf(hdr, sizeof(hdr),
	             "HTTP/1.1 200 OK\r\nContent-Length: %llu\r\nConnection: close\r\n\r\n", size);
	if (tk_write_full(c, hdr, (size_t)n) < 0)
		return -1;
	while (size) {
		off_t off = 0;
		size_t want = size < BLOCK ? (size_t)size : BLOCK;
		while (want) {
			ssize_t s = sendfile(c, blk, &off, want);
			if (s <= 0)
				return -1;
			want -= (size_t)s;
			size -= (unsigned long long)s;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct tk_endpoint ep;
	unsigned long long size;
	int ls, blk, one = 1;

	if (argc != 3) {
		fprintf(stderr, "usage: httpblob ADDR:PORT SIZE[k|m|g]\n");
		return 2;
	}
	size = parse_size(argv[2]);
	if (tk_parse_endpoint(argv[1], &ep, false) < 0 || !size) {
		fprintf(stderr, "httpblob: bad address or size\n");
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	blk = make_block();
	ls = socket(ep.ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (blk < 0 || ls < 0)
		return 1;
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(ls, (struct sockaddr *)&ep.ss, ep.len) < 0 || listen(ls, 64) < 0) {
		perror("httpblob");
		return 1;
	}
	for (;;) {
		int c = accept4(ls, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0) {
			if (errno == EINTR)
				continue;
			return 1;
		}
		serve(c, blk, size);
		close(c);
	}
}
