/* SPDX-License-Identifier: MIT */
/* DNS messages (RFC 1035 §4): a query's question, and the answer a mapped-DNS server gives: sans-I/O. */
#ifndef SPLICED_DNS_H
#define SPLICED_DNS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum dns_limits {
	DNS_HDR = 12,
	DNS_NAME_MAX =
	        253, /* dotted text, without the final dot (RFC 1035 §2.3.4: 255 octets wire) */
	DNS_LABEL_MAX = 63,
	/* the longest answer dns_answer() builds: a question of 255 octets and one AAAA record */
	DNS_ANSWER_MAX = DNS_HDR + 255 + 4 + 2 + 2 + 2 + 4 + 2 + 16,
};

enum dns_type { DNS_TYPE_A = 1, DNS_TYPE_AAAA = 28 };
enum dns_rcode { DNS_NOERROR = 0, DNS_FORMERR = 1, DNS_SERVFAIL = 2, DNS_NOTIMP = 4 };

/* The one question of a standard query. */
struct dns_query {
	uint16_t id;
	bool rd;                     /* recursion desired: echoed */
	char name[DNS_NAME_MAX + 1]; /* lowercase, dotted, no final dot ("" for the root) */
	uint16_t qtype, qclass;
	size_t qend; /* where the question ends in the message */
};

/*
 * A query (QR 0, OPCODE 0, QDCOUNT 1, an uncompressed QNAME of letters,
 * digits, '-' and '_' — what a host name may hold), whatever follows the
 * question (EDNS options) ignored. 0, or -1: not such a query (a response,
 * another opcode, several questions, a compression pointer, a bad label).
 */
int dns_parse_query(const uint8_t *m, size_t len, struct dns_query *q);

/*
 * The answer to q (whose message is m, the question copied from it) into
 * out (DNS_ANSWER_MAX octets): rcode, and with addr (4 octets for A, 16 for
 * AAAA, alen) one record of that address for the question's name with ttl
 * seconds; without it no record (NODATA with rcode 0). Returns its length.
 */
size_t dns_answer(const uint8_t *m, const struct dns_query *q, enum dns_rcode rcode,
                  const uint8_t *addr, size_t alen, uint32_t ttl, uint8_t *out);

#endif
