/* SPDX-License-Identifier: MIT */
/* libFuzzer target: SOCKS5 UDP datagram headers and hev-socks5 UDP-in-TCP frame streams. */
#include "fuzz.h"
#include "socks5.h"
#include "socks5_udp.h"

/*
 * Input: one selector octet, then the bytes. Bit 7 clear: one datagram, as
 * the relay socket would receive it. Bit 7 set: a UDP-in-TCP stream, parsed
 * frame by frame from the whole buffer and again delivered in chunks (bits
 * 0-3); both must see the same frames. Every accepted header is written back
 * and parsed again to the same address.
 */

/* The IPv4 address in a (AF_INET, or ::ffff:a.b.c.d): whether there is one. */
static bool v4_of(const struct proto_target *a, uint8_t out[4])
{
	static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
	const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)&a->addr;

	if (a->addr.ss_family == AF_INET) {
		memcpy(out, &((const struct sockaddr_in *)&a->addr)->sin_addr, 4);
		return true;
	}
	if (a->addr.ss_family == AF_INET6 && !memcmp(&s6->sin6_addr, mapped, sizeof(mapped))) {
		memcpy(out, &s6->sin6_addr.s6_addr[12], 4);
		return true;
	}
	return false;
}

/* The same destination: a mapped IPv6 address is the IPv4 address it maps (the codec writes it so). */
static bool same_target(const struct proto_target *a, const struct proto_target *b)
{
	uint8_t a4[4], b4[4];

	if (a->kind != b->kind || a->port != b->port)
		return false;
	if (a->kind == TARGET_DOMAIN)
		return strcmp(a->host, b->host) == 0;
	if (v4_of(a, a4) && v4_of(b, b4))
		return !memcmp(a4, b4, 4);
	if (a->addr.ss_family != b->addr.ss_family)
		return false;
	if (a->addr.ss_family == AF_INET)
		return memcmp(&((const struct sockaddr_in *)&a->addr)->sin_addr,
		              &((const struct sockaddr_in *)&b->addr)->sin_addr, 4) == 0;
	return memcmp(&((const struct sockaddr_in6 *)&a->addr)->sin6_addr,
	              &((const struct sockaddr_in6 *)&b->addr)->sin6_addr, 16) == 0;
}

/*
 * An address that came as ATYP 1/4, or as a name that is not an IP literal,
 * encodes to the same octets it was read from; except an IPv4-mapped IPv6
 * address (::ffff:a.b.c.d), which the codec writes as the IPv4 address it is.
 */
static bool verbatim(const uint8_t *addr, const struct proto_target *t)
{
	static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

	if (addr[0] == SOCKS5_ATYP_IPV6 && !memcmp(addr + 1, mapped, sizeof(mapped)))
		return false;
	return addr[0] != SOCKS5_ATYP_DOMAIN || t->kind == TARGET_DOMAIN;
}

static void datagram(const uint8_t *d, size_t n)
{
	uint8_t p[SOCKS5_UDP_HDR_MAX];
	struct proto_target t, u;
	size_t hl = 0, hl2 = 0, w;
	enum socks5_udp_error e = socks5_udp_parse(d, n, &t, &hl);

	CHECK(e != SOCKS5_UDP_AGAIN && e != SOCKS5_UDP_HDRLEN && e < SOCKS5_UDP_ERR_COUNT);
	CHECK(strcmp(socks5_udp_error_name(e), "unknown") != 0);
	if (e != SOCKS5_UDP_OK)
		return;
	CHECK(hl >= 3 + 1 + 1 + 1 + 2 && hl <= n && hl <= SOCKS5_UDP_HDR_MAX);
	CHECK(d[0] == 0 && d[1] == 0 && d[2] == 0);
	fuzz_check_target(&t);
	w = socks5_udp_put_header(p, &t);
	CHECK(w <= SOCKS5_UDP_HDR_MAX);
	if (verbatim(d + 3, &t))
		CHECK(w == hl && memcmp(p, d, hl) == 0);
	CHECK(socks5_udp_parse(p, w, &u, &hl2) == SOCKS5_UDP_OK && hl2 == w);
	CHECK(same_target(&t, &u));
}

