/* SPDX-License-Identifier: MIT */
/* DNS messages (RFC 1035 §4): a query's question in, a one-record answer out; sans-I/O. */
#include "dns.h"

#include <string.h>

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static bool host_char(uint8_t c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '-' || c == '_';
}

int dns_parse_query(const uint8_t *m, size_t len, struct dns_query *q)
{
	size_t off = DNS_HDR, n = 0;

	memset(q, 0, sizeof(*q));
	if (len < DNS_HDR)
		return -1;
	/* RFC 1035 §4.1.1: QR (bit 15) 0, OPCODE (bits 11-14) 0; one question, no answers */
	if ((m[2] & 0x80) || (m[2] & 0x78) || get16(m + 4) != 1 || get16(m + 6) || get16(m + 8))
		return -1;
	q->id = get16(m);
	q->rd = m[2] & 0x01;
	for (;;) {
		uint8_t l;

		if (off >= len)
			return -1;
		l = m[off++];
		if (l == 0)
			break;
		/* 0xc0: a compression pointer, never needed in a question alone */
		if (l > DNS_LABEL_MAX || off + l > len || n + l + (n ? 1 : 0) > DNS_NAME_MAX)
			return -1;
		if (n)
			q->name[n++] = '.';
		for (unsigned i = 0; i < l; i++) {
			uint8_t c = m[off + i];

			if (!host_char(c))
				return -1;
			q->name[n++] = (char)(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
		}
		off += l;
	}
	q->name[n] = '\0';
	if (off + 4 > len)
		return -1;
	q->qtype = get16(m + off);
	q->qclass = get16(m + off + 2);
	q->qend = off + 4;
	return 0;
}

size_t dns_answer(const uint8_t *m, const struct dns_query *q, enum dns_rcode rcode,
                  const uint8_t *addr, size_t alen, uint32_t ttl, uint8_t *out)
{
	size_t qlen = q->qend - DNS_HDR, off;

	put16(out, q->id);
	/* QR 1, OPCODE 0, AA 1 (the name is ours to answer), RD echoed, RA 1, rcode */
	out[2] = (uint8_t)(0x80 | 0x04 | (q->rd ? 0x01 : 0));
	out[3] = (uint8_t)(0x80 | (rcode & 0x0f));
	put16(out + 4, 1);
	put16(out + 6, addr ? 1 : 0);
	put16(out + 8, 0);
	put16(out + 10, 0);
	memcpy(out + DNS_HDR, m + DNS_HDR, qlen);
	off = DNS_HDR + qlen;
	if (!addr)
		return off;
	put16(out + off, 0xc000 | DNS_HDR); /* the name: a pointer to the question's */
	put16(out + off + 2, q->qtype);
	put16(out + off + 4, 1); /* IN */
	out[off + 6] = (uint8_t)(ttl >> 24);
	out[off + 7] = (uint8_t)(ttl >> 16);
	out[off + 8] = (uint8_t)(ttl >> 8);
	out[off + 9] = (uint8_t)ttl;
	put16(out + off + 10, (uint16_t)alen);
	memcpy(out + off + 12, addr, alen);
	return off + 12 + alen;
}
