/* SPDX-License-Identifier: MIT */
/* io_uring set-up, SQE acquisition and completion tags (op + slot + generation). */
#ifndef SPLICED_LOOP_H
#define SPLICED_LOOP_H

#include <stdbool.h>
#include <stdint.h>

#include <liburing.h>

/*
 * Every SQE carries a 64-bit tag: op (8 bits) | slot index (24 bits) |
 * generation (32 bits). A connection slot's generation is bumped when the slot
 * is freed, so a completion that arrives for a dead connection (a cancelled
 * poll, a connect that lost the race with a timeout) no longer matches and is
 * dropped. Listener and worker-level ops use the slot as their own index and
 * generation 0.
 */
enum loop_op {
	OP_NONE = 0,     /* never submitted with this tag; CQEs with it are ignored */
	OP_ACCEPT,       /* slot = listener index */
	OP_ACCEPT_RETRY, /* timeout before re-arming accept after EMFILE/ENFILE */
	OP_EVENT,        /* read on the worker's eventfd (messages, resolver results) */
	OP_CANCEL,       /* result of an async cancel; ignored */
	OP_LINK_TIMEOUT, /* a connect's linked timeout; ignored (connect sees -ECANCELED) */
	OP_HS_POLL,      /* handshake leg readable (client, or upstream proxy) */
	OP_CONNECT,      /* outbound connect finished */
	OP_DIR0_POLL,    /* relay direction 0 (client → target) ready */
	OP_DIR1_POLL,    /* relay direction 1 (target → client) ready */
	OP_TX,           /* a short reply sent through the ring; a CQE only on failure */
};

enum { LOOP_SLOT_BITS = 24, LOOP_SLOT_MAX = (1u << LOOP_SLOT_BITS) - 1 };

static inline uint64_t loop_tag(enum loop_op op, uint32_t slot, uint32_t gen)
{
	return ((uint64_t)op << 56) | ((uint64_t)(slot & LOOP_SLOT_MAX) << 32) | gen;
}

static inline enum loop_op loop_tag_op(uint64_t tag)
{
	return (enum loop_op)(tag >> 56);
}

static inline uint32_t loop_tag_slot(uint64_t tag)
{
	return (uint32_t)(tag >> 32) & LOOP_SLOT_MAX;
}

static inline uint32_t loop_tag_gen(uint64_t tag)
{
	return (uint32_t)tag;
}

/* What the ring set-up achieved, for --version and the start-up log. */
struct loop_features {
	bool defer_taskrun;
	bool single_issuer;
	bool coop_taskrun;
	bool ext_arg;
	bool fast_poll;
	bool cqe_skip; /* IOSQE_CQE_SKIP_SUCCESS (5.17+): replies may go through the ring */
	bool disabled; /* created with R_DISABLED: call loop_enable() in the using thread */
};

/* Create a ring with the best flags the kernel accepts. 0 or -errno. */
int loop_init(struct io_uring *ring, unsigned entries, struct loop_features *feat);

/* In the thread that will use the ring, before the first submit. 0 or -errno. */
int loop_enable(struct io_uring *ring, const struct loop_features *feat);

/* Never NULL: submits pending SQEs to make room when the SQ is full. */
struct io_uring_sqe *loop_sqe(struct io_uring *ring);

/* Probe io_uring once (for --version and the start-up check). 0 or -errno. */
int loop_probe(struct loop_features *feat);

#endif
