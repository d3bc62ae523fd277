/* SPDX-License-Identifier: MIT */
/* Unit tests for relay/loop.c: tags, ring set-up, loop_sqe(), objects and their in-flight counts, timers. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "t.h"
#include "loop.h"

T_SUITE("loop");

enum {
	RING_ENTRIES = 8,
	EXTRA_SQES = 3 * RING_ENTRIES + 5, /* well past a full SQ, still within the 4x CQ */
};

static const unsigned kinds[] = {LOOP_KIND_NONE, LOOP_KIND_WORKER, LOOP_KIND_LISTENER,
                                 LOOP_KIND_CONN, 15};
static const unsigned ops[] = {0, 1, 2, 7, 8, 15};
static const uint32_t slots[] = {
        0, 1, 2, 0x7fff, 0x123456, 0x800000, LOOP_SLOT_MAX - 1, LOOP_SLOT_MAX};
static const uint32_t gens[] = {0,          1,          2,          0xff,      0x100,
                                0x7fffffff, 0x80000000, 0xfffffffe, 0xffffffff};

#define N(a) (sizeof(a) / sizeof((a)[0]))

static void test_tag_roundtrip(void)
{
	unsigned bad = 0;

	T_EQ_INT(LOOP_SLOT_MAX, 0xffffff);
	T_ASSERT(LOOP_KIND_MAX <= 16 && LOOP_OP_MAX <= 16); /* 4 bits each */
	for (size_t k = 0; k < N(kinds); k++)
		for (size_t o = 0; o < N(ops); o++)
			for (size_t s = 0; s < N(slots); s++)
				for (size_t g = 0; g < N(gens); g++) {
					uint64_t t = loop_tag(kinds[k], ops[o], slots[s], gens[g]);
					if (loop_tag_kind(t) != kinds[k] ||
					    loop_tag_op(t) != ops[o] ||
					    loop_tag_slot(t) != slots[s] ||
					    loop_tag_gen(t) != gens[g]) {
						if (bad++ < 5)
							T_FAILF("kind %u op %u slot %#x gen %#x -> %#llx",
							        kinds[k], ops[o], slots[s], gens[g],
							        (unsigned long long)t);
					}
				}
	T_EQ_INT(bad, 0);
}

/* Neighbouring fields never bleed into each other, at the extremes of each. */
static void test_tag_fields_isolated(void)
{
	uint64_t t = loop_tag(0, 0, LOOP_SLOT_MAX, 0xffffffff);

	T_EQ_INT(loop_tag_kind(t), 0);
	T_EQ_INT(loop_tag_op(t), 0);
	T_EQ_INT(t, 0x00ffffffffffffffull);
	t = loop_tag(15, 15, 0, 0);
	T_EQ_INT(t, 0xff00000000000000ull);
	t = loop_tag(LOOP_KIND_CONN, 15, 0, 0);
	T_EQ_INT(loop_tag_kind(t), LOOP_KIND_CONN);
	T_EQ_INT(loop_tag_op(t), 15);
	/* a slot past 24 bits is cut to 24 bits, never spilling into the op or kind */
	t = loop_tag(LOOP_KIND_CONN, 3, 0xffffffff, 7);
	T_EQ_INT(loop_tag_kind(t), LOOP_KIND_CONN);
	T_EQ_INT(loop_tag_op(t), 3);
	T_EQ_INT(loop_tag_slot(t), LOOP_SLOT_MAX);
	T_EQ_INT(loop_tag_gen(t), 7);
	/* an op past 4 bits is cut too, never changing the kind */
	t = loop_tag(LOOP_KIND_LISTENER, 0x1f, 1, 1);
	T_EQ_INT(loop_tag_kind(t), LOOP_KIND_LISTENER);
	T_EQ_INT(loop_tag_op(t), 15);
	/* a user_data of 0 (never tagged) reads as kind NONE */
	T_EQ_INT(loop_tag_kind(0), LOOP_KIND_NONE);
}

