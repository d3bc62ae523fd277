/* SPDX-License-Identifier: MIT */
/* The counter registry: a list of groups under one lock, read on demand, and its Prometheus rendering. */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
		uint64_t *v = g->read ? calloc(g->n ? g->n : 1, sizeof(*v)) : NULL;
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
	uint64_t *v = g->read ? calloc(g->n ? g->n : 1, sizeof(*v)) : NULL;

	if (!v)
		return;
	g->read(g, v);
	log_values(level, g, v);
	free(v);
}

/* --- Prometheus text format --- */

/* One series set of a family: a group's values, or one row of a rows() group. */
struct series {
	const struct stats_group *g;
	char *row_labels; /* rows() only */
	uint64_t *v;
};

struct family {
	struct series *s;
	size_t n, cap;
	const struct stats_group *g; /* the group being read (rows) */
	bool oom;
};

static struct series *add_series(struct family *f, const struct stats_group *g, size_t n_values)
{
	struct series *s;

	if (f->n == f->cap) {
		size_t cap = f->cap ? 2 * f->cap : 8;
		s = realloc(f->s, cap * sizeof(*s));
		if (!s) {
			f->oom = true;
			return NULL;
		}
		f->s = s;
		f->cap = cap;
	}
	s = &f->s[f->n];
	*s = (struct series){.g = g, .v = calloc(n_values ? n_values : 1, sizeof(uint64_t))};
	if (!s->v) {
		f->oom = true;
		return NULL;
	}
	f->n++;
	return s;
}

static void add_row(void *arg, const char *labels, const uint64_t *v)
{
	struct family *f = arg;
	struct series *s = add_series(f, f->g, f->g->n);

	if (!s)
		return;
	memcpy(s->v, v, f->g->n * sizeof(*v));
	if (labels && !(s->row_labels = strdup(labels)))
		f->oom = true;
}

static bool same_family(const struct stats_group *a, const struct stats_group *b)
{
	return a->family && b->family && strcmp(a->family, b->family) == 0;
}

static void label_part(FILE *out, const char *l, bool *open)
{
	if (!l || !*l)
		return;
	fputs(*open ? "," : "{", out);
	fputs(l, out);
	*open = true;
}

/* The metric's series, desc[from, to) of every set in f. */
static void render_metric(FILE *out, const struct family *f, const char *name, size_t from,
                          size_t to)
{
	for (size_t j = from; j < to; j++) {
		for (size_t k = 0; k < f->n; k++) {
			const struct series *s = &f->s[k];
			bool open = false;

			fputs(name, out);
			label_part(out, s->g->labels, &open);
			label_part(out, s->row_labels, &open);
			label_part(out, s->g->desc[j].labels, &open);
			fprintf(out, "%s %llu\n", open ? "}" : "", (unsigned long long)s->v[j]);
		}
	}
}

/* Every group of first's family (registered after it, so the first decides the descs). */
static int render_family(FILE *out, const struct stats_group *first)
{
	const struct stats_desc *d = first->desc;
	struct family f = {0};
	char name[160];

	for (const struct stats_group *g = first; g; g = g->next) {
		if (!same_family(g, first))
			continue;
		if (g->desc != d || g->n != first->n)
			continue; /* a family's groups share one desc array: this one is broken */
		if (g->rows) {
			f.g = g;
			g->rows(g, add_row, &f);
		} else {
			struct series *s = add_series(&f, g, g->n);
			if (s)
				g->read(g, s->v);
		}
	}
	for (size_t i = 0, j; !f.oom && i < first->n; i = j) {
		const bool counter = d[i].kind == STATS_COUNTER;
		size_t nl = strlen(d[i].name);

		for (j = i + 1; j < first->n && strcmp(d[j].name, d[i].name) == 0; j++)
			;
		snprintf(name, sizeof(name), "spliced_%s%s%s%s", first->family,
		         *first->family ? "_" : "", d[i].name,
		         counter && !(nl >= 6 && strcmp(d[i].name + nl - 6, "_total") == 0)
		                 ? "_total"
		                 : "");
		fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", name, d[i].help, name,
		        counter ? "counter" : "gauge");
		render_metric(out, &f, name, i, j);
	}
	for (size_t k = 0; k < f.n; k++) {
		free(f.s[k].row_labels);
		free(f.s[k].v);
	}
	free(f.s);
	return f.oom ? -ENOMEM : 0;
}

int stats_render_prom(FILE *out)
{
	int ret = 0;

	pthread_mutex_lock(&lock);
	for (struct stats_group *g = groups; g && ret == 0; g = g->next) {
		bool seen = false;

		if (!g->family)
			continue;
		for (struct stats_group *e = groups; e != g && !seen; e = e->next)
			seen = same_family(e, g);
		if (!seen)
			ret = render_family(out, g);
	}
	pthread_mutex_unlock(&lock);
	return ret;
}
