/* SPDX-License-Identifier: MIT */
/* Inbound access control: allow lists, and the failed-login throttle per source. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "access.h"
#include "route.h"

bool access_allowed(const struct inbound *in, const struct sockaddr_storage *peer)
{
	return access_in_list(in->allow, in->n_allow, peer);
}

bool access_in_list(const struct cidr *allow, size_t n_allow, const struct sockaddr_storage *peer)
{
	const uint8_t *a;
	int family = peer->ss_family;

	if (!n_allow)
		return true;
	if (family == AF_INET) {
		a = (const uint8_t *)&((const struct sockaddr_in *)peer)->sin_addr;
	} else if (family == AF_INET6) {
		const struct in6_addr *a6 = &((const struct sockaddr_in6 *)peer)->sin6_addr;
		a = a6->s6_addr;
		if (IN6_IS_ADDR_V4MAPPED(a6)) {
			a += 12;
			family = AF_INET;
		}
	} else {
		return false;
	}
	for (size_t i = 0; i < n_allow; i++) {
		const struct cidr *c = &allow[i];
		if (c->family == family && route_prefix_match(a, c->addr, c->prefix))
			return true;
	}
	return false;
}

/* The source a failure is charged to: the IPv4 address, or the IPv6 /64. */
static int source_key(const struct sockaddr_storage *peer, uint8_t key[16])
{
	memset(key, 0, 16);
	if (peer->ss_family == AF_INET) {
		memcpy(key, &((const struct sockaddr_in *)peer)->sin_addr, 4);
		return AF_INET;
	}
	if (peer->ss_family == AF_INET6) {
		const struct in6_addr *a6 = &((const struct sockaddr_in6 *)peer)->sin6_addr;
		if (IN6_IS_ADDR_V4MAPPED(a6)) {
			memcpy(key, a6->s6_addr + 12, 4);
			return AF_INET;
		}
		memcpy(key, a6->s6_addr, 8);
		return AF_INET6;
	}
	return 0;
}

struct auth_guard *auth_guard_new(unsigned max_per_minute)
{
	struct auth_guard *g = calloc(1, sizeof(*g));

	if (!g)
		return NULL;
	g->max_per_minute = max_per_minute;
	if (getrandom(g->hash_key, sizeof(g->hash_key), 0) != (ssize_t)sizeof(g->hash_key)) {
		free(g);
		return NULL;
	}
	for (int i = 0; i < AUTH_GUARD_LOCKS; i++)
		pthread_mutex_init(&g->locks[i], NULL);
	return g;
}

void auth_guard_free(struct auth_guard *g)
{
	if (!g)
		return;
	for (int i = 0; i < AUTH_GUARD_LOCKS; i++)
		pthread_mutex_destroy(&g->locks[i]);
	free(g);
}

/*
 * The slots of a source: AUTH_GUARD_PROBE consecutive ones inside one group
 * of AUTH_GUARD_SLOTS / AUTH_GUARD_LOCKS, all under that group's lock.
 * Returns the group (locked) and, in *slot, the source's slot (*found), or
 * the one to take for it.
 */
enum { GROUP = AUTH_GUARD_SLOTS / AUTH_GUARD_LOCKS };

static unsigned lookup(struct auth_guard *g, int family, const uint8_t key[16], uint32_t minute,
                       struct auth_source **slot, bool *found)
{
	uint8_t in[17];
	uint64_t h;
	unsigned group, start;
	struct auth_source *take = NULL;

	memcpy(in, key, 16);
	in[16] = (uint8_t)family;
	h = siphash24(g->hash_key, in, sizeof(in));
	group = (unsigned)(h % AUTH_GUARD_LOCKS);
	start = (unsigned)((h >> 32) % GROUP);
	pthread_mutex_lock(&g->locks[group]);
	*found = false;
	for (unsigned i = 0, best = UINT32_MAX; i < AUTH_GUARD_PROBE; i++) {
		struct auth_source *s = &g->src[group * GROUP + (start + i) % GROUP];
		unsigned score;

		if (s->family == family && !memcmp(s->key, key, 16)) {
			*slot = s;
			*found = true;
			return group;
		}
		/* To take for a new source: a free slot, else a stale one, else the least failing. */
		score = !s->family ? 0 : s->minute != minute ? 1 : 2 + s->failures;
		if (score < best) {
			best = score;
			take = s;
		}
	}
	*slot = take;
	return group;
}