/* Any two distinct (kind, op, slot, gen) give distinct tags: a stale completion can't alias. */
static void test_tag_distinct(void)
{
	enum { MAX = N(kinds) * N(ops) * N(slots) * N(gens) };
	static uint64_t seen[MAX];
	size_t n = 0, dup = 0;

	for (size_t k = 0; k < N(kinds); k++)
		for (size_t o = 0; o < N(ops); o++)
			for (size_t s = 0; s < N(slots); s++)
				for (size_t g = 0; g < N(gens); g++)
					seen[n++] = loop_tag(kinds[k], ops[o], slots[s], gens[g]);
	for (size_t i = 0; i < n; i++)
		for (size_t j = i + 1; j < n; j++)
			dup += seen[i] == seen[j];
	T_EQ_INT(dup, 0);
}

/* The ring every ring test shares; created in main() so an unavailable io_uring is one SKIP. */
static struct io_uring ring;
static struct loop_features feat;
static int init_ret = -1;

/* Submits everything, reaps `want` completions; counts each tag, checks results. */
static unsigned reap(unsigned want, uint8_t *seen, unsigned n_seen)
{
	unsigned got = 0;

	T_ASSERT(io_uring_submit(&ring) >= 0);
	while (got < want) {
		struct io_uring_cqe *cqe;
		struct __kernel_timespec ts = {.tv_sec = 5};
		int ret = io_uring_wait_cqe_timeout(&ring, &cqe, &ts);

		if (ret < 0) {
			T_FAILF("wait_cqe after %u of %u: %s", got, want, strerror(-ret));
			break;
		}
		uint64_t t = cqe->user_data;
		T_EQ_INT(cqe->res, 0);
		T_EQ_INT(loop_tag_kind(t), LOOP_KIND_WORKER);
		T_EQ_INT(loop_tag_gen(t), 0xabcd0000u + loop_tag_slot(t));
		if (loop_tag_slot(t) < n_seen)
			seen[loop_tag_slot(t)]++;
		io_uring_cqe_seen(&ring, cqe);
		got++;
	}
	return got;
}

static void test_loop_init(void)
{
	T_EQ_INT(init_ret, 0);
	if (init_ret < 0)
		return;
	T_ASSERT(ring.ring_fd >= 0);
	T_EQ_INT(ring.sq.ring_entries, RING_ENTRIES);
	T_EQ_INT(ring.cq.ring_entries, 4 * RING_ENTRIES);
	/* the features reported match what the ring was created with */
	T_EQ_INT(feat.disabled, (ring.flags & IORING_SETUP_R_DISABLED) != 0);
	T_EQ_INT(feat.single_issuer, (ring.flags & IORING_SETUP_SINGLE_ISSUER) != 0);
	T_EQ_INT(feat.defer_taskrun, (ring.flags & IORING_SETUP_DEFER_TASKRUN) != 0);
	T_EQ_INT(feat.coop_taskrun, (ring.flags & IORING_SETUP_COOP_TASKRUN) != 0);
	T_ASSERT(ring.flags & IORING_SETUP_CQSIZE);
	printf("  features: defer_taskrun %d single_issuer %d coop_taskrun %d ext_arg %d "
	       "fast_poll %d disabled %d\n",
	       feat.defer_taskrun, feat.single_issuer, feat.coop_taskrun, feat.ext_arg,
	       feat.fast_poll, feat.disabled);
	T_EQ_INT(loop_enable(&ring, &feat), 0);
}

/* Queues n tagged NOPs through loop_sqe() (slot i, gen 0xabcd0000 + i); returns how many got no SQE. */
static unsigned queue_nops(uint32_t n)
{
	unsigned nulls = 0;

	for (uint32_t i = 0; i < n; i++) {
		struct io_uring_sqe *sqe = loop_sqe(&ring);
		if (!sqe) {
			nulls++;
			continue;
		}
		io_uring_prep_nop(sqe);
		io_uring_sqe_set_data64(sqe, loop_tag(LOOP_KIND_WORKER, 1, i, 0xabcd0000u + i));
	}
	return nulls;
}

