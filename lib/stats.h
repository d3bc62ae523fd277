/* SPDX-License-Identifier: MIT */
/* The counter registry: every module reports its counters here, read by the exit log and /metrics. */
#ifndef SPLICED_STATS_H
#define SPLICED_STATS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "log.h"

enum stats_kind { STATS_COUNTER = 0, STATS_GAUGE };

/*
 * One value: a snake_case name and a one-line help text; a counter unless
 * kind says gauge. `labels` (optional) sets this value apart from others of
 * the same name in the group, e.g. reason="limit": consecutive descs with
 * one name and different labels are one metric with several series. The
 * metrics endpoint adds "_total" to a counter's name.
 */
struct stats_desc {
	const char *name;
	const char *help;
	enum stats_kind kind;
	const char *labels;
};

/* rows() hands each member's labels (e.g. peer="...") and its n values to this. */
typedef void stats_row_fn(void *arg, const char *labels, const uint64_t *v);

/*
 * A group of counters owned by one module instance ("relay", "wireguard
 * wg0"). `read` writes the n current values, in desc order, into out: it sums
 * per-thread copies itself, so writers never share a cache line. It may run on
 * any thread while the owner runs: the values are counters read without a lock
 * (each is written by one thread; a torn read on a 64-bit platform is
 * impossible for aligned 64-bit words, and a slightly stale sum is fine).
 *
 * For the metrics endpoint, a value is the metric
 * spliced_FAMILY_NAME{LABELS,DESC-LABELS} (spliced_NAME when family is
 * empty). Groups of one family share one desc array and tell themselves
 * apart by their labels (interface="wg0"): they are one metric each, with a
 * series per group. A group of members whose number changes (a WireGuard
 * interface's peers) sets rows() instead of read(): one call of `row` per
 * member. desc, family and labels must stay valid while registered; label
 * values must need no escaping (names the config checked, base64).
 */
struct stats_group {
	const char *name;   /* in logs */
	const char *family; /* metrics: the name's middle part ("" for none; NULL: not exported) */
	const char *labels; /* metrics: this group's labels, NULL for none */
	const struct stats_desc *desc;
	size_t n;
	void (*read)(const struct stats_group *g, uint64_t *out);
	void (*rows)(const struct stats_group *g, stats_row_fn *row, void *arg);
	void *ctx; /* the owner's, for read() */
	struct stats_group *next;
};

/* Add g (owned by the caller, alive until stats_unregister()). Thread-safe. */
void stats_register(struct stats_group *g);
void stats_unregister(struct stats_group *g);

/* One line per group at `level`: "stats: NAME: key=value key=value ...". */
void stats_log(enum log_level level);
/* The same for one group, to a caller-chosen place (SIGUSR1, the exit report). */
void stats_log_group(enum log_level level, const struct stats_group *g);

/* Calls fn for every registered group with read() with its current values. */
void stats_foreach(void (*fn)(const struct stats_group *g, const uint64_t *v, void *arg),
                   void *arg);

/*
 * Every registered family in the Prometheus text exposition format 0.0.4:
 * a HELP and a TYPE line per metric, then its series, each metric's lines
 * together. 0, or -ENOMEM (out may hold part of it).
 */
int stats_render_prom(FILE *out);

/*
 * Declaring a group's counters once: with
 *   #define MY_STATS(X) X(accepted, "connections accepted") X(...)
 * STATS_FIELDS(MY_STATS) inside a struct gives one uint64_t per counter, and
 * STATS_DESCS(MY_STATS) the matching stats_desc array initialiser.
 */
#define STATS_FIELD_(name, help) uint64_t name;
#define STATS_DESC_(name, help)  {#name, help, STATS_COUNTER, NULL},
#define STATS_FIELDS(list)       list(STATS_FIELD_)
#define STATS_DESCS(list)         \
	{                         \
		list(STATS_DESC_) \
	}

#endif