struct frame {
	size_t off, hl, dl;
	struct proto_target t;
};

enum { MAX_FRAMES = 512 };

static size_t frames(const uint8_t *b, size_t n, struct frame *f, enum socks5_udp_error *last)
{
	size_t off = 0, k = 0;

	for (;;) {
		size_t hl = 0, dl = 0;
		enum socks5_udp_error e = socks5_tcpudp_parse(b + off, n - off, &f[k].t, &hl, &dl);

		*last = e;
		if (e != SOCKS5_UDP_OK)
			return k;
		CHECK(hl >= 3 + 4 && hl <= 0xff && off + hl + dl <= n &&
		      dl <= SOCKS5_TCPUDP_DATA_MAX);
		CHECK(b[off + 2] == hl);
		f[k].off = off;
		f[k].hl = hl;
		f[k].dl = dl;
		off += hl + dl;
		if (++k == MAX_FRAMES)
			return k;
	}
}

static void stream(uint8_t sel, const uint8_t *b, size_t n)
{
	static struct frame whole[MAX_FRAMES], cut[MAX_FRAMES];
	static uint8_t buf[FUZZ_BUF_MAX];
	size_t chunk = fuzz_chunk(sel, n), have = 0, nw, nc = 0;
	enum socks5_udp_error lw, lc = SOCKS5_UDP_AGAIN;

	nw = frames(b, n, whole, &lw);
	CHECK(lw != SOCKS5_UDP_FRAG && lw != SOCKS5_UDP_RSV && lw != SOCKS5_UDP_SHORT);
	for (size_t i = 0; i < nw; i++) {
		uint8_t p[SOCKS5_UDP_HDR_MAX];
		struct proto_target u;
		size_t hl, dl, w;

		fuzz_check_target(&whole[i].t);
		w = socks5_tcpudp_put_header(p, &whole[i].t, whole[i].dl);
		if (verbatim(b + whole[i].off + 3, &whole[i].t))
			CHECK(w == whole[i].hl && memcmp(p, b + whole[i].off, w) == 0);
		CHECK(w > 0); /* a frame that parsed fits HDRLEN, and so does its re-encoding */
		{
			memcpy(buf, p, w);
			CHECK(socks5_tcpudp_parse(buf, w + whole[i].dl, &u, &hl, &dl) ==
			      SOCKS5_UDP_OK);
			CHECK(hl == w && dl == whole[i].dl && same_target(&u, &whole[i].t));
		}
	}
	/* The same bytes in chunks: a consumer that parses what it has after each read. */
	for (size_t pos = 0, off = 0; pos < n && nc < MAX_FRAMES;) {
		size_t step = n - pos < chunk ? n - pos : chunk;

		memcpy(buf + have, b + pos, step);
		have += step;
		pos += step;
		for (;;) {
			size_t hl = 0, dl = 0;

			lc = socks5_tcpudp_parse(buf + off, have - off, &cut[nc].t, &hl, &dl);
			if (lc != SOCKS5_UDP_OK)
				break;
			cut[nc].off = off;
			cut[nc].hl = hl;
			cut[nc].dl = dl;
			off += hl + dl;
			if (++nc == MAX_FRAMES)
				break;
		}
		if (lc != SOCKS5_UDP_OK && lc != SOCKS5_UDP_AGAIN)
			break;
	}
	CHECK(nc == nw);
	if (nw < MAX_FRAMES)
		CHECK(lc == lw);
	for (size_t i = 0; i < nw; i++)
		CHECK(cut[i].off == whole[i].off && cut[i].hl == whole[i].hl &&
		      cut[i].dl == whole[i].dl && same_target(&cut[i].t, &whole[i].t));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size > FUZZ_BUF_MAX)
		return 0;
	if (data[0] & 0x80)
		stream(data[0], data + 1, size - 1);
	else
		datagram(data + 1, size - 1);
	return 0;
}