/* More SQEs than the SQ holds: loop_sqe() submits to make room and never returns NULL. */
static void test_loop_sqe_full(void)
{
	uint8_t seen[EXTRA_SQES] = {0};
	unsigned nulls = 0, got;

	T_EQ_INT(io_uring_sq_space_left(&ring), RING_ENTRIES);
	nulls = queue_nops(EXTRA_SQES);
	T_EQ_INT(nulls, 0);
	/* the plain getter agrees the SQ filled up along the way */
	T_ASSERT(io_uring_sq_space_left(&ring) < RING_ENTRIES);
	got = reap(EXTRA_SQES - nulls, seen, EXTRA_SQES);
	T_EQ_INT(got, EXTRA_SQES);
	for (unsigned i = 0; i < EXTRA_SQES; i++)
		if (seen[i] != 1)
			T_FAILF("nop %u completed %u times", i, seen[i]);
	T_EQ_INT(io_uring_cq_ready(&ring), 0);
}

/* A full SQ twice in a row, nothing reaped in between: the CQ (4x) absorbs it. */
static void test_loop_sqe_full_again(void)
{
	uint8_t seen[4 * RING_ENTRIES] = {0};
	unsigned nulls = 0;

	nulls = queue_nops(4 * RING_ENTRIES);
	T_EQ_INT(nulls, 0);
	T_EQ_INT(reap(4 * RING_ENTRIES, seen, 4 * RING_ENTRIES), 4 * RING_ENTRIES);
	for (unsigned i = 0; i < 4 * RING_ENTRIES; i++)
		T_EQ_INT(seen[i], 1);
}

/* The engine's pattern: the main thread creates the ring, the worker thread enables and uses it. */
struct thread_arg {
	struct io_uring ring;
	struct loop_features feat;
	int enable_ret, res;
	uint64_t user_data;
};

static void *worker(void *p)
{
	struct thread_arg *a = p;
	struct io_uring_sqe *sqe;
	struct io_uring_cqe *cqe;
	struct __kernel_timespec ts = {.tv_sec = 5};

	a->enable_ret = loop_enable(&a->ring, &a->feat);
	if (a->enable_ret < 0)
		return NULL;
	sqe = loop_sqe(&a->ring);
	io_uring_prep_nop(sqe);
	io_uring_sqe_set_data64(sqe, loop_tag(LOOP_KIND_WORKER, 1, 1, 2));
	a->res = io_uring_submit(&a->ring);
	if (a->res < 0)
		return NULL;
	a->res = io_uring_wait_cqe_timeout(&a->ring, &cqe, &ts);
	if (a->res == 0) {
		a->res = cqe->res;
		a->user_data = cqe->user_data;
		io_uring_cqe_seen(&a->ring, cqe);
	}
	return NULL;
}

static void test_loop_enable_other_thread(void)
{
	struct thread_arg a;
	pthread_t th;

	memset(&a, 0, sizeof(a));
	T_EQ_INT(loop_init(&a.ring, RING_ENTRIES, &a.feat), 0);
	T_EQ_INT(pthread_create(&th, NULL, worker, &a), 0);
	pthread_join(th, NULL);
	T_EQ_INT(a.enable_ret, 0);
	T_EQ_INT(a.res, 0);
	T_EQ_INT(a.user_data, loop_tag(LOOP_KIND_WORKER, 1, 1, 2));
	io_uring_queue_exit(&a.ring);
}

static void test_loop_probe(void)
{
	struct loop_features f;

	memset(&f, 0xff, sizeof(f));
	T_EQ_INT(loop_probe(&f), 0);
	T_EQ_INT(f.defer_taskrun, feat.defer_taskrun);
	T_EQ_INT(f.single_issuer, feat.single_issuer);
	T_EQ_INT(f.disabled, feat.disabled);
	T_EQ_INT(loop_probe(NULL), 0);
}

/* --- struct loop: objects, in-flight counts, dispatch, timers --- */

struct tobj {
	struct loop_obj obj;
	unsigned completed, discarded, released;
	int last_res;
	unsigned last_op;
};

static void t_complete(struct loop *l, struct loop_obj *o, unsigned op,
                       const struct io_uring_cqe *cqe)
{
	struct tobj *t = (struct tobj *)o;

	(void)l;
	t->completed++;
	t->last_op = op;
	t->last_res = cqe->res;
}

static void t_discard(struct loop *l, struct loop_obj *o, unsigned op,
                      const struct io_uring_cqe *cqe)
{
	(void)l, (void)op, (void)cqe;
	((struct tobj *)o)->discarded++;
}

