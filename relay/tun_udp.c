/* SPDX-License-Identifier: MIT */
/* The TUN's UDP: a front end of the UDP sessions (udp_session.h) whose replies become IP packets written to the TUN; DNS to the TUN's DNS address. */
#include <errno.h>
#include <linux/virtio_net.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/uio.h>

#include "dns.h"
#include "log.h"
#include "route.h"
#include "tun_dev.h"
#include "tun_internal.h"
#include "worker.h"

/*
 * Each queue keeps its apps' UDP sessions by the app's endpoint (address
 * and port) in a table of its own: a session routes every datagram on its
 * own through [route] (direct: a socket per family; a socks5 upstream: UDP
 * ASSOCIATE or UDP-in-TCP, as the outbound's `udp` says; block), with the
 * session layer's timeouts, udp-max-sessions eviction and counters. A reply
 * comes back through deliver(): an IP and UDP header is made for it (from
 * the address the reply came from, to the app) and written with the
 * payload in one writev(2), no copy of ours. With offloads on, the UDP
 * checksum is left to the kernel (NEEDS_CSUM: a locally delivered packet
 * counts as verified, a forwarded one gets its sum where it leaves), so
 * the payload is never read here either.
 *
 * The kernel picks a datagram's queue by a hash of its addresses and
 * ports, so an app that sends from one port to two destinations may have
 * a session in two workers: each then has its own source port outside.
 *
 * DNS: with `dns-server`, datagrams to port 53 of the TUN's DNS address
 * (its own address + 1: 198.18.0.2, fdfe:5370::2 by default), or with
 * `dns-hijack` to port 53 anywhere, go to that server instead (routed like
 * any datagram to it); its replies reach the app as from the address the
 * app asked, so its resolver accepts them.
 */

struct tun_sess {
	struct udp_sess s; /* first: the session layer hands it back */
	struct tun_queue *q;
	bool dns;                 /* it sent queries that went to dns-server */
	union udp_addr dns_asked; /* where the app sent its last one (the replies' source) */
	bool mapped;              /* it sent to a mapped-dns address */
	union udp_addr mapped_to; /* the last one: replies from its port show as from it */
};

static const struct udp_front tun_front;

static void sa_of(union udp_addr *a, int family, const uint8_t *addr, uint16_t port_be)
{
	memset(a, 0, sizeof(*a));
	if (family == 4) {
		a->in4.sin_family = AF_INET;
		memcpy(&a->in4.sin_addr, addr, 4);
		a->in4.sin_port = port_be;
	} else {
		a->in6.sin6_family = AF_INET6;
		memcpy(&a->in6.sin6_addr, addr, 16);
		a->in6.sin6_port = port_be;
	}
}

/* The address and port of an endpoint, as they sit in a packet. */
static const uint8_t *addr_of(const union udp_addr *a, uint16_t *port_be)
{
	if (a->sa.sa_family == AF_INET) {
		*port_be = a->in4.sin_port;
		return (const uint8_t *)&a->in4.sin_addr;
	}
	*port_be = a->in6.sin6_port;
	return (const uint8_t *)&a->in6.sin6_addr;
}

void tun_udp_reply(struct tun_queue *q, const union udp_addr *src, const union udp_addr *client,
                   const uint8_t *d, size_t n)
{
	uint8_t hdr[PACKET_VNET_HDR + PACKET_IPV6_HDR + PACKET_UDP_HDR];
	const uint8_t *sa, *da;
	uint16_t sp, dp;
	size_t hl;
	struct iovec iov[2];
	int fam = src->sa.sa_family == AF_INET ? 4 : 6;

	if (src->sa.sa_family != client->sa.sa_family ||
	    n > 65535 - PACKET_IPV6_HDR - PACKET_UDP_HDR) {
		q->st->drop_udp++; /* an IPv6 source for an IPv4 app: no way to say it */
		return;
	}
	sa = addr_of(src, &sp);
	da = addr_of(client, &dp);
	memset(hdr, 0, PACKET_VNET_HDR);
	hl = packet_udp_header(hdr + PACKET_VNET_HDR, fam, sa, sp, da, dp, d, n, q->vnet);
	if (q->vnet) {
		struct packet_vnet h = {.flags = VIRTIO_NET_HDR_F_NEEDS_CSUM,
		                        .csum_start = (uint16_t)(hl - PACKET_UDP_HDR),
		                        .csum_offset = PACKET_UDP_CSUM_OFF};

		packet_vnet_put(hdr, &h);
		iov[0] = (struct iovec){hdr, PACKET_VNET_HDR + hl};
	} else {
		iov[0] = (struct iovec){hdr + PACKET_VNET_HDR, hl};
	}
	iov[1] = (struct iovec){(void *)d, n};
	tun_queue_put_iov(q, iov, 2);
	q->w->stats.udp_down++;
}

