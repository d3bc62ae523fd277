/* SPDX-License-Identifier: MIT */
/* One TUN queue in one worker (loop module LOOP_KIND_TUN): read, NAT, write back. */
#ifndef SPLICED_TUN_QUEUE_H
#define SPLICED_TUN_QUEUE_H

#include <stdbool.h>

#include "loop.h"

struct worker;
struct tun_dev;

extern const struct loop_module tun_queue_module;

struct tun_queue;

/*
 * Main thread, before the worker runs: the worker takes queue w->id of
 * inbound i's device (none when the device has fewer queues than there are
 * workers: *out stays NULL). 0 or -errno.
 */
int tun_queue_open(struct worker *w, unsigned i, struct tun_queue **out);
/* Worker thread: start reading. */
void tun_queue_arm(struct tun_queue *q);
/* Stop: the poll is cancelled, the descriptor closed once it is back. */
void tun_queue_stop(struct tun_queue *q);
/* Its descriptor (the worker keeps it in its private table). */
int tun_queue_fd(const struct tun_queue *q);
/* Each turn: the NAT's expired entries freed (cheap when none is due). */
void tun_queue_tick(struct tun_queue *q);

#endif
