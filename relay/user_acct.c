/* SPDX-License-Identifier: MIT */
/* Per-user accounting: a hash table of names, made at first login, counters as atomics. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "siphash.h"
#include "stats.h"
#include "user_acct.h"

enum { ACCT_BUCKETS = 1024 };

struct user_accts {
	const struct config *cfg; /* under lock */
	pthread_mutex_t lock;     /* for lookups that may insert; logins only */
	struct stats_group group;
	uint8_t key[SIPHASH_KEY_LEN];
	size_t n;
	struct user_acct *b[ACCT_BUCKETS];
};

/* Per user, for the metrics endpoint: the counters the SIGUSR1 lines show. */
static const struct stats_desc user_desc[] = {
        {"connections", "connections (and UDP associations) the user opened", STATS_COUNTER, NULL},
        {"connections_active", "the user's connections open now", STATS_GAUGE, NULL},
        {"connections_refused", "requests refused: the user was at its max-connections",
         STATS_COUNTER, NULL},
        {"bytes", "bytes of the user's finished connections, by direction", STATS_COUNTER,
         "direction=\"up\""},
        {"bytes", "bytes of the user's finished connections, by direction", STATS_COUNTER,
         "direction=\"down\""},
};

static bool utf8_valid(const unsigned char *s)
{
	while (*s) {
		int n = *s < 0x80             ? 0
		        : (*s & 0xe0) == 0xc0 ? 1
		        : (*s & 0xf0) == 0xe0 ? 2
		        : (*s & 0xf8) == 0xf0 ? 3
		                              : -1;

		if (n < 0)
			return false;
		s++;
		for (; n; n--, s++)
			if ((*s & 0xc0) != 0x80)
				return false;
	}
	return true;
}

/*
 * user="NAME": a name may hold '"' or '\\' (escaped), and bytes that are no
 * UTF-8, which a label value must be: such a name is written as hex:...
 */
static void user_label(char *out, size_t cap, const char *name)
{
	size_t o = (size_t)snprintf(out, cap, "user=\"");

	if (!utf8_valid((const unsigned char *)name)) {
		o += (size_t)snprintf(out + o, cap - o, "hex:");
		for (const unsigned char *s = (const unsigned char *)name; *s && o + 3 < cap; s++)
			o += (size_t)snprintf(out + o, cap - o, "%02x", *s);
	} else {
		for (const char *s = name; *s && o + 3 < cap; s++) {
			if (*s == '"' || *s == '\\')
				out[o++] = '\\';
			out[o++] = *s;
		}
	}
	snprintf(out + o, cap - o, "\"");
}

static void read_users(const struct stats_group *g, stats_row_fn *row, void *arg)
{
	struct user_accts *t = g->ctx;
	char label[16 + 2 * USERS_FIELD_MAX + 8];

	pthread_mutex_lock(&t->lock);
	for (size_t i = 0; i < ACCT_BUCKETS; i++) {
		for (struct user_acct *u = t->b[i]; u; u = u->next) {
			uint64_t v[] = {atomic_load(&u->conns), atomic_load(&u->active),
			                atomic_load(&u->refused), atomic_load(&u->bytes_up),
			                atomic_load(&u->bytes_down)};

			user_label(label, sizeof(label), u->name);
			row(arg, label, v);
		}
	}
	pthread_mutex_unlock(&t->lock);
}

/* [user NAME] max-connections, else [main] max-connections-per-user. */
static unsigned limit_of(const struct config *cfg, const char *name)
{
	for (size_t i = 0; i < cfg->n_users; i++)
		if (strcmp(cfg->users[i].name, name) == 0 && cfg->users[i].max_conns)
			return cfg->users[i].max_conns;
	return cfg->max_per_user;
}

void user_accts_set_config(struct user_accts *t, const struct config *cfg)
{
	pthread_mutex_lock(&t->lock);
	t->cfg = cfg;
	for (size_t i = 0; i < ACCT_BUCKETS; i++)
		for (struct user_acct *u = t->b[i]; u; u = u->next)
			atomic_store(&u->limit, limit_of(cfg, u->name));
	pthread_mutex_unlock(&t->lock);
}

