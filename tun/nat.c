/* SPDX-License-Identifier: MIT */
/* The TUN's TCP NAT: entries, fake tuples, the super-packet rewrite, embryo and linger expiry. */
#include "nat.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "siphash.h"

/* index + 1 of an entry pointer */
static uint32_t id_of(const struct nat *n, const struct nat_entry *e)
{
	return (uint32_t)(e - n->e) + 1;
}

static struct nat_entry *at(const struct nat *n, uint32_t id)
{
	return id ? &n->e[id - 1] : NULL;
}

static int fam_index(int family)
{
	return family == 4 ? 0 : 1;
}

int nat_init(struct nat *n, const struct nat_cfg *cfg, uint64_t now_ms)
{
	uint64_t cap = cfg->cap, buckets = 1;

	memset(n, 0, sizeof(*n));
	n->cfg = *cfg;
	if ((!cfg->fam[0].on && !cfg->fam[1].on) || cap == 0)
		return -EINVAL;
	for (int f = 0; f < 2; f++) {
		uint64_t tuples;

		if (!cfg->fam[f].on)
			continue;
		if (cfg->fam[f].n_pool == 0 || cfg->fam[f].n_pool > UINT32_MAX)
			return -EINVAL;
		tuples = cfg->fam[f].n_pool * NAT_PORTS;
		if (tuples < cap)
			cap = tuples; /* a /30 has one fake address: 64512 flows */
	}
	if (cap > UINT32_MAX / 2)
		cap = UINT32_MAX / 2;
	n->cfg.cap = (unsigned)cap;
	for (int f = 0; f < 2; f++)
		if (cfg->fam[f].on)
			n->gens[f] = cfg->fam[f].n_pool * NAT_PORTS / cap;
	while (buckets < cap)
		buckets <<= 1;
	n->mask = (uint32_t)buckets - 1;
	/* calloc: pages are touched as entries are used (the free list is LIFO) */
	n->e = calloc(cap, sizeof(*n->e));
	n->buckets = calloc(buckets, sizeof(*n->buckets));
	if (!n->e || !n->buckets) {
		free(n->e);
		free(n->buckets);
		n->e = NULL;
		n->buckets = NULL;
		return -ENOMEM;
	}
	/*
	 * No free list yet: indices never used are taken in order (n->fresh),
	 * freed ones from the free list first, so the array's pages are touched
	 * only as far as the most flows ever open at once reached (the RSS of
	 * an idle table is nothing, not 64 bytes x max-flows).
	 */
	n->free_head = 0;
	n->fresh = 0;
	if (getrandom(n->key, sizeof(n->key), 0) != sizeof(n->key)) {
		nat_destroy(n);
		return -EIO;
	}
	n->t0_ms = now_ms;
	atomic_store(&n->next_due, UINT64_MAX);
	pthread_mutex_init(&n->lock, NULL);
	return 0;
}

void nat_destroy(struct nat *n)
{
	if (n->e)
		pthread_mutex_destroy(&n->lock);
	free(n->e);
	free(n->buckets);
	n->e = NULL;
	n->buckets = NULL;
}

void nat_set_port(struct nat *n, unsigned i, uint16_t port_be)
{
	if (i >= NAT_MAX_LISTENERS)
		return;
	n->cfg.ports[i] = port_be;
	if (n->cfg.n_ports <= i)
		n->cfg.n_ports = i + 1;
}

/* Milliseconds since nat_init(), the entries' clock. */
static uint64_t rel(const struct nat *n, uint64_t now_ms)
{
	return now_ms > n->t0_ms ? now_ms - n->t0_ms : 0;
}

static uint32_t hash_tuple(const struct nat *n, uint8_t family, const uint8_t *src,
                           const uint8_t *dst, uint16_t sport, uint16_t dport)
{
	uint8_t k[1 + 16 + 16 + 4];
	size_t alen = family == 4 ? 4 : 16, off = 0;

	k[off++] = family;
	memcpy(k + off, src, alen);
	off += alen;
	memcpy(k + off, dst, alen);
	off += alen;
	memcpy(k + off, &sport, 2);
	memcpy(k + off + 2, &dport, 2);
	off += 4;
	return (uint32_t)siphash24(n->key, k, off) & n->mask;
}

