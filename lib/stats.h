/* SPDX-License-Identifier: MIT */
/* The counter registry: every module reports its counters here, read by the exit log and (later) /metrics. */
#ifndef SPLICED_STATS_H
#define SPLICED_STATS_H

#include <stddef.h>
#include <stdint.h>

#include "log.h"

/* One counter: a snake_case name unique within its group, and a one-line help text. */
struct stats_desc {
	const char *name;
	const char *help;
};

/*
 * A group of counters owned by one module instance ("relay", "wireguard
 * wg0"). `read` writes the n current values, in desc order, into out: it sums
 * per-thread copies itself, so writers never share a cache line. It may run on
 * any thread while the owner runs: the values are counters read without a lock
 * (each is written by one thread; a torn read on a 64-bit platform is
 * impossible for aligned 64-bit words, and a slightly stale sum is fine).
 */
struct stats_group {
	const char *name;
	const struct stats_desc *desc;
	size_t n;
	void (*read)(const struct stats_group *g, uint64_t *out);
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

/* Calls fn for every registered group with its current values (the metrics endpoint). */
void stats_foreach(void (*fn)(const struct stats_group *g, const uint64_t *v, void *arg),
                   void *arg);

/*
 * Declaring a group's counters once: with
 *   #define MY_STATS(X) X(accepted, "connections accepted") X(...)
 * STATS_FIELDS(MY_STATS) inside a struct gives one uint64_t per counter, and
 * STATS_DESCS(MY_STATS) the matching stats_desc array initialiser.
 */
#define STATS_FIELD_(name, help) uint64_t name;
#define STATS_DESC_(name, help)  {#name, help},
#define STATS_FIELDS(list)       list(STATS_FIELD_)
#define STATS_DESCS(list)         \
	{                         \
		list(STATS_DESC_) \
	}

#endif
