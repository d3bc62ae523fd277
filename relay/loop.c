/* SPDX-License-Identifier: MIT */
/* The event loop: ring set-up with fallbacks, tagged slots, per-object in-flight counts, dispatch, deadlines. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "log.h"
#include "loop.h"

/*
 * SINGLE_ISSUER + DEFER_TASKRUN (6.1+) run completion work only when this
 * thread enters the kernel to wait, which batches it and avoids IPIs; COOP_TASKRUN
 * (5.19+) is the next best; plain rings work everywhere io_uring does. The CQ
 * is 4x the SQ so multishot accept bursts and cancellations do not overflow.
 */
int loop_init(struct io_uring *ring, unsigned entries, struct loop_features *feat)
{
	/*
	 * R_DISABLED: the ring is created by the main thread but used by its
	 * worker; with SINGLE_ISSUER the issuer is the task that enables the
	 * ring (loop_enable()), otherwise io_uring_enter() fails with EEXIST.
	 */
	static const unsigned flag_sets[] = {
	        IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_R_DISABLED,
	        IORING_SETUP_COOP_TASKRUN,
	        0,
	};
	struct io_uring_params p;
	int ret = -ENOSYS;

	for (size_t i = 0; i < sizeof(flag_sets) / sizeof(flag_sets[0]); i++) {
		memset(&p, 0, sizeof(p));
		p.flags = flag_sets[i] | IORING_SETUP_CQSIZE;
		p.cq_entries = entries * 4;
		ret = io_uring_queue_init_params(entries, ring, &p);
		if (ret == 0) {
			if (feat) {
				memset(feat, 0, sizeof(*feat));
				feat->defer_taskrun = p.flags & IORING_SETUP_DEFER_TASKRUN;
				feat->single_issuer = p.flags & IORING_SETUP_SINGLE_ISSUER;
				feat->coop_taskrun = p.flags & IORING_SETUP_COOP_TASKRUN;
				feat->ext_arg = p.features & IORING_FEAT_EXT_ARG;
				feat->fast_poll = p.features & IORING_FEAT_FAST_POLL;
				feat->cqe_skip = p.features & IORING_FEAT_CQE_SKIP;
				feat->disabled = p.flags & IORING_SETUP_R_DISABLED;
			}
			return 0;
		}
		if (ret != -EINVAL)
			break; /* ENOSYS, EPERM (sysctl/seccomp), ENOMEM: flags won't help */
	}
	return ret;
}

int loop_enable(struct io_uring *ring, const struct loop_features *feat)
{
	/* Debian's liburing 2.3 declares io_uring_enable_rings() but does not export it. */
	if (!feat->disabled)
		return 0;
	return io_uring_register((unsigned)ring->ring_fd, IORING_REGISTER_ENABLE_RINGS, NULL, 0);
}

struct io_uring_sqe *loop_sqe(struct io_uring *ring)
{
	struct io_uring_sqe *sqe;

	while (!(sqe = io_uring_get_sqe(ring))) {
		int ret = io_uring_submit(ring);
		if (ret < 0 && ret != -EAGAIN && ret != -EBUSY && ret != -EINTR)
			log_error("io_uring_submit: %s", strerror(-ret));
	}
	return sqe;
}

int loop_probe(struct loop_features *feat)
{
	struct io_uring ring;
	int ret = loop_init(&ring, 8, feat);

	if (ret == 0)
		io_uring_queue_exit(&ring);
	return ret;
}

int loop_setup(struct loop *l, unsigned entries)
{
	int ret;

	memset(l, 0, sizeof(*l));
	l->ring.ring_fd = -1;
	ret = loop_init(&l->ring, entries, &l->feat);
	if (ret < 0) {
		l->ring.ring_fd = -1;
		return ret;
	}
	l->now_ms = clock_coarse_ms();
	return 0;
}

int loop_start(struct loop *l)
{
	return loop_enable(&l->ring, &l->feat);
}

