/* SPDX-License-Identifier: MIT */
/* Unit tests for proto/proto.c: errno mapping, constant-time compare, IP literals. */
#include "t.h"

#include "ct.h"
#include "proto.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>

T_SUITE("proto");

static void test_errno_mapping(void)
{
	static const struct {
		int err;
		enum proto_connect_result want;
	} map[] = {
	        {0, CONNECT_OK},
	        {-ECONNREFUSED, CONNECT_REFUSED},
	        {-ENETUNREACH, CONNECT_NET_UNREACHABLE},
	        {-ENETDOWN, CONNECT_NET_UNREACHABLE},
	        {-EHOSTUNREACH, CONNECT_HOST_UNREACHABLE},
	        {-EHOSTDOWN, CONNECT_HOST_UNREACHABLE},
	        {-ENOENT, CONNECT_HOST_UNREACHABLE},
	        {-ENODATA, CONNECT_HOST_UNREACHABLE},
	        {-ENXIO, CONNECT_HOST_UNREACHABLE},
	        {-ETIMEDOUT, CONNECT_TIMEOUT},
	        {-ETIME, CONNECT_TIMEOUT},
	        {-ECANCELED, CONNECT_TIMEOUT},
	        {-EACCES, CONNECT_NOT_ALLOWED},
	        {-EPERM, CONNECT_NOT_ALLOWED},
	        {-ECONNRESET, CONNECT_GENERAL_FAILURE},
	        {-EADDRNOTAVAIL, CONNECT_GENERAL_FAILURE},
	        {-EMFILE, CONNECT_GENERAL_FAILURE},
	        {-EINVAL, CONNECT_GENERAL_FAILURE},
	        {ECONNREFUSED, CONNECT_REFUSED}, /* sign forgotten */
	};

	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (proto_connect_result_from_errno(map[i].err) != map[i].want)
			T_FAILF("errno %d → %d, want %d", map[i].err,
			        proto_connect_result_from_errno(map[i].err), map[i].want);
}

static void test_ct_equal(void)
{
	T_ASSERT(ct_equal("secret", 6, "secret", 6));
	T_ASSERT(!ct_equal("secret", 6, "secreT", 6));
	T_ASSERT(!ct_equal("Secret", 6, "secret", 6));
	T_ASSERT(!ct_equal("secret", 6, "secret!", 7));
	T_ASSERT(!ct_equal("secret!", 7, "secret", 6));
	T_ASSERT(!ct_equal("", 0, "a", 1));
	T_ASSERT(ct_equal("", 0, "", 0));
	T_ASSERT(ct_equal("a\0b", 3, "a\0b", 3));
	T_ASSERT(!ct_equal("a\0b", 3, "a\0c", 3));
}

static struct proto_target lit(const char *host, uint16_t port)
{
	struct proto_target t;

	memset(&t, 0, sizeof(t));
	t.kind = TARGET_DOMAIN;
	t.port = port;
	snprintf(t.host, sizeof(t.host), "%s", host);
	return t;
}

static void test_ip_literal(void)
{
	struct proto_target t = lit("203.0.113.7", 8443);
	const struct sockaddr_in *sin = (const struct sockaddr_in *)&t.addr;
	const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)&t.addr;

	T_ASSERT(proto_target_ip_literal(&t));
	T_EQ_INT(t.kind, TARGET_IP);
	T_EQ_INT(sin->sin_family, AF_INET);
	T_EQ_INT(ntohl(sin->sin_addr.s_addr), 0xcb007107);
	T_EQ_INT(ntohs(sin->sin_port), 8443);
	T_EQ_STR(t.host, "203.0.113.7");

	t = lit("2001:db8::1", 80);
	T_ASSERT(proto_target_ip_literal(&t));
	T_EQ_INT(sin6->sin6_family, AF_INET6);
	T_EQ_INT(sin6->sin6_addr.s6_addr[1], 0x01);
	T_EQ_INT(ntohs(sin6->sin6_port), 80);

	t = lit("[::1]", 80);
	T_ASSERT(proto_target_ip_literal(&t));
	T_EQ_INT(sin6->sin6_family, AF_INET6);
	T_ASSERT(IN6_IS_ADDR_LOOPBACK(&sin6->sin6_addr));

	static const char *not_ip[] = {"example.com", "1.2.3",       "1.2.3.256", "[1.2.3.4]",
	                               "[]",          "[::1",        "::1]",      "",
	                               "0x7f.1",      "fe80::1%eth0"};
	for (size_t i = 0; i < sizeof(not_ip) / sizeof(not_ip[0]); i++) {
		t = lit(not_ip[i], 80);
		if (proto_target_ip_literal(&t) || t.kind != TARGET_DOMAIN)
			T_FAILF("\"%s\" taken as an IP literal", not_ip[i]);
	}

	/* host without a NUL is left alone */
	memset(t.host, '1', sizeof(t.host));
	t.kind = TARGET_DOMAIN;
	T_ASSERT(!proto_target_ip_literal(&t));
}

int main(void)
{
	T_RUN(test_errno_mapping);
	T_RUN(test_ct_equal);
	T_RUN(test_ip_literal);
	return t_finish();
}
