/* SPDX-License-Identifier: MIT */
/* Who may use an inbound: its allow list, and a process-wide throttle on failed logins per source. */
#ifndef SPLICED_ACCESS_H
#define SPLICED_ACCESS_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "config.h"
#include "siphash.h"

/* Is this client address in the inbound's allow list (an empty list allows everyone)? */
bool access_allowed(const struct inbound *in, const struct sockaddr_storage *peer);
/* The same for any list ([stats] allow). */
bool access_in_list(const struct cidr *allow, size_t n_allow, const struct sockaddr_storage *peer);
/*
 * A proxy inbound anyone who can reach it may use: no users, no allow
 * list, not on a loopback address (the start-up warns about it).
 */
bool access_open_to_all(const struct inbound *in);

/*
 * Failed logins per source and minute, shared by every worker. A source is
 * an IPv4 address, or an IPv6 /64 (one customer's network: a host picks any
 * address in it at will). Fixed size, no allocation after start: when the
 * table is full the stalest entry is reused. Keyed with a random key so
 * that no one can pick sources that pile up in one place.
 */
enum { AUTH_GUARD_SLOTS = 4096, AUTH_GUARD_LOCKS = 64, AUTH_GUARD_PROBE = 8 };

struct auth_source {
	uint8_t key[16];   /* the IPv4 address or the IPv6 /64, zero-padded */
	uint8_t family;    /* 0: free */
	uint32_t minute;   /* the minute (monotonic seconds / 60) this count is for */
	uint32_t failures; /* within that minute */
	uint32_t logged;   /* the minute it was last logged in */
};

struct auth_guard {
	unsigned max_per_minute; /* 0: no limit */
	uint8_t hash_key[SIPHASH_KEY_LEN];
	pthread_mutex_t locks[AUTH_GUARD_LOCKS];
	struct auth_source src[AUTH_GUARD_SLOTS];
};

/*
 * NULL when out of memory or randomness for the key. The table is calloc'd:
 * its pages cost memory only once sources fill them.
 */
struct auth_guard *auth_guard_new(unsigned max_per_minute);
void auth_guard_free(struct auth_guard *g);

/* Has this source had max_per_minute failures in the current minute? */
bool auth_guard_blocked(struct auth_guard *g, const struct sockaddr_storage *peer, uint64_t now_s);
/*
 * One more failure: returns the source's count for the current minute, and
 * *log is set the first time in a minute the source reaches the limit.
 */
unsigned auth_guard_failed(struct auth_guard *g, const struct sockaddr_storage *peer,
                           uint64_t now_s, bool *log);
/* "198.51.100.7" or "2001:db8:1:2::/64": how a source is named in a log line. */
const char *auth_guard_source_str(const struct sockaddr_storage *peer, char *buf, size_t len);

/*
 * Open connections per source, shared by every worker ([main]
 * max-connections-per-source). Same sources as above. The table has room
 * for twice max-connections sources (at most 2²¹), allocated at start: a
 * source's slot lives while it has a connection open and never moves, so
 * a connection keeps its slot's index. A source that finds no free slot in
 * its window (a table this empty almost never fills one) is let in
 * uncounted rather than refused.
 */
enum { SOURCE_LIMIT_LOCKS = 64, SOURCE_LIMIT_PROBE = 16, SOURCE_LIMIT_MAX_SLOTS = 1u << 21 };
#define SOURCE_UNCOUNTED UINT32_MAX

struct source_count {
	uint8_t key[16];
	uint8_t family;  /* 0: free */
	uint32_t open;   /* connections open */
	uint32_t logged; /* the minute a refusal was last logged */
};

struct source_limit {
	unsigned max;         /* 0: no limit */
	uint32_t group_slots; /* slots per lock (a power of two) */
	uint8_t hash_key[SIPHASH_KEY_LEN];
	pthread_mutex_t locks[SOURCE_LIMIT_LOCKS];
	struct source_count *slots;
};

/* 0 or -errno. With max_per_source 0 nothing is allocated and every take succeeds. */
int source_limit_init(struct source_limit *l, unsigned max_per_source, unsigned max_connections);
void source_limit_destroy(struct source_limit *l);
/*
 * One more connection from peer. True: let in, *slot to give back with
 * source_limit_put() (SOURCE_UNCOUNTED when not counted). False: the source
 * has max_per_source open already; *log is set the first time in a minute.
 */
bool source_limit_take(struct source_limit *l, const struct sockaddr_storage *peer, uint64_t now_s,
                       uint32_t *slot, bool *log);
void source_limit_put(struct source_limit *l, uint32_t slot);
/* Connections open from the source of peer (tests, logs). */
unsigned source_limit_open(struct source_limit *l, const struct sockaddr_storage *peer);

#endif