/* a + off for a 4- or 16-byte big-endian address (off below 2^32) */
static void addr_add(uint8_t *out, const uint8_t *a, size_t alen, uint64_t off)
{
	unsigned carry = 0;

	memcpy(out, a, alen);
	for (size_t i = alen; i-- > 0;) {
		unsigned s = out[i] + (unsigned)(off & 0xff) + carry;

		out[i] = (uint8_t)s;
		carry = s >> 8;
		off >>= 8;
		if (!off && !carry)
			break;
	}
}

/* b - a if a <= b and the difference fits in 64 bits, else UINT64_MAX */
static uint64_t addr_diff(const uint8_t *b, const uint8_t *a, size_t alen)
{
	uint64_t d = 0;
	int borrow = 0;
	uint8_t diff[16];

	for (size_t i = alen; i-- > 0;) {
		int s = b[i] - a[i] - borrow;

		borrow = s < 0;
		diff[i] = (uint8_t)(s + (borrow ? 256 : 0));
	}
	if (borrow)
		return UINT64_MAX;
	for (size_t i = 0; i < alen; i++) {
		if (alen - i > 8 && diff[i])
			return UINT64_MAX;
		d = d << 8 | diff[i];
	}
	return d;
}

/* The fake address and port of entry e (the source the listener sees). */
static void fake_of(const struct nat *n, const struct nat_entry *e, uint8_t *addr, uint16_t *port)
{
	int f = fam_index(e->family);
	uint64_t idx = (uint64_t)(e - n->e);
	uint64_t fid = (e->gen % n->gens[f]) * n->cfg.cap + idx;

	addr_add(addr, n->cfg.fam[f].pool, e->family == 4 ? 4 : 16, fid / NAT_PORTS);
	*port = htons((uint16_t)(NAT_PORT_LO + fid % NAT_PORTS));
}

/* The entry a fake address and port names, whatever its state; NULL if none could. */
static struct nat_entry *by_fake(const struct nat *n, uint8_t family, const uint8_t *addr,
                                 uint16_t port_be)
{
	int f = fam_index(family);
	uint64_t ipi, fid, g;
	uint16_t port = ntohs(port_be);
	struct nat_entry *e;

	if (!n->cfg.fam[f].on || port < NAT_PORT_LO)
		return NULL;
	ipi = addr_diff(addr, n->cfg.fam[f].pool, family == 4 ? 4 : 16);
	if (ipi >= n->cfg.fam[f].n_pool)
		return NULL;
	fid = ipi * NAT_PORTS + (port - NAT_PORT_LO);
	g = fid / n->cfg.cap;
	e = &n->e[fid % n->cfg.cap];
	if (g >= n->gens[f] || e->state == NAT_FREE || e->family != family ||
	    e->gen % n->gens[f] != g)
		return NULL;
	return e;
}

/* Whether addr lies in the TUN's own prefix (the listener's, the pool, the DNS address). */
static bool in_prefix(const struct nat *n, uint8_t family, const uint8_t *addr)
{
	int f = fam_index(family);
	const uint8_t *net = n->cfg.fam[f].listen;
	unsigned bits = n->cfg.fam[f].prefixlen, full = bits / 8;

	if (memcmp(addr, net, full))
		return false;
	if (bits % 8 && ((addr[full] ^ net[full]) & (0xff00 >> (bits % 8))))
		return false;
	/* mapped DNS: the prefix's upper half names destinations; the TUN's own address is below */
	return !(n->cfg.fam[f].mapped && (addr[bits / 8] & (0x80 >> (bits % 8))));
}

static void list_append(struct nat *n, struct nat_list *l, struct nat_entry *e)
{
	uint32_t id = id_of(n, e);

	e->tnext = 0;
	e->tprev = l->tail;
	if (l->tail)
		at(n, l->tail)->tnext = id;
	else
		l->head = id;
	l->tail = id;
}

