/* SPDX-License-Identifier: MIT */
/* Zero-copy pump (socket → pipe → socket) and the per-worker pipe pool. */
#ifndef SPLICED_SPLICE_H
#define SPLICED_SPLICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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
	unsigned long created;
	unsigned long copy_fallbacks; /* times a direction copied because no pipe could be had */
	unsigned long gets;           /* pipes handed out, for the idle trim */
};

int pipe_pool_init(struct pipe_pool *pp, unsigned max_free, unsigned pipe_size);
void pipe_pool_destroy(struct pipe_pool *pp);
/* 0 with p[0], p[1] set, or -errno (EMFILE, ENFILE, ENOMEM). */
int pipe_pool_get(struct pipe_pool *pp, int p[2]);
/* `empty` is the caller's byte count == 0: only empty pipes are reused. */
void pipe_pool_put(struct pipe_pool *pp, int p[2], bool empty);
/* Close every idle pipe (the worker calls it once the pool has been unused a while). */
void pipe_pool_trim(struct pipe_pool *pp);

/* State of one relay direction: src socket → pipe → dst socket. */
struct splice_dir {
	int pipe[2];      /* -1 when no pipe is held */
	uint32_t in_pipe; /* bytes in the pipe (or copy buffer); EAGAIN cannot tell us */
	uint8_t *buf;     /* copy buffer, only while no pipe could be had (EMFILE) */
	uint32_t buf_off; /* start of the unsent bytes in buf */
	bool eof;         /* src returned EOF */
	bool done;        /* EOF forwarded: dst write side shut down */
	uint64_t bytes;   /* total moved to dst */
};

enum splice_next {
	SPLICE_WAIT_SRC, /* arm POLLIN on the source */
	SPLICE_WAIT_DST, /* arm POLLOUT on the destination */
	SPLICE_DONE,     /* EOF forwarded (dst shut down for writing, unless last) */
	SPLICE_ERROR,    /* error or reset on either leg: abort the connection */
};

/*
 * Move what can be moved without blocking, up to a fairness budget. `last`:
 * the other direction is done, so on EOF the caller closes both sockets and
 * dst is not shut down first. On SPLICE_ERROR, *err is the negative errno.
 */
enum splice_next splice_pump(struct pipe_pool *pp, struct splice_dir *d, int src, int dst,
                             bool last, int *err);
void splice_dir_init(struct splice_dir *d);
/* Release the pipe (closing it if bytes remain). */
void splice_dir_release(struct pipe_pool *pp, struct splice_dir *d);

#endif
