/* SPDX-License-Identifier: MIT */
/* Socket addresses as text: "a.b.c.d:port" / "[v6]:port" parsed and printed, for every layer. */
#ifndef SPLICED_SOCKADDR_H
#define SPLICED_SOCKADDR_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

/* "[ffff:...:255.255.255.255]:65535" fits with room to spare. */
enum { SA_STR_MAX = 64 };

/* The length connect(2)/bind(2) want for an AF_INET or AF_INET6 address (0 otherwise). */
socklen_t sa_len(int family);
/* IP_TRANSPARENT (IPV6_TRANSPARENT for AF_INET6) on fd: 0 or -1 with errno (EPERM: no CAP_NET_ADMIN). */
int sock_set_transparent(int fd, int family);

/* "1.2.3.4:80", "[::1]:80" or "(family N)" into buf (SA_STR_MAX bytes); returns buf. */
const char *sa_str(const void *sockaddr, char *buf);

/* A decimal port 1..65535, digits only; 0 or -EINVAL. */
int sa_parse_port(const char *s, uint16_t *port);

/*
 * Split "host:port" / "[v6]:port" in place: *host points into s with the
 * brackets removed, *bracketed says whether they were there. On -EINVAL *why
 * says what is wrong, worded to follow the quoted value in a message.
 */
int sa_split_hostport(char *s, char **host, uint16_t *port, bool *bracketed, const char **why);

/*
 * A numeric "a.b.c.d:port" or "[v6]:port" into ss (zeroed first) and *len.
 * 0, -EINVAL with *why, or -ENOMEM.
 */
int sa_parse(const char *s, struct sockaddr_storage *ss, socklen_t *len, const char **why);

#endif
