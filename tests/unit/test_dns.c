/* SPDX-License-Identifier: MIT */
/* Unit tests for proto/dns.c (queries in, answers out) and tun/dnsmap.c (names to addresses and back, LRU). */
#include <arpa/inet.h>
#include <stdint.h>
#include <string.h>

#include "dns.h"
#include "dnsmap.h"
#include "t.h"

T_SUITE("dns");

/* A query for name (dotted) of qtype, with an EDNS OPT record behind it when edns. */
static size_t query(uint8_t *m, const char *name, uint16_t qtype, int edns)
{
	size_t off = 12;
	const char *p = name;

	memset(m, 0, 12);
	m[0] = 0x12, m[1] = 0x34, m[2] = 0x01; /* id, RD */
	m[5] = 1;
	if (edns)
		m[11] = 1;
	while (*p) {
		size_t l = strcspn(p, ".");

		m[off++] = (uint8_t)l;
		memcpy(m + off, p, l);
		off += l;
		p += l + (p[l] == '.');
	}
	m[off++] = 0;
	m[off++] = (uint8_t)(qtype >> 8), m[off++] = (uint8_t)qtype;
	m[off++] = 0, m[off++] = 1;
	if (edns) {
		static const uint8_t opt[] = {0, 0, 41, 0x10, 0, 0, 0, 0, 0, 0, 0};
		memcpy(m + off, opt, sizeof(opt));
		off += sizeof(opt);
	}
	return off;
}

static void test_parse(void)
{
	uint8_t m[512];
	struct dns_query q;
	size_t n = query(m, "WWW.Example.COM", DNS_TYPE_AAAA, 1);

	T_EQ_INT(dns_parse_query(m, n, &q), 0);
	T_EQ_STR(q.name, "www.example.com");
	T_EQ_INT(q.qtype, DNS_TYPE_AAAA);
	T_EQ_INT(q.qclass, 1);
	T_EQ_INT(q.id, 0x1234);
	T_ASSERT(q.rd);
	/* every cut is refused, never read past */
	for (size_t k = 0; k < n - 11; k++)
		T_ASSERT(dns_parse_query(m, k, &q) < 0);
	n = query(m, "a.b", DNS_TYPE_A, 0);
	m[2] |= 0x80; /* a response */
	T_ASSERT(dns_parse_query(m, n, &q) < 0);
	m[2] = 0x01 | (2 << 3); /* opcode 2 */
	T_ASSERT(dns_parse_query(m, n, &q) < 0);
	m[2] = 0x01;
	m[5] = 2; /* two questions */
	T_ASSERT(dns_parse_query(m, n, &q) < 0);
	m[5] = 1;
	m[12] = 0xc0; /* a pointer */
	T_ASSERT(dns_parse_query(m, n, &q) < 0);
	n = query(m, "bad name", DNS_TYPE_A, 0);
	T_ASSERT(dns_parse_query(m, n, &q) < 0);
	n = query(m, "", DNS_TYPE_A, 0); /* the root */
	T_EQ_INT(dns_parse_query(m, n, &q), 0);
	T_EQ_STR(q.name, "");
	{ /* 254 octets of name: too long */
		char big[300];

		memset(big, 'a', sizeof(big));
		for (int i = 63; i < 290; i += 64)
			big[i] = '.';
		big[254] = '\0';
		n = query(m, big, DNS_TYPE_A, 0);
		T_ASSERT(dns_parse_query(m, n, &q) < 0);
		big[253] = '\0';
		n = query(m, big, DNS_TYPE_A, 0);
		T_EQ_INT(dns_parse_query(m, n, &q), 0);
	}
}