bool auth_guard_blocked(struct auth_guard *g, const struct sockaddr_storage *peer, uint64_t now_s)
{
	uint8_t key[16];
	int family = source_key(peer, key);
	uint32_t minute = (uint32_t)(now_s / 60);
	struct auth_source *s;
	bool found, blocked;
	unsigned group;

	if (!g->max_per_minute || !family)
		return false;
	group = lookup(g, family, key, minute, &s, &found);
	blocked = found && s->minute == minute && s->failures >= g->max_per_minute;
	pthread_mutex_unlock(&g->locks[group]);
	return blocked;
}

unsigned auth_guard_failed(struct auth_guard *g, const struct sockaddr_storage *peer,
                           uint64_t now_s, bool *log)
{
	uint8_t key[16];
	int family = source_key(peer, key);
	uint32_t minute = (uint32_t)(now_s / 60);
	struct auth_source *s;
	bool found;
	unsigned group, n;

	*log = false;
	if (!family)
		return 0;
	group = lookup(g, family, key, minute, &s, &found);
	if (!found || s->minute != minute) {
		memcpy(s->key, key, 16);
		s->family = (uint8_t)family;
		s->minute = minute;
		s->failures = 0;
		if (!found)
			s->logged = UINT32_MAX;
	}
	n = ++s->failures;
	if (g->max_per_minute && n >= g->max_per_minute && s->logged != minute) {
		s->logged = minute;
		*log = true;
	}
	pthread_mutex_unlock(&g->locks[group]);
	return n;
}

const char *auth_guard_source_str(const struct sockaddr_storage *peer, char *buf, size_t len)
{
	uint8_t key[16];
	char ip[INET6_ADDRSTRLEN];
	int family = source_key(peer, key);

	if (family == AF_INET) {
		inet_ntop(AF_INET, key, ip, sizeof(ip));
		snprintf(buf, len, "%s", ip);
	} else if (family == AF_INET6) {
		inet_ntop(AF_INET6, key, ip, sizeof(ip));
		snprintf(buf, len, "%s/64", ip);
	} else {
		snprintf(buf, len, "(unknown)");
	}
	return buf;
}

int source_limit_init(struct source_limit *l, unsigned max_per_source, unsigned max_connections)
{
	uint64_t want = 2 * (uint64_t)max_connections;
	uint32_t n = SOURCE_LIMIT_LOCKS * SOURCE_LIMIT_PROBE * 4;

	memset(l, 0, sizeof(*l));
	l->max = max_per_source;
	if (!max_per_source)
		return 0;
	while (n < want && n < SOURCE_LIMIT_MAX_SLOTS)
		n *= 2;
	l->slots = calloc(n, sizeof(*l->slots));
	if (!l->slots)
		return -ENOMEM;
	l->group_slots = n / SOURCE_LIMIT_LOCKS;
	if (getrandom(l->hash_key, sizeof(l->hash_key), 0) != (ssize_t)sizeof(l->hash_key)) {
		free(l->slots);
		l->slots = NULL;
		return -EIO;
	}
	for (int i = 0; i < SOURCE_LIMIT_LOCKS; i++)
		pthread_mutex_init(&l->locks[i], NULL);
	return 0;
}

void source_limit_destroy(struct source_limit *l)
{
	if (!l->slots)
		return;
	for (int i = 0; i < SOURCE_LIMIT_LOCKS; i++)
		pthread_mutex_destroy(&l->locks[i]);
	free(l->slots);
	l->slots = NULL;
}

/*
 * The window of a source: SOURCE_LIMIT_PROBE consecutive slots (wrapping)
 * inside one lock's group. Every slot of the window is looked at, so a
 * freed slot needs no tombstone. Returns the group, locked; *idx is the
 * source's slot, or a free one for it (*found false), or UINT32_MAX.
 */
