/* SPDX-License-Identifier: MIT */
/* Worker threads: one io_uring, its connections, listeners and pipe pool each. */
#ifndef SPLICED_WORKER_H
#define SPLICED_WORKER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "config.h"
#include "conn.h"
#include "egress.h"
#include "list.h"
#include "loop.h"
#include "splice.h"

struct resolver;
struct resolve_req;

/* Counters, one set per worker (summed for the exit report). One per drop reason. */
struct worker_stats {
	uint64_t accepted;
	uint64_t refused_limit; /* over max-connections */
	uint64_t accept_errors; /* EMFILE/ENFILE and friends */
	uint64_t hs_bad;        /* malformed handshakes */
	uint64_t auth_failed;
	uint64_t hs_timeouts;
	uint64_t idle_timeouts;
	uint64_t connect_failed;
	uint64_t blocked;          /* connections refused by policy (REP 02, HTTP 403) */
	uint64_t egress[EGRESS_N]; /* addresses refused, by enum egress_verdict */
	uint64_t resets;           /* relays ended by an error or reset */
	uint64_t no_pipe;          /* relays ended because no pipe could be had */
	uint64_t completed;        /* relays ended by EOF both ways */
	uint64_t copy_fallbacks;   /* summed from the pipe pools for the exit report */
	uint64_t bytes[2];         /* relayed: client → target, target → client */
};

/* Process-wide state shared (read-mostly) by all workers. */
struct server {
	const struct config *cfg;
	/* Per inbound users table; swapped whole on SIGHUP (see main.c). */
	_Atomic(struct users *) users[CONFIG_MAX_INBOUNDS];
	atomic_uint n_conns; /* open connections, all workers */
	atomic_uint reload_acks;
	struct resolver *resolver;
	struct worker *workers;
	int n_workers;
};

enum worker_msg { WORKER_MSG_STOP = 1u << 0, WORKER_MSG_RELOAD = 1u << 1 };

struct worker {
	int id;
	pthread_t thread;
	struct server *srv;
	const struct config *cfg;
	struct io_uring ring;
	struct loop_features feat;
	int listen_fd[CONFIG_MAX_INBOUNDS]; /* -1 when closed */
	int event_fd;
	uint64_t event_buf;
	atomic_uint msgs;           /* enum worker_msg bits, set by main */
	atomic_int started;         /* set once the worker has its own fd table */
	pthread_mutex_t inbox_lock; /* resolver → worker results */
	struct resolve_req *inbox;

	/* Connection slots: slot index + generation tag every op (loop.h). */
	struct conn **slots;
	uint32_t *gens;
	uint32_t n_slots, cap_slots;
	uint32_t *free_slots;
	uint32_t n_free;
	unsigned n_conns;
	unsigned n_inflight;  /* ops that will post a CQE (not the eventfd read, not cancels) */
	uint64_t last_cqe_ms; /* when a turn last dispatched a completion */

	struct list_node hs_queue;   /* ordered by deadline (handshake-timeout) */
	struct list_node idle_queue; /* ordered by last activity (idle-timeout) */
	struct pipe_pool pipes;
	unsigned long trim_gets; /* pipes.gets when it last changed ... */
	uint64_t trim_ms;        /* ... and when: idle pipes are closed PIPE_IDLE_MS later */
	uint64_t now_ms;         /* CLOCK_MONOTONIC, refreshed every loop turn */
	bool draining;
	uint64_t drain_deadline_ms;
	struct worker_stats stats;
};

int worker_init(struct worker *w, int id, struct server *srv);
/* Listening socket for inbound i with SO_REUSEPORT; logs and returns -errno on failure. */
int worker_listen(struct worker *w, unsigned i);
int worker_start(struct worker *w);
void worker_post(struct worker *w, unsigned msg);
/* Main thread: drop its copies of the worker's listeners once the worker runs. */
void worker_release_listeners(struct worker *w);
void worker_destroy(struct worker *w);

/* Used by conn.c. */
struct io_uring_sqe *worker_sqe(struct worker *w);
struct conn *worker_conn_alloc(struct worker *w);
void worker_conn_free(struct worker *w, struct conn *c);
uint64_t worker_tag(struct worker *w, struct conn *c, int op);
/* Resolver delivers here (any thread). */
void worker_inbox_push(struct worker *w, struct resolve_req *r);

#endif
