/* SPDX-License-Identifier: MIT */
/* Socket addresses and proto targets for unit tests, written as text; a typo in a test aborts. */
#ifndef SPLICED_TESTS_T_TARGET_H
#define SPLICED_TESTS_T_TARGET_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"

/* "192.0.2.1" or "2001:db8::1" (a ':' means IPv6) and a port. */
static inline struct sockaddr_storage t_sockaddr(const char *addr, uint16_t port)
{
	struct sockaddr_storage ss;
	struct sockaddr_in *a4 = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&ss;

	memset(&ss, 0, sizeof(ss));
	if (strchr(addr, ':')) {
		a6->sin6_family = AF_INET6;
		a6->sin6_port = htons(port);
		if (inet_pton(AF_INET6, addr, &a6->sin6_addr) != 1)
			abort();
	} else {
		a4->sin_family = AF_INET;
		a4->sin_port = htons(port);
		if (inet_pton(AF_INET, addr, &a4->sin_addr) != 1)
			abort();
	}
	return ss;
}

/* A TARGET_DOMAIN: host as the client sent it (whatever it spells). */
static inline struct proto_target t_name(const char *host, uint16_t port)
{
	struct proto_target t;

	memset(&t, 0, sizeof(t));
	t.kind = TARGET_DOMAIN;
	t.port = port;
	snprintf(t.host, sizeof(t.host), "%s", host);
	return t;
}

/* A TARGET_IP, with its text form in host as the server parsers leave it. */
static inline struct proto_target t_ip(const char *addr, uint16_t port)
{
	struct proto_target t = t_name(addr, port);

	t.kind = TARGET_IP;
	t.addr = t_sockaddr(addr, port);
	return t;
}

#endif
