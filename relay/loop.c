/* SPDX-License-Identifier: MIT */
/* The event loop: ring set-up with fallbacks, tagged slots, per-object in-flight counts, dispatch, deadlines. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "log.h"
#include "loop_internal.h"

/*
 * SINGLE_ISSUER + DEFER_TASKRUN (6.1+) run completion work only when this
 * thread enters the kernel to wait, which batches it and avoids IPIs; COOP_TASKRUN
 * (5.19+) is the next best; plain rings work everywhere io_uring does. The CQ
 * is 4x the SQ so multishot accept bursts and cancellations do not overflow.
 */
/*
 * What the kernel offers that no flag or feature bit says: multishot accept
 * and provided-buffer rings came in 5.19 with IORING_OP_SOCKET, so a kernel
 * that knows that opcode has both.
 */
static bool kernel_has_op(struct io_uring *ring, int op)
{
	struct io_uring_probe *probe = io_uring_get_probe_ring(ring);
	bool ok = probe && io_uring_opcode_supported(probe, op);

	if (probe)
		io_uring_free_probe(probe);
	return ok;
}

static void features_of(struct io_uring *ring, const struct io_uring_params *p,
                        struct loop_features *feat)
{
	unsigned prof = loop_kernel_profile();
	bool k519 = kernel_has_op(ring, IORING_OP_SOCKET) && (!prof || prof >= KV(5, 19));

