/* SPDX-License-Identifier: MIT */
/* Zero-copy pump (socket → pipe → socket) and the per-worker pipe pool. */
#ifndef SPLICED_SPLICE_H
#define SPLICED_SPLICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pump.h"

/*
 * A per-worker pool of pipes. A relay direction takes a pipe only while
 * bytes sit in it and gives it back once it is empty, so idle connections
 * hold none. A pipe that still holds bytes is never pooled: it is closed.
 */
struct pipe_pool {
	int (*free)[2]; /* stack of {read end, write end} */
	unsigned n_free;
	unsigned max_free;  /* cap on idle pipes kept */
	unsigned pipe_size; /* capacity actually granted by F_SETPIPE_SZ */
	unsigned long in_use;
	unsigned long max_in_use; /* pipes held at once (pipe-memory's share); 0: no cap */
	unsigned long created;
	unsigned long copy_fallbacks; /* times a direction copied because no pipe could be had */
	unsigned long over_budget;    /* ... of them because max_in_use pipes were held */
	unsigned long gets;           /* pipes handed out, for the idle trim */
};

int pipe_pool_init(struct pipe_pool *pp, unsigned max_free, unsigned pipe_size);
void pipe_pool_destroy(struct pipe_pool *pp);
/* 0 with p[0], p[1] set, or -errno (EMFILE, ENFILE, ENOMEM; ENOBUFS: max_in_use held). */
int pipe_pool_get(struct pipe_pool *pp, int p[2]);
/* `empty` is the caller's byte count == 0: only empty pipes are reused. */
void pipe_pool_put(struct pipe_pool *pp, int p[2], bool empty);
/* Close every idle pipe (the worker calls it once the pool has been unused a while). */
void pipe_pool_trim(struct pipe_pool *pp);

/*
 * Move what can be moved without blocking, up to PUMP_BUDGET. `last`: the
 * other direction is done, so on EOF the caller closes both sockets and dst
 * is not shut down first. On PUMP_ERROR, *err is the negative errno. When no
 * pipe can be had (EMFILE, ENFILE, pipe memory) the direction moves through a
 * buffer from bp instead, and tries for a pipe again once that is empty.
 */
enum pump_next splice_pump(struct pipe_pool *pp, struct buf_pool *bp, struct pump_dir *d, int src,
                           int dst, bool last, int *err);
/* Release what the direction holds (a pipe with bytes left is closed, not pooled). */
void splice_dir_release(struct pipe_pool *pp, struct buf_pool *bp, struct pump_dir *d);

#endif
