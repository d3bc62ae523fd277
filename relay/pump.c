/* SPDX-License-Identifier: MIT */
/* The buffered pump: readiness from io_uring polls, bytes through a pooled user-space buffer. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "pump.h"

void pump_dir_init(struct pump_dir *d)
{
	d->pipe[0] = d->pipe[1] = -1;
	d->buf = NULL;
	d->held = 0;
	d->buf_off = 0;
	d->eof = false;
	d->done = false;
	d->wr_err = false;
	d->flush = false;
	d->xa = d->xb = NULL;
	d->bytes = 0;
	d->copied = 0;
}

int buf_pool_init(struct buf_pool *bp, unsigned max_free)
{
	return buf_pool_init_size(bp, max_free, PUMP_BUF_SIZE);
}

int buf_pool_init_size(struct buf_pool *bp, unsigned max_free, size_t size)
{
	bp->size = size;
	bp->free = calloc(max_free ? max_free : 1, sizeof(*bp->free));
	if (!bp->free)
		return -ENOMEM;
	bp->n_free = 0;
	bp->max_free = max_free;
	bp->in_use = 0;
	bp->max_in_use = 0;
	bp->gets = 0;
	return 0;
}

void buf_pool_trim(struct buf_pool *bp)
{
	while (bp->n_free)
		free(bp->free[--bp->n_free]);
}

void buf_pool_destroy(struct buf_pool *bp)
{
	buf_pool_trim(bp);
	free(bp->free);
	bp->free = NULL;
}

uint8_t *buf_pool_get(struct buf_pool *bp)
{
	uint8_t *b;

	if (bp->max_in_use && bp->in_use >= bp->max_in_use)
		return NULL;
	b = bp->n_free ? bp->free[--bp->n_free] : malloc(bp->size);

	if (b) {
		bp->in_use++;
		bp->gets++;
	}
	return b;
}

void buf_pool_put(struct buf_pool *bp, uint8_t *buf)
{
	bp->in_use--;
	if (bp->n_free < bp->max_free)
		bp->free[bp->n_free++] = buf;
	else
		free(buf);
}

void pump_dir_release_buf(struct buf_pool *bp, struct pump_dir *d)
{
	if (!d->buf)
		return;
	/* Bytes left belong to a dead connection: never hand them to another. */
	if (d->held)
		explicit_bzero(d->buf, bp->size);
	buf_pool_put(bp, d->buf);
	d->buf = NULL;
	d->held = 0;
	d->buf_off = 0;
}

/*
 * When the other direction has ended too (`last`), the caller closes both
 * sockets next and close(2) sends the same FIN, so the shutdown(2) would be
 * a wasted syscall.
 */
enum pump_next pump_finish(struct pump_dir *d, int dst, bool last, int *err)
{
	/* ENOTCONN: the peer is already gone; the other direction will notice. */
	if (!last && shutdown(dst, SHUT_WR) < 0 && errno != ENOTCONN) {
		*err = -errno;
		d->wr_err = true;
		return PUMP_ERROR;
	}
	d->done = true;
	return PUMP_DONE;
}

enum pump_next buf_pump(struct buf_pool *bp, struct pump_dir *d, int src, int dst, bool last,
                        size_t budget, int *err)
{
	size_t moved = 0;
	ssize_t n;

	for (;;) {
		bool short_read = false;

		if (d->held == 0 && !d->eof) {
			if (!d->buf && !(d->buf = buf_pool_get(bp))) {
				*err = -ENOMEM;
				return PUMP_ERROR;
			}
			n = recv(src, d->buf, PUMP_BUF_SIZE, MSG_DONTWAIT);
			if (n > 0) {
				d->held = (uint32_t)n;
				d->buf_off = 0;
				/* Short read: the socket's queue is (very likely) empty. */
				short_read = n < PUMP_BUF_SIZE;
			} else if (n == 0) {
				d->eof = true;
			} else if (errno == EAGAIN || errno == EINTR) {
				break;
			} else {
				*err = -errno;
				return PUMP_ERROR;
			}
		}
		while (d->held > 0) {
			n = send(dst, d->buf + d->buf_off, d->held, MSG_DONTWAIT | MSG_NOSIGNAL);
			if (n < 0 && (errno == EAGAIN || errno == EINTR))
				return PUMP_WAIT_DST; /* the bytes stay in the buffer */
			if (n < 0) {
				*err = -errno;
				d->wr_err = true;
				return PUMP_ERROR;
			}
			d->buf_off += (uint32_t)n;
			d->held -= (uint32_t)n;
			d->bytes += (uint64_t)n;
			d->copied += (uint64_t)n;
			moved += (size_t)n;
		}
		/* Same reasoning as the splice pump: the level-triggered poll misses nothing. */
		if (d->eof || short_read || moved >= budget)
			break;
	}
	/* Empty: give the buffer back so an idle direction holds nothing. */
	pump_dir_release_buf(bp, d);
	if (d->eof)
		return pump_finish(d, dst, last, err);
	/* The budget ran out with the source still readable: its poll fires at once. */
	return PUMP_WAIT_SRC;
}
