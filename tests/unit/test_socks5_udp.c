/* SPDX-License-Identifier: MIT */
/* Unit tests for proto/socks5_udp.c and socks5_addr.c: RFC 1928 datagram headers and
 * hev-socks5 UDP-in-TCP frames, against golden octets written from the two formats' text. */
#include "t.h"
#include "t_target.h"

#include "socks5.h"
#include "socks5_udp.h"

#include <arpa/inet.h>
#include <netinet/in.h>

T_SUITE("socks5_udp");

#define B(...) ((const uint8_t[]){__VA_ARGS__})

/* RFC 1928 section 7: 00 00 FRAG ATYP ADDR PORT DATA. 192.0.2.1:53, then "hi". */
static const uint8_t golden_v4[] = {0, 0, 0, 1, 192, 0, 2, 1, 0, 53, 'h', 'i'};
/* [2001:db8::1]:443 and one payload octet. */
static const uint8_t golden_v6[] = {0, 0, 0, 4, 0x20, 0x01, 0x0d, 0xb8, 0,    0,    0,  0,
                                    0, 0, 0, 0, 0,    0,    0,    1,    0x01, 0xbb, 'x'};
/* example.org:8080, no payload. */
static const uint8_t golden_name[] = {0,   0,   0,   3,   11,  'e', 'x', 'a',  'm',
                                      'p', 'l', 'e', '.', 'o', 'r', 'g', 0x1f, 0x90};

static void test_parse_golden(void)
{
	struct proto_target t;
	size_t hl = 0;

	T_EQ_INT(socks5_udp_parse(golden_v4, sizeof(golden_v4), &t, &hl), SOCKS5_UDP_OK);
	T_EQ_INT(hl, 10);
	T_EQ_INT(t.kind, TARGET_IP);
	T_EQ_INT(t.port, 53);
	T_EQ_STR(t.host, ""); /* not spelled out on the datagram path */
	T_EQ_INT(t.addr.ss_family, AF_INET);
	T_EQ_INT(ntohs(((struct sockaddr_in *)&t.addr)->sin_port), 53);

	T_EQ_INT(socks5_udp_parse(golden_v6, sizeof(golden_v6), &t, &hl), SOCKS5_UDP_OK);
	T_EQ_INT(hl, 22);
	T_EQ_STR(t.host, "");
	T_EQ_INT(t.port, 443);
	T_EQ_INT(t.addr.ss_family, AF_INET6);

	T_EQ_INT(socks5_udp_parse(golden_name, sizeof(golden_name), &t, &hl), SOCKS5_UDP_OK);
	T_EQ_INT(hl, sizeof(golden_name)); /* an empty payload is a datagram too */
	T_EQ_INT(t.kind, TARGET_DOMAIN);
	T_EQ_STR(t.host, "example.org");
	T_EQ_INT(t.port, 8080);
}

static void test_put_golden(void)
{
	uint8_t p[SOCKS5_UDP_HDR_MAX];
	struct proto_target t = t_ip("192.0.2.1", 53);

	T_EQ_INT(socks5_udp_put_header(p, &t), 10);
	T_EQ_MEM(p, golden_v4, 10);
	t = t_ip("2001:db8::1", 443);
	T_EQ_INT(socks5_udp_put_header(p, &t), 22);
	T_EQ_MEM(p, golden_v6, 22);
	t = t_name("example.org", 8080);
	T_EQ_INT(socks5_udp_put_header(p, &t), sizeof(golden_name));
	T_EQ_MEM(p, golden_name, sizeof(golden_name));
	/* A reply's source from a dual-stack socket: ::ffff:192.0.2.1 is written as IPv4. */
	t = t_ip("::ffff:192.0.2.1", 53);
	T_EQ_INT(socks5_udp_put_header_sa(p, (const struct sockaddr *)&t.addr), 10);
	T_EQ_MEM(p, golden_v4, 10);
}