static void test_answer(void)
{
	uint8_t m[512], out[DNS_ANSWER_MAX];
	uint8_t a4[4] = {198, 19, 0, 9};
	struct dns_query q;
	size_t n = query(m, "x.test", DNS_TYPE_A, 1), len;

	T_EQ_INT(dns_parse_query(m, n, &q), 0);
	len = dns_answer(m, &q, DNS_NOERROR, a4, 4, 1, out);
	T_EQ_INT(len, q.qend + 16);
	T_EQ_INT(out[0], 0x12);
	T_EQ_INT(out[2], 0x85); /* QR, AA, RD */
	T_EQ_INT(out[3], 0x80); /* RA, NOERROR */
	T_EQ_INT(out[5], 1);
	T_EQ_INT(out[7], 1);
	T_EQ_INT(out[11], 0); /* no OPT echoed */
	T_EQ_MEM(out + 12, m + 12, q.qend - 12);
	T_EQ_INT(out[q.qend], 0xc0);
	T_EQ_INT(out[q.qend + 1], 12);
	T_EQ_INT(out[q.qend + 3], DNS_TYPE_A);
	T_EQ_INT(out[q.qend + 9], 1);  /* TTL 1 */
	T_EQ_INT(out[q.qend + 11], 4); /* RDLENGTH */
	T_EQ_MEM(out + q.qend + 12, a4, 4);
	len = dns_answer(m, &q, DNS_NOERROR, NULL, 0, 0, out);
	T_EQ_INT(len, q.qend);
	T_EQ_INT(out[7], 0);
}

static void test_map(void)
{
	struct dnsmap m;
	uint8_t b4[4] = {198, 19, 0, 0}, b6[16] = {0xfd, 0xfe, 0x53, 0x70, [8] = 0x80};
	uint8_t a[16], a2[16], x[16];
	char name[254];

	T_EQ_INT(dnsmap_init(&m, b4, 65534, b6, 1000, 3), 0);
	T_ASSERT(dnsmap_lookup(&m, "one.test", 4, a));
	T_EQ_INT(a[2], 0);
	T_EQ_INT(a[3], 1); /* the range's first address is left out */
	T_ASSERT(dnsmap_contains(&m, 4, a));
	T_ASSERT(dnsmap_lookup(&m, "one.test", 6, a2)); /* the same entry, its IPv6 address */
	T_EQ_INT(a2[8], 0x80);
	T_EQ_INT(a2[15], 1);
	T_ASSERT(dnsmap_name(&m, 6, a2, name));
	T_EQ_STR(name, "one.test");
	T_ASSERT(dnsmap_lookup(&m, "two.test", 4, x));
	T_EQ_INT(x[3], 2);
	T_ASSERT(dnsmap_lookup(&m, "three.test", 4, x));
	T_ASSERT(dnsmap_name(&m, 4, a, name));          /* one.test is now the most recent */
	T_ASSERT(dnsmap_lookup(&m, "four.test", 4, x)); /* cap 3: two.test (least recent) goes */
	T_EQ_INT(x[3], 2);
	T_ASSERT(dnsmap_name(&m, 4, x, name));
	T_EQ_STR(name, "four.test");
	T_ASSERT(dnsmap_name(&m, 4, a, name));
	T_EQ_STR(name, "one.test");
	T_EQ_INT(m.evicted, 1);
	/* outside the range, or never given */
	memcpy(x, b4, 4);
	T_ASSERT(!dnsmap_contains(&m, 4, x)); /* its first */
	x[3] = 200;
	T_ASSERT(!dnsmap_contains(&m, 4, x)); /* beyond cap */
	x[1] = 18;
	T_ASSERT(!dnsmap_contains(&m, 4, x));
	dnsmap_destroy(&m);
	/* without an IPv6 range: no AAAA */
	T_EQ_INT(dnsmap_init(&m, b4, 100, NULL, 0, 10), 0);
	T_ASSERT(!dnsmap_lookup(&m, "a", 6, x));
	T_ASSERT(dnsmap_lookup(&m, "a", 4, x));
	dnsmap_destroy(&m);
}

int main(void)
{
	T_RUN(test_parse);
	T_RUN(test_answer);
	T_RUN(test_map);
	return t_finish();
}
