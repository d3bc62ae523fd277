/* SPDX-License-Identifier: MIT */
/* SOCKS5's ATYP ADDR PORT field (RFC 1928 sections 4-7), decoded and encoded in one place. */
#include "socks5_addr.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <string.h>

#include "socks5.h"

enum {
	PORT_LEN = 2,
	IPV4_LEN = 4,
	IPV6_LEN = 16,
};

long socks5_addr_len(const uint8_t *p, size_t avail)
{
	if (avail < 1)
		return 0;
	switch (p[0]) {
	case SOCKS5_ATYP_IPV4:
		return 1 + IPV4_LEN + PORT_LEN;
	case SOCKS5_ATYP_IPV6:
		return 1 + IPV6_LEN + PORT_LEN;
	case SOCKS5_ATYP_DOMAIN:
		return avail < 2 ? 0 : 1 + 1 + (long)p[1] + PORT_LEN;
	default:
		return -1;
	}
}

static uint16_t get_port(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static int addr_get(const uint8_t *p, struct proto_target *t, bool text)
{
	const uint8_t *a = p + 1;
	size_t n;

	if (text) {
		memset(t, 0, sizeof(*t));
	} else {
		/* What the kinds below set: the address's first 28 octets, the name's first. */
		memset(&t->addr, 0, sizeof(struct sockaddr_in6));
		t->host[0] = '\0';
	}
	switch (p[0]) {
	case SOCKS5_ATYP_IPV4: {
		struct sockaddr_in *sin = (struct sockaddr_in *)&t->addr;

		t->kind = TARGET_IP;
		t->port = get_port(a + IPV4_LEN);
		sin->sin_family = AF_INET;
		memcpy(&sin->sin_addr, a, IPV4_LEN);
		sin->sin_port = htons(t->port);
		if (text)
			inet_ntop(AF_INET, a, t->host, sizeof(t->host));
		return 0;
	}
	case SOCKS5_ATYP_IPV6: {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&t->addr;

		t->kind = TARGET_IP;
		t->port = get_port(a + IPV6_LEN);
		sin6->sin6_family = AF_INET6;
		memcpy(&sin6->sin6_addr, a, IPV6_LEN);
		sin6->sin6_port = htons(t->port);
		if (text)
			inet_ntop(AF_INET6, a, t->host, sizeof(t->host));
		return 0;
	}
	case SOCKS5_ATYP_DOMAIN:
		n = a[0];
		if (n == 0 || memchr(a + 1, 0, n))
			return -1;
		t->kind = TARGET_DOMAIN;
		t->port = get_port(a + 1 + n);
		memcpy(t->host, a + 1, n);
		t->host[n] = '\0';
		/* "10.0.0.1" sent as a name needs no resolver round trip, and a cidr rule sees it. */
		proto_target_ip_literal(t);
		return 0;
	default:
		return -1;
	}
}

int socks5_addr_get(const uint8_t *p, struct proto_target *t)
{
	return addr_get(p, t, true);
}

int socks5_addr_get_bare(const uint8_t *p, struct proto_target *t)
{
	return addr_get(p, t, false);
}

size_t socks5_addr_put_sockaddr(uint8_t *p, const struct sockaddr *sa)
{
	if (sa && sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)sa;

		if (IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr)) {
			p[0] = SOCKS5_ATYP_IPV4;
			memcpy(p + 1, &s6->sin6_addr.s6_addr[12], IPV4_LEN);
			memcpy(p + 1 + IPV4_LEN, &s6->sin6_port, PORT_LEN);
			return 1 + IPV4_LEN + PORT_LEN;
		}
		p[0] = SOCKS5_ATYP_IPV6;
		memcpy(p + 1, &s6->sin6_addr, IPV6_LEN);
		memcpy(p + 1 + IPV6_LEN, &s6->sin6_port, PORT_LEN);
		return 1 + IPV6_LEN + PORT_LEN;
	}
	p[0] = SOCKS5_ATYP_IPV4;
	if (sa && sa->sa_family == AF_INET) {
		const struct sockaddr_in *s4 = (const struct sockaddr_in *)sa;

		memcpy(p + 1, &s4->sin_addr, IPV4_LEN);
		memcpy(p + 1 + IPV4_LEN, &s4->sin_port, PORT_LEN);
	} else {
		memset(p + 1, 0, IPV4_LEN + PORT_LEN);
	}
	return 1 + IPV4_LEN + PORT_LEN;
}

size_t socks5_addr_put_target(uint8_t *p, const struct proto_target *t)
{
	size_t n;

	if (t->kind == TARGET_DOMAIN) {
		n = strlen(t->host);
		p[0] = SOCKS5_ATYP_DOMAIN;
		p[1] = (uint8_t)n;
		memcpy(p + 2, t->host, n);
		p[2 + n] = t->port >> 8;
		p[3 + n] = t->port & 0xff;
		return 4 + n;
	}
	n = socks5_addr_put_sockaddr(p, (const struct sockaddr *)&t->addr);
	if (p[n - 2] == 0 && p[n - 1] == 0) {
		p[n - 2] = t->port >> 8;
		p[n - 1] = t->port & 0xff;
	}
	return n;
}