static void list_remove(struct nat *n, struct nat_list *l, struct nat_entry *e)
{
	if (e->tprev)
		at(n, e->tprev)->tnext = e->tnext;
	else
		l->head = e->tnext;
	if (e->tnext)
		at(n, e->tnext)->tprev = e->tprev;
	else
		l->tail = e->tprev;
	e->tprev = e->tnext = 0;
}

/* The earliest deadline of both lists, for nat_expire()'s lock-free check. Lock held. */
static void update_due(struct nat *n)
{
	uint64_t d = UINT64_MAX;

	if (n->embryo.head && at(n, n->embryo.head)->due < d)
		d = at(n, n->embryo.head)->due;
	if (n->linger.head && at(n, n->linger.head)->due < d)
		d = at(n, n->linger.head)->due;
	atomic_store_explicit(&n->next_due, d, memory_order_relaxed);
}

static void unhash(struct nat *n, struct nat_entry *e)
{
	uint32_t b = hash_tuple(n, e->family, e->src, e->dst, e->sport, e->dport);
	uint32_t *pp = &n->buckets[b], id = id_of(n, e);

	while (*pp && *pp != id)
		pp = &at(n, *pp)->hnext;
	if (*pp)
		*pp = e->hnext;
	e->hnext = 0;
	e->hashed = false;
}

static void entry_free(struct nat *n, struct nat_entry *e)
{
	if (e->hashed)
		unhash(n, e);
	e->state = NAT_FREE;
	e->gen++; /* the next flow in this slot gets another fake tuple */
	e->hnext = n->free_head;
	n->free_head = id_of(n, e);
	n->n_used--;
}

/*
 * Rewrites v's addresses and ports to src:sport → dst:dport, fixing the IPv4
 * header checksum and the TCP checksum incrementally (see
 * packet_csum_replace(): a partial checksum changes only with the
 * addresses).
 */
static void rewrite(struct packet_view *v, const uint8_t *src, uint16_t sport, const uint8_t *dst,
                    uint16_t dport, bool partial)
{
	size_t alen = packet_addr_len(v);
	uint8_t *addrs = packet_src(v), *th = v->l4, fresh[32];
	uint16_t ports[2] = {sport, dport};

	/* Source and destination are adjacent in both IP headers. */
	memcpy(fresh, src, alen);
	memcpy(fresh + alen, dst, alen);
	if (v->family == 4)
		packet_csum_replace(v->ip + 10, addrs, fresh, 8, false);
	packet_csum_replace(th + PACKET_TCP_CSUM_OFF, addrs, fresh, 2 * alen, partial);
	if (!partial)
		packet_csum_replace(th + PACKET_TCP_CSUM_OFF, th, ports, 4, false);
	memcpy(addrs, fresh, 2 * alen);
	memcpy(th, ports, 4);
}

bool nat_is_listener(const struct nat *n, const struct packet_view *v)
{
	int f = fam_index(v->family);
	uint16_t sport;

	memcpy(&sport, v->l4, 2);
	if (!n->cfg.fam[f].on || memcmp(packet_src(v), n->cfg.fam[f].listen, packet_addr_len(v)))
		return false;
	for (unsigned i = 0; i < n->cfg.n_ports; i++)
		if (sport == n->cfg.ports[i])
			return true;
	return false;
}

