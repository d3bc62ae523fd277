/* SPDX-License-Identifier: MIT */
/* libFuzzer target: dns_parse_query() on any message, and dns_answer() for what it accepts (the TUN's mapped DNS). */
#include "dns.h"
#include "fuzz.h"

/*
 * Input: the message a TUN app sent to the DNS address, as it is. A query
 * that parses has a name of host characters within 253 octets and a
 * question inside the message; its answers (with an IPv4 address, an IPv6
 * one, none) fit DNS_ANSWER_MAX and copy the question. The message is an
 * exact-size heap block: ASan sees any read outside it.
 */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t a6[16] = {0xfd, 0xfe, 0x53, 0x70, [8] = 0x80, [15] = 1};
	uint8_t *m = malloc(size ? size : 1), out[DNS_ANSWER_MAX];
	struct dns_query q;

	CHECK(m);
	memcpy(m, data, size);
	if (dns_parse_query(m, size, &q) == 0) {
		size_t n = strlen(q.name);

		CHECK(n <= DNS_NAME_MAX && q.qend <= size && q.qend >= DNS_HDR + 5);
		for (size_t i = 0; i < n; i++)
			CHECK(q.name[i] == '.' || q.name[i] == '-' || q.name[i] == '_' ||
			      (q.name[i] >= 'a' && q.name[i] <= 'z') ||
			      (q.name[i] >= '0' && q.name[i] <= '9'));
		CHECK(dns_answer(m, &q, DNS_NOERROR, a6, 16, 1, out) == q.qend + 28);
		CHECK(!memcmp(out + DNS_HDR, m + DNS_HDR, q.qend - DNS_HDR));
		CHECK(dns_answer(m, &q, DNS_NOERROR, a6, 4, 1, out) == q.qend + 16);
		CHECK(dns_answer(m, &q, DNS_NOERROR, NULL, 0, 0, out) == q.qend);
	}
	free(m);
	return 0;
}