/* A name that is an address in another spelling is an address (a cidr rule must see it). */
static void test_name_literal(void)
{
	static const uint8_t d[] = {0,   0,   0,   3,   9,   '1', '2', '7',
	                            '.', '0', '.', '0', '.', '1', 0,   7};
	static const uint8_t z[] = {0, 0, 0, 3, 1, '0', 0, 7};
	struct proto_target t;
	size_t hl;

	T_EQ_INT(socks5_udp_parse(d, sizeof(d), &t, &hl), SOCKS5_UDP_OK);
	T_EQ_INT(t.kind, TARGET_IP);
	T_EQ_INT(t.addr.ss_family, AF_INET);
	T_EQ_INT(((struct sockaddr_in *)&t.addr)->sin_addr.s_addr, htonl(0x7f000001));
	T_EQ_INT(socks5_udp_parse(z, sizeof(z), &t, &hl), SOCKS5_UDP_OK);
	T_EQ_INT(t.kind, TARGET_IP); /* "0" is 0.0.0.0 to inet_aton() */
	T_EQ_INT(((struct sockaddr_in *)&t.addr)->sin_addr.s_addr, 0);
}

static void test_parse_refusals(void)
{
	struct proto_target t;
	size_t hl;

	/* Every proper prefix of a valid header is short; none is accepted. */
	for (size_t k = 0; k < 10; k++)
		T_EQ_INT(socks5_udp_parse(golden_v4, k, &t, &hl), SOCKS5_UDP_SHORT);
	for (size_t k = 0; k < sizeof(golden_name); k++)
		T_EQ_INT(socks5_udp_parse(golden_name, k, &t, &hl), SOCKS5_UDP_SHORT);
	T_EQ_INT(socks5_udp_parse(B(0, 1, 0, 1, 1, 2, 3, 4, 0, 1), 10, &t, &hl), SOCKS5_UDP_RSV);
	T_EQ_INT(socks5_udp_parse(B(1, 0, 0, 1, 1, 2, 3, 4, 0, 1), 10, &t, &hl), SOCKS5_UDP_RSV);
	T_EQ_INT(socks5_udp_parse(B(0, 0, 1, 1, 1, 2, 3, 4, 0, 1), 10, &t, &hl), SOCKS5_UDP_FRAG);
	T_EQ_INT(socks5_udp_parse(B(0, 0, 0x81, 1, 1, 2, 3, 4, 0, 1), 10, &t, &hl),
	         SOCKS5_UDP_FRAG);
	/* FRAG wins over a bad ATYP: a fragment is dropped as a fragment. */
	T_EQ_INT(socks5_udp_parse(B(0, 0, 2, 9, 1, 2, 3, 4, 0, 1), 10, &t, &hl), SOCKS5_UDP_FRAG);
	T_EQ_INT(socks5_udp_parse(B(0, 0, 0, 2, 1, 2, 3, 4, 0, 1), 10, &t, &hl), SOCKS5_UDP_ATYP);
	T_EQ_INT(socks5_udp_parse(B(0, 0, 0, 0, 1, 2, 3, 4, 0, 1), 10, &t, &hl), SOCKS5_UDP_ATYP);
	T_EQ_INT(socks5_udp_parse(B(0, 0, 0, 3, 0, 0, 1), 7, &t, &hl), SOCKS5_UDP_NAME);
	T_EQ_INT(socks5_udp_parse(B(0, 0, 0, 3, 3, 'a', 0, 'b', 0, 1), 10, &t, &hl),
	         SOCKS5_UDP_NAME);
	/* A name whose length octet runs past the datagram. */
	T_EQ_INT(socks5_udp_parse(B(0, 0, 0, 3, 200, 'a', 'b', 0, 1), 9, &t, &hl),
	         SOCKS5_UDP_SHORT);
	T_EQ_STR(socks5_udp_error_name(SOCKS5_UDP_FRAG), "frag");
	T_EQ_STR(socks5_udp_error_name(SOCKS5_UDP_ERR_COUNT), "unknown");
}

/* The longest header: a 255-octet name, 262 octets, parsed and written back identically. */
static void test_longest_name(void)
{
	uint8_t d[SOCKS5_UDP_HDR_MAX + 1], p[SOCKS5_UDP_HDR_MAX];
	struct proto_target t;
	size_t hl;

	memset(d, 'a', sizeof(d));
	d[0] = d[1] = d[2] = 0;
	d[3] = SOCKS5_ATYP_DOMAIN;
	d[4] = 255;
	d[5 + 255] = 0x12;
	d[6 + 255] = 0x34;
	T_EQ_INT(socks5_udp_parse(d, sizeof(d), &t, &hl), SOCKS5_UDP_OK);
	T_EQ_INT(hl, SOCKS5_UDP_HDR_MAX);
	T_EQ_INT(strlen(t.host), 255);
	T_EQ_INT(t.port, 0x1234);
	T_EQ_INT(socks5_udp_put_header(p, &t), SOCKS5_UDP_HDR_MAX);
	T_EQ_MEM(p, d, SOCKS5_UDP_HDR_MAX);
}

