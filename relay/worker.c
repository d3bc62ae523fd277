/* SPDX-License-Identifier: MIT */
/* A worker: one thread, one ring, its listeners, connections and pipe pool; no shared state. */
#include <errno.h>
#include <linux/filter.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "sockaddr.h"
#include "resolve.h"
#include "worker.h"

enum worker_limits {
	RING_ENTRIES = 1024, /* SQ; the CQ is 4x. loop_sqe() flushes when the SQ is full */
	LISTEN_BACKLOG = 4096,
	ACCEPT_RETRY_MS = 100, /* pause accepting this long after EMFILE/ENFILE */
	MAX_WAIT_MS = 1000,    /* wake at least this often to run deadlines */
	/*
	 * A pool nobody took a pipe from for this long is emptied: a quiet
	 * relay gives back its descriptors and pipe slot arrays, a busy one
	 * keeps reusing them.
	 */
	PIPE_IDLE_MS = 5000,
	/*
	 * Stopping, with no connection left: every op still counted has been
	 * cancelled and completes at once, so this long without a completion
	 * means a miscount (ACCEPT_RETRY_MS is the longest legitimate wait).
	 */
	STUCK_OPS_MS = 1000,
};

static uint64_t monotonic_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

struct io_uring_sqe *worker_sqe(struct worker *w)
{
	return loop_sqe(&w->ring);
}

uint64_t worker_tag(struct worker *w, struct conn *c, int op)
{
	return loop_tag((enum loop_op)op, c->slot, w->gens[c->slot]);
}

struct conn *worker_conn_alloc(struct worker *w)
{
	struct conn *c;
	uint32_t slot;

	if (!w->n_free) {
		uint32_t cap = w->cap_slots ? w->cap_slots * 2 : 1024;
		if (cap > LOOP_SLOT_MAX)
			return NULL;
		struct conn **slots = realloc(w->slots, cap * sizeof(*slots));
		if (!slots)
			return NULL;
		w->slots = slots;
		uint32_t *gens = realloc(w->gens, cap * sizeof(*gens));
		if (!gens)
			return NULL;
		w->gens = gens;
		uint32_t *fr = realloc(w->free_slots, cap * sizeof(*fr));
		if (!fr)
			return NULL;
		w->free_slots = fr;
		for (uint32_t i = cap; i > w->cap_slots; i--) {
			w->slots[i - 1] = NULL;
			w->gens[i - 1] = 1;
			w->free_slots[w->n_free++] = i - 1;
		}
		w->cap_slots = cap;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	slot = w->free_slots[--w->n_free];
	c->slot = slot;
	c->fd[0] = c->fd[1] = -1;
	c->outbound = -1;
	list_init(&c->link);
	splice_dir_init(&c->dir[0]);
	splice_dir_init(&c->dir[1]);
	w->slots[slot] = c;
	w->n_conns++;
	return c;
}

void worker_conn_free(struct worker *w, struct conn *c)
{
	uint32_t slot = c->slot;

	/* A new generation: completions still in flight for this slot are stale. */
	w->gens[slot]++;
	if (w->gens[slot] == 0)
		w->gens[slot] = 1;
	w->slots[slot] = NULL;
	w->free_slots[w->n_free++] = slot;
	w->n_conns--;
	atomic_fetch_sub_explicit(&w->srv->n_conns, 1, memory_order_relaxed);
	free(c);
}

int worker_init(struct worker *w, int id, struct server *srv)
{
	const struct config *cfg = srv->cfg;
	unsigned max_pipes;
	int ret;

	memset(w, 0, sizeof(*w));
	w->id = id;
	w->srv = srv;
	w->cfg = cfg;
	w->event_fd = -1;
	w->ring.ring_fd = -1;
	for (int i = 0; i < CONFIG_MAX_INBOUNDS; i++)
		w->listen_fd[i] = -1;
	list_init(&w->hs_queue);
	list_init(&w->idle_queue);
	pthread_mutex_init(&w->inbox_lock, NULL);
	/* Idle pipes kept per worker; pipes in use are bounded by active directions. */
	max_pipes = cfg->max_pipes ? cfg->max_pipes : 64;
	ret = pipe_pool_init(&w->pipes, max_pipes, cfg->pipe_size);
	if (ret < 0)
		return ret;
	w->event_fd = eventfd(0, EFD_CLOEXEC);
	if (w->event_fd < 0)
		return -errno;
	ret = loop_init(&w->ring, RING_ENTRIES, &w->feat);
	if (ret < 0) {
		w->ring.ring_fd = -1;
		return ret;
	}
	w->now_ms = monotonic_ms();
	return 0;
}

/*
 * accept-steering = cpu: a classic BPF program on the SO_REUSEPORT group
 * hands each new connection to listener (CPU that processed its SYN) mod
 * workers; the group keeps its sockets in listen() order, which is worker
 * order. The connection's packets keep arriving on that CPU when the NIC
 * (RSS) or RPS spreads flows by hash, and always on loopback, so the worker
 * that owns it tends to run where its wake-ups come from: fewer cross-CPU
 * wake-ups (IPIs, costly under a hypervisor) per connection. bench/socks
 * measured about 20% more short connections per second on loopback. With a
 * single-queue NIC and no RPS every SYN lands on one CPU and one worker
 * would take every connection, which is why the default stays the kernel's
 * 4-tuple hash. Each listener of the group attaches the same program; the
 * last attach wins, which is harmless. Failure leaves the hash in place.
 */
static void steer_by_cpu(int fd, unsigned n_workers, const char *inbound)
{
	struct sock_filter code[] = {
	        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, (uint32_t)(SKF_AD_OFF + SKF_AD_CPU)),
	        BPF_STMT(BPF_ALU | BPF_MOD | BPF_K, n_workers),
	        BPF_STMT(BPF_RET | BPF_A, 0),
	};
	struct sock_fprog prog = {.len = sizeof(code) / sizeof(code[0]), .filter = code};

