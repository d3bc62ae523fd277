/* SPDX-License-Identifier: MIT */
/* The epoll backend's state (loop_epoll.c), and its table of pending operations (loop_epoll_pending.c). */
#ifndef SPLICED_LOOP_EPOLL_INTERNAL_H
#define SPLICED_LOOP_EPOLL_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "loop_internal.h"

enum {
	EP_STAGE = 128,       /* SQEs prepared between two submits (loop_reserve()'s n is <= 2) */
	EP_EVENTS = 256,      /* epoll events taken per turn */
	EP_ACCEPT_BURST = 64, /* connections a multishot accept takes per readiness */
	EP_CHUNK = 64,        /* operations allocated at once */
	NOT_TIMED = ~0u,
};

struct ep_op {
	uint64_t ud;                 /* the SQE's user_data: the CQE's, and the cancel key */
	struct ep_op *hnext;         /* hash chain by ud (every pending operation) */
	struct ep_op *fprev, *fnext; /* waiting on fd */
	struct ep_op *link; /* a request and its LINK_TIMEOUT, each pointing at the other */
	uint64_t due_ms;
	unsigned heap; /* index in the timer heap, or NOT_TIMED */
	int fd;
	uint8_t opcode;
	bool multishot, skip_success, waiting;
	uint32_t events; /* the epoll events it waits for */
	uint32_t arg;    /* POLL_ADD: mask; RECV, SEND, ...MSG: msg flags; ACCEPT: accept4 flags */
	void *addr;      /* buffer, msghdr, sockaddr */
	void *addr2;     /* ACCEPT: socklen_t * */
	uint32_t len, done;
};

struct ep_fd {
	struct ep_op *head, *tail;
	uint32_t reg; /* what epoll has for it; 0 = not registered */
};

struct loop_ep {
	int epfd;
	unsigned n_stage;
	struct io_uring_sqe stage[EP_STAGE];
	/* Posted completions, a ring buffer: dispatched by the next turn, in order. */
	struct io_uring_cqe *cq;
	unsigned cq_head, cq_n, cq_cap;
	struct ep_op **hash;
	unsigned hash_mask, n_pending;
	struct ep_op *free_ops;
	void **chunks;
	unsigned n_chunks;
	struct ep_fd *fds;
	unsigned n_fds;
	struct ep_op **heap;
	unsigned heap_n, heap_cap;
};

/* loop_epoll_pending.c */
__attribute__((noreturn)) void ep_out_of_memory(void);
/* A CQE-shaped completion, dispatched by the next turn. */
void ep_post(struct loop_ep *ep, uint64_t ud, int res, unsigned flags);
/* A pending operation for sqe, in the table by its user_data. */
struct ep_op *ep_new_op(struct loop_ep *ep, const struct io_uring_sqe *sqe);
/* The pending operation of user_data ud, or NULL. */
struct ep_op *ep_find(struct loop_ep *ep, uint64_t ud);
/* fd's waiters and registration (the table grows to fit it). */
struct ep_fd *ep_fd_at(struct loop_ep *ep, int fd);
/* op's deadline (a TIMEOUT, a LINK_TIMEOUT). */
void ep_timer_add(struct loop_ep *ep, struct ep_op *op, uint64_t due_ms);
/* Make epoll report at least events for fd: 0, -EPERM (always ready) or -EBADF. */
int ep_set_reg(struct loop_ep *ep, int fd, struct ep_fd *f, uint32_t events);
/* op is over with res: its CQE (unless skipped on success), and its link partner's end. */
void ep_finish(struct loop_ep *ep, struct ep_op *op, int res);
/* op waits for events on op->fd; false when it cannot (see loop_epoll_pending.c). */
bool ep_wait_on(struct loop_ep *ep, struct ep_op *op, uint32_t events, bool *always_ready);

#endif