enum nat_verdict nat_from_app(struct nat *n, struct packet_view *v, bool partial, uint64_t now_ms,
                              unsigned listener)
{
	int f = fam_index(v->family);
	size_t alen = packet_addr_len(v);
	uint8_t *src = packet_src(v), *dst = packet_dst(v), fake[16], listen[16];
	uint16_t sport, dport, fport, lport;
	bool syn =
	        (v->l4[13] & (PACKET_TCP_SYN | PACKET_TCP_ACK | PACKET_TCP_RST)) == PACKET_TCP_SYN;
	struct nat_entry *e;
	uint32_t b, id;

	if (!n->cfg.fam[f].on) {
		n->st.no_family++;
		return NAT_NO_FAMILY;
	}
	/* The prefix is ours: a connection there would come back into the TUN. */
	if (in_prefix(n, v->family, dst)) {
		n->st.bad_dst++;
		return NAT_BAD_DST;
	}
	memcpy(&sport, v->l4, 2);
	memcpy(&dport, v->l4 + 2, 2);
	b = hash_tuple(n, v->family, src, dst, sport, dport);
	pthread_mutex_lock(&n->lock);
	for (id = n->buckets[b]; id; id = at(n, id)->hnext) {
		e = at(n, id);
		if (e->family == v->family && e->sport == sport && e->dport == dport &&
		    !memcmp(e->src, src, alen) && !memcmp(e->dst, dst, alen))
			break;
	}
	e = at(n, id);
	if (e && e->state == NAT_LINGER && syn) {
		/* The app reuses the tuple of a closed flow: a new flow, a new fake tuple. */
		unhash(n, e);
		e = NULL;
	}
	if (!e) {
		if (!syn) {
			pthread_mutex_unlock(&n->lock);
			n->st.no_flow++;
			return NAT_NO_FLOW;
		}
		if (n->free_head) {
			e = at(n, n->free_head);
			n->free_head = e->hnext;
		} else if (n->fresh < n->cfg.cap) {
			e = &n->e[n->fresh++];
		} else {
			pthread_mutex_unlock(&n->lock);
			n->st.full++;
			return NAT_FULL;
		}
		n->n_used++;
		e->family = v->family;
		memset(e->src, 0, sizeof(e->src));
		memset(e->dst, 0, sizeof(e->dst));
		memcpy(e->src, src, alen);
		memcpy(e->dst, dst, alen);
		e->sport = sport;
		e->dport = dport;
		e->state = NAT_EMBRYO;
		e->hashed = true;
		e->listener = (uint8_t)(listener < n->cfg.n_ports ? listener : 0);
		e->hnext = n->buckets[b];
		n->buckets[b] = id_of(n, e);
		e->due = rel(n, now_ms) + n->cfg.embryo_ms;
		list_append(n, &n->embryo, e);
		if (n->embryo.head == id_of(n, e))
			update_due(n);
		n->st.created++;
	}
	if (e->state == NAT_EMBRYO && (v->l4[13] & PACKET_TCP_RST)) {
		/*
		 * The app gave up before the connection was accepted (a connect
		 * cancelled mid-handshake): the listener drops its half-open
		 * socket on this RST, so nothing will accept the entry.
		 */
		list_remove(n, &n->embryo, e);
		e->state = NAT_LINGER;
		e->due = rel(n, now_ms) + n->cfg.linger_ms;
		list_append(n, &n->linger, e);
		update_due(n);
	}
	fake_of(n, e, fake, &fport);
	memcpy(listen, n->cfg.fam[f].listen, alen);
	lport = n->cfg.ports[e->listener];
	pthread_mutex_unlock(&n->lock);
	rewrite(v, fake, fport, listen, lport, partial);
	return NAT_PASS;
}

enum nat_verdict nat_from_listener(struct nat *n, struct packet_view *v, bool partial)
{
	size_t alen = packet_addr_len(v);
	uint8_t osrc[16], odst[16];
	uint16_t fport, osport, odport;
	struct nat_entry *e;

	memcpy(&fport, v->l4 + 2, 2);
	pthread_mutex_lock(&n->lock);
	e = by_fake(n, v->family, packet_dst(v), fport);
	if (!e) {
		pthread_mutex_unlock(&n->lock);
		n->st.no_flow++;
		return NAT_NO_FLOW;
	}
	memcpy(osrc, e->src, alen);
	memcpy(odst, e->dst, alen);
	osport = e->sport;
	odport = e->dport;
	pthread_mutex_unlock(&n->lock);
	/* Back to the app: from where it sent to (D:d), to the app (S:s). */
	rewrite(v, odst, odport, osrc, osport, partial);
	return NAT_PASS;
}