void loop_destroy(struct loop *l)
{
	if (l->ring.ring_fd >= 0)
		io_uring_queue_exit(&l->ring);
	l->ring.ring_fd = -1;
	free(l->slots);
	free(l->gens);
	free(l->free_slots);
	l->slots = NULL;
	l->gens = l->free_slots = NULL;
	l->cap = l->n_free = 0;
}

void loop_register(struct loop *l, enum loop_kind kind, const struct loop_module *m, void *ctx)
{
	l->mods[kind] = m;
	l->ctx[kind] = ctx;
}

static int grow(struct loop *l)
{
	uint32_t cap = l->cap ? l->cap * 2 : 1024;
	void *p;

	if (cap > LOOP_SLOT_MAX + 1u)
		return -ENOMEM;
	if (!(p = realloc(l->slots, cap * sizeof(*l->slots))))
		return -ENOMEM;
	l->slots = p;
	if (!(p = realloc(l->gens, cap * sizeof(*l->gens))))
		return -ENOMEM;
	l->gens = p;
	if (!(p = realloc(l->free_slots, cap * sizeof(*l->free_slots))))
		return -ENOMEM;
	l->free_slots = p;
	/* Pushed in reverse so the lowest free slot is taken first. */
	for (uint32_t i = cap; i > l->cap; i--) {
		l->slots[i - 1] = NULL;
		l->gens[i - 1] = 1;
		l->free_slots[l->n_free++] = i - 1;
	}
	l->cap = cap;
	return 0;
}

int loop_add(struct loop *l, struct loop_obj *o, enum loop_kind kind)
{
	if (!l->n_free && grow(l) < 0)
		return -ENOMEM;
	o->slot = l->free_slots[--l->n_free];
	o->kind = (uint8_t)kind;
	o->closed = false;
	o->inflight = 0;
	l->slots[o->slot] = o;
	l->n_objs++;
	return 0;
}

static void release(struct loop *l, struct loop_obj *o)
{
	uint32_t slot = o->slot;

	/* A new generation: nothing tagged for this object can reach the slot's next one. */
	if (++l->gens[slot] == 0)
		l->gens[slot] = 1;
	l->slots[slot] = NULL;
	l->free_slots[l->n_free++] = slot;
	l->n_objs--;
	l->mods[o->kind]->release(l, o);
}

void loop_close(struct loop *l, struct loop_obj *o)
{
	o->closed = true;
	if (o->inflight == 0)
		release(l, o);
}

uint64_t loop_tag_of(const struct loop *l, const struct loop_obj *o, unsigned op)
{
	return loop_tag(o->kind, op, o->slot, l->gens[o->slot]);
}

struct io_uring_sqe *loop_prep_linked(struct loop *l, struct loop_obj *o, unsigned op)
{
	struct io_uring_sqe *sqe = loop_sqe(&l->ring);

	io_uring_sqe_set_data64(sqe, loop_tag_of(l, o, op));
	return sqe;
}

struct io_uring_sqe *loop_prep(struct loop *l, struct loop_obj *o, unsigned op)
{
	struct io_uring_sqe *sqe = loop_prep_linked(l, o, op);

	o->inflight++;
	return sqe;
}

void loop_reserve(struct loop *l, unsigned n)
{
	if (io_uring_sq_space_left(&l->ring) < n)
		io_uring_submit(&l->ring);
}

void loop_cancel(struct loop *l, uint64_t tag)
{
	struct io_uring_sqe *sqe = loop_sqe(&l->ring);

	io_uring_prep_cancel64(sqe, tag, 0);
	/* Untagged: a cancel that found nothing (the op is completing anyway) says so once. */
	io_uring_sqe_set_data64(sqe, loop_tag(LOOP_KIND_NONE, 0, 0, 0));
	sqe->flags |= IOSQE_CQE_SKIP_SUCCESS;
}