static void t_release(struct loop *l, struct loop_obj *o)
{
	(void)l;
	((struct tobj *)o)->released++;
}

static const struct loop_module tmod = {
        .name = "test", .complete = t_complete, .discard = t_discard, .release = t_release};

/* A NOP for o with op, counted in flight. */
static void nop(struct loop *l, struct tobj *o, unsigned op)
{
	io_uring_prep_nop(loop_prep(l, &o->obj, op));
}

/* Turns until `cond` or 2 s. */
#define TURN_UNTIL(l, cond)                                 \
	do {                                                \
		for (int i_ = 0; i_ < 200 && !(cond); i_++) \
			loop_turn((l), 10);                 \
	} while (0)

static void test_obj_dispatch(void)
{
	struct loop l;
	struct tobj a = {0}, b = {0};

	T_EQ_INT(loop_setup(&l, RING_ENTRIES), 0);
	T_EQ_INT(loop_start(&l), 0);
	loop_register(&l, LOOP_KIND_CONN, &tmod, NULL);
	T_EQ_INT(loop_add(&l, &a.obj, LOOP_KIND_CONN), 0);
	T_EQ_INT(loop_add(&l, &b.obj, LOOP_KIND_CONN), 0);
	T_ASSERT(a.obj.slot != b.obj.slot);
	T_EQ_INT(l.n_objs, 2);
	nop(&l, &a, 5);
	nop(&l, &b, 9);
	T_EQ_INT(a.obj.inflight, 1);
	TURN_UNTIL(&l, a.completed && b.completed);
	T_EQ_INT(a.completed, 1);
	T_EQ_INT(a.last_op, 5);
	T_EQ_INT(b.last_op, 9);
	T_EQ_INT(a.obj.inflight, 0);
	/* closed with nothing in flight: released at once */
	loop_close(&l, &b.obj);
	T_EQ_INT(b.released, 1);
	T_EQ_INT(l.n_objs, 1);
	loop_close(&l, &a.obj);
	T_EQ_INT(l.n_objs, 0);
	loop_destroy(&l);
}

/* Heap objects whose release frees them: under ASan a completion delivered after it is caught. */
static unsigned heap_released, heap_discarded;

static void h_discard(struct loop *l, struct loop_obj *o, unsigned op,
                      const struct io_uring_cqe *cqe)
{
	(void)l, (void)op, (void)cqe;
	((struct tobj *)o)->discarded++; /* a use after free if release came first */
	heap_discarded++;
}

static void h_release(struct loop *l, struct loop_obj *o)
{
	(void)l;
	heap_released++;
	free(o);
}

static const struct loop_module hmod = {
        .name = "heap", .complete = t_complete, .discard = h_discard, .release = h_release};

/*
 * A closed object is released only after its last operation completed,
 * never before: the operations here are prepared but not even submitted
 * when the object is closed (review L2: a connection closed in the turn
 * that prepared its connect).
 */
static void test_obj_deferred_release(void)
{
	struct loop l;
	struct tobj *a = calloc(1, sizeof(*a));
	static struct __kernel_timespec ts = {.tv_nsec = 50 * 1000000};

	T_ASSERT(a != NULL);
	heap_released = heap_discarded = 0;
	T_EQ_INT(loop_setup(&l, RING_ENTRIES), 0);
	T_EQ_INT(loop_start(&l), 0);
	loop_register(&l, LOOP_KIND_CONN, &hmod, NULL);
	T_EQ_INT(loop_add(&l, &a->obj, LOOP_KIND_CONN), 0);
	io_uring_prep_timeout(loop_prep(&l, &a->obj, 1), &ts, 0, 0);
	nop(&l, a, 2);
	T_EQ_INT(a->obj.inflight, 2);
	loop_close(&l, &a->obj);
	T_EQ_INT(heap_released, 0);
	TURN_UNTIL(&l, heap_released);
	T_EQ_INT(heap_released, 1);
	T_EQ_INT(heap_discarded, 2); /* a closed object's completions go to discard() only */
	T_EQ_INT(l.n_objs, 0);
	loop_destroy(&l);
}

