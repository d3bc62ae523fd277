/* SPDX-License-Identifier: MIT */
/* A sharded, two-generation exact set of 16-byte salt prefixes, shared by every worker. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "replay.h"
#include "siphash.h"

enum {
	SHARDS = 16,
	KEY_LEN = 16,
	MIN_SLOTS = 64, /* per shard and generation, grown by doubling at half load */
};

struct gen {
	uint8_t (*keys)[KEY_LEN];
	uint8_t *used;
	size_t slots, n;
};

struct shard {
	pthread_mutex_t lock;
	struct gen cur, old;
	uint64_t since; /* timed: when cur started */
};

struct replay {
	bool timed;
	size_t cap; /* per shard and generation */
	uint8_t hash_key[SIPHASH_KEY_LEN];
	struct shard shards[SHARDS];
};

static void gen_free(struct gen *g)
{
	if (g->keys)
		explicit_bzero(g->keys, g->slots * KEY_LEN);
	free(g->keys);
	free(g->used);
	memset(g, 0, sizeof(*g));
}

struct replay *replay_new(bool timed, size_t cap)
{
	struct replay *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	if (getrandom(r->hash_key, sizeof(r->hash_key), 0) != (ssize_t)sizeof(r->hash_key)) {
		free(r);
		return NULL;
	}
	r->timed = timed;
	r->cap = cap / SHARDS ? cap / SHARDS : 1;
	for (int i = 0; i < SHARDS; i++)
		pthread_mutex_init(&r->shards[i].lock, NULL);
	return r;
}

void replay_free(struct replay *r)
{
	if (!r)
		return;
	for (int i = 0; i < SHARDS; i++) {
		gen_free(&r->shards[i].cur);
		gen_free(&r->shards[i].old);
		pthread_mutex_destroy(&r->shards[i].lock);
	}
	free(r);
}

static bool gen_has(const struct gen *g, const uint8_t *k, uint64_t h)
{
	if (!g->slots)
		return false;
	for (size_t i = h & (g->slots - 1);; i = (i + 1) & (g->slots - 1)) {
		if (!g->used[i])
			return false;
		if (memcmp(g->keys[i], k, KEY_LEN) == 0)
			return true;
	}
}

static void gen_put(struct gen *g, const uint8_t *k, uint64_t h)
{
	size_t i = h & (g->slots - 1);

	while (g->used[i])
		i = (i + 1) & (g->slots - 1);
	memcpy(g->keys[i], k, KEY_LEN);
	g->used[i] = 1;
	g->n++;
}

/* Double g's table (or make its first); the hashes are recomputed from the keys. */
static int gen_grow(struct replay *r, struct gen *g)
{
	struct gen bigger = {.slots = g->slots ? 2 * g->slots : MIN_SLOTS};

	bigger.keys = calloc(bigger.slots, KEY_LEN);
	bigger.used = calloc(bigger.slots, 1);
	if (!bigger.keys || !bigger.used) {
		free(bigger.keys);
		free(bigger.used);
		return -ENOMEM;
	}
	for (size_t i = 0; i < g->slots; i++) {
		if (g->used[i])
			gen_put(&bigger, g->keys[i],
			        siphash24(r->hash_key, g->keys[i], KEY_LEN) >> 4);
	}
	gen_free(g);
	*g = bigger;
	return 0;
}

static void retire(struct shard *s)
{
	gen_free(&s->old);
	s->old = s->cur;
	memset(&s->cur, 0, sizeof(s->cur));
}

enum replay_res replay_add(struct replay *r, const uint8_t *salt, size_t len, uint64_t now_s)
{
	uint64_t h;
	struct shard *s;
	enum replay_res res = REPLAY_NEW;

	if (len < KEY_LEN)
		return REPLAY_FULL;
	h = siphash24(r->hash_key, salt, KEY_LEN);
	/* the low 4 bits pick the shard, the rest the slot */
	s = &r->shards[h & (SHARDS - 1)];
	h >>= 4;
	pthread_mutex_lock(&s->lock);
	if (r->timed) {
		if (now_s >= s->since + 2 * REPLAY_KEEP_S) { /* both generations are stale */
			retire(s);
			retire(s);
			s->since = now_s;
		} else if (now_s >= s->since + REPLAY_KEEP_S) {
			retire(s);
			s->since = now_s;
		}
	}
	if (gen_has(&s->cur, salt, h) || gen_has(&s->old, salt, h)) {
		res = REPLAY_SEEN;
	} else if (s->cur.n >= r->cap && r->timed) {
		res = REPLAY_FULL;
	} else {
		if (s->cur.n >= r->cap)
			retire(s); /* counted: the oldest generation goes */
		if ((s->cur.n + 1) * 2 > s->cur.slots && gen_grow(r, &s->cur) < 0)
			res = REPLAY_FULL;
		else
			gen_put(&s->cur, salt, h);
	}
	pthread_mutex_unlock(&s->lock);
	return res;
}

size_t replay_count(struct replay *r)
{
	size_t n = 0;

	for (int i = 0; i < SHARDS; i++) {
		pthread_mutex_lock(&r->shards[i].lock);
		n += r->shards[i].cur.n + r->shards[i].old.n;
		pthread_mutex_unlock(&r->shards[i].lock);
	}
	return n;
}
