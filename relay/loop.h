/* SPDX-License-Identifier: MIT */
/* The event loop: one io_uring (or epoll), objects in tagged slots, completions dispatched to their module. */
#ifndef SPLICED_LOOP_H
#define SPLICED_LOOP_H

#include <stdbool.h>
#include <stdint.h>

#include <liburing.h>

#include "list.h"

/*
 * Every SQE carries a 64-bit tag: kind (4 bits) | op (4 bits) | slot (24
 * bits) | generation (32 bits). The kind names the module that owns the
 * operation and gets its completion; the op is that module's own business;
 * slot and generation name the object. An object's slot gets a new
 * generation when it is freed, so a completion for a previous occupant can
 * never be delivered to the next one.
 */
enum loop_kind {
	LOOP_KIND_NONE = 0, /* untagged (cancel requests): completions are ignored */
	LOOP_KIND_WORKER,   /* the worker's inbox (eventfd) */
	LOOP_KIND_LISTENER, /* an inbound's listening socket */
	LOOP_KIND_CONN,     /* a relayed TCP connection */
	LOOP_KIND_RESOLVER, /* a socket the resolver (c-ares) opened */
	LOOP_KIND_UDP,      /* a UDP session, whatever its front end (udp_session.c) */
	LOOP_KIND_UDP_UP,   /* an association's leg to a socks5 upstream */
	LOOP_KIND_UDP_TP,   /* a tproxy inbound's UDP socket (udp_tproxy.c) */
	LOOP_KIND_TUN,      /* a tun inbound's queue in this worker (tun_queue.c) */
	LOOP_KIND_TUN_DNS,  /* a TUN app's DNS query over TCP (tun_dns.c) */
	LOOP_KIND_METRICS,  /* the metrics endpoint's listener, and its clients (metrics.c) */
	LOOP_KIND_MAX = 16,
};

enum {
	LOOP_OP_MAX = 16,
	LOOP_SLOT_BITS = 24,
	LOOP_SLOT_MAX = (1u << LOOP_SLOT_BITS) - 1,
};

static inline uint64_t loop_tag(unsigned kind, unsigned op, uint32_t slot, uint32_t gen)
{
	return ((uint64_t)(kind & 15) << 60) | ((uint64_t)(op & 15) << 56) |
	       ((uint64_t)(slot & LOOP_SLOT_MAX) << 32) | gen;
}

static inline unsigned loop_tag_kind(uint64_t tag)
{
	return (unsigned)(tag >> 60);
}

static inline unsigned loop_tag_op(uint64_t tag)
{
	return (unsigned)(tag >> 56) & 15;
}

static inline uint32_t loop_tag_slot(uint64_t tag)
{
	return (uint32_t)(tag >> 32) & LOOP_SLOT_MAX;
}

static inline uint32_t loop_tag_gen(uint64_t tag)
{
	return (uint32_t)tag;
}

/*
 * What the ring set-up achieved, for --version and the start-up log; what a
 * module may use. Each is what the kernel offers, less what an old-kernel
 * profile (SPLICED_KERNEL_PROFILE, loop_kernel.c) takes away. The epoll
 * backend offers multishot accept and poll (it emulates them), nothing else.
 */
struct loop_features {
	bool defer_taskrun;
	bool single_issuer;
	bool coop_taskrun;
	bool ext_arg;
	bool fast_poll;
	bool cqe_skip;         /* IOSQE_CQE_SKIP_SUCCESS (5.17+): replies may go through the ring */
	bool disabled;         /* created with R_DISABLED: call loop_enable() in the using thread */
	bool multishot_accept; /* IORING_ACCEPT_MULTISHOT (5.19+); else one accept per SQE */
	bool poll_multi;       /* IORING_POLL_ADD_MULTI (5.13+) */
	bool buf_ring;         /* provided-buffer rings (5.19+) */
	unsigned profile;      /* the kernel profile in force (510 = 5.10), 0 = none */
};

/* Which loop runs the operations: io_uring, or the SQE interpreter over epoll(7). */
enum loop_backend {
	LOOP_BACKEND_AUTO = 0, /* io_uring; epoll where io_uring_setup fails */
	LOOP_BACKEND_IO_URING,
	LOOP_BACKEND_EPOLL,
};