static void to_sockaddr(struct sockaddr_storage *ss, uint8_t family, const uint8_t *a,
                        uint16_t port_be)
{
	memset(ss, 0, sizeof(*ss));
	if (family == 4) {
		struct sockaddr_in *s4 = (struct sockaddr_in *)ss;

		s4->sin_family = AF_INET;
		memcpy(&s4->sin_addr, a, 4);
		s4->sin_port = port_be;
	} else {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;

		s6->sin6_family = AF_INET6;
		memcpy(&s6->sin6_addr, a, 16);
		s6->sin6_port = port_be;
	}
}

int nat_accept(struct nat *n, const struct sockaddr *peer, struct nat_flow *out, uint32_t *ref,
               uint64_t now_ms)
{
	const struct sockaddr_in6 *p6 = (const struct sockaddr_in6 *)peer;
	uint8_t family, addr[16];
	uint16_t port;
	struct nat_entry *e;

	(void)now_ms;
	if (peer->sa_family == AF_INET) {
		const struct sockaddr_in *p4 = (const struct sockaddr_in *)peer;

		family = 4;
		memcpy(addr, &p4->sin_addr, 4);
		port = p4->sin_port;
	} else if (peer->sa_family == AF_INET6 && IN6_IS_ADDR_V4MAPPED(&p6->sin6_addr)) {
		family = 4; /* a dual-stack listener shows IPv4 peers as ::ffff:a.b.c.d */
		memcpy(addr, p6->sin6_addr.s6_addr + 12, 4);
		port = p6->sin6_port;
	} else if (peer->sa_family == AF_INET6) {
		family = 6;
		memcpy(addr, &p6->sin6_addr, 16);
		port = p6->sin6_port;
	} else {
		return -EAFNOSUPPORT;
	}
	pthread_mutex_lock(&n->lock);
	e = by_fake(n, family, addr, port);
	if (!e || e->state != NAT_EMBRYO) {
		pthread_mutex_unlock(&n->lock);
		n->st.accept_miss++;
		return -ENOENT;
	}
	list_remove(n, &n->embryo, e);
	update_due(n);
	e->state = NAT_OPEN;
	to_sockaddr(&out->src, family, e->src, e->sport);
	to_sockaddr(&out->dst, family, e->dst, e->dport);
	*ref = id_of(n, e);
	n->st.accepted++;
	pthread_mutex_unlock(&n->lock);
	return 0;
}

void nat_release(struct nat *n, uint32_t ref, uint64_t now_ms)
{
	struct nat_entry *e;

	if (!ref || ref > n->cfg.cap)
		return;
	pthread_mutex_lock(&n->lock);
	e = at(n, ref);
	if (e->state == NAT_OPEN) {
		e->state = NAT_LINGER;
		e->due = rel(n, now_ms) + n->cfg.linger_ms;
		list_append(n, &n->linger, e);
		if (n->linger.head == ref)
			update_due(n);
		n->st.released++;
	}
	pthread_mutex_unlock(&n->lock);
}

void nat_expire(struct nat *n, uint64_t now_ms)
{
	uint64_t now = rel(n, now_ms);
	struct nat_entry *e;

	if (atomic_load_explicit(&n->next_due, memory_order_relaxed) > now)
		return;
	pthread_mutex_lock(&n->lock);
	while ((e = at(n, n->embryo.head)) && e->due <= now) {
		list_remove(n, &n->embryo, e);
		entry_free(n, e);
		n->st.expired_embryo++;
	}
	while ((e = at(n, n->linger.head)) && e->due <= now) {
		list_remove(n, &n->linger, e);
		entry_free(n, e);
		n->st.expired_linger++;
	}
	update_due(n);
	pthread_mutex_unlock(&n->lock);
}

unsigned nat_count(struct nat *n)
{
	unsigned c;

	pthread_mutex_lock(&n->lock);
	c = n->n_used;
	pthread_mutex_unlock(&n->lock);
	return c;
}
