/* SPDX-License-Identifier: MIT */
/* toolkit: address parsing, blocking I/O and SOCKS5 message helpers shared by the test tools (xfer, connhold, cps, probe). */
#include "toolkit.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

enum {
	HOST_MAX = 128, /* longest literal accepted by tk_parse_endpoint */
};

int tk_split_hostport(char *s, char **host, char **port)
{
	char *colon;

	if (s[0] == '[') {
		char *end = strchr(s, ']');
		if (!end || end[1] != ':')
			return -EINVAL;
		*end = '\0';
		*host = s + 1;
		*port = end + 2;
		return 0;
	}
	colon = strrchr(s, ':');
	if (!colon)
		return -EINVAL;
	*colon = '\0';
	*host = s;
	*port = colon + 1;
	return 0;
}

int tk_numeric_endpoint(const char *host, int port, struct tk_endpoint *ep)
{
	struct sockaddr_in *a4 = (struct sockaddr_in *)&ep->ss;
	struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&ep->ss;

	memset(ep, 0, sizeof(*ep));
	if (inet_pton(AF_INET, host, &a4->sin_addr) == 1) {
		a4->sin_family = AF_INET;
		a4->sin_port = htons(port);
		ep->len = sizeof(*a4);
		return 0;
	}
	if (inet_pton(AF_INET6, host, &a6->sin6_addr) == 1) {
		a6->sin6_family = AF_INET6;
		a6->sin6_port = htons(port);
		ep->len = sizeof(*a6);
		return 0;
	}
	return -EINVAL;
}

int tk_parse_endpoint(const char *s, struct tk_endpoint *ep, bool any_port)
{
	char buf[HOST_MAX + 8], *host, *port;
	size_t n = strlen(s);

	if (n >= sizeof(buf) || tk_split_hostport(memcpy(buf, s, n + 1), &host, &port))
		return -EINVAL;
	int p = atoi(port);
	if (!any_port && (p <= 0 || p > 65535))
		return -EINVAL;
	return tk_numeric_endpoint(host, p, ep);
}

int tk_read_full(int fd, void *buf, size_t n)
{
	char *p = buf;

	while (n) {
		ssize_t r = read(fd, p, n);
		if (r == 0)
			return -EPIPE;
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

int tk_write_full(int fd, const void *buf, size_t n)
{
	const char *p = buf;

	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

void tk_set_timeouts(int fd, int secs)
{
	struct timeval tv = {.tv_sec = secs};

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

size_t tk_socks5_request(unsigned char *req, const struct sockaddr_storage *ss)
{
	req[0] = 5; /* VER */
	req[1] = 1; /* CMD CONNECT */
	req[2] = 0; /* RSV */
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *a = (const struct sockaddr_in *)ss;
		req[3] = 1;
		memcpy(req + 4, &a->sin_addr, 4);
		memcpy(req + 8, &a->sin_port, 2);
		return 10;
	}
	const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)ss;
	req[3] = 4;
	memcpy(req + 4, &a->sin6_addr, 16);
	memcpy(req + 20, &a->sin6_port, 2);
	return 22;
}

size_t tk_socks5_reply_len(const unsigned char *head)
{
	/* 4 header bytes + address + 2 port bytes; a domain has a length byte */
	switch (head[3]) {
	case 1:
		return 4 + 4 + 2;
	case 4:
		return 4 + 16 + 2;
	case 3:
		return 4 + 1 + (size_t)head[4] + 2;
	default:
		return 0;
	}
}

int tk_hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int64_t tk_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