/* A cancelled op completes its object; the cancel itself is untagged. */
static void test_obj_cancel(void)
{
	struct loop l;
	struct tobj a = {0};
	int p[2];

	T_EQ_INT(pipe(p), 0);
	T_EQ_INT(loop_setup(&l, RING_ENTRIES), 0);
	T_EQ_INT(loop_start(&l), 0);
	loop_register(&l, LOOP_KIND_CONN, &tmod, NULL);
	T_EQ_INT(loop_add(&l, &a.obj, LOOP_KIND_CONN), 0);
	io_uring_prep_poll_add(loop_prep(&l, &a.obj, 3), p[0], POLLIN);
	io_uring_submit(&l.ring);
	loop_cancel(&l, loop_tag_of(&l, &a.obj, 3));
	loop_close(&l, &a.obj);
	TURN_UNTIL(&l, a.released);
	T_EQ_INT(a.released, 1);
	T_EQ_INT(a.obj.inflight, 0);
	loop_destroy(&l);
	close(p[0]);
	close(p[1]);
}

/* An uncounted tag for a slot's previous occupant never reaches the next one. */
static void test_obj_stale_generation(void)
{
	struct loop l;
	struct tobj a = {0}, b = {0};
	uint64_t old;

	T_EQ_INT(loop_setup(&l, RING_ENTRIES), 0);
	T_EQ_INT(loop_start(&l), 0);
	loop_register(&l, LOOP_KIND_CONN, &tmod, NULL);
	T_EQ_INT(loop_add(&l, &a.obj, LOOP_KIND_CONN), 0);
	old = loop_tag_of(&l, &a.obj, 4);
	loop_close(&l, &a.obj);
	T_EQ_INT(loop_add(&l, &b.obj, LOOP_KIND_CONN), 0);
	T_EQ_INT(b.obj.slot, a.obj.slot);            /* the slot is reused ... */
	T_ASSERT(loop_tag_of(&l, &b.obj, 4) != old); /* ... with a new generation */
	struct io_uring_sqe *sqe = loop_sqe(&l.ring);
	io_uring_prep_nop(sqe);
	io_uring_sqe_set_data64(sqe, old);
	nop(&l, &b, 6);
	TURN_UNTIL(&l, b.completed);
	loop_turn(&l, 10);
	T_EQ_INT(b.completed, 1);
	T_EQ_INT(b.last_op, 6);
	loop_close(&l, &b.obj);
	loop_destroy(&l);
}

/* loop_reserve() keeps a linked pair in one submission even when the SQ is nearly full. */
static void test_reserve_keeps_chain(void)
{
	struct loop l;
	struct tobj a = {0};
	static struct __kernel_timespec ts = {.tv_sec = 5};

	T_EQ_INT(loop_setup(&l, RING_ENTRIES), 0);
	T_EQ_INT(loop_start(&l), 0);
	loop_register(&l, LOOP_KIND_CONN, &tmod, NULL);
	T_EQ_INT(loop_add(&l, &a.obj, LOOP_KIND_CONN), 0);
	for (int i = 0; i < RING_ENTRIES - 1; i++)
		nop(&l, &a, 1);
	T_EQ_INT(io_uring_sq_space_left(&l.ring), 1);
	loop_reserve(&l, 2);
	T_ASSERT(io_uring_sq_space_left(&l.ring) >= 2);
	/* a NOP linked to a timeout: the timeout must see its link, not fail -EINVAL */
	struct io_uring_sqe *sqe = loop_prep(&l, &a.obj, 2);
	io_uring_prep_nop(sqe);
	sqe->flags |= IOSQE_IO_LINK;
	io_uring_prep_link_timeout(loop_prep(&l, &a.obj, 3), &ts, 0);
	unsigned want = RING_ENTRIES + 1, seen_lt = 0;
	for (int i = 0; i < 200 && a.completed < want; i++) {
		unsigned before = a.completed;
		loop_turn(&l, 10);
		if (a.completed != before && a.last_op == 3) {
			seen_lt++;
			/* the NOP finished first, so its linked timeout was cancelled */
			T_EQ_INT(a.last_res, -ECANCELED);
		}
	}
	T_EQ_INT(a.completed, want);
	T_EQ_INT(a.obj.inflight, 0);
	loop_close(&l, &a.obj);
	loop_destroy(&l);
}

struct tt {
	struct loop_timer t;
	unsigned fired;
};

