/* SPDX-License-Identifier: MIT */
/* Zero-copy pump: readiness comes from io_uring polls, bytes move with splice(2). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "splice.h"

/*
 * Why inline splice(2) after an io_uring poll, not IORING_OP_SPLICE: the
 * kernel always punts IORING_OP_SPLICE to an io-wq worker thread, and a
 * splice waiting on an idle socket parks that thread, so 10,000 idle
 * connections would mean thousands of kernel threads; a blocked socket→pipe
 * splice also holds the pipe lock and stalls the pipe→socket half. Polling
 * first and splicing with SPLICE_F_NONBLOCK from the worker keeps the thread
 * count at one per worker, and measured the same throughput (DESIGN.md).
 *
 * Budget: PUMP_BUDGET (pump.h) bytes per wake-up, then the direction yields
 * to other connections. Out of descriptors (EMFILE/ENFILE), of the
 * kernel's pipe memory, or of pipe-memory (review M3: a pipe's pages are
 * outside tcp_mem, so readers that never read could pin max-connections x 2
 * x pipe-size), a direction copies through a pooled buffer (buf_pump())
 * instead of dropping a connection the client was already told is up, and
 * tries for a pipe again once the buffer is empty: a stalled direction
 * then holds one PUMP_BUF_SIZE buffer, not a full pipe.
 */

int pipe_pool_init(struct pipe_pool *pp, unsigned max_free, unsigned pipe_size)
{
	pp->free = calloc(max_free ? max_free : 1, sizeof(*pp->free));
	if (!pp->free)
		return -ENOMEM;
	pp->n_free = 0;
	pp->max_free = max_free;
	pp->pipe_size = pipe_size;
	pp->in_use = 0;
	pp->max_in_use = 0;
	pp->over_budget = 0;
	pp->created = 0;
	pp->copy_fallbacks = 0;
	pp->gets = 0;
	return 0;
}

void pipe_pool_trim(struct pipe_pool *pp)
{
	for (unsigned i = 0; i < pp->n_free; i++) {
		close(pp->free[i][0]);
		close(pp->free[i][1]);
	}
	pp->n_free = 0;
}

void pipe_pool_destroy(struct pipe_pool *pp)
{
	pipe_pool_trim(pp);
	free(pp->free);
	pp->free = NULL;
	pp->n_free = 0;
}

int pipe_pool_get(struct pipe_pool *pp, int p[2])
{
	if (pp->max_in_use && pp->in_use >= pp->max_in_use)
		return -ENOBUFS;
	pp->gets++;
	if (pp->n_free) {
		pp->n_free--;
		p[0] = pp->free[pp->n_free][0];
		p[1] = pp->free[pp->n_free][1];
		pp->in_use++;
		return 0;
	}
	if (pipe2(p, O_NONBLOCK | O_CLOEXEC) < 0)
		return -errno;
	/*
	 * A default pipe has 16 slots; TCP fills one slot per segment (~1448
	 * bytes), so it holds ~23 KB. A bigger pipe means fewer wake-ups per
	 * byte. The size is only reserved (slot array), pages are allocated
	 * when bytes arrive. Failure (pipe-max-size, per-user limits) leaves
	 * the default size, which still works.
	 */
	if (pp->pipe_size) {
		int got = fcntl(p[0], F_SETPIPE_SZ, (int)pp->pipe_size);
		/*
		 * EPERM (an unprivileged user over pipe-user-pages-soft or
		 * pipe-max-size): the pipe keeps its size, and the pump must
		 * know it, or it takes every short splice for a drained socket.
		 */
		if (got < 0)
			got = fcntl(p[0], F_GETPIPE_SZ);
		if (got > 0 && (unsigned)got < pp->pipe_size)
			pp->pipe_size = (unsigned)got;
	}
	pp->created++;
	pp->in_use++;
	return 0;
}

void pipe_pool_put(struct pipe_pool *pp, int p[2], bool empty)
{
	pp->in_use--;
	if (empty && pp->n_free < pp->max_free) {
		pp->free[pp->n_free][0] = p[0];
		pp->free[pp->n_free][1] = p[1];
		pp->n_free++;
	} else {
		/* Bytes left belong to a dead connection: never hand them to another. */
		close(p[0]);
		close(p[1]);
	}
	p[0] = p[1] = -1;
}

void splice_dir_release(struct pipe_pool *pp, struct buf_pool *bp, struct pump_dir *d)
{
	if (d->pipe[0] >= 0)
		pipe_pool_put(pp, d->pipe, d->held == 0);
	pump_dir_release_buf(bp, d);
	d->held = 0;
}

static unsigned capacity(const struct pipe_pool *pp)
{
	return pp->pipe_size ? pp->pipe_size : 65536;
}

enum pump_next splice_pump(struct pipe_pool *pp, struct buf_pool *bp, struct pump_dir *d, int src,
                           int dst, bool last, int *err)
{
	const unsigned flags = SPLICE_F_MOVE | SPLICE_F_NONBLOCK;
	size_t moved = 0;
	ssize_t n;

	if (d->buf)
		return buf_pump(bp, d, src, dst, last, 1, err);
	if (d->pipe[0] < 0) {
		int ret = pipe_pool_get(pp, d->pipe);
		if (ret == -EMFILE || ret == -ENFILE || ret == -ENOMEM || ret == -ENOBUFS) {
			d->buf = buf_pool_get(bp);
			if (d->buf) {
				pp->copy_fallbacks++;
				pp->over_budget += ret == -ENOBUFS;
				return buf_pump(bp, d, src, dst, last, 1, err);
			}
		}
		if (ret < 0) {
			*err = ret;
			return PUMP_ERROR;
		}
	}
	for (;;) {
		bool progress = false, src_drained = false;

		if (!d->eof && d->held < capacity(pp)) {
			size_t want = capacity(pp) - d->held;
			n = splice(src, NULL, d->pipe[1], NULL, want, flags);
			if (n > 0) {
				d->held += (uint32_t)n;
				progress = true;
				/* Short read: the socket's queue is (very likely) empty. */
				src_drained = (size_t)n < want;
			} else if (n == 0) {
				d->eof = true;
			} else if (errno != EAGAIN && errno != EINTR) {
				*err = -errno;
				return PUMP_ERROR;
			}
			/* EAGAIN: source empty, or the pipe ran out of slots */
		}
		if (d->held > 0) {
			n = splice(d->pipe[0], NULL, dst, NULL, d->held, flags);
			if (n > 0) {
				d->held -= (uint32_t)n;
				d->bytes += (uint64_t)n;
				moved += (size_t)n;
				progress = true;
			} else if (n < 0 && errno == EAGAIN) {
				break;
			} else if (n < 0 && errno != EINTR) {
				*err = -errno;
				d->wr_err = true;
				return PUMP_ERROR;
			}
		}
		/*
		 * Stop rather than try the source again when it came up short
		 * and everything went out: that try would almost always be an
		 * EAGAIN, and the poll armed next is level-triggered, so bytes
		 * that arrived meanwhile are not missed.
		 */
		if (!progress || moved >= PUMP_BUDGET || (src_drained && d->held == 0))
			break;
	}

	/* Bytes left: dst was full, or the budget ran out (POLLOUT fires at once). */
	if (d->held > 0)
		return PUMP_WAIT_DST;
	/* Empty pipe: give it back so an idle direction holds nothing. */
	pipe_pool_put(pp, d->pipe, true);
	/* Half-close: the other direction keeps flowing. */
	return d->eof ? pump_finish(d, dst, last, err) : PUMP_WAIT_SRC;
}
