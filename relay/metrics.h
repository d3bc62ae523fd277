/* SPDX-License-Identifier: MIT */
/* The metrics endpoint ([stats] listen): GET /metrics in the Prometheus text format, served by worker 0's loop (loop kind LOOP_KIND_METRICS). */
#ifndef SPLICED_METRICS_H
#define SPLICED_METRICS_H

#include <sys/socket.h>

#include "loop.h"

struct worker;
struct metrics_listener;

/*
 * Every request is treated as hostile: at most METRICS_CLIENTS at once
 * (more are closed at accept), the request head within HTTP_GET_HEAD_MAX
 * octets, the whole exchange within METRICS_DEADLINE_MS, one response,
 * then the connection is closed. Only GET /metrics is answered with the
 * counters; another path gets 404, another method 405, anything malformed
 * 400; a client not in [stats] allow is closed without an answer.
 */
enum {
	METRICS_CLIENTS = 8,
	METRICS_DEADLINE_MS = 10000, /* Prometheus' default scrape timeout */
	METRICS_DISCARD_MAX = 65536, /* octets read and dropped after the response, at most */
};

extern const struct loop_module metrics_module;

/* Main thread: a listening TCP socket on addr. fd or -errno (logged). */
int metrics_socket(const struct sockaddr_storage *addr, socklen_t len);
/* The listener object around fd (taken) in w's loop. 0 or -errno (fd closed). */
int metrics_open(struct worker *w, int fd, struct metrics_listener **out);
int metrics_fd(const struct metrics_listener *m);
/* Worker thread: start accepting. */
void metrics_arm(struct metrics_listener *m);
/* Stop accepting (released later: w->metrics is cleared then); clients in progress finish. */
void metrics_stop(struct metrics_listener *m);
/* Close every client of w at once (the worker stops). */
void metrics_close_clients(struct worker *w);
/* The deadline queue's callback (w->metrics_tq). */
void metrics_timeout(struct loop *l, struct loop_timer *t);

#endif