struct user_accts *user_accts_new(const struct config *cfg)
{
	struct user_accts *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	if (getrandom(t->key, sizeof(t->key), 0) != (ssize_t)sizeof(t->key)) {
		free(t);
		return NULL;
	}
	t->cfg = cfg;
	pthread_mutex_init(&t->lock, NULL);
	t->group = (struct stats_group){
	        .name = "user",
	        .family = "user",
	        .desc = user_desc,
	        .n = sizeof(user_desc) / sizeof(user_desc[0]),
	        .rows = read_users,
	        .ctx = t,
	};
	stats_register(&t->group);
	return t;
}

void user_accts_free(struct user_accts *t)
{
	if (!t)
		return;
	stats_unregister(&t->group);
	for (size_t i = 0; i < ACCT_BUCKETS; i++) {
		struct user_acct *u = t->b[i], *next;
		for (; u; u = next) {
			next = u->next;
			free(u);
		}
	}
	pthread_mutex_destroy(&t->lock);
	free(t);
}

struct user_acct *user_acct_get(struct user_accts *t, const char *name)
{
	size_t len = strlen(name);
	struct user_acct **head, *u;

	pthread_mutex_lock(&t->lock);
	head = &t->b[siphash24(t->key, name, len) % ACCT_BUCKETS];
	for (u = *head; u; u = u->next)
		if (strcmp(u->name, name) == 0)
			goto out;
	u = calloc(1, sizeof(*u) + len + 1);
	if (!u)
		goto out;
	memcpy(u->name, name, len + 1);
	atomic_init(&u->limit, limit_of(t->cfg, name));
	u->next = *head;
	*head = u;
	t->n++;
out:
	pthread_mutex_unlock(&t->lock);
	return u;
}

bool user_acct_open(struct user_acct *u)
{
	unsigned n = atomic_load_explicit(&u->active, memory_order_relaxed);
	unsigned limit = atomic_load_explicit(&u->limit, memory_order_relaxed);

	do {
		if (limit && n >= limit) {
			atomic_fetch_add_explicit(&u->refused, 1, memory_order_relaxed);
			return false;
		}
	} while (!atomic_compare_exchange_weak_explicit(&u->active, &n, n + 1, memory_order_relaxed,
	                                                memory_order_relaxed));
	atomic_fetch_add_explicit(&u->conns, 1, memory_order_relaxed);
	return true;
}

void user_acct_close(struct user_acct *u, uint64_t up, uint64_t down)
{
	atomic_fetch_sub_explicit(&u->active, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&u->bytes_up, up, memory_order_relaxed);
	atomic_fetch_add_explicit(&u->bytes_down, down, memory_order_relaxed);
}

void user_acct_bytes(struct user_acct *u, uint64_t up, uint64_t down)
{
	atomic_fetch_add_explicit(&u->bytes_up, up, memory_order_relaxed);
	atomic_fetch_add_explicit(&u->bytes_down, down, memory_order_relaxed);
}

static int by_name(const void *a, const void *b)
{
	return strcmp((*(struct user_acct *const *)a)->name, (*(struct user_acct *const *)b)->name);
}

void user_accts_log(struct user_accts *t, enum log_level level)
{
	struct user_acct **v;
	size_t n = 0;

	if (!t)
		return;
	pthread_mutex_lock(&t->lock);
	v = t->n ? malloc(t->n * sizeof(*v)) : NULL;
	for (size_t i = 0; v && i < ACCT_BUCKETS; i++)
		for (struct user_acct *u = t->b[i]; u; u = u->next)
			v[n++] = u;
	pthread_mutex_unlock(&t->lock);
	if (!v)
		return;
	qsort(v, n, sizeof(*v), by_name);
	for (size_t i = 0; i < n; i++)
		log_msg(level,
		        "stats: user %s: conns=%llu active=%u refused_limit=%llu bytes_up=%llu "
		        "bytes_down=%llu",
		        v[i]->name, (unsigned long long)atomic_load(&v[i]->conns),
		        atomic_load(&v[i]->active), (unsigned long long)atomic_load(&v[i]->refused),
		        (unsigned long long)atomic_load(&v[i]->bytes_up),
		        (unsigned long long)atomic_load(&v[i]->bytes_down));
	free(v);
}
