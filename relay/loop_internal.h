/* SPDX-License-Identifier: MIT */
/* Between loop.c, loop_kernel.c and loop_epoll.c only: what modules never call. */
#ifndef SPLICED_LOOP_INTERNAL_H
#define SPLICED_LOOP_INTERNAL_H

#include "loop.h"

/* A kernel version as one number: KV(5, 10) = 510. */
#define KV(major, minor) ((major)*100u + (minor))

/* Deliver one completion to the module that owns its tag (loop.c). */
void loop_dispatch(struct loop *l, const struct io_uring_cqe *cqe);

/* loop_kernel.c: may a ring be set up with these IORING_SETUP_ flags under the profile? */
bool loop_kernel_setup_ok(unsigned setup_flags);
/* The IORING_FEAT_ bits the profile's kernel had (all bits without a profile). */
unsigned loop_kernel_feature_mask(void);
/* Every SQE prepared and not yet submitted: abort on one newer than the profile. */
void loop_kernel_check(struct io_uring *ring);

/* loop_epoll.c */
int loop_ep_setup(struct loop *l);
void loop_ep_destroy(struct loop *l);
struct io_uring_sqe *loop_ep_sqe(struct loop *l);
void loop_ep_reserve(struct loop *l, unsigned n);
void loop_ep_submit(struct loop *l);
int loop_ep_turn(struct loop *l, uint64_t wait_ms);
int loop_ep_fd(const struct loop *l);

#endif
