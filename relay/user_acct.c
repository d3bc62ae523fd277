/* SPDX-License-Identifier: MIT */
/* Per-user accounting: a hash table of names, made at first login, counters as atomics. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "siphash.h"
#include "user_acct.h"

enum { ACCT_BUCKETS = 1024 };

struct user_accts {
	const struct config *cfg;
	pthread_mutex_t lock; /* for lookups that may insert; logins only */
	uint8_t key[SIPHASH_KEY_LEN];
	size_t n;
	struct user_acct *b[ACCT_BUCKETS];
};

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
	return t;
}

void user_accts_free(struct user_accts *t)
{
	if (!t)
		return;
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

/* [user NAME] max-connections, else [main] max-connections-per-user. */
static unsigned limit_of(const struct config *cfg, const char *name)
{
	for (size_t i = 0; i < cfg->n_users; i++)
		if (strcmp(cfg->users[i].name, name) == 0 && cfg->users[i].max_conns)
			return cfg->users[i].max_conns;
	return cfg->max_per_user;
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
	u->limit = limit_of(t->cfg, name);
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

	do {
		if (u->limit && n >= u->limit) {
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
