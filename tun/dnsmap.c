/* SPDX-License-Identifier: MIT */
/* Mapped DNS: names to addresses of a private range and back, bounded and least-recently-used. */
#include "dnsmap.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "siphash.h"

static uint32_t bucket(const struct dnsmap *m, const char *name)
{
	return (uint32_t)siphash24(m->key, name, strlen(name)) & m->mask;
}

int dnsmap_init(struct dnsmap *m, const uint8_t *base4, uint64_t n4, const uint8_t *base6,
                uint64_t n6, unsigned cap)
{
	uint64_t c = cap, b = 1;

	memset(m, 0, sizeof(*m));
	m->on[0] = n4 > 0;
	m->on[1] = n6 > 0;
	if (m->on[0]) {
		memcpy(m->base[0], base4, 4);
		c = n4 < c ? n4 : c;
	}
	if (m->on[1]) {
		memcpy(m->base[1], base6, 16);
		c = n6 < c ? n6 : c;
	}
	if (!c || (!m->on[0] && !m->on[1]))
		return -EINVAL;
	m->cap = (uint32_t)c;
	while (b < c)
		b <<= 1;
	m->mask = (uint32_t)b - 1;
	m->e = calloc(c, sizeof(*m->e));
	m->buckets = calloc(b, sizeof(*m->buckets));
	if (!m->e || !m->buckets ||
	    getrandom(m->key, sizeof(m->key), 0) != (ssize_t)sizeof(m->key)) {
		free(m->e);
		free(m->buckets);
		m->e = NULL;
		return -ENOMEM;
	}
	pthread_mutex_init(&m->lock, NULL);
	return 0;
}

void dnsmap_destroy(struct dnsmap *m)
{
	if (!m->e)
		return;
	for (uint32_t i = 0; i < m->fresh; i++)
		free(m->e[i].name);
	free(m->e);
	free(m->buckets);
	pthread_mutex_destroy(&m->lock);
	m->e = NULL;
}

static void lru_del(struct dnsmap *m, uint32_t id)
{
	struct dnsmap_entry *e = &m->e[id - 1];

	if (e->prev)
		m->e[e->prev - 1].next = e->next;
	else
		m->head = e->next;
	if (e->next)
		m->e[e->next - 1].prev = e->prev;
	else
		m->tail = e->prev;
	e->prev = e->next = 0;
}

static void lru_add(struct dnsmap *m, uint32_t id) /* at the tail: most recent */
{
	struct dnsmap_entry *e = &m->e[id - 1];

	e->prev = m->tail;
	e->next = 0;
	if (m->tail)
		m->e[m->tail - 1].next = id;
	else
		m->head = id;
	m->tail = id;
}

static void unhash(struct dnsmap *m, uint32_t id)
{
	uint32_t *pp = &m->buckets[bucket(m, m->e[id - 1].name)];

	while (*pp && *pp != id)
		pp = &m->e[*pp - 1].hnext;
	if (*pp)
		*pp = m->e[id - 1].hnext;
	m->e[id - 1].hnext = 0;
}

/* base + off + 1 (the range's first address is left out) */
static void addr_of(const struct dnsmap *m, int f, uint32_t off, uint8_t *out)
{
	size_t alen = f ? 16 : 4;
	uint64_t v = (uint64_t)off + 1;
	unsigned carry = 0;

	memcpy(out, m->base[f], alen);
	for (size_t i = alen; i-- > 0 && (v || carry);) {
		unsigned s = out[i] + (unsigned)(v & 0xff) + carry;

		out[i] = (uint8_t)s;
		carry = s >> 8;
		v >>= 8;
	}
}

/* addr - base - 1 as an index, or UINT32_MAX when it is not in the range */
static uint32_t index_of(const struct dnsmap *m, int f, const uint8_t *addr)
{
	size_t alen = f ? 16 : 4;
	uint64_t d = 0;
	int borrow = 0;
	uint8_t diff[16];

	for (size_t i = alen; i-- > 0;) {
		int s = addr[i] - m->base[f][i] - borrow;

		borrow = s < 0;
		diff[i] = (uint8_t)(s + (borrow ? 256 : 0));
	}
	if (borrow)
		return UINT32_MAX;
	for (size_t i = 0; i < alen; i++) {
		if (alen - i > 8 && diff[i])
			return UINT32_MAX;
		d = d << 8 | diff[i];
	}
	return d >= 1 && d - 1 < m->cap ? (uint32_t)(d - 1) : UINT32_MAX;
}

bool dnsmap_lookup(struct dnsmap *m, const char *name, int family, uint8_t *addr)
{
	int f = family == 4 ? 0 : 1;
	uint32_t b, id;
	char *copy;

	if (!m->on[f])
		return false;
	b = bucket(m, name);
	pthread_mutex_lock(&m->lock);
	for (id = m->buckets[b]; id; id = m->e[id - 1].hnext)
		if (!strcmp(m->e[id - 1].name, name))
			break;
	if (!id) {
		copy = strdup(name);
		if (!copy) {
			pthread_mutex_unlock(&m->lock);
			return false;
		}
		if (m->fresh < m->cap) {
			id = ++m->fresh;
		} else {
			id = m->head; /* the least recently used name gives its addresses up */
			unhash(m, id);
			lru_del(m, id);
			free(m->e[id - 1].name);
			m->evicted++;
		}
		m->e[id - 1].name = copy;
		m->e[id - 1].hnext = m->buckets[b];
		m->buckets[b] = id;
	} else {
		lru_del(m, id);
	}
	lru_add(m, id);
	pthread_mutex_unlock(&m->lock);
	addr_of(m, f, id - 1, addr);
	return true;
}

bool dnsmap_contains(const struct dnsmap *m, int family, const uint8_t *addr)
{
	int f = family == 4 ? 0 : 1;

	return m->e && m->on[f] && index_of(m, f, addr) != UINT32_MAX;
}

bool dnsmap_name(struct dnsmap *m, int family, const uint8_t *addr, char *name)
{
	int f = family == 4 ? 0 : 1;
	uint32_t i;
	bool ok = false;

	if (!m->e || !m->on[f] || (i = index_of(m, f, addr)) == UINT32_MAX)
		return false;
	pthread_mutex_lock(&m->lock);
	if (i < m->fresh && m->e[i].name) {
		strcpy(name, m->e[i].name);
		lru_del(m, i + 1);
		lru_add(m, i + 1);
		ok = true;
	}
	pthread_mutex_unlock(&m->lock);
	return ok;
}
