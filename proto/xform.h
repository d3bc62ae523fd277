/* SPDX-License-Identifier: MIT */
/* The transform contract: what a leg that changes bytes (an AEAD stream, later TLS) offers the buffered pump. */
#ifndef SPLICED_XFORM_H
#define SPLICED_XFORM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

/*
 * A transforming leg has two halves. Bytes read from the leg are *opened*
 * (wire → plaintext); bytes written to it are *sealed* (plaintext → wire).
 * The transform is sans-I/O like every proto/ state machine: relay/pump.c
 * owns the sockets and the buffers, and calls these with bytes. Both halves
 * work in place, so a chunk is not copied on its way through:
 *
 *   seal: the pump asks seal_slots() where plaintext should land in an empty
 *         buffer (with room before and after each slot for what the framing
 *         adds), receives straight into those slots (one recvmsg(2)), then
 *         seal() frames the n bytes that arrived and names the wire bytes:
 *         one contiguous run, sent with one send(2).
 *   open: the pump receives wire bytes after the ones kept from last time;
 *         open() authenticates and decrypts every complete chunk in place
 *         and names the plaintext as iovecs into the same buffer (sent with
 *         one sendmsg(2)); the incomplete tail (*used onwards) is kept and
 *         shown again, with more bytes after it, next time.
 *
 * Returns: 0, or a negative errno: -EBADMSG (authentication failed),
 * -EPROTO (malformed), -ETIME (a stale timestamp). An error ends the
 * connection (a reset: bytes were lost or forged).
 */
struct xform_ctx {
	uint64_t unix_s; /* wall-clock seconds, for protocols with timestamps */
};

struct xform_ops {
	const char *name;
	/*
	 * Where received plaintext goes in buf (cap bytes): at most max iovecs,
	 * returns how many (>= 1), filled in order, each but the last full
	 * before the next gets a byte (as recvmsg(2) fills them). Room before
	 * the first is left for what the stream still owes (a header).
	 */
	int (*seal_slots)(void *st, uint8_t *buf, size_t cap, struct iovec *iov, int max);
	/* Total plaintext the slots hold (what seal_slots() would offer an empty buffer of cap). */
	size_t (*seal_room)(const void *st, size_t cap);
	/*
	 * Frame the n bytes received into the slots (n may be 0: only what is
	 * owed, see seal_owes(); sealing 0 must discharge it); the wire bytes
	 * are buf[*off .. *off + *len).
	 */
	int (*seal)(void *st, const struct xform_ctx *ctx, uint8_t *buf, size_t n, size_t *off,
	            size_t *len);
	/*
	 * Bytes the peer must get even without payload (a client's request
	 * header): the pump seals n = 0 when it has waited long enough for
	 * payload, and before passing on an EOF.
	 */
	bool (*seal_owes)(const void *st);
	/*
	 * Open the wire bytes buf[0..len): every complete chunk, until max_iov
	 * plaintext runs or max_plain plaintext bytes would be exceeded (the
	 * rest is left for the next call). *n_iov runs into buf, *used bytes
	 * consumed (the tail is an incomplete chunk, or chunks left over).
	 */
	int (*open)(void *st, const struct xform_ctx *ctx, uint8_t *buf, size_t len,
	            size_t max_plain, struct iovec *iov, int max_iov, int *n_iov, size_t *used);
	/* May the stream end here (EOF between chunks, or before it began)? */
	bool (*open_clean)(const void *st);
	/* Wipe the keys and free the state (the transform object itself). */
	void (*destroy)(void *st);
};

/* Embedded first in a transform's state; the leg holds a pointer to it. */
struct xform {
	const struct xform_ops *ops;
};

#endif