	memset(feat, 0, sizeof(*feat));
	feat->defer_taskrun = p->flags & IORING_SETUP_DEFER_TASKRUN;
	feat->single_issuer = p->flags & IORING_SETUP_SINGLE_ISSUER;
	feat->coop_taskrun = p->flags & IORING_SETUP_COOP_TASKRUN;
	feat->ext_arg = p->features & IORING_FEAT_EXT_ARG;
	feat->fast_poll = p->features & IORING_FEAT_FAST_POLL;
	feat->cqe_skip = p->features & IORING_FEAT_CQE_SKIP;
	feat->disabled = p->flags & IORING_SETUP_R_DISABLED;
	/* 5.13 brought multishot poll and resource tags together. */
	feat->poll_multi = p->features & IORING_FEAT_RSRC_TAGS;
	feat->multishot_accept = k519;
	feat->buf_ring = k519;
	feat->profile = prof;
}

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
		/* An old-kernel profile skips what that kernel would refuse with EINVAL. */
		if (!loop_kernel_setup_ok(flag_sets[i] | IORING_SETUP_CQSIZE))
			continue;
		memset(&p, 0, sizeof(p));
		p.flags = flag_sets[i] | IORING_SETUP_CQSIZE;
		p.cq_entries = entries * 4;
		ret = io_uring_queue_init_params(entries, ring, &p);
		if (ret == 0) {
			/*
			 * ... and hides the features it lacks, from liburing too: without
			 * EXT_ARG, io_uring_submit_and_wait_timeout() queues a timeout SQE
			 * of its own, as it must on 5.10.
			 */
			p.features &= loop_kernel_feature_mask();
			ring->features = p.features;
			if (feat)
				features_of(ring, &p, feat);
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

/* Every submission of a loop's ring goes through here: the profile's check first. */
static int submit(struct loop *l)
{
	if (l->feat.profile)
		loop_kernel_check(&l->ring);
	return io_uring_submit(&l->ring);
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

int loop_setup_backend(struct loop *l, unsigned entries, enum loop_backend want)
{
	static char why[96]; /* every worker fails alike */
	int ret = 0;

	memset(l, 0, sizeof(*l));
	l->ring.ring_fd = -1;
	l->now_ms = clock_coarse_ms();
	if (want != LOOP_BACKEND_EPOLL) {
		ret = loop_init(&l->ring, entries, &l->feat);
		if (ret == 0) {
			l->backend_why = want == LOOP_BACKEND_AUTO ? "the kernel has it"
			                                           : "[main] backend = io_uring";
			return 0;
		}
		l->ring.ring_fd = -1;
		if (want == LOOP_BACKEND_IO_URING)
			return ret;
		snprintf(why, sizeof(why), "io_uring_setup: %s", strerror(-ret));
		l->backend_why = why;
	} else {
		l->backend_why = "[main] backend = epoll";
	}
	memset(&l->feat, 0, sizeof(l->feat));
	/* The interpreter emulates both multishot kinds; cqe_skip stays off (no link chains). */
	l->feat.multishot_accept = true;
	l->feat.poll_multi = true;
	return loop_ep_setup(l);
}

int loop_setup(struct loop *l, unsigned entries)
{
	return loop_setup_backend(l, entries, LOOP_BACKEND_AUTO);
}

const char *loop_backend_name(const struct loop *l)
{
	return l->ep ? "epoll" : "io_uring";
}

int loop_fd(const struct loop *l)
{
	return l->ep ? loop_ep_fd(l) : l->ring.ring_fd;
}

int loop_start(struct loop *l)
{
	return l->ep ? 0 : loop_enable(&l->ring, &l->feat);
}

void loop_destroy(struct loop *l)
{
	if (l->ep)
		loop_ep_destroy(l);
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
	/* 64 to start: an idle loop holds its listeners and timers, not 1,024
	 * slots (16 KiB of tables, written through here, so resident) */
	uint32_t cap = l->cap ? l->cap * 2 : 64;
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

/* Never NULL: a full SQ is submitted (through the profile's check) to make room. */
static struct io_uring_sqe *get_sqe(struct loop *l)
{
	struct io_uring_sqe *sqe;

	if (l->ep)
		return loop_ep_sqe(l);
	while (!(sqe = io_uring_get_sqe(&l->ring))) {
		int ret = submit(l);
		if (ret < 0 && ret != -EAGAIN && ret != -EBUSY && ret != -EINTR)
			log_error("io_uring_submit: %s", strerror(-ret));
	}
	return sqe;
}

struct io_uring_sqe *loop_prep_linked(struct loop *l, struct loop_obj *o, unsigned op)
{
	struct io_uring_sqe *sqe = get_sqe(l);

	l->sqes++;
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
	if (l->ep)
		loop_ep_reserve(l, n);
	else if (io_uring_sq_space_left(&l->ring) < n)
		submit(l);
}

void loop_submit(struct loop *l)
{
	if (l->ep)
		loop_ep_submit(l);
	else
		submit(l);
}

void loop_cancel(struct loop *l, uint64_t tag)
{
	struct io_uring_sqe *sqe = get_sqe(l);

	l->sqes++;
	io_uring_prep_cancel64(sqe, tag, 0);
	/* Untagged: a cancel that found nothing (the op is completing anyway) says so once. */
	io_uring_sqe_set_data64(sqe, loop_tag(LOOP_KIND_NONE, 0, 0, 0));
	/* Before 5.17 the flag is an EINVAL, and the cancel would never happen. */
	if (l->feat.cqe_skip)
		sqe->flags |= IOSQE_CQE_SKIP_SUCCESS;
}

void loop_dispatch(struct loop *l, const struct io_uring_cqe *cqe)
{
	uint64_t tag = io_uring_cqe_get_data64(cqe);
	unsigned kind = loop_tag_kind(tag);
	uint32_t slot = loop_tag_slot(tag);
	struct loop_obj *o;

	/* liburing's own wake-up timeout where the kernel lacks EXT_ARG (before 5.11) */
	if (tag == LIBURING_UDATA_TIMEOUT)
		return;
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
	int ret;

	if (l->ep)
		return loop_ep_turn(l, wait_ms);
	if (l->feat.profile)
		loop_kernel_check(&l->ring);
	ret = io_uring_submit_and_wait_timeout(&l->ring, &cqe, 1, &ts, NULL);
	l->now_ms = clock_coarse_ms();
	l->turns++;
	io_uring_for_each_cqe(&l->ring, head, cqe)
	{
		loop_dispatch(l, cqe);
		count++;
	}
	io_uring_cq_advance(&l->ring, count);
	l->cqes += count;
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

void loop_tq_set(struct loop_tq *q, uint64_t dur_ms)
{
	struct list_node *n, *next;

	if (dur_ms == q->dur_ms)
		return;
	for (n = q->head.next; n != &q->head; n = next) {
		struct loop_timer *t = list_entry(n, struct loop_timer, node);

		next = n->next;
		if (!dur_ms)
			list_del(&t->node);
		else
			t->due_ms =
			        t->due_ms - q->dur_ms + dur_ms; /* armed at due - old duration */
	}
	q->dur_ms = dur_ms;
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
