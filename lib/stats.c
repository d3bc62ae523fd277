/* SPDX-License-Identifier: MIT */
/* The counter registry: a list of groups under one lock, read on demand. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "stats.h"

/* Registration is rare (start-up, a device coming or going); reads are rare too. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct stats_group *groups;

void stats_register(struct stats_group *g)
{
	pthread_mutex_lock(&lock);
	g->next = NULL;
	struct stats_group **p = &groups;
	while (*p)
		p = &(*p)->next; /* keep registration order for the reports */
	*p = g;
	pthread_mutex_unlock(&lock);
}

void stats_unregister(struct stats_group *g)
{
	pthread_mutex_lock(&lock);
	for (struct stats_group **p = &groups; *p; p = &(*p)->next) {
		if (*p == g) {
			*p = g->next;
			break;
		}
	}
	pthread_mutex_unlock(&lock);
}

void stats_foreach(void (*fn)(const struct stats_group *g, const uint64_t *v, void *arg), void *arg)
{
	pthread_mutex_lock(&lock);
	for (struct stats_group *g = groups; g; g = g->next) {
		uint64_t *v = calloc(g->n ? g->n : 1, sizeof(*v));
		if (!v)
			continue;
		g->read(g, v);
		fn(g, v, arg);
		free(v);
	}
	pthread_mutex_unlock(&lock);
}

/* "key=value" pairs until the line is full; a very long group wraps onto more lines. */
static void log_values(enum log_level level, const struct stats_group *g, const uint64_t *v)
{
	char line[900];
	size_t off = 0;

	for (size_t i = 0; i < g->n; i++) {
		char item[96];
		int n = snprintf(item, sizeof(item), "%s%s=%llu", off ? " " : "", g->desc[i].name,
		                 (unsigned long long)v[i]);
		if (n < 0)
			continue;
		if (off + (size_t)n >= sizeof(line)) {
			log_msg(level, "stats: %s: %s", g->name, line);
			off = 0;
			n = snprintf(item, sizeof(item), "%s=%llu", g->desc[i].name,
			             (unsigned long long)v[i]);
		}
		off += (size_t)snprintf(line + off, sizeof(line) - off, "%s", item);
	}
	log_msg(level, "stats: %s: %s", g->name, off ? line : "(none)");
}

static void log_cb(const struct stats_group *g, const uint64_t *v, void *arg)
{
	log_values(*(enum log_level *)arg, g, v);
}

void stats_log(enum log_level level)
{
	stats_foreach(log_cb, &level);
}

void stats_log_group(enum log_level level, const struct stats_group *g)
{
	uint64_t *v = calloc(g->n ? g->n : 1, sizeof(*v));

	if (!v)
		return;
	g->read(g, v);
	log_values(level, g, v);
	free(v);
}