	if (setsockopt(fd, SOL_SOCKET, SO_ATTACH_REUSEPORT_CBPF, &prog, sizeof(prog)) < 0)
		log_warn("inbound %s: accept-steering = cpu unavailable (%s): using the hash",
		         inbound, strerror(errno));
}

int worker_listen(struct worker *w, unsigned i)
{
	const struct inbound *in = &w->cfg->inbounds[i];
	int one = 1, fd, ret;
	char addr[SA_STR_MAX];

	fd = socket(in->listen.ss_family, SOCK_STREAM | SOCK_CLOEXEC, IPPROTO_TCP);
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	/* One socket per worker: the kernel spreads connections, no shared accept lock. */
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) < 0)
		goto fail;
	/*
	 * TCP_NODELAY on the listener: accepted sockets inherit it (the child
	 * is a copy of the listening tcp_sock), which saves a setsockopt per
	 * connection. Why the relay wants it: see outbound_socket().
	 */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	/* "[::]" must not swallow IPv4: a separate 0.0.0.0 inbound can coexist. */
	if (in->listen.ss_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(fd, (const struct sockaddr *)&in->listen, in->listen_len) < 0)
		goto fail;
	if (listen(fd, LISTEN_BACKLOG) < 0)
		goto fail;
	if (w->cfg->accept_steering == STEER_CPU && w->srv->n_workers > 1)
		steer_by_cpu(fd, (unsigned)w->srv->n_workers, in->name);
	w->listen_fd[i] = fd;
	return 0;
fail:
	ret = -errno;
	log_error("inbound %s: cannot listen on %s: %s", in->name, sa_str(&in->listen, addr),
	          strerror(-ret));
	close(fd);
	return ret;
}

static void arm_accept(struct worker *w, unsigned i)
{
	struct io_uring_sqe *sqe = worker_sqe(w);

	io_uring_prep_multishot_accept(sqe, w->listen_fd[i], NULL, NULL,
	                               SOCK_NONBLOCK | SOCK_CLOEXEC);
	io_uring_sqe_set_data64(sqe, loop_tag(OP_ACCEPT, i, 0));
	w->n_inflight++;
}

static void arm_event(struct worker *w)
{
	struct io_uring_sqe *sqe = worker_sqe(w);

	io_uring_prep_read(sqe, w->event_fd, &w->event_buf, sizeof(w->event_buf), 0);
	io_uring_sqe_set_data64(sqe, loop_tag(OP_EVENT, 0, 0));
}

