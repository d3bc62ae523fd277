/* SPDX-License-Identifier: MIT */
/* Socket addresses as text: parse "host:port" forms, print addresses for logs and messages. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sockaddr.h"

socklen_t sa_len(int family)
{
	switch (family) {
	case AF_INET:
		return sizeof(struct sockaddr_in);
	case AF_INET6:
		return sizeof(struct sockaddr_in6);
	default:
		return 0;
	}
}

const char *sa_str(const void *sockaddr, char *buf)
{
	const struct sockaddr *sa = sockaddr;
	char ip[INET6_ADDRSTRLEN];

	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = sockaddr;
		inet_ntop(AF_INET, &in->sin_addr, ip, sizeof(ip));
		snprintf(buf, SA_STR_MAX, "%s:%u", ip, ntohs(in->sin_port));
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = sockaddr;
		inet_ntop(AF_INET6, &in6->sin6_addr, ip, sizeof(ip));
		snprintf(buf, SA_STR_MAX, "[%s]:%u", ip, ntohs(in6->sin6_port));
	} else {
		snprintf(buf, SA_STR_MAX, "(family %d)", sa->sa_family);
	}
	return buf;
}

int sa_parse_port(const char *s, uint16_t *port)
{
	unsigned v = 0;
	const char *q = s;

	for (; *q >= '0' && *q <= '9'; q++) {
		v = v * 10 + (unsigned)(*q - '0');
		if (v > 65535)
			return -EINVAL;
	}
	if (q == s || *q || v == 0)
		return -EINVAL;
	*port = (uint16_t)v;
	return 0;
}

int sa_split_hostport(char *s, char **host, uint16_t *port, bool *bracketed, const char **why)
{
	char *colon;

	*bracketed = s[0] == '[';
	if (*bracketed) {
		char *close = strchr(s, ']');
		if (!close) {
			*why = "has no closing ']'";
			return -EINVAL;
		}
		*close = '\0';
		*host = s + 1;
		colon = close + 1;
		if (*colon != ':') {
			*why = *colon ? "has text after ']' that is not \":port\"" : "has no port";
			return -EINVAL;
		}
	} else {
		colon = strrchr(s, ':');
		if (!colon) {
			*why = "has no port";
			return -EINVAL;
		}
		*host = s;
		if (memchr(s, ':', (size_t)(colon - s))) {
			*why = "needs brackets around the IPv6 address: [addr]:port";
			return -EINVAL;
		}
	}
	*colon = '\0';
	if (sa_parse_port(colon + 1, port) < 0) {
		*why = "has a bad port (1..65535)";
		return -EINVAL;
	}
	if (**host == '\0') {
		*why = "has no host";
		return -EINVAL;
	}
	return 0;
}

int sa_parse(const char *str, struct sockaddr_storage *ss, socklen_t *len, const char **why)
{
	char *s = strdup(str), *host;
	uint16_t port;
	bool v6;
	int rc = -ENOMEM;

	if (!s)
		return rc;
	memset(ss, 0, sizeof(*ss));
	rc = sa_split_hostport(s, &host, &port, &v6, why);
	if (rc < 0)
		goto out;
	rc = -EINVAL;
	if (v6) {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;
		if (inet_pton(AF_INET6, host, &a->sin6_addr) != 1) {
			*why = "is not an IPv6 address and port ([addr]:port)";
			goto out;
		}
		a->sin6_family = AF_INET6;
		a->sin6_port = htons(port);
	} else {
		struct sockaddr_in *a = (struct sockaddr_in *)ss;
		if (inet_pton(AF_INET, host, &a->sin_addr) != 1) {
			*why = "is not an IP address and port (a.b.c.d:port or [v6]:port)";
			goto out;
		}
		a->sin_family = AF_INET;
		a->sin_port = htons(port);
	}
	*len = sa_len(ss->ss_family);
	rc = 0;
out:
	free(s);
	return rc;
}

int sock_set_transparent(int fd, int family)
{
	int one = 1;

	if (family == AF_INET6)
		return setsockopt(fd, IPPROTO_IPV6, IPV6_TRANSPARENT, &one, sizeof(one));
	return setsockopt(fd, IPPROTO_IP, IP_TRANSPARENT, &one, sizeof(one));
}