static void deliver(struct udp_sess *s, const uint8_t *d, size_t n, const struct sockaddr *from,
                    const struct proto_target *t)
{
	struct tun_sess *ts = (struct tun_sess *)s;
	struct tun_queue *q = ts->q;
	union udp_addr src;

	(void)t;
	if (!from || (from->sa_family != AF_INET && from->sa_family != AF_INET6)) {
		q->st->drop_udp++; /* a reply whose source the upstream named by a name */
		return;
	}
	memcpy(&src, from, from->sa_family == AF_INET ? sizeof(src.in4) : sizeof(src.in6));
	if (ts->dns && udp_endpoint_eq(&src, &q->dev->in->tun.dns_server))
		src = ts->dns_asked; /* the resolver's answer, as from where the app asked */
	else if (ts->mapped && src.in4.sin_port == ts->mapped_to.in4.sin_port)
		src = ts->mapped_to; /* from the name's real address: as from its mapped one */
	tun_udp_reply(q, &src, &s->client, d, n);
}

/*
 * A socks5 upstream refused UDP (microsocks answers REP 07 to UDP
 * ASSOCIATE): this queue sends its DNS over TCP through that outbound from
 * now on (the query that met the refusal is lost; resolvers ask again).
 */
static void refused(struct udp_sess *s, const struct outbound *ob, unsigned rep)
{
	struct tun_queue *q = ((struct tun_sess *)s)->q;
	long i = ob - s->w->cfg->outbounds;

	if (rep == 7 && i >= 0 && i < 64 && !(q->dns_over_tcp & (UINT64_C(1) << i))) {
		q->dns_over_tcp |= UINT64_C(1) << i;
		log_info(
		        "inbound %s: outbound %s has no UDP (REP 07): DNS goes over TCP through it",
		        q->dev->in->name, ob->name);
	}
}

static void closing(struct udp_sess *s)
{
	(void)s;
}

static void release(struct udp_sess *s)
{
	(void)s;
}

static const struct udp_front tun_front = {
        .deliver = deliver,
        .closing = closing,
        .release = release,
        .refused = refused,
};

/* The TUN's DNS address of family fam (its own + 1), into out. */
static void dns_address(const struct tun_dev *d, int fam, uint8_t *out)
{
	const struct cidr *c = &d->addr[fam == 4 ? 0 : 1];
	size_t alen = fam == 4 ? 4 : 16;

	memcpy(out, c->addr, alen);
	for (size_t i = alen; i-- > 0;)
		if (++out[i])
			break;
}

/* Whether addr lies in the TUN's prefix of its family. */
static bool in_prefix(const struct tun_dev *d, int fam, const uint8_t *addr)
{
	const struct cidr *c = &d->addr[fam == 4 ? 0 : 1];
	unsigned bits = c->prefix, full = bits / 8;

	if (!c->family || memcmp(addr, c->addr, full))
		return false;
	return bits % 8 == 0 || !((addr[full] ^ c->addr[full]) & (0xff00 >> (bits % 8)));
}

/*
 * Whether this queue's DNS goes over TCP: its route to dns-server leads to
 * an outbound that carries no UDP (an http upstream, a socks5 one with
 * udp = off, or one that refused it).
 */
static bool dns_over_tcp(struct tun_queue *q)
{
	const struct config *cfg = q->w->cfg;
	struct proto_target t;
	int i;

	proto_target_from_sa(&t, &q->dev->in->tun.dns_server);
	i = route_pick(cfg, q->dev->in, &t, NULL);
	if (cfg->outbounds[i].type == OUTBOUND_HTTP)
		return true;
	if (cfg->outbounds[i].type != OUTBOUND_SOCKS5)
		return false;
	return cfg->outbounds[i].udp_mode == OUTBOUND_UDP_OFF ||
	       (i < 64 && (q->dns_over_tcp & (UINT64_C(1) << i)));
}

/*
 * mapped-dns: a query for A or AAAA answered at once from the map (TTL 1 s,
 * no AAAA without an IPv6 range); others go on to dns-server when there is
 * one (false), or get an empty answer. true: answered (or dropped).
 */
