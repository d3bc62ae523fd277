/* SPDX-License-Identifier: MIT */
/* Relay pumps: the state of one direction, and the buffered pump for legs that cannot be spliced. */
#ifndef SPLICED_PUMP_H
#define SPLICED_PUMP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "xform.h"

/*
 * A leg of a connection: a socket, and whether its bytes may move with
 * splice(2). A leg that transforms bytes (TLS, an AEAD stream) cannot be
 * spliced; a connection whose two legs can be is relayed by the splice pump
 * (splice.c), any other by the buffered pump below (HAProxy's rule: splice
 * only when both sides have pipe ops).
 */
struct leg {
	int fd; /* -1 when closed */
	bool spliceable;
	struct xform *x; /* the leg's transform (NULL: plain bytes); owned by the connection */
};

/* What a pump wants next for its direction. */
enum pump_next {
	PUMP_WAIT_SRC, /* arm POLLIN on the source */
	PUMP_WAIT_DST, /* arm POLLOUT on the destination */
	PUMP_DONE,     /* EOF forwarded (dst shut down for writing, unless last) */
	PUMP_ERROR,    /* error or reset on either leg: *err says which errno */
};

/*
 * One relay direction: src socket → (pipe or buffer) → dst socket. The pipe
 * and the buffer are held only while bytes sit in them, so an idle
 * connection holds neither.
 */
struct pump_dir {
	int pipe[2];      /* -1 when no pipe is held (splice pump) */
	uint8_t *buf;     /* NULL when no buffer is held (buffered pump, or no pipe to be had) */
	uint32_t held;    /* bytes in the pipe or the buffer; EAGAIN cannot tell us */
	uint32_t buf_off; /* start of the unsent bytes in buf */
	bool eof;         /* src returned EOF */
	bool done;        /* EOF forwarded: dst write side shut down */
	bool wr_err;      /* the PUMP_ERROR came from writing to dst (else from reading src) */
	bool flush;       /* transform pump: seal what the destination leg owes, payload or not */
	struct xbuf *xa;  /* transform pump: bytes read from src (NULL when none are held) */
	struct xbuf *xb;  /* transform pump: sealed bytes for dst (NULL when none are held) */
	uint64_t bytes;   /* total moved to dst */
	uint64_t copied;  /* of them, through a buffer (the rest went through a pipe) */
};

void pump_dir_init(struct pump_dir *d);

/*
 * After this many bytes a direction yields to other connections (its poll
 * fires again at once). 4 MiB keeps per-wakeup overhead small against 1 MiB
 * pipes while bounding latency for others.
 */
enum { PUMP_BUDGET = 4 << 20 };

/*
 * A per-worker pool of equal buffers for the buffered pump. 32 KiB: a few
 * TCP segments per syscall at a bounded cost per active direction.
 */
enum { PUMP_BUF_SIZE = 32 << 10 };

struct buf_pool {
	size_t size;    /* of each buffer */
	uint8_t **free; /* stack of idle buffers */
	unsigned n_free;
	unsigned max_free; /* cap on idle buffers kept */
	unsigned long in_use;
	unsigned long max_in_use; /* buffers held at once (pipe-memory's share); 0: no cap */
	unsigned long gets;       /* buffers handed out, for the idle trim */
};

int buf_pool_init(struct buf_pool *bp, unsigned max_free);
/* The same for buffers of `size` bytes (the transform pump's struct xbuf). */
int buf_pool_init_size(struct buf_pool *bp, unsigned max_free, size_t size);
void buf_pool_destroy(struct buf_pool *bp);
/* A buffer of the pool's size, or NULL (out of memory, or max_in_use held). */
uint8_t *buf_pool_get(struct buf_pool *bp);
void buf_pool_put(struct buf_pool *bp, uint8_t *buf);
/* Free every idle buffer (the worker calls it once the pool has been unused a while). */
void buf_pool_trim(struct buf_pool *bp);

/*
 * Move what can be moved without blocking through a pool buffer: recv(2)
 * into it, send(2) out of it, refilling it while fewer than `budget` bytes
 * went out (PUMP_BUDGET; 1 for the splice pump's fallback, which wants a
 * pipe again as soon as the buffer is empty). `last`: the other direction is done, so on
 * EOF the caller closes both sockets next and dst is not shut down first.
 * The buffer goes back to the pool whenever it is empty.
 */
enum pump_next buf_pump(struct buf_pool *bp, struct pump_dir *d, int src, int dst, bool last,
                        size_t budget, int *err);
/* EOF seen and every byte forwarded: shut dst down for writing (unless last). */
enum pump_next pump_finish(struct pump_dir *d, int dst, bool last, int *err);
/* Give back the direction's buffer; one that still holds a connection's bytes is wiped first. */
void pump_dir_release_buf(struct buf_pool *bp, struct pump_dir *d);

/*
 * The transform pump: a direction where the source leg opens (decrypts) or
 * the destination leg seals (encrypts), or both. Its buffers come from a
 * pool of struct xbuf and are held only while bytes are in them: plaintext
 * waiting to go out, a chunk not yet complete (carried to the next read),
 * or sealed bytes dst has not taken. Per direction, one operation at a time
 * as the other pumps: one recv (or recvmsg into the seal slots), every
 * complete chunk transformed in place, one send (or sendmsg of the opened
 * runs). 66 KiB of data: a whole SIP022 chunk (64 KiB + 34) fits, and a read
 * takes what a 64 KiB TCP receive would.
 */
enum { XBUF_DATA = 66 << 10, XBUF_IOV = 64 };

struct xbuf {
	struct iovec out[XBUF_IOV]; /* opened plaintext not yet passed on: out[out_i..out_n) */
	uint16_t out_i, out_n;
	uint32_t raw_off, raw_len; /* bytes read and not yet opened, at data[raw_off] */
	bool raw_fresh;            /* ... not yet shown to the opener since they changed */
	uint32_t w_off, w_len;     /* sealed bytes not yet sent, at data[w_off] */
	_Alignas(16) uint8_t data[XBUF_DATA];
};

/*
 * Move what can be moved without blocking, up to budget bytes to dst.
 * open: src's transform (NULL: plain); seal: dst's (NULL: plain); not both
 * NULL. The rest as buf_pump(); a transform error is PUMP_ERROR with *err
 * its errno (-EBADMSG: authentication failed; -EPROTO: a stream cut in the
 * middle of a chunk or malformed).
 */
enum pump_next xform_pump(struct buf_pool *xp, struct pump_dir *d, int src, int dst,
                          struct xform *open, struct xform *seal, bool last, size_t budget,
                          const struct xform_ctx *ctx, int *err);
/*
 * Bytes a handshake already took off src: n_plain of plaintext (to be
 * sealed for dst, or sent as they are) and then n_raw still to be opened.
 * The next xform_pump() call moves them first. 0, -ENOMEM or -ENOBUFS.
 */
int xform_seed(struct buf_pool *xp, struct pump_dir *d, const uint8_t *plain, size_t n_plain,
               const uint8_t *raw, size_t n_raw);
/* Give back the direction's transform buffers (wiped when they still hold bytes). */
void xform_dir_release(struct buf_pool *xp, struct pump_dir *d);

#endif