static void t_fire(struct loop *l, struct loop_timer *t)
{
	(void)l;
	((struct tt *)t)->fired++;
}

static void test_timers(void)
{
	struct loop l;
	struct loop_tq q, off, huge;
	struct tt a = {0}, b = {0}, c = {0}, d = {0};

	memset(&l, 0, sizeof(l));
	l.now_ms = 1000;
	loop_tq_init(&l, &q, 100, t_fire);
	loop_tq_init(&l, &off, 0, t_fire);
	loop_tq_init(&l, &huge, 4294967295u, t_fire); /* idle-timeout's maximum (L5) */
	loop_timer_init(&a.t);
	loop_timer_init(&b.t);
	loop_timer_init(&c.t);
	loop_timer_init(&d.t);
	loop_timer_arm(&l, &q, &a.t);
	l.now_ms = 1050;
	loop_timer_arm(&l, &q, &b.t);
	loop_timer_arm(&l, &off, &c.t); /* a disabled queue never fires */
	loop_timer_arm(&l, &huge, &d.t);
	T_EQ_INT(loop_timers_run(&l), 50); /* a is due at 1100 */
	l.now_ms = 1100;
	T_EQ_INT(loop_timers_run(&l), 50);
	T_EQ_INT(a.fired, 1);
	T_EQ_INT(b.fired, 0);
	/*
	 * touch moves a deadline only by a second, or by an eighth of a shorter
	 * duration (12 ms for this 100 ms queue), or more
	 */
	loop_timer_touch(&l, &q, &b.t); /* at 1100 */
	T_EQ_INT(b.t.due_ms, 1200);     /* moved by 50 ms */
	l.now_ms = 1111;
	loop_timer_touch(&l, &q, &b.t);
	T_EQ_INT(b.t.due_ms, 1200); /* would move by 11 ms */
	l.now_ms = 1112;
	loop_timer_touch(&l, &q, &b.t);
	T_EQ_INT(b.t.due_ms, 1212); /* moves by 12 ms */
	loop_timer_stop(&b.t);
	struct loop_tq slow;
	loop_tq_init(&l, &slow, 60000, t_fire);
	loop_timer_arm(&l, &slow, &b.t);
	T_EQ_INT(b.t.due_ms, 61112);
	l.now_ms = 2111;
	loop_timer_touch(&l, &slow, &b.t);
	T_EQ_INT(b.t.due_ms, 61112); /* 999 ms: not yet */
	l.now_ms = 2112;
	loop_timer_touch(&l, &slow, &b.t);
	T_EQ_INT(b.t.due_ms, 62112);
	loop_timer_stop(&b.t);
	l.now_ms = 10000000;
	loop_timers_run(&l);
	T_EQ_INT(b.fired, 0);
	T_EQ_INT(c.fired, 0);
	T_EQ_INT(d.fired, 0); /* 4294967295 ms after 1050: no wrap-around to "now" */
	T_EQ_INT(d.t.due_ms, 1050ull + 4294967295ull);
	l.now_ms = 1050ull + 4294967295ull;
	loop_timers_run(&l);
	T_EQ_INT(d.fired, 1);
}

int main(void)
{
	T_RUN(test_tag_roundtrip);
	T_RUN(test_tag_fields_isolated);
	T_RUN(test_tag_distinct);
	T_RUN(test_timers);
	init_ret = loop_init(&ring, RING_ENTRIES, &feat);
	if (init_ret == -ENOSYS || init_ret == -EPERM) {
		printf("SKIP: loop/ring (io_uring unavailable: %s)\n", strerror(-init_ret));
		return t_finish();
	}
	T_RUN(test_loop_init);
	if (init_ret == 0) {
		T_RUN(test_loop_sqe_full);
		T_RUN(test_loop_sqe_full_again);
		T_RUN(test_loop_enable_other_thread);
		T_RUN(test_loop_probe);
		io_uring_queue_exit(&ring);
		T_RUN(test_obj_dispatch);
		T_RUN(test_obj_deferred_release);
		T_RUN(test_obj_cancel);
		T_RUN(test_obj_stale_generation);
		T_RUN(test_reserve_keeps_chain);
	}
	return t_finish();
}