static unsigned window(struct source_limit *l, int family, const uint8_t key[16], uint32_t *idx,
                       bool *found)
{
	uint8_t in[17];
	uint64_t h;
	unsigned group;
	uint32_t start, free_idx = UINT32_MAX;

	memcpy(in, key, 16);
	in[16] = (uint8_t)family;
	h = siphash24(l->hash_key, in, sizeof(in));
	group = (unsigned)(h % SOURCE_LIMIT_LOCKS);
	start = (uint32_t)(h >> 32) & (l->group_slots - 1);
	pthread_mutex_lock(&l->locks[group]);
	*found = false;
	for (uint32_t i = 0; i < SOURCE_LIMIT_PROBE; i++) {
		uint32_t k = group * l->group_slots + ((start + i) & (l->group_slots - 1));
		struct source_count *s = &l->slots[k];

		if (s->family == family && !memcmp(s->key, key, 16)) {
			*idx = k;
			*found = true;
			return group;
		}
		if (!s->family && free_idx == UINT32_MAX)
			free_idx = k;
	}
	*idx = free_idx;
	return group;
}

bool source_limit_take(struct source_limit *l, const struct sockaddr_storage *peer, uint64_t now_s,
                       uint32_t *slot, bool *log)
{
	uint8_t key[16];
	int family;
	uint32_t idx, minute = (uint32_t)(now_s / 60);
	struct source_count *s;
	bool found, ok = true;
	unsigned group;

	*slot = SOURCE_UNCOUNTED;
	*log = false;
	if (!l->max || !(family = source_key(peer, key)))
		return true;
	group = window(l, family, key, &idx, &found);
	if (idx == UINT32_MAX)
		goto out; /* the window is full of other sources: let it in, uncounted */
	s = &l->slots[idx];
	if (!found) {
		memcpy(s->key, key, 16);
		s->family = (uint8_t)family;
		s->open = 0;
		s->logged = UINT32_MAX;
	}
	if (s->open >= l->max) {
		ok = false;
		if (s->logged != minute) {
			s->logged = minute;
			*log = true;
		}
	} else {
		s->open++;
		*slot = idx;
	}
out:
	pthread_mutex_unlock(&l->locks[group]);
	return ok;
}

void source_limit_put(struct source_limit *l, uint32_t slot)
{
	unsigned group;
	struct source_count *s;

	if (slot == SOURCE_UNCOUNTED || !l->slots)
		return;
	group = slot / l->group_slots;
	s = &l->slots[slot];
	pthread_mutex_lock(&l->locks[group]);
	if (s->open && !--s->open)
		s->family = 0; /* free: no source left to count */
	pthread_mutex_unlock(&l->locks[group]);
}

unsigned source_limit_open(struct source_limit *l, const struct sockaddr_storage *peer)
{
	uint8_t key[16];
	int family;
	uint32_t idx;
	bool found;
	unsigned group, n = 0;

	if (!l->max || !(family = source_key(peer, key)))
		return 0;
	group = window(l, family, key, &idx, &found);
	if (found)
		n = l->slots[idx].open;
	pthread_mutex_unlock(&l->locks[group]);
	return n;
}

static bool loopback(const struct sockaddr_storage *a)
{
	if (a->ss_family == AF_INET)
		return ((const uint8_t *)&((const struct sockaddr_in *)a)->sin_addr)[0] == 127;
	if (a->ss_family == AF_INET6) {
		const struct in6_addr *a6 = &((const struct sockaddr_in6 *)a)->sin6_addr;
		return IN6_IS_ADDR_LOOPBACK(a6) ||
		       (IN6_IS_ADDR_V4MAPPED(a6) && a6->s6_addr[12] == 127);
	}
	return false;
}

bool access_open_to_all(const struct inbound *in)
{
	/*
	 * A forward goes to one target; a transparent inbound only to where the
	 * firewall's rules send a connection (one made to it directly is its own
	 * listener, refused as a loop): neither lets a client pick a target.
	 */
	if (in->type == INBOUND_FORWARD || in->type == INBOUND_REDIRECT ||
	    in->type == INBOUND_TPROXY)
		return false;
	return !inbound_requires_auth(in) && !in->n_allow && !loopback(&in->listen);
}