/*
 * hev-socks5 UDP-in-TCP: DATLEN(2) HDRLEN(1) = 3 + address length, ATYP ADDR
 * PORT, DATA. 192.0.2.1:53 with "hi": DATLEN 2, HDRLEN 10.
 */
static const uint8_t frame_v4[] = {0, 2, 10, 1, 192, 0, 2, 1, 0, 53, 'h', 'i'};
/* [2001:db8::1]:443 with 300 octets: DATLEN 0x012c, HDRLEN 22 (payload appended by the test). */
static const uint8_t frame_v6_hdr[] = {1, 0x2c, 22, 4, 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0,
                                       0, 0,    0,  0, 0,    0,    0,    0,    1, 1, 0xbb};
/* example.org:8080, empty datagram: DATLEN 0, HDRLEN 3 + 1 + 1 + 11 + 2 = 18. */
static const uint8_t frame_name[] = {0,   0,   18,  3,   11,  'e', 'x', 'a',  'm',
                                     'p', 'l', 'e', '.', 'o', 'r', 'g', 0x1f, 0x90};

static void test_tcpudp_golden(void)
{
	uint8_t s[sizeof(frame_v4) + sizeof(frame_v6_hdr) + 300 + sizeof(frame_name)];
	uint8_t p[SOCKS5_UDP_HDR_MAX];
	struct proto_target t;
	size_t hl = 0, dl = 0, off = 0, n = 0;

	/* Three frames back to back in one stream, the second carrying 300 octets. */
	memcpy(s, frame_v4, sizeof(frame_v4));
	n = sizeof(frame_v4);
	memcpy(s + n, frame_v6_hdr, sizeof(frame_v6_hdr));
	n += sizeof(frame_v6_hdr);
	for (int i = 0; i < 300; i++)
		s[n++] = (uint8_t)i;
	memcpy(s + n, frame_name, sizeof(frame_name));
	n += sizeof(frame_name);

	T_EQ_INT(socks5_tcpudp_parse(s, n, &t, &hl, &dl), SOCKS5_UDP_OK);
	T_EQ_INT(hl, 10);
	T_EQ_INT(dl, 2);
	T_EQ_STR(t.host, ""); /* not spelled out on the datagram path */
	T_EQ_MEM(s + hl, "hi", 2);
	off = hl + dl;
	T_EQ_INT(socks5_tcpudp_parse(s + off, n - off, &t, &hl, &dl), SOCKS5_UDP_OK);
	T_EQ_INT(hl, 22);
	T_EQ_INT(dl, 300);
	T_EQ_STR(t.host, "");
	T_EQ_INT(t.port, 443);
	T_EQ_INT(s[off + hl + 299], (uint8_t)299);
	off += hl + dl;
	T_EQ_INT(socks5_tcpudp_parse(s + off, n - off, &t, &hl, &dl), SOCKS5_UDP_OK);
	T_EQ_INT(hl, 18);
	T_EQ_INT(dl, 0);
	T_EQ_STR(t.host, "example.org");
	T_EQ_INT(off + hl + dl, n);

	/* Written back: the same octets. */
	t = t_ip("192.0.2.1", 53);
	T_EQ_INT(socks5_tcpudp_put_header(p, &t, 2), 10);
	T_EQ_MEM(p, frame_v4, 10);
	t = t_ip("2001:db8::1", 443);
	T_EQ_INT(socks5_tcpudp_put_header_sa(p, (const struct sockaddr *)&t.addr, 300), 22);
	T_EQ_MEM(p, frame_v6_hdr, 22);
	t = t_name("example.org", 8080);
	T_EQ_INT(socks5_tcpudp_put_header(p, &t, 0), 18);
	T_EQ_MEM(p, frame_name, 18);
	T_EQ_INT(socks5_tcpudp_put_header(p, &t, SOCKS5_TCPUDP_DATA_MAX), 18);
	T_EQ_INT(p[0], 0xff);
	T_EQ_INT(p[1], 0xff);
	T_EQ_INT(socks5_tcpudp_put_header(p, &t, SOCKS5_TCPUDP_DATA_MAX + 1), 0);
}

