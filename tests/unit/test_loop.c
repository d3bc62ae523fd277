/* SPDX-License-Identifier: MIT */
/* Unit tests for relay/loop.h and relay/loop.c: completion tags, ring set-up, loop_sqe(). */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "t.h"
#include "loop.h"

T_SUITE("loop");

enum {
	RING_ENTRIES = 8,
	EXTRA_SQES = 3 * RING_ENTRIES + 5, /* well past a full SQ, still within the 4x CQ */
};

static const enum loop_op all_ops[] = {
        OP_NONE,         OP_ACCEPT,  OP_ACCEPT_RETRY, OP_EVENT,     OP_CANCEL,
        OP_LINK_TIMEOUT, OP_HS_POLL, OP_CONNECT,      OP_DIR0_POLL, OP_DIR1_POLL,
};
static const uint32_t slots[] = {
        0, 1, 2, 0x7fff, 0x123456, 0x800000, LOOP_SLOT_MAX - 1, LOOP_SLOT_MAX};
static const uint32_t gens[] = {0,          1,          2,          0xff,      0x100,
                                0x7fffffff, 0x80000000, 0xfffffffe, 0xffffffff};

#define N(a) (sizeof(a) / sizeof((a)[0]))

static void test_tag_roundtrip(void)
{
	unsigned bad = 0;

	T_EQ_INT(LOOP_SLOT_MAX, 0xffffff);
	T_ASSERT(OP_DIR1_POLL < 256); /* the op has 8 bits */
	for (size_t o = 0; o < N(all_ops); o++)
		for (size_t s = 0; s < N(slots); s++)
			for (size_t g = 0; g < N(gens); g++) {
				uint64_t t = loop_tag(all_ops[o], slots[s], gens[g]);
				if (loop_tag_op(t) != all_ops[o] || loop_tag_slot(t) != slots[s] ||
				    loop_tag_gen(t) != gens[g]) {
					if (bad++ < 5)
						T_FAILF("op %d slot %#x gen %#x -> %#llx -> %d %#x %#x",
						        all_ops[o], slots[s], gens[g],
						        (unsigned long long)t, loop_tag_op(t),
						        loop_tag_slot(t), loop_tag_gen(t));
				}
			}
	T_EQ_INT(bad, 0);
}

/* Neighbouring fields never bleed into each other, at the extremes of each. */
static void test_tag_fields_isolated(void)
{
	uint64_t t = loop_tag(OP_NONE, LOOP_SLOT_MAX, 0xffffffff);

	T_EQ_INT(loop_tag_op(t), OP_NONE);
	T_EQ_INT(t, 0x00ffffffffffffffull);
	t = loop_tag(OP_DIR1_POLL, 0, 0);
	T_EQ_INT(loop_tag_slot(t), 0);
	T_EQ_INT(loop_tag_gen(t), 0);
	t = loop_tag(OP_DIR1_POLL, LOOP_SLOT_MAX, 0);
	T_EQ_INT(loop_tag_op(t), OP_DIR1_POLL);
	T_EQ_INT(loop_tag_gen(t), 0);
	t = loop_tag(OP_ACCEPT, 0, 0xffffffff);
	T_EQ_INT(loop_tag_op(t), OP_ACCEPT);
	T_EQ_INT(loop_tag_slot(t), 0);
	/* a slot past 24 bits is cut to 24 bits, never spilling into the op */
	t = loop_tag(OP_CONNECT, 0xffffffff, 7);
	T_EQ_INT(loop_tag_op(t), OP_CONNECT);
	T_EQ_INT(loop_tag_slot(t), LOOP_SLOT_MAX);
	T_EQ_INT(loop_tag_gen(t), 7);
	t = loop_tag(OP_CONNECT, LOOP_SLOT_MAX + 1, 7);
	T_EQ_INT(loop_tag_op(t), OP_CONNECT);
	T_EQ_INT(loop_tag_slot(t), 0);
	/* a user_data of 0 (never tagged) reads as OP_NONE */
	T_EQ_INT(loop_tag(OP_NONE, 0, 0), 0);
	T_EQ_INT(loop_tag_op(0), OP_NONE);
}

/* Any two distinct (op, slot, gen) triples give distinct tags: a stale completion can't alias. */
static void test_tag_distinct(void)
{
	enum { MAX = N(all_ops) * N(slots) * N(gens) };
	static uint64_t seen[MAX];
	size_t n = 0, dup = 0;

	for (size_t o = 0; o < N(all_ops); o++)
		for (size_t s = 0; s < N(slots); s++)
			for (size_t g = 0; g < N(gens); g++)
				seen[n++] = loop_tag(all_ops[o], slots[s], gens[g]);
	for (size_t i = 0; i < n; i++)
		for (size_t j = i + 1; j < n; j++)
			dup += seen[i] == seen[j];
	T_EQ_INT(dup, 0);
	/* the generation bump that retires a slot changes the tag */
	T_ASSERT(loop_tag(OP_DIR0_POLL, 5, 0xffffffff) != loop_tag(OP_DIR0_POLL, 5, 0));
	T_ASSERT(loop_tag(OP_DIR0_POLL, 5, 1) != loop_tag(OP_DIR1_POLL, 5, 1));
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
		T_EQ_INT(loop_tag_op(t), OP_EVENT);
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
		io_uring_sqe_set_data64(sqe, loop_tag(OP_EVENT, i, 0xabcd0000u + i));
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
	io_uring_sqe_set_data64(sqe, loop_tag(OP_EVENT, 1, 2));
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
	T_EQ_INT(a.user_data, loop_tag(OP_EVENT, 1, 2));
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

int main(void)
{
	T_RUN(test_tag_roundtrip);
	T_RUN(test_tag_fields_isolated);
	T_RUN(test_tag_distinct);
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
	}
	return t_finish();
}
