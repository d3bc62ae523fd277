/* SPDX-License-Identifier: MIT */
/* Name resolution on the worker's own loop: c-ares with its sockets driven by the ring (loop module LOOP_KIND_RESOLVER). */
#ifndef SPLICED_RESOLVE_H
#define SPLICED_RESOLVE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include <ares.h>

#include "loop.h"

enum { RESOLVE_MAX_ADDRS = 8 }; /* addresses kept (and tried) per name */

struct worker;
struct rsock;

/*
 * Who gets a lookup's answer: the module of each kind of object that looks
 * names up registers one (the connection; later the UDP sessions). err is 0
 * with n >= 1 addresses, or a negative errno.
 */
typedef void resolver_answer_fn(struct worker *w, struct loop_obj *o, int err,
                                const struct sockaddr_storage *addrs, int n);

/*
 * One per worker. c-ares keeps the queries, retries and timeouts; the
 * loop polls the few UDP/TCP sockets it opens (one per name server) and
 * hands readiness back to it. No thread, no lock: a lookup costs a query
 * and a poll, and a server that never answers holds nothing but a query
 * slot until c-ares gives up on it.
 */
struct resolver {
	struct worker *w;
	ares_channel ch;
	bool ready; /* ares_init_options() succeeded (at the first lookup) */
	unsigned timeout_ms;
	unsigned pending; /* lookups c-ares has not answered yet */
	unsigned max_pending;
	struct rsock *socks; /* the sockets c-ares has open */
	resolver_answer_fn *answer[LOOP_KIND_MAX];
	uint64_t lookups, failures;
};

/* Once per process, before any resolver: 0 or -ENOMEM (each worker's channel waits for its first lookup). */
int resolver_global_init(void);
void resolver_global_cleanup(void);

/*
 * The worker's resolver: two tries per server, the first of timeout_ms / 2
 * (the connection's own resolve-timeout deadline ends the wait first); at
 * most max_pending lookups at once. Its c-ares channel is made at the first
 * lookup. 0.
 */
int resolver_init(struct resolver *r, struct worker *w, unsigned timeout_ms, unsigned max_pending);
/* In the worker thread, at the end: every pending lookup is answered -ECANCELED (and ignored). */
void resolver_destroy(struct resolver *r);

void resolver_on_answer(struct resolver *r, enum loop_kind kind, resolver_answer_fn *fn);

/*
 * Look up host (A and AAAA) for object o: the answer goes to its kind's
 * answer function, possibly before this returns (a literal, /etc/hosts),
 * and only while o is alive (its slot and generation unchanged, not
 * closed). -EAGAIN when max_pending lookups are in flight (nothing is
 * called then), -ENOMEM, -EINVAL (no c-ares channel: logged).
 */
int resolver_lookup(struct resolver *r, const struct loop_obj *o, const char *host, uint16_t port);

/* Milliseconds until c-ares wants its timeouts run (UINT64_MAX: none); then resolver_tick(). */
uint64_t resolver_next_ms(struct resolver *r);
void resolver_tick(struct resolver *r);

extern const struct loop_module resolver_module;

#endif