static void on_accept(struct worker *w, unsigned i, int res, unsigned flags)
{
	if (res >= 0) {
		unsigned n = atomic_fetch_add_explicit(&w->srv->n_conns, 1, memory_order_relaxed);
		w->stats.accepted++;
		if (n >= w->cfg->max_connections || w->draining) {
			/* Over the limit: refuse this one, leave the others alone. */
			atomic_fetch_sub_explicit(&w->srv->n_conns, 1, memory_order_relaxed);
			w->stats.refused_limit++;
			log_debug_rl("max-connections (%u) reached: refusing",
			             w->cfg->max_connections);
			close(res);
		} else {
			conn_accept(w, i, res);
		}
	} else if (res != -ECANCELED) {
		w->stats.accept_errors++;
		if (res == -EMFILE || res == -ENFILE || res == -ENOBUFS || res == -ENOMEM)
			log_warn("inbound %s: accept: %s (pausing accepts for %d ms)",
			         w->cfg->inbounds[i].name, strerror(-res), ACCEPT_RETRY_MS);
		else
			log_debug_rl("accept: %s", strerror(-res));
	}
	if (flags & IORING_CQE_F_MORE)
		return;
	w->n_inflight--;
	if (w->listen_fd[i] < 0 || w->draining)
		return;
	if (res == -EMFILE || res == -ENFILE || res == -ENOBUFS || res == -ENOMEM) {
		/* Let connections close and free descriptors before trying again. */
		static struct __kernel_timespec retry = {.tv_nsec = ACCEPT_RETRY_MS * 1000000LL};
		struct io_uring_sqe *sqe = worker_sqe(w);
		io_uring_prep_timeout(sqe, &retry, 0, 0);
		io_uring_sqe_set_data64(sqe, loop_tag(OP_ACCEPT_RETRY, i, 0));
		w->n_inflight++;
		return;
	}
	arm_accept(w, i);
}

static void stop_listening(struct worker *w)
{
	for (size_t i = 0; i < w->cfg->n_inbounds; i++) {
		if (w->listen_fd[i] < 0)
			continue;
		struct io_uring_sqe *sqe = worker_sqe(w);
		io_uring_prep_cancel64(sqe, loop_tag(OP_ACCEPT, (uint32_t)i, 0), 0);
		io_uring_sqe_set_data64(sqe, loop_tag(OP_CANCEL, 0, 0));
		/* Queued, not yet accepted connections get a RST when the socket closes. */
		close(w->listen_fd[i]);
		w->listen_fd[i] = -1;
	}
}

void worker_inbox_push(struct worker *w, struct resolve_req *r)
{
	uint64_t one = 1;

	pthread_mutex_lock(&w->inbox_lock);
	r->next = w->inbox;
	w->inbox = r;
	pthread_mutex_unlock(&w->inbox_lock);
	if (write(w->event_fd, &one, sizeof(one)) < 0) {
		/* eventfd counter saturation is impossible at these rates */
	}
}

void worker_post(struct worker *w, unsigned msg)
{
	uint64_t one = 1;

	atomic_fetch_or(&w->msgs, msg);
	if (write(w->event_fd, &one, sizeof(one)) < 0) {
		/* see above */
	}
}

static void on_event(struct worker *w)
{
	unsigned msgs = atomic_exchange(&w->msgs, 0);
	struct resolve_req *r;

	if (msgs & WORKER_MSG_RELOAD)
		atomic_fetch_add(&w->srv->reload_acks, 1);
	if (msgs & WORKER_MSG_STOP && !w->draining) {
		w->draining = true;
		w->drain_deadline_ms = w->now_ms + w->cfg->drain_timeout_ms;
		stop_listening(w);
	}
	pthread_mutex_lock(&w->inbox_lock);
	r = w->inbox;
	w->inbox = NULL;
	pthread_mutex_unlock(&w->inbox_lock);
	while (r) {
		struct resolve_req *next = r->next;
		if (r->slot < w->cap_slots && w->gens[r->slot] == r->gen && w->slots[r->slot])
			conn_resolved(w, w->slots[r->slot], r->err, r->addrs, r->n);
		free(r);
		r = next;
	}
	arm_event(w);
}

