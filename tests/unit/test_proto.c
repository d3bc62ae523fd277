/* SPDX-License-Identifier: MIT */
/* Unit tests for proto/proto.c: errno mapping, constant-time compare, IP literals in every spelling. */
#include "t.h"
#include "t_target.h"

#include "ct.h"
#include "proto.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
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

static void test_ip_literal(void)
{
	struct proto_target t = t_name("203.0.113.7", 8443);
	const struct sockaddr_in *sin = (const struct sockaddr_in *)&t.addr;
	const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)&t.addr;

	T_ASSERT(proto_target_ip_literal(&t));
	T_EQ_INT(t.kind, TARGET_IP);
	T_EQ_INT(sin->sin_family, AF_INET);
	T_EQ_INT(ntohl(sin->sin_addr.s_addr), 0xcb007107);
	T_EQ_INT(ntohs(sin->sin_port), 8443);
	T_EQ_STR(t.host, "203.0.113.7");

	t = t_name("2001:db8::1", 80);
	T_ASSERT(proto_target_ip_literal(&t));
	T_EQ_INT(sin6->sin6_family, AF_INET6);
	T_EQ_INT(sin6->sin6_addr.s6_addr[1], 0x01);
	T_EQ_INT(ntohs(sin6->sin6_port), 80);

	t = t_name("[::1]", 80);
	T_ASSERT(proto_target_ip_literal(&t));
	T_EQ_INT(sin6->sin6_family, AF_INET6);
	T_ASSERT(IN6_IS_ADDR_LOOPBACK(&sin6->sin6_addr));

	static const char *not_ip[] = {
	        "example.com",  "1.2.3.256",  "[1.2.3.4]", "[]",          "[::1",
	        "::1]",         "",           "1.2.3.4 x", "127.0.0.1\t", " 127.0.0.1",
	        "fe80::1%eth0", "4294967296", "1.2.3.4.",  "08",          "0x",
	        "localhost."};
	for (size_t i = 0; i < sizeof(not_ip) / sizeof(not_ip[0]); i++) {
		t = t_name(not_ip[i], 80);
		if (proto_target_ip_literal(&t) || t.kind != TARGET_DOMAIN)
			T_FAILF("\"%s\" taken as an IP literal", not_ip[i]);
	}

	/* host without a NUL is left alone */
	memset(t.host, '1', sizeof(t.host));
	t.kind = TARGET_DOMAIN;
	T_ASSERT(!proto_target_ip_literal(&t));
}

/*
 * Review H2: the resolver reads "127.1", "2130706433", "0x7f000001",
 * "017700000001" and "0" as 127.0.0.1 / 0.0.0.0; a target spelled so must be
 * that IP target, or a cidr rule never sees it.
 */
static void test_ip_literal_inet_aton_forms(void)
{
	static const struct {
		const char *host;
		uint32_t want;
	} forms[] = {
	        {"127.1", 0x7f000001},
	        {"2130706433", 0x7f000001},
	        {"0x7f000001", 0x7f000001},
	        {"0X7F000001", 0x7f000001},
	        {"017700000001", 0x7f000001},
	        {"0177.0.0.1", 0x7f000001},
	        {"0x7f.1", 0x7f000001},
	        {"127.0.1", 0x7f000001},
	        {"0", 0},
	        {"0.0.0.0", 0},
	        {"1.2.3", 0x01020003},
	        {"4294967295", 0xffffffff},
	        {"2852039166", 0xa9fea9fe}, /* 169.254.169.254 */
	};

	for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
		struct proto_target t = t_name(forms[i].host, 443);
		const struct sockaddr_in *sin = (const struct sockaddr_in *)&t.addr;

		if (!proto_target_ip_literal(&t) || t.kind != TARGET_IP ||
		    sin->sin_family != AF_INET || ntohl(sin->sin_addr.s_addr) != forms[i].want ||
		    ntohs(sin->sin_port) != 443)
			T_FAILF("\"%s\": not the IP target 0x%08x", forms[i].host, forms[i].want);
		T_EQ_STR(t.host, forms[i].host); /* kept as the client wrote it, for logs */
	}
}

/*
 * The same verdict as the resolver's own numeric parse, by construction: for
 * every host, IPv4 target ⇔ getaddrinfo(AI_NUMERICHOST, AF_INET) succeeds,
 * with the same address.
 */
static void test_ip_literal_matches_getaddrinfo(void)
{
	static const char *hosts[] = {
	        "127.1",
	        "0",
	        "2130706433",
	        "0x7f000001",
	        "017700000001",
	        "0x",
	        "0x.1",
	        "1.2.3",
	        "1.2.3.256",
	        "4294967295",
	        "4294967296",
	        "0x100000000",
	        "08",
	        "0377.0.0.1",
	        "1.0x",
	        "1..2",
	        "1.2.3.4.",
	        "1.2.3.4 x",
	        ".1",
	        "0X7F.1",
	        "00000000000000000001",
	        "1.16777215",
	        "1.16777216",
	        "127.0.0.1\t",
	        "",
	        "0xffffffffff",
	        "99999999999999999999",
	        "1.2.65535",
	        "1.2.65536",
	        "0x7f.0x0.0x0.0x1",
	        "example.com",
	        "1e3",
	        "+1",
	        "-1",
	        "1.2.3.-4",
	};

	for (size_t i = 0; i < sizeof(hosts) / sizeof(hosts[0]); i++) {
		struct addrinfo hints = {.ai_family = AF_INET, .ai_flags = AI_NUMERICHOST};
		struct addrinfo *res = NULL;
		struct proto_target t = t_name(hosts[i], 80);
		bool ours = proto_target_ip_literal(&t) && t.addr.ss_family == AF_INET;
		bool gai = getaddrinfo(hosts[i], NULL, &hints, &res) == 0;

		if (ours != gai) {
			T_FAILF("\"%s\": proto says %s, getaddrinfo says %s", hosts[i],
			        ours ? "IPv4" : "not IPv4", gai ? "IPv4" : "not IPv4");
		} else if (gai) {
			const struct sockaddr_in *a = (const struct sockaddr_in *)res->ai_addr;
			const struct sockaddr_in *b = (const struct sockaddr_in *)&t.addr;

			if (a->sin_addr.s_addr != b->sin_addr.s_addr)
				T_FAILF("\"%s\": different addresses", hosts[i]);
		}
		if (res)
			freeaddrinfo(res);
	}
}

int main(void)
{
	T_RUN(test_errno_mapping);
	T_RUN(test_ct_equal);
	T_RUN(test_ip_literal);
	T_RUN(test_ip_literal_inet_aton_forms);
	T_RUN(test_ip_literal_matches_getaddrinfo);
	return t_finish();
}
