/* SPDX-License-Identifier: MIT */
/* An inbound's listening socket in one worker (loop module LOOP_KIND_LISTENER). */
#ifndef SPLICED_LISTENER_H
#define SPLICED_LISTENER_H

#include <stdbool.h>

#include "config.h"
#include "loop.h"

struct worker;

struct listener {
	struct loop_obj obj; /* first: the loop hands it back */
	struct worker *w;
	unsigned inbound;
	int fd; /* closed when the listener is released */
	bool stopped;
};

extern const struct loop_module listener_module;

/*
 * Main thread, before the worker runs: a SO_REUSEPORT socket for inbound i,
 * bound and listening (one per worker: the kernel spreads connections, no
 * shared accept lock). Logs and returns -errno on failure.
 */
int listener_open(struct worker *w, unsigned inbound, struct listener **out);
/* The socket alone: bound and listening with the inbound's options. fd or -errno (logged). */
int listener_socket(const struct config *cfg, const struct inbound *in, int n_workers);
/* Options accepted sockets inherit (keepalive, user-timeout, accept-steering), on a kept socket too. */
void listener_set_options(int fd, const struct config *cfg, const struct inbound *in,
                          int n_workers);
/* The object around fd (taken) for inbound i of w's configuration. 0 or -errno (fd closed). */
int listener_adopt(struct worker *w, unsigned inbound, int fd, struct listener **out);
/* Worker thread: start accepting (multishot accept). */
void listener_arm(struct listener *ls);
/*
 * Stop accepting: cancel the accept; the socket is closed once it has
 * completed, and connections queued but not yet accepted get a RST then.
 */
void listener_stop(struct listener *ls);

#endif
