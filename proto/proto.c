/* SPDX-License-Identifier: MIT */
/* Helpers shared by the proto/ state machines: connect-error mapping, constant-time compare. */
#include "proto.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>

/*
 * The relay reports a failed outbound as a negative errno from connect(2) (an
 * io_uring CQE), from its link timeout, or from resolve.c. Which errno means
 * what for the client:
 *
 *   ECONNREFUSED                          → REFUSED (RST to our SYN)
 *   ENETUNREACH, ENETDOWN                 → NET_UNREACHABLE (no route)
 *   EHOSTUNREACH, EHOSTDOWN               → HOST_UNREACHABLE (ICMP host unreachable)
 *   ENOENT, ENODATA, ENXIO                → HOST_UNREACHABLE: resolve.c reports a
 *                                           name that does not resolve (EAI_NONAME,
 *                                           EAI_NODATA) as one of these
 *   ETIMEDOUT, ETIME, ECANCELED           → TIMEOUT: a kernel SYN timeout, an
 *                                           io_uring timeout SQE (ETIME), or a
 *                                           connect cancelled by its linked timeout
 *   EACCES, EPERM                         → NOT_ALLOWED (ruleset, netfilter, LSM)
 *   anything else                         → GENERAL_FAILURE
 *
 * 0 maps to CONNECT_OK. A positive errno is accepted too, so a caller that
 * forgot the sign still gets the right class.
 */
enum proto_connect_result proto_connect_result_from_errno(int neg_errno)
{
	int e = neg_errno < 0 ? -neg_errno : neg_errno;

	switch (e) {
	case 0:
		return CONNECT_OK;
	case ECONNREFUSED:
		return CONNECT_REFUSED;
	case ENETUNREACH:
	case ENETDOWN:
		return CONNECT_NET_UNREACHABLE;
	case EHOSTUNREACH:
	case EHOSTDOWN:
	case ENOENT:
	case ENODATA:
	case ENXIO:
		return CONNECT_HOST_UNREACHABLE;
	case ETIMEDOUT:
	case ETIME:
	case ECANCELED:
		return CONNECT_TIMEOUT;
	case EACCES:
	case EPERM:
		return CONNECT_NOT_ALLOWED;
	default:
		return CONNECT_GENERAL_FAILURE;
	}
}

/* Make t a TARGET_IP for the 4- or 16-octet address a, keeping t->port. */
static void set_ip(struct proto_target *t, int family, const void *a)
{
	memset(&t->addr, 0, sizeof(t->addr));
	if (family == AF_INET) {
		struct sockaddr_in *sin = (struct sockaddr_in *)&t->addr;

		sin->sin_family = AF_INET;
		sin->sin_port = htons(t->port);
		memcpy(&sin->sin_addr, a, sizeof(sin->sin_addr));
	} else {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&t->addr;

		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(t->port);
		memcpy(&sin6->sin6_addr, a, sizeof(sin6->sin6_addr));
	}
	t->kind = TARGET_IP;
}

/*
 * The IPv4 spellings a resolver parses as numbers. getaddrinfo() (glibc's
 * __inet_aton_exact(), musl's __lookup_ipliteral()) takes a host as an IPv4
 * address when inet_aton() accepts all of it: one to four parts, each
 * decimal, octal (leading 0) or hex (0x), the last one filling the bytes
 * left, so "127.1", "2130706433", "0x7f000001", "017700000001" and "0" are
 * all addresses. inet_aton() itself also stops at a blank and ignores what
 * follows, which getaddrinfo() does not: a host with a blank is a name.
 * Using inet_aton() rather than a parser of our own keeps the two in step by
 * construction, whatever the C library decides a number is.
 */
static bool ipv4_numeric(const char *host, void *a)
{
	struct in_addr in;

	if (!host[0] || strpbrk(host, " \t\n\v\f\r"))
		return false;
	if (inet_aton(host, &in) == 0)
		return false;
	memcpy(a, &in, sizeof(in));
	return true;
}

const char *proto_connect_result_name(enum proto_connect_result r)
{
	static const char *const names[] = {
	        [CONNECT_OK] = "ok",
	        [CONNECT_GENERAL_FAILURE] = "failed",
	        [CONNECT_NOT_ALLOWED] = "blocked",
	        [CONNECT_NET_UNREACHABLE] = "net-unreachable",
	        [CONNECT_HOST_UNREACHABLE] = "host-unreachable",
	        [CONNECT_REFUSED] = "refused",
	        [CONNECT_TIMEOUT] = "timeout",
	        [CONNECT_CMD_UNSUPPORTED] = "cmd-unsupported",
	        [CONNECT_ATYP_UNSUPPORTED] = "atyp-unsupported",
	};

	return (unsigned)r < sizeof(names) / sizeof(names[0]) && names[r] ? names[r] : "failed";
}

bool proto_target_ip_literal(struct proto_target *t)
{
	char inner[PROTO_HOST_MAX + 1];
	size_t n = strnlen(t->host, sizeof(t->host));
	uint8_t a[sizeof(struct in6_addr)];

	if (n == sizeof(t->host))
		return false; /* not NUL-terminated: not ours to parse */
	if (n >= 2 && t->host[0] == '[' && t->host[n - 1] == ']') {
		memcpy(inner, t->host + 1, n - 2);
		inner[n - 2] = '\0';
		if (inet_pton(AF_INET6, inner, a) != 1)
			return false;
		set_ip(t, AF_INET6, a);
		return true;
	}
	if (ipv4_numeric(t->host, a)) {
		set_ip(t, AF_INET, a);
		return true;
	}
	if (inet_pton(AF_INET6, t->host, a) == 1) {
		set_ip(t, AF_INET6, a);
		return true;
	}
	return false;
}

bool proto_target_from_sa(struct proto_target *t, const struct sockaddr_storage *ss)
{
	const void *a;

	memset(t, 0, sizeof(*t));
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *s4 = (const struct sockaddr_in *)ss;
		t->port = ntohs(s4->sin_port);
		a = &s4->sin_addr;
	} else if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)ss;
		t->port = ntohs(s6->sin6_port);
		a = &s6->sin6_addr;
	} else {
		return false;
	}
	if (!t->port) {
		memset(t, 0, sizeof(*t));
		return false;
	}
	t->kind = TARGET_IP;
	t->addr = *ss;
	inet_ntop(ss->ss_family, a, t->host, sizeof(t->host));
	return true;
}