static void dispatch(struct worker *w, struct io_uring_cqe *cqe)
{
	uint64_t tag = io_uring_cqe_get_data64(cqe);
	enum loop_op op = loop_tag_op(tag);
	uint32_t slot = loop_tag_slot(tag);

	switch (op) {
	case OP_ACCEPT:
		on_accept(w, slot, cqe->res, cqe->flags);
		return;
	case OP_ACCEPT_RETRY:
		w->n_inflight--;
		if (w->listen_fd[slot] >= 0 && !w->draining)
			arm_accept(w, slot);
		return;
	case OP_EVENT:
		on_event(w);
		return;
	case OP_CANCEL:
		if (cqe->res < 0 && cqe->res != -ENOENT && cqe->res != -EALREADY)
			log_debug("worker %d: cancel: %s", w->id, strerror(-cqe->res));
		return;
	case OP_NONE:
		return;
	case OP_LINK_TIMEOUT:
		w->n_inflight--;
		return;
	case OP_TX:
		/*
		 * A reply posts a CQE only when it fails, and then the kernel skips
		 * the CQE of the poll linked behind it (a failed CQE_SKIP_SUCCESS
		 * request sets REQ_F_SKIP_LINK_CQES): exactly one of the two
		 * completes the pair, which arm_poll() counted once.
		 */
	case OP_HS_POLL:
	case OP_CONNECT:
	case OP_DIR0_POLL:
	case OP_DIR1_POLL:
		w->n_inflight--;
		if (slot >= w->cap_slots || w->gens[slot] != loop_tag_gen(tag) || !w->slots[slot])
			return; /* stale: the connection is gone */
		conn_complete(w, w->slots[slot], op, cqe->res);
		return;
	}
}

static void run_deadlines(struct worker *w)
{
	uint32_t now_s = (uint32_t)(w->now_ms / 1000);
	unsigned idle_s = (w->cfg->idle_timeout_ms + 999) / 1000;

	while (!list_empty(&w->hs_queue)) {
		struct conn *c = list_entry(w->hs_queue.next, struct conn, link);
		if (c->deadline_ms > w->now_ms)
			break;
		list_del(&c->link);
		conn_timeout(w, c);
	}
	while (idle_s && !list_empty(&w->idle_queue)) {
		struct conn *c = list_entry(w->idle_queue.next, struct conn, link);
		if (c->active_s + idle_s > now_s)
			break;
		list_del(&c->link);
		conn_timeout(w, c);
	}
	if (w->pipes.n_free) {
		if (w->pipes.gets != w->trim_gets) {
			w->trim_gets = w->pipes.gets;
			w->trim_ms = w->now_ms;
		} else if (w->now_ms - w->trim_ms >= PIPE_IDLE_MS) {
			pipe_pool_trim(&w->pipes);
		}
	}
	if (w->draining && w->now_ms >= w->drain_deadline_ms) {
		for (uint32_t i = 0; i < w->cap_slots; i++) {
			if (w->slots[i])
				conn_close(w, w->slots[i], false);
		}
	}
}

/*
 * Each worker gets a private descriptor table (unshare(CLONE_FILES)): the
 * kernel checks RLIMIT_NOFILE against descriptor numbers per table, so N
 * workers can hold N times as many connections when the hard limit cannot be
 * raised (containers without CAP_SYS_RESOURCE), and no worker can ever touch
 * another's sockets. Everything the worker opens from here on lives only in
 * its table, so the worker closes it itself before it exits.
 */
static void private_fd_table(struct worker *w)
{
	if (unshare(CLONE_FILES) < 0) {
		log_warn("worker %d: unshare(CLONE_FILES): %s; sharing one descriptor table", w->id,
		         strerror(errno));
		return;
	}
	/* The copy holds the other workers' listeners: closing ours must stop theirs. */
	for (int i = 0; i < w->srv->n_workers; i++) {
		struct worker *o = &w->srv->workers[i];
		if (o == w)
			continue;
		for (size_t j = 0; j < w->cfg->n_inbounds; j++)
			if (o->listen_fd[j] >= 0)
				close(o->listen_fd[j]);
	}
}

/* Submit, wait up to wait_ms for a completion, dispatch every one that is ready. */
static int turn(struct worker *w, uint64_t wait_ms)
{
	struct __kernel_timespec ts = {.tv_sec = (long long)(wait_ms / 1000),
	                               .tv_nsec = (long long)(wait_ms % 1000) * 1000000};
	struct io_uring_cqe *cqe;
	unsigned head, count = 0;
	int ret = io_uring_submit_and_wait_timeout(&w->ring, &cqe, 1, &ts, NULL);

	w->now_ms = monotonic_ms();
	io_uring_for_each_cqe(&w->ring, head, cqe)
	{
		dispatch(w, cqe);
		count++;
	}
	io_uring_cq_advance(&w->ring, count);
	if (count)
		w->last_cqe_ms = w->now_ms;
	return ret;
}

