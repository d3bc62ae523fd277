/* SPDX-License-Identifier: MIT */
/* Inbound access control: allow lists, and the failed-login throttle per source. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

#include "access.h"
#include "route.h"

bool access_allowed(const struct inbound *in, const struct sockaddr_storage *peer)
{
	const uint8_t *a;
	int family = peer->ss_family;

	if (!in->n_allow)
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
	for (size_t i = 0; i < in->n_allow; i++) {
		const struct cidr *c = &in->allow[i];
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

int auth_guard_init(struct auth_guard *g, unsigned max_per_minute)
{
	memset(g, 0, sizeof(*g));
	g->max_per_minute = max_per_minute;
	if (getrandom(g->hash_key, sizeof(g->hash_key), 0) != (ssize_t)sizeof(g->hash_key))
		return -EIO;
	for (int i = 0; i < AUTH_GUARD_LOCKS; i++)
		pthread_mutex_init(&g->locks[i], NULL);
	return 0;
}

void auth_guard_destroy(struct auth_guard *g)
{
	for (int i = 0; i < AUTH_GUARD_LOCKS; i++)
		pthread_mutex_destroy(&g->locks[i]);
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
	return in->type != INBOUND_FORWARD && !inbound_requires_auth(in) && !in->n_allow &&
	       !loopback(&in->listen);
}