/* Create a ring with the best flags the kernel accepts. 0 or -errno. */
int loop_init(struct io_uring *ring, unsigned entries, struct loop_features *feat);
/* In the thread that will use the ring, before the first submit. 0 or -errno. */
int loop_enable(struct io_uring *ring, const struct loop_features *feat);
/* Never NULL: submits pending SQEs to make room when the SQ is full. */
struct io_uring_sqe *loop_sqe(struct io_uring *ring);
/* Probe io_uring once (for --version and the start-up check). 0 or -errno. */
int loop_probe(struct loop_features *feat);

/*
 * Old-kernel profiles (loop_kernel.c): "5.10", "5.15" or "6.1" makes the
 * set-up and the probe offer only what that kernel's io_uring has, and every
 * submission is checked: an opcode or flag newer than the profile aborts the
 * process, naming it. NULL or "" turns it off. 0, or -EINVAL for any other
 * string (-EOPNOTSUPP for any in a build with -Dkernel_profiles=disabled).
 * Set once, before any loop is set up (main reads $SPLICED_KERNEL_PROFILE).
 */
int loop_kernel_profile_set(const char *name);
/* The profile in force as 510, 515 or 601; 0 = none. */
unsigned loop_kernel_profile(void);
/*
 * The first kernel (as 510, 517, ...) that accepts this SQE: its opcode, its
 * flags and the opcode's own flags; 9999 for what spliced does not know.
 * *what names the newest part ("IORING_OP_SEND_ZC", "IOSQE_CQE_SKIP_SUCCESS").
 */
unsigned loop_kernel_sqe_since(const struct io_uring_sqe *sqe, const char **what);

struct loop;

/*
 * Embedded in every object that owns operations. The loop counts the
 * operations in flight per object; a closed object is released (its module's
 * release() frees it) only when the last of them has completed, so no
 * completion, buffer or descriptor can outlive what it refers to, and a stop
 * can simply wait until no object is left.
 */
struct loop_obj {
	uint32_t slot;
	uint8_t kind;
	bool closed;
	uint32_t inflight;
};

struct loop_module {
	const char *name;
	/* A completion for a live (not closed) object; op is the module's own. */
	void (*complete)(struct loop *l, struct loop_obj *o, unsigned op,
	                 const struct io_uring_cqe *cqe);
	/*
	 * Optional: a completion for a closed object, which may carry something
	 * to free (the socket of an accept that completed as it was cancelled).
	 */
	void (*discard)(struct loop *l, struct loop_obj *o, unsigned op,
	                const struct io_uring_cqe *cqe);
	/* The object was closed and has no operation left: free it. */
	void (*release)(struct loop *l, struct loop_obj *o);
};

/*
 * A queue of deadlines that all lie the same duration after they were armed,
 * so arming appends and the head is always the next to expire (HAProxy keeps
 * `expire` per task for the same reason): O(1) arm, touch and stop. A
 * duration of 0 disables the queue (arming is a no-op).
 */
struct loop_timer {
	struct list_node node;
	uint64_t due_ms;
};

struct loop_tq {
	struct list_node head;
	uint64_t dur_ms;
	void (*fire)(struct loop *l, struct loop_timer *t); /* t is already off the queue */
};

enum { LOOP_MAX_TQ = 12 };

struct loop_ep;

struct loop {
	struct io_uring ring; /* unused (ring_fd -1) on the epoll backend */
	struct loop_features feat;
	struct loop_ep *ep; /* the epoll backend's state (loop_epoll.c); NULL on io_uring */
	const char *
	        backend_why; /* why this backend: "[main] backend = epoll", "io_uring_setup: ..." */
	const struct loop_module *mods[LOOP_KIND_MAX];
	void *ctx[LOOP_KIND_MAX]; /* each module's context (the worker), loop_ctx() */
	/* Slots: the object and generation behind every tag. */
	struct loop_obj **slots;
	uint32_t *gens;
	uint32_t *free_slots;
	uint32_t n_free, cap;
	unsigned n_objs;
	struct loop_tq *tqs[LOOP_MAX_TQ];
	unsigned n_tqs;
	uint64_t now_ms; /* CLOCK_MONOTONIC_COARSE, refreshed every turn */
	uint64_t turns;
	uint64_t sqes, cqes; /* requests prepared (cancels too) and completions dispatched */
};

