/* SPDX-License-Identifier: MIT */
/* SOCKS5 UDP datagram headers (RFC 1928 section 7) and hev-socks5 UDP-in-TCP frames. */
#include "socks5_udp.h"

enum {
	PREFIX = 3, /* RSV RSV FRAG, or DATLEN DATLEN HDRLEN */
};

const char *socks5_udp_error_name(enum socks5_udp_error e)
{
	static const char *const names[SOCKS5_UDP_ERR_COUNT] = {
	        [SOCKS5_UDP_OK] = "ok",         [SOCKS5_UDP_SHORT] = "short",
	        [SOCKS5_UDP_RSV] = "rsv",       [SOCKS5_UDP_FRAG] = "frag",
	        [SOCKS5_UDP_ATYP] = "atyp",     [SOCKS5_UDP_NAME] = "name",
	        [SOCKS5_UDP_HDRLEN] = "hdrlen", [SOCKS5_UDP_AGAIN] = "again",
	};

	return (unsigned)e < SOCKS5_UDP_ERR_COUNT ? names[e] : "unknown";
}

/* The address after the three-octet prefix: its length, or why there is none. */
static enum socks5_udp_error address(const uint8_t *d, size_t len, struct proto_target *t,
                                     size_t *alen)
{
	long n = socks5_addr_len(d + PREFIX, len - PREFIX);

	if (n < 0)
		return SOCKS5_UDP_ATYP;
	if (n == 0 || len - PREFIX < (size_t)n)
		return SOCKS5_UDP_SHORT;
	if (socks5_addr_get_bare(d + PREFIX, t) < 0)
		return SOCKS5_UDP_NAME;
	*alen = (size_t)n;
	return SOCKS5_UDP_OK;
}

enum socks5_udp_error socks5_udp_parse(const uint8_t *d, size_t len, struct proto_target *t,
                                       size_t *hdr_len)
{
	enum socks5_udp_error e;
	size_t alen = 0;

	if (len < PREFIX + 1)
		return SOCKS5_UDP_SHORT;
	if (d[0] || d[1])
		return SOCKS5_UDP_RSV;
	/* FRAG before the address: a fragment is dropped whatever follows. */
	if (d[2])
		return SOCKS5_UDP_FRAG;
	e = address(d, len, t, &alen);
	if (e != SOCKS5_UDP_OK)
		return e;
	*hdr_len = PREFIX + alen;
	return SOCKS5_UDP_OK;
}

size_t socks5_udp_put_header(uint8_t *p, const struct proto_target *t)
{
	p[0] = p[1] = p[2] = 0;
	return PREFIX + socks5_addr_put_target(p + PREFIX, t);
}

size_t socks5_udp_put_header_sa(uint8_t *p, const struct sockaddr *sa)
{
	p[0] = p[1] = p[2] = 0;
	return PREFIX + socks5_addr_put_sockaddr(p + PREFIX, sa);
}

enum socks5_udp_error socks5_tcpudp_parse(const uint8_t *b, size_t len, struct proto_target *t,
                                          size_t *hdr_len, size_t *data_len)
{
	size_t datlen, hdrlen;
	long n;

	if (len < PREFIX + 1)
		return SOCKS5_UDP_AGAIN;
	datlen = (size_t)b[0] << 8 | b[1];
	hdrlen = b[2];
	n = socks5_addr_len(b + PREFIX, len - PREFIX);
	if (n < 0)
		return SOCKS5_UDP_ATYP;
	/*
	 * HDRLEN arrives before the address: a disagreement is final at once. Before
	 * a name's length octet is here, HDRLEN must at least cover ATYP LEN PORT.
	 */
	if (n > 0 ? hdrlen != PREFIX + (size_t)n : hdrlen < PREFIX + 1 + 1 + 2)
		return SOCKS5_UDP_HDRLEN;
	if (len < hdrlen + datlen)
		return SOCKS5_UDP_AGAIN;
	if (socks5_addr_get_bare(b + PREFIX, t) < 0)
		return SOCKS5_UDP_NAME;
	*hdr_len = hdrlen;
	*data_len = datlen;
	return SOCKS5_UDP_OK;
}

static size_t tcpudp_prefix(uint8_t *p, size_t alen, size_t data_len)
{
	if (PREFIX + alen > 0xff)
		return 0; /* a name over SOCKS5_TCPUDP_NAME_MAX: HDRLEN cannot say it */
	p[0] = (uint8_t)(data_len >> 8);
	p[1] = (uint8_t)data_len;
	p[2] = (uint8_t)(PREFIX + alen);
	return PREFIX + alen;
}

size_t socks5_tcpudp_put_header(uint8_t *p, const struct proto_target *t, size_t data_len)
{
	if (data_len > SOCKS5_TCPUDP_DATA_MAX)
		return 0;
	return tcpudp_prefix(p, socks5_addr_put_target(p + PREFIX, t), data_len);
}

size_t socks5_tcpudp_put_header_sa(uint8_t *p, const struct sockaddr *sa, size_t data_len)
{
	if (data_len > SOCKS5_TCPUDP_DATA_MAX)
		return 0;
	return tcpudp_prefix(p, socks5_addr_put_sockaddr(p + PREFIX, sa), data_len);
}