static void dispatch(struct loop *l, const struct io_uring_cqe *cqe)
{
	uint64_t tag = io_uring_cqe_get_data64(cqe);
	unsigned kind = loop_tag_kind(tag);
	uint32_t slot = loop_tag_slot(tag);
	struct loop_obj *o;

	if (kind == LOOP_KIND_NONE) {
		if (cqe->res < 0 && cqe->res != -ENOENT && cqe->res != -EALREADY)
			log_debug("cancel: %s", strerror(-cqe->res));
		return;
	}
	if (slot >= l->cap || l->gens[slot] != loop_tag_gen(tag) || !(o = l->slots[slot]) ||
	    o->kind != kind) {
		/* Only uncounted requests can be stale, and they complete counted pairs. */
		log_debug("stale completion (kind %u op %u): dropped", kind, loop_tag_op(tag));
		return;
	}
	if (!(cqe->flags & IORING_CQE_F_MORE))
		o->inflight--;
	if (o->closed) {
		if (l->mods[kind]->discard)
			l->mods[kind]->discard(l, o, loop_tag_op(tag), cqe);
		if (o->inflight == 0)
			release(l, o);
		return;
	}
	/* Held across the call: an object its own completion closes is released after it returns. */
	o->inflight++;
	l->mods[kind]->complete(l, o, loop_tag_op(tag), cqe);
	if (--o->inflight == 0 && o->closed)
		release(l, o);
}

int loop_turn(struct loop *l, uint64_t wait_ms)
{
	struct __kernel_timespec ts = {.tv_sec = (long long)(wait_ms / 1000),
	                               .tv_nsec = (long long)(wait_ms % 1000) * 1000000};
	struct io_uring_cqe *cqe;
	unsigned head, count = 0;
	int ret = io_uring_submit_and_wait_timeout(&l->ring, &cqe, 1, &ts, NULL);

	l->now_ms = clock_coarse_ms();
	l->turns++;
	io_uring_for_each_cqe(&l->ring, head, cqe)
	{
		dispatch(l, cqe);
		count++;
	}
	io_uring_cq_advance(&l->ring, count);
	return ret;
}

void loop_tq_init(struct loop *l, struct loop_tq *q, uint64_t dur_ms,
                  void (*fire)(struct loop *l, struct loop_timer *t))
{
	list_init(&q->head);
	q->dur_ms = dur_ms;
	q->fire = fire;
	if (l->n_tqs < LOOP_MAX_TQ)
		l->tqs[l->n_tqs++] = q;
}

void loop_timer_arm(struct loop *l, struct loop_tq *q, struct loop_timer *t)
{
	list_del(&t->node);
	if (!q->dur_ms)
		return;
	t->due_ms = l->now_ms + q->dur_ms; /* 64 bits: no duration the config allows can wrap */
	list_add_tail(&q->head, &t->node);
}

void loop_timer_touch(struct loop *l, struct loop_tq *q, struct loop_timer *t)
{
	/*
	 * The slack is a second, or an eighth of a shorter duration: a 2 s idle
	 * timeout must not close a connection that was quiet for only 1 s.
	 */
	uint64_t slack = q->dur_ms / 8 < 1000 ? q->dur_ms / 8 : 1000;

	if (q->dur_ms && l->now_ms + q->dur_ms >= t->due_ms + slack)
		loop_timer_arm(l, q, t);
}

uint64_t loop_timers_run(struct loop *l)
{
	uint64_t next = UINT64_MAX;

	for (unsigned i = 0; i < l->n_tqs; i++) {
		struct loop_tq *q = l->tqs[i];
		while (!list_empty(&q->head)) {
			struct loop_timer *t = list_entry(q->head.next, struct loop_timer, node);
			if (t->due_ms > l->now_ms) {
				if (t->due_ms - l->now_ms < next)
					next = t->due_ms - l->now_ms;
				break;
			}
			list_del(&t->node);
			q->fire(l, t);
		}
	}
	return next;
}