/* Every cut of a frame is AGAIN (a stream delivers in any pieces), never a verdict. */
static void test_tcpudp_cuts(void)
{
	struct proto_target t;
	size_t hl, dl;

	for (size_t k = 0; k < sizeof(frame_v4); k++)
		T_EQ_INT(socks5_tcpudp_parse(frame_v4, k, &t, &hl, &dl), SOCKS5_UDP_AGAIN);
	for (size_t k = 0; k < sizeof(frame_name); k++)
		T_EQ_INT(socks5_tcpudp_parse(frame_name, k, &t, &hl, &dl), SOCKS5_UDP_AGAIN);
}

static void test_tcpudp_refusals(void)
{
	struct proto_target t;
	size_t hl, dl;
	uint8_t p[SOCKS5_UDP_HDR_MAX];

	/* HDRLEN that disagrees with the address, either way, is final before the data arrive. */
	T_EQ_INT(socks5_tcpudp_parse(B(0, 2, 11, 1, 192, 0, 2, 1, 0, 53), 10, &t, &hl, &dl),
	         SOCKS5_UDP_HDRLEN);
	T_EQ_INT(socks5_tcpudp_parse(B(0, 2, 9, 1), 4, &t, &hl, &dl), SOCKS5_UDP_HDRLEN);
	T_EQ_INT(socks5_tcpudp_parse(B(0, 0, 0, 3), 4, &t, &hl, &dl), SOCKS5_UDP_HDRLEN);
	T_EQ_INT(socks5_tcpudp_parse(B(0, 0, 10, 7), 4, &t, &hl, &dl), SOCKS5_UDP_ATYP);
	T_EQ_INT(socks5_tcpudp_parse(B(0, 0, 7, 3, 0, 0, 1), 7, &t, &hl, &dl), SOCKS5_UDP_NAME);
	/* A name too long for HDRLEN (249 octets: 3 + 253 > 255) cannot be framed... */
	{
		char n[250];
		memset(n, 'a', 249);
		n[249] = '\0';
		struct proto_target lt = t_name(n, 1);
		T_EQ_INT(socks5_tcpudp_put_header(p, &lt, 1), 0);
		n[248] = '\0';
		lt = t_name(n, 1);
		T_EQ_INT(socks5_tcpudp_put_header(p, &lt, 1), 255);
		T_EQ_INT(p[2], 255);
		/* ...and one claimed with 249 octets is refused whatever HDRLEN says. */
		uint8_t f[3 + 4 + 249];
		memset(f, 'a', sizeof(f));
		f[0] = 0, f[1] = 0, f[2] = 255, f[3] = 3, f[4] = 249;
		T_EQ_INT(socks5_tcpudp_parse(f, sizeof(f), &t, &hl, &dl), SOCKS5_UDP_HDRLEN);
	}
}

/* The SOCKS5 CONNECT handshake still decodes and encodes addresses through the shared codec. */
static void test_addr_codec(void)
{
	uint8_t p[SOCKS5_ADDR_MAX];
	struct proto_target t;

	T_EQ_INT(socks5_addr_len(B(1), 1), 7);
	T_EQ_INT(socks5_addr_len(B(4), 1), 19);
	T_EQ_INT(socks5_addr_len(B(3), 1), 0);
	T_EQ_INT(socks5_addr_len(B(3, 5), 2), 9);
	T_EQ_INT(socks5_addr_len(B(5), 1), -1);
	T_EQ_INT(socks5_addr_len(B(1), 0), 0);
	T_EQ_INT(socks5_addr_put_sockaddr(p, NULL), 7);
	T_EQ_MEM(p, B(1, 0, 0, 0, 0, 0, 0), 7);
	/* A target whose address carries port 0 takes target.port. */
	t = t_ip("192.0.2.1", 0);
	t.port = 53;
	T_EQ_INT(socks5_addr_put_target(p, &t), 7);
	T_EQ_MEM(p, B(1, 192, 0, 2, 1, 0, 53), 7);
	T_EQ_INT(socks5_addr_get(B(3, 2, 'a', 'b', 0, 80), &t), 0);
	T_EQ_STR(t.host, "ab");
	T_EQ_INT(t.port, 80);
	T_EQ_INT(socks5_addr_get(B(9, 0, 0, 0, 0, 0, 0), &t), -1);
}

int main(void)
{
	T_RUN(test_parse_golden);
	T_RUN(test_put_golden);
	T_RUN(test_name_literal);
	T_RUN(test_parse_refusals);
	T_RUN(test_longest_name);
	T_RUN(test_tcpudp_golden);
	T_RUN(test_tcpudp_cuts);
	T_RUN(test_tcpudp_refusals);
	T_RUN(test_addr_codec);
	return t_finish();
}