/* Ring and tables (main thread); loop_start() in the thread that runs it. 0 or -errno. */
int loop_setup(struct loop *l, unsigned entries);
/*
 * The same on the backend asked for: AUTO tries io_uring and falls back to
 * epoll when io_uring_setup fails (ENOSYS, EPERM: a seccomp profile or the
 * io_uring_disabled sysctl; ENOMEM: the locked-memory limit); IO_URING
 * fails instead. l->backend_why says why the backend in use was chosen.
 */
int loop_setup_backend(struct loop *l, unsigned entries, enum loop_backend want);
/* "io_uring" or "epoll". */
const char *loop_backend_name(const struct loop *l);
/* The descriptor the loop itself holds (the ring's, or the epoll instance's). */
int loop_fd(const struct loop *l);
int loop_start(struct loop *l);
void loop_destroy(struct loop *l);

void loop_register(struct loop *l, enum loop_kind kind, const struct loop_module *m, void *ctx);
static inline void *loop_ctx(const struct loop *l, enum loop_kind kind)
{
	return l->ctx[kind];
}

/* Give o a slot (o->kind = kind, not closed, nothing in flight). 0 or -ENOMEM. */
int loop_add(struct loop *l, struct loop_obj *o, enum loop_kind kind);
/*
 * Mark o closed: its completions are no longer delivered, and it is released
 * once nothing is in flight (at once when nothing is). The caller cancels
 * what it has in flight; o must not be used after this call.
 */
void loop_close(struct loop *l, struct loop_obj *o);

/* The live object of `kind` in slot with generation gen, or NULL (gone, closed, reused). */
static inline struct loop_obj *loop_obj_at(const struct loop *l, enum loop_kind kind, uint32_t slot,
                                           uint32_t gen)
{
	struct loop_obj *o = slot < l->cap && l->gens[slot] == gen ? l->slots[slot] : NULL;

	return o && o->kind == kind && !o->closed ? o : NULL;
}

/* The tag of operation op on o (to cancel it, or to recognise it). */
uint64_t loop_tag_of(const struct loop *l, const struct loop_obj *o, unsigned op);
/* An SQE for op on o, tagged and counted in flight. */
struct io_uring_sqe *loop_prep(struct loop *l, struct loop_obj *o, unsigned op);
/*
 * An SQE tagged but not counted: for a request with IOSQE_CQE_SKIP_SUCCESS
 * linked ahead of a counted one, where the kernel posts exactly one CQE for
 * the pair (a failed skip-success request skips its links' CQEs).
 */
struct io_uring_sqe *loop_prep_linked(struct loop *l, struct loop_obj *o, unsigned op);
/*
 * The next n SQEs prepared go into one submission: a link chain cut by
 * loop_sqe()'s flush when the SQ fills would not hold (links are not valid
 * across submissions). n <= the ring's SQ size.
 */
void loop_reserve(struct loop *l, unsigned n);
/* Cancel the operation with this tag (fire and forget: its own CQE completes it). */
void loop_cancel(struct loop *l, uint64_t tag);
/*
 * Submit what is prepared now, not at the next turn: the kernel (or the
 * epoll backend) copies what the SQEs point at, so their memory may go.
 */
void loop_submit(struct loop *l);

/* Submit, wait up to wait_ms for a completion, dispatch all that are ready. */
int loop_turn(struct loop *l, uint64_t wait_ms);

/* Timer queues (registered with the loop, run after each turn). */
void loop_tq_init(struct loop *l, struct loop_tq *q, uint64_t dur_ms,
                  void (*fire)(struct loop *l, struct loop_timer *t));
/*
 * A new duration (a reload): every armed deadline moves by the difference,
 * which keeps the queue in order; 0 disarms them all.
 */
void loop_tq_set(struct loop_tq *q, uint64_t dur_ms);
static inline void loop_timer_init(struct loop_timer *t)
{
	list_init(&t->node);
}
/* (Re)arm t on q: due dur_ms from now, at the tail. */
void loop_timer_arm(struct loop *l, struct loop_tq *q, struct loop_timer *t);
/*
 * Re-arm only when that moves the deadline by a second (or an eighth of a
 * shorter duration) or more: activity on a busy connection costs a list move
 * at most once a second, and the deadline is never early by more than that.
 */
void loop_timer_touch(struct loop *l, struct loop_tq *q, struct loop_timer *t);
static inline void loop_timer_stop(struct loop_timer *t)
{
	list_del(&t->node);
}
/* Fire every expired timer; returns ms until the next deadline (UINT64_MAX: none). */
uint64_t loop_timers_run(struct loop *l);

#endif