static bool answer_mapped(struct tun_queue *q, const union udp_addr *client,
                          const union udp_addr *asked, const uint8_t *m, size_t n)
{
	struct tun_dev *d = q->dev;
	struct dns_query dq;
	uint8_t out[DNS_ANSWER_MAX], addr[16];
	size_t len;
	int fam;

	if (dns_parse_query(m, n, &dq) < 0) {
		q->st->drop_udp++; /* not a standard query: nothing a stub resolver sends */
		return true;
	}
	if (dq.qclass != 1 || (dq.qtype != DNS_TYPE_A && dq.qtype != DNS_TYPE_AAAA) ||
	    !dq.name[0]) {
		if (d->in->tun.dns_server.ss_family != AF_UNSPEC)
			return false;
		len = dns_answer(m, &dq, DNS_NOERROR, NULL, 0, 0, out); /* no such record here */
	} else {
		fam = dq.qtype == DNS_TYPE_A ? 4 : 6;
		if (dnsmap_lookup(&d->map, dq.name, fam, addr))
			len = dns_answer(m, &dq, DNS_NOERROR, addr, fam == 4 ? 4 : 16, 1, out);
		else
			len = dns_answer(m, &dq, DNS_NOERROR, NULL, 0, 0, out);
	}
	q->st->dns_mapped++;
	tun_udp_reply(q, asked, client, out, len);
	return true;
}

void tun_udp_packet(struct tun_queue *q, struct packet_view *v)
{
	struct worker *w = q->w;
	const struct inbound *in = q->dev->in;
	const struct inbound_tun *tc = &in->tun;
	const uint8_t *u = v->l4, *dst = packet_dst(v), *pl = u + PACKET_UDP_HDR;
	size_t pn = v->l4len - PACKET_UDP_HDR;
	uint16_t sport, dport;
	union udp_addr client, to;
	struct proto_target t;
	struct udp_sess *s;
	struct tun_sess *ts;
	bool dns = false, mapped = false;
	uint8_t dnsaddr[16];

	memcpy(&sport, u, 2);
	memcpy(&dport, u + 2, 2);
	if (!in->udp || w->draining || !q->udp_ready) {
		q->st->drop_udp++;
		return;
	}
	sa_of(&to, v->family, dst, dport);
	sa_of(&client, v->family, packet_src(v), sport);
	if (dnsmap_contains(&q->dev->map, v->family, dst)) {
		mapped = true; /* to a name mapped-dns gave out */
	} else if (in_prefix(q->dev, v->family, dst)) {
		dns_address(q->dev, v->family, dnsaddr);
		/* the TUN's own prefix: only its DNS address answers, and only with a server */
		if (memcmp(dst, dnsaddr, packet_addr_len(v)) || ntohs(dport) != 53 ||
		    (tc->dns_server.ss_family == AF_UNSPEC && !tc->mapped_dns)) {
			q->st->drop_udp++;
			return;
		}
		dns = true;
	} else if (tc->dns_hijack && ntohs(dport) == 53) {
		dns = true;
	}
	if (dns && tc->mapped_dns && answer_mapped(q, &client, &to, pl, pn))
		return;
	if (dns && dns_over_tcp(q)) {
		tun_dns_tcp(q, &client, &to, pl, pn);
		return;
	}
	memset(&t, 0, sizeof(t));
	if (mapped) {
		t.kind = TARGET_DOMAIN;
		t.port = ntohs(dport);
		if (!dnsmap_name(&q->dev->map, v->family, dst, t.host)) {
			q->st->mapped_unknown++;
			return;
		}
	} else if (dns) {
		proto_target_from_sa(&t, &tc->dns_server);
	} else {
		struct sockaddr_storage ss;

		memset(&ss, 0, sizeof(ss));
		memcpy(&ss, &to, udp_endpoint_len(&to));
		proto_target_from_sa(&t, &ss);
	}
	s = udp_sess_find(&q->udp, &client);
	if (!s) {
		s = udp_sess_open(w, q->inbound, &tun_front, sizeof(struct tun_sess), &client,
		                  &q->udp);
		if (!s) {
			w->stats.udp_send_errors++;
			return;
		}
		((struct tun_sess *)s)->q = q;
	}
	ts = (struct tun_sess *)s;
	if (dns) {
		ts->dns = true;
		ts->dns_asked = to;
	}
	if (mapped) {
		ts->mapped = true;
		ts->mapped_to = to;
	}
	udp_sess_send(s, &t, pl, pn);
	udp_tx_flush(w); /* the queue's buffer is read into again next */
}

int tun_udp_init(struct tun_queue *q)
{
	int ret = udp_sess_table_init(&q->udp);

	q->udp_ready = ret == 0;
	return ret;
}

void tun_udp_stop(struct tun_queue *q)
{
	struct udp_sess_table *t = &q->udp;

	if (!q->udp_ready)
		return;
	tun_dns_stop(q);
	/* Sessions still open (a drain closed the others) go now: their replies would find no queue. */
	for (uint32_t i = 0; t->b && i <= t->mask; i++)
		while (t->b[i])
			udp_sess_close(t->b[i]);
	udp_sess_table_fini(t);
	q->udp_ready = false;
}