static void worker_cleanup(struct worker *w)
{
	w->draining = true;
	stop_listening(w); /* no-op after a drain; cancels the accepts after an error */
	for (uint32_t i = 0; i < w->cap_slots; i++) {
		if (w->slots[i])
			conn_close(w, w->slots[i], true);
	}
	pipe_pool_destroy(&w->pipes);
	/* Let the cancellations complete here (see worker_main), for at most 1 s. */
	for (int i = 0; i < 100 && w->n_inflight; i++)
		turn(w, 10);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	int ret = loop_enable(&w->ring, &w->feat);

	private_fd_table(w);
	atomic_store(&w->started, 1);
	if (ret < 0) {
		log_error("worker %d: cannot enable its io_uring: %s", w->id, strerror(-ret));
		worker_cleanup(w);
		return NULL;
	}
	for (size_t i = 0; i < w->cfg->n_inbounds; i++)
		arm_accept(w, (unsigned)i);
	arm_event(w);
	/*
	 * Leave only once every op has completed, cancelled ones included:
	 * with DEFER_TASKRUN their completion runs in this thread, and until it
	 * does the request keeps its socket alive (a listener still queueing
	 * SYNs, a connection closed at the drain deadline still open).
	 */
	while (!(w->draining && w->n_conns == 0 && w->n_inflight == 0)) {
		uint64_t wait_ms = w->draining ? 100 : MAX_WAIT_MS;
		if (!list_empty(&w->hs_queue)) {
			/* Handshake deadlines are kept to the millisecond; idle ones to the second. */
			struct conn *c = list_entry(w->hs_queue.next, struct conn, link);
			uint64_t due = c->deadline_ms > w->now_ms ? c->deadline_ms - w->now_ms : 0;
			if (due < wait_ms)
				wait_ms = due + 1;
		}
		ret = turn(w, wait_ms);
		if (ret < 0 && ret != -ETIME && ret != -EINTR && ret != -EAGAIN && ret != -EBUSY) {
			log_error("worker %d: io_uring wait: %s", w->id, strerror(-ret));
			break;
		}
		run_deadlines(w);
		if (w->draining && w->n_conns == 0 && w->n_inflight &&
		    w->now_ms - w->last_cqe_ms >= STUCK_OPS_MS) {
			/* A miscount must not turn a stop into a hang; tests look for this line. */
			log_warn("worker %d: %u operations counted in flight but none completed "
			         "for %d ms: stopping anyway",
			         w->id, w->n_inflight, STUCK_OPS_MS);
			break;
		}
	}
	worker_cleanup(w);
	return NULL;
}

int worker_start(struct worker *w)
{
	char name[16]; /* the kernel's limit, NUL included */
	int ret = pthread_create(&w->thread, NULL, worker_main, w);

	if (ret == 0) {
		/* `top -H`, `ps -L` and perf then tell the workers apart. */
		snprintf(name, sizeof(name), "spliced-w%d", w->id);
		pthread_setname_np(w->thread, name);
	}
	return -ret;
}

/* Main thread, after the worker thread has ended (it closed its own descriptors). */
void worker_destroy(struct worker *w)
{
	if (w->ring.ring_fd >= 0)
		io_uring_queue_exit(&w->ring);
	if (w->event_fd >= 0)
		close(w->event_fd);
	while (w->inbox) {
		struct resolve_req *r = w->inbox;
		w->inbox = r->next;
		free(r);
	}
	free(w->pipes.free);
	pthread_mutex_destroy(&w->inbox_lock);
	for (uint32_t i = 0; i < w->cap_slots; i++)
		free(w->slots[i]);
	free(w->slots);
	free(w->gens);
	free(w->free_slots);
}

/*
 * Once the worker runs on its own descriptor table, the main thread's copies
 * of its listeners must go, or they would keep queueing connections that no
 * one accepts after the worker stops.
 */
void worker_release_listeners(struct worker *w)
{
	while (!atomic_load(&w->started))
		usleep(1000);
	for (size_t j = 0; j < w->cfg->n_inbounds; j++)
		if (w->listen_fd[j] >= 0)
			close(w->listen_fd[j]);
}
