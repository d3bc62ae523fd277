/* SPDX-License-Identifier: MIT */
/* A worker: one thread running one loop, its inbox, the drain, and its own descriptor table. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include "access_log.h"
#include "conn.h"
#include "listener.h"
#include "log.h"
#include "metrics.h"
#include "resolve.h"
#include "thread.h"
#include "tun_internal.h"
#include "tun_queue.h"
#include "udp.h"
#include "udp_tproxy.h"
#include "worker.h"

enum worker_limits {
	/*
	 * SQ; the CQ is 4x. A full SQ is submitted to make room (loop_prep()),
	 * so this bounds no burst, and the ring's pages are resident for good:
	 * 256 + 1024 entries map 36 KiB where 1024 + 4096 mapped 136 KiB of
	 * an idle worker's memory (issue 16). The kernel keeps CQEs past a full
	 * CQ (IORING_FEAT_NODROP) until the turn reaps them.
	 */
	RING_ENTRIES = 256,
	MAX_WAIT_MS = 1000, /* wake at least this often to run deadlines */
	/*
	 * A pool nobody took a pipe or buffer from for this long is emptied: a
	 * quiet relay gives back its descriptors and memory, a busy one keeps
	 * reusing them.
	 */
	PIPE_IDLE_MS = 5000,
	/*
	 * Stopping, with every object closed: each operation still in flight
	 * has been cancelled and completes at once. An object still alive this
	 * long after is a bug; the worker says so (tests look for the line)
	 * rather than hang the stop.
	 */
	STUCK_MS = 2000,
};

enum { OP_EVENT = 1 };

static void arm_event(struct worker *w)
{
	struct io_uring_sqe *sqe = loop_prep(&w->loop, &w->inbox_obj, OP_EVENT);

	io_uring_prep_read(sqe, w->event_fd, &w->event_buf, sizeof(w->event_buf), 0);
}

void worker_post(struct worker *w, unsigned msg)
{
	uint64_t one = 1;

	atomic_fetch_or(&w->msgs, msg);
	if (write(w->event_fd, &one, sizeof(one)) < 0) {
		/* see above */
	}
}

/*
 * Stop accepting. Relays may finish within drain-timeout; a UDP association
 * has nothing to finish (a datagram in flight is as good as lost), so it and
 * its connection end now.
 */
static void start_drain(struct worker *w)
{
	struct loop *l = &w->loop;

	if (w->draining)
		return;
	w->draining = true;
	w->drain_deadline_ms = w->loop.now_ms + w->cfg->drain_timeout_ms;
	for (size_t i = 0; i < w->cfg->n_inbounds; i++) {
		if (w->listeners[i])
			listener_stop(w->listeners[i]);
		if (w->udp_tps[i])
			udp_tp_stop(w->udp_tps[i]);
	}
	if (w->metrics)
		metrics_stop(w->metrics);
	metrics_close_clients(w);
	for (uint32_t i = 0; i < l->cap; i++) {
		struct loop_obj *o = l->slots[i];
		if (o && o->kind == LOOP_KIND_UDP && !o->closed)
			udp_sess_close((struct udp_sess *)o); /* and a SOCKS5 client's connection */
	}
}

static void inbox_complete(struct loop *l, struct loop_obj *o, unsigned op,
                           const struct io_uring_cqe *cqe)
{
	struct worker *w = (struct worker *)((char *)o - offsetof(struct worker, inbox_obj));
	unsigned msgs = atomic_exchange(&w->msgs, 0);

	(void)l, (void)op, (void)cqe;
	/* Seq 0 is never sent: every message waiting goes. */
	if (msgs & WORKER_MSG_DROP_FDS)
		worker_take_fds(w, 0, NULL, 0);
	if (msgs & WORKER_MSG_RELOAD)
		worker_apply_plan(w);
	if (msgs & WORKER_MSG_STOP)
		start_drain(w);
	if (msgs & WORKER_MSG_REOPEN_LOG)
		alog_reopen(w);
	arm_event(w);
}

static void inbox_release(struct loop *l, struct loop_obj *o)
{
	(void)l, (void)o; /* embedded in the worker, which main frees */
}

static const struct loop_module inbox_module = {
        .name = "inbox",
        .complete = inbox_complete,
        .release = inbox_release,
};

/*
 * pipe-memory, this worker's share: that many bytes of pipes at once, and as
 * much again in buffers (review M3). Past the pipes a direction copies
 * through a buffer; past both its relay ends (no_pipe). A pipe counts at its
 * full size: it is held only while bytes sit in it, and may fill up.
 */
void worker_set_memory_budget(struct worker *w)
{
	uint64_t total = w->cfg->pipe_memory, share;
	struct sysinfo si;

	if (!total && sysinfo(&si) == 0)
		total = (uint64_t)si.totalram * si.mem_unit / 4;
	share = total / (uint64_t)w->srv->n_workers;
	w->pipes.max_in_use = share / (w->pipes.pipe_size ? w->pipes.pipe_size : 65536);
	w->bufs.max_in_use = share / PUMP_BUF_SIZE;
	/* The transform pump's buffers (crypto legs) have the same share again. */
	w->xbufs.max_in_use = share / sizeof(struct xbuf);
	if (w->xbufs.max_in_use < 4)
		w->xbufs.max_in_use = 4;
	if (w->pipes.max_in_use < 2)
		w->pipes.max_in_use = 2;
	if (w->bufs.max_in_use < 2)
		w->bufs.max_in_use = 2;
}

/* Per worker: what it holds now, and how busy its ring is. */
static const struct stats_desc one_worker_desc[] = {
        {"connections_active", "connections open on the worker (UDP associations' too)",
         STATS_GAUGE, NULL},
        {"udp_associations_active", "UDP associations open on the worker", STATS_GAUGE, NULL},
        {"connections_accepted", "connections its listeners accepted (how steering spreads them)",
         STATS_COUNTER, NULL},
        {"pipes_in_use", "pipes holding a relay's bytes now", STATS_GAUGE, NULL},
        {"pipes_idle", "empty pipes kept for reuse", STATS_GAUGE, NULL},
        {"buffers_in_use", "32 KiB buffers holding a relay's bytes now", STATS_GAUGE, NULL},
        {"ring_sqes", "io_uring requests prepared (cancels included)", STATS_COUNTER, NULL},
        {"ring_cqes", "io_uring completions handled", STATS_COUNTER, NULL},
        {"loop_turns", "times the loop waited for completions", STATS_COUNTER, NULL},
};

static void read_one_worker(const struct stats_group *g, uint64_t *out)
{
	const struct worker *w = g->ctx;
	const uint64_t v[] = {w->n_conns,      w->n_udp,        w->stats.accepted,
	                      w->pipes.in_use, w->pipes.n_free, w->bufs.in_use,
	                      w->loop.sqes,    w->loop.cqes,    w->loop.turns};

	_Static_assert(sizeof(v) / sizeof(v[0]) ==
	                       sizeof(one_worker_desc) / sizeof(one_worker_desc[0]),
	               "one value per counter");
	memcpy(out, v, sizeof(v));
}

void worker_snap_drop(struct worker *w, struct snapshot *s)
{
	if (--s->holds[w->id].n == 0 && s != w->snap)
		snapshot_unref(s);
}

int worker_init(struct worker *w, int id, struct server *srv)
{
	const struct config *cfg = srv->snap->cfg;
	unsigned max_idle;
	int ret;

	memset(w, 0, sizeof(*w));
	w->id = id;
	w->srv = srv;
	w->snap = srv->snap;
	snapshot_ref(w->snap);
	w->cfg = cfg;
	w->event_fd = -1;
	w->plan_rx = w->plan_tx = -1;
	w->alog.fd = -1;
	if (srv->alog_fd >= 0) {
		/* Its own descriptor: a reopen swaps it without touching another worker's. */
		w->alog.fd = fcntl(srv->alog_fd, F_DUPFD_CLOEXEC, 3);
		if (w->alog.fd < 0)
			return -errno;
		w->alog.path = strcmp(cfg->access_log, "stderr") ? cfg->access_log : NULL;
	}
	_Static_assert((int)CONFIG_BACKEND_EPOLL == (int)LOOP_BACKEND_EPOLL &&
	                       (int)CONFIG_BACKEND_IO_URING == (int)LOOP_BACKEND_IO_URING,
	               "one numbering");
	ret = loop_setup_backend(&w->loop, RING_ENTRIES, (enum loop_backend)cfg->backend);
	if (ret < 0)
		return ret;
	loop_register(&w->loop, LOOP_KIND_WORKER, &inbox_module, w);
	loop_register(&w->loop, LOOP_KIND_LISTENER, &listener_module, w);
	loop_register(&w->loop, LOOP_KIND_CONN, &conn_module, w);
	loop_register(&w->loop, LOOP_KIND_RESOLVER, &resolver_module, w);
	loop_register(&w->loop, LOOP_KIND_UDP, &udp_sess_module, w);
	loop_register(&w->loop, LOOP_KIND_UDP_UP, &udp_up_module, w);
	loop_register(&w->loop, LOOP_KIND_UDP_TP, &udp_tp_module, w);
	loop_register(&w->loop, LOOP_KIND_TUN, &tun_queue_module, w);
	loop_register(&w->loop, LOOP_KIND_TUN_DNS, &tun_dns_module, w);
	loop_register(&w->loop, LOOP_KIND_METRICS, &metrics_module, w);
	loop_tq_init(&w->loop, &w->hs_tq, cfg->handshake_timeout_ms, conn_hs_timeout);
	loop_tq_init(&w->loop, &w->resolve_tq, cfg->resolve_timeout_ms, conn_resolve_timeout);
	loop_tq_init(&w->loop, &w->stagger_tq, CONN_STAGGER_MS, conn_stagger_timeout);
	loop_tq_init(&w->loop, &w->idle_tq, cfg->idle_timeout_ms, conn_idle_timeout);
	loop_tq_init(&w->loop, &w->linger_tq, CONN_LINGER_MS, conn_linger_timeout);
	loop_tq_init(&w->loop, &w->flush_tq, CONN_FLUSH_MS, conn_linger_timeout);
	loop_tq_init(&w->loop, &w->udp_tq, cfg->udp_timeout_ms, udp_sess_timeout);
	/* A DNS-only association ends sooner, never later than any other. */
	loop_tq_init(&w->loop, &w->udp_dns_tq,
	             cfg->udp_dns_timeout_ms < cfg->udp_timeout_ms ? cfg->udp_dns_timeout_ms
	                                                           : cfg->udp_timeout_ms,
	             udp_sess_timeout);
	loop_tq_init(&w->loop, &w->udp_up_tq, cfg->connect_timeout_ms + cfg->handshake_timeout_ms,
	             udp_up_timeout);
	loop_tq_init(&w->loop, &w->metrics_tq, METRICS_DEADLINE_MS, metrics_timeout);
	loop_tq_init(&w->loop, &w->ff_tq, CONN_FIRST_FLIGHT_MS, conn_first_flight_timeout);
	list_init(&w->udp_doomed);
	w->udp_tx.fd = -1;
	snprintf(w->group_labels, sizeof(w->group_labels), "worker=\"%d\"", id);
	w->group = (struct stats_group){
	        .name = "worker",
	        .family = "worker",
	        .labels = w->group_labels,
	        .desc = one_worker_desc,
	        .n = sizeof(one_worker_desc) / sizeof(one_worker_desc[0]),
	        .read = read_one_worker,
	        .ctx = w,
	};
	stats_register(&w->group);
	/* Idle pipes and buffers kept per worker; those in use are bounded by active directions. */
	max_idle = cfg->max_pipes ? cfg->max_pipes : 64;
	if ((ret = pipe_pool_init(&w->pipes, max_idle, cfg->pipe_size)) < 0)
		return ret;
	if ((ret = buf_pool_init(&w->bufs, max_idle)) < 0)
		return ret;
	/* 66 KiB each: fewer kept idle */
	if ((ret = buf_pool_init_size(&w->xbufs, max_idle < 16 ? max_idle : 16,
	                              sizeof(struct xbuf))) < 0)
		return ret;
	worker_set_memory_budget(w);
	w->event_fd = eventfd(0, EFD_CLOEXEC);
	if (w->event_fd < 0)
		return -errno;
	{
		int sp[2];

		if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0)
			return -errno;
		w->plan_rx = sp[0];
		w->plan_tx = sp[1];
	}
	/* Each worker gets its share of max-resolving. */
	ret = resolver_init(&w->res, w, cfg->resolve_timeout_ms,
	                    (cfg->max_resolving + (unsigned)srv->n_workers - 1) /
	                            (unsigned)srv->n_workers);
	if (ret < 0)
		return ret;
	resolver_on_answer(&w->res, LOOP_KIND_CONN, conn_resolved);
	resolver_on_answer(&w->res, LOOP_KIND_UDP, udp_resolved);
	resolver_on_answer(&w->res, LOOP_KIND_UDP_UP, udp_up_resolved);
	return loop_add(&w->loop, &w->inbox_obj, LOOP_KIND_WORKER);
}

int worker_listen(struct worker *w, unsigned i)
{
	const struct inbound *in = &w->cfg->inbounds[i];
	int ret = listener_open(w, i, &w->listeners[i]);

	if (ret == 0 && in->type == INBOUND_TPROXY && in->udp)
		ret = udp_tp_open(w, i, &w->udp_tps[i]);
	if (ret == 0 && in->type == INBOUND_TUN)
		ret = tun_queue_open(w, i, &w->tun_queues[i]);
	return ret;
}

/* Closes every descriptor from `from` on, except the sorted `keep` ones. */
static void close_all_but(unsigned from, const int *keep, size_t n)
{
	for (size_t i = 0; i <= n; i++) {
		unsigned end = i < n ? (unsigned)keep[i] : ~0u; /* exclusive, but for the last */

		if (i < n && end < from)
			continue;
		/* close_range(2) is 5.9+; io_uring's multishot accept needs 5.19 anyway. */
		if (end > from && close_range(from, i < n ? end - 1 : end, 0) < 0)
			log_warn("worker: close_range: %s", strerror(errno));
		if (i < n)
			from = end + 1;
	}
}

static int cmp_int(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

/*
 * Each worker gets a private descriptor table (unshare(CLONE_FILES)): the
 * kernel checks RLIMIT_NOFILE against descriptor numbers per table, so N
 * workers can hold N times as many connections when the hard limit cannot be
 * raised (containers without CAP_SYS_RESOURCE), and no worker can ever touch
 * another's sockets. The copy holds everything main had opened — other
 * workers' rings and listeners, WireGuard's sockets and TUN queues — which
 * would then live as long as this worker (an old listen port never released
 * after `wg set listen-port`), so it keeps only its own: its ring, its
 * eventfd, its listeners and stdio. A descriptor a worker needs must be
 * opened by the worker. When unshare is denied (a seccomp profile), the
 * table stays shared and nothing is closed here or by main.
 */
static void private_fd_table(struct worker *w)
{
	int keep[3 * CONFIG_MAX_INBOUNDS + 7];
	size_t n = 0;

	if (unshare(CLONE_FILES) < 0) {
		log_warn("worker %d: unshare(CLONE_FILES): %s; sharing one descriptor table", w->id,
		         strerror(errno));
		return;
	}
	w->private_table = true;
	keep[n++] = loop_fd(&w->loop);
	keep[n++] = w->event_fd;
	keep[n++] = w->plan_rx;
	if (!w->loop.ep && w->loop.ring.enter_ring_fd != w->loop.ring.ring_fd &&
	    w->loop.ring.enter_ring_fd >= 0)
		keep[n++] = w->loop.ring.enter_ring_fd;
	for (size_t i = 0; i < w->cfg->n_inbounds; i++) {
		if (w->listeners[i])
			keep[n++] = w->listeners[i]->fd;
		if (w->udp_tps[i])
			keep[n++] = udp_tp_fd(w->udp_tps[i]);
		if (w->tun_queues[i])
			keep[n++] = tun_queue_fd(w->tun_queues[i]);
	}
	if (w->alog.fd >= 0)
		keep[n++] = w->alog.fd;
	if (w->metrics)
		keep[n++] = metrics_fd(w->metrics);
	qsort(keep, n, sizeof(keep[0]), cmp_int);
	close_all_but(STDERR_FILENO + 1, keep, n);
}

static void close_all_conns(struct worker *w, bool rst)
{
	struct loop *l = &w->loop;

	for (uint32_t i = 0; i < l->cap; i++) {
		struct loop_obj *o = l->slots[i];
		if (o && o->kind == LOOP_KIND_CONN && !o->closed)
			conn_close((struct conn *)o, rst);
	}
}

/* Every pipe and buffer goes back to the kernel once the pools have been unused a while. */
static void trim_pools(struct worker *w)
{
	unsigned long gets = w->pipes.gets + w->bufs.gets + w->xbufs.gets;

	if (!w->pipes.n_free && !w->bufs.n_free && !w->xbufs.n_free)
		return;
	if (gets != w->trim_gets) {
		w->trim_gets = gets;
		w->trim_ms = w->loop.now_ms;
	} else if (w->loop.now_ms - w->trim_ms >= PIPE_IDLE_MS) {
		pipe_pool_trim(&w->pipes);
		buf_pool_trim(&w->bufs);
		buf_pool_trim(&w->xbufs);
	}
}

/*
 * The loop runs until the worker has drained: no connection left, every
 * listener released; then the inbox is cancelled and the worker leaves once
 * the loop holds no object at all, so nothing it submitted is still running
 * (with DEFER_TASKRUN a cancelled request completes only in this thread).
 */
static void run(struct worker *w)
{
	struct loop *l = &w->loop;
	uint64_t stuck_since = 0;
	bool inbox_closed = false;
	int ret;

	while (l->n_objs) {
		uint64_t next = loop_timers_run(l), wait_ms = w->draining ? 100 : MAX_WAIT_MS;
		uint64_t dns = resolver_next_ms(&w->res);

		if (dns == 0) {
			resolver_tick(&w->res); /* c-ares' retries and give-ups */
			dns = resolver_next_ms(&w->res);
		}
		if (dns < next)
			next = dns;
		if (w->alog.len) /* access-log lines wait: at most a second */
			next = alog_due_ms(w) < next ? alog_due_ms(w) : next;
		if (next < wait_ms)
			wait_ms = next + 1;
		ret = loop_turn(l, wait_ms);
		udp_sess_reap(w);
		for (size_t i = 0; i < w->cfg->n_inbounds; i++)
			if (w->tun_queues[i])
				tun_queue_tick(w->tun_queues[i]);
		alog_tick(w, 0);
		if (ret < 0 && ret != -ETIME && ret != -EINTR && ret != -EAGAIN && ret != -EBUSY) {
			log_error("worker %d: io_uring wait: %s", w->id, strerror(-ret));
			start_drain(w);
			close_all_conns(w, true);
		}
		trim_pools(w);
		if (!w->draining)
			continue;
		if (l->now_ms >= w->drain_deadline_ms)
			close_all_conns(w, false);
		if (w->n_conns || inbox_closed)
			goto stuck;
		/*
		 * A TUN queue carries the packets of the connections being drained
		 * (any worker's: flows hash over the queues), so it stops last.
		 */
		for (size_t i = 0; i < w->cfg->n_inbounds; i++)
			if (w->tun_queues[i])
				tun_queue_stop(w->tun_queues[i]);
		for (size_t i = 0; i < w->cfg->n_inbounds; i++)
			if (w->listeners[i] || w->udp_tps[i] || w->tun_queues[i])
				goto stuck;
		if (w->metrics)
			goto stuck;
		/* Last, the objects that live as long as the worker: the resolver's sockets, the inbox. */
		resolver_destroy(&w->res);
		loop_cancel(l, loop_tag_of(l, &w->inbox_obj, OP_EVENT));
		loop_close(l, &w->inbox_obj);
		inbox_closed = true;
	stuck:
		if (!inbox_closed || !l->n_objs)
			continue;
		if (!stuck_since)
			stuck_since = l->now_ms;
		if (l->now_ms - stuck_since >= STUCK_MS) {
			log_warn("worker %d: %u objects still have operations counted in flight "
			         "%d ms after all were cancelled: stopping anyway",
			         w->id, l->n_objs, STUCK_MS);
			return;
		}
	}
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	int ret = loop_start(&w->loop);

	private_fd_table(w);
	atomic_store(&w->started, 1);
	if (ret < 0) {
		log_error("worker %d: cannot enable its io_uring: %s", w->id, strerror(-ret));
		return NULL;
	}
	for (size_t i = 0; i < w->cfg->n_inbounds; i++) {
		if (w->listeners[i])
			listener_arm(w->listeners[i]);
		if (w->udp_tps[i])
			udp_tp_arm(w->udp_tps[i]);
		if (w->tun_queues[i])
			tun_queue_arm(w->tun_queues[i]);
	}
	if (w->metrics)
		metrics_arm(w->metrics);
	arm_event(w);
	run(w);
	alog_tick(w, 1);           /* the last lines */
	resolver_destroy(&w->res); /* after an error; a drain has done it already */
	pipe_pool_destroy(&w->pipes);
	buf_pool_destroy(&w->bufs);
	buf_pool_destroy(&w->xbufs);
	return NULL;
}

int worker_start(struct worker *w)
{
	return thread_start(&w->thread, worker_main, w, "spliced-w%d", w->id);
}

/* Main thread, after the worker thread has ended (or never started). */
void worker_destroy(struct worker *w)
{
	struct loop *l = &w->loop;

	/*
	 * A worker that never ran leaves its listeners, opened in this table:
	 * close them. One that ran took its descriptors along (a private table
	 * is closed with its thread) and left no object behind, unless a stuck
	 * stop said otherwise, and then the process is exiting anyway.
	 */
	for (uint32_t i = 0; !atomic_load(&w->started) && i < l->cap; i++) {
		struct loop_obj *o = l->slots[i];
		if (o && o->kind == LOOP_KIND_LISTENER)
			listener_stop((struct listener *)o);
		if (o && o->kind == LOOP_KIND_TUN)
			tun_queue_stop((struct tun_queue *)o);
	}
	if (!atomic_load(&w->started) && w->metrics)
		metrics_stop(w->metrics);
	if (w->group.desc)
		stats_unregister(&w->group);
	loop_destroy(l);
	snapshot_unref(w->snap);
	w->snap = NULL;
	{
		struct worker_plan *p = atomic_exchange(&w->plan, NULL);
		if (p) { /* posted as the worker stopped */
			snapshot_unref(p->snap);
			free(p);
		}
	}
	if (w->event_fd >= 0)
		close(w->event_fd);
	if (w->plan_tx >= 0)
		close(w->plan_tx);
	/* The worker's end: a private table took it along, like the access log below. */
	if (w->plan_rx >= 0 && (!atomic_load(&w->started) || !w->private_table))
		close(w->plan_rx);
	resolver_destroy(&w->res); /* a worker that never ran: nothing pending */
	if (w->pipes.free)
		pipe_pool_destroy(&w->pipes);
	if (w->bufs.free)
		buf_pool_destroy(&w->bufs);
	if (w->xbufs.free)
		buf_pool_destroy(&w->xbufs);
	free(w->udp_buf);
	w->udp_buf = NULL;
	free(w->udp_tcp_buf);
	w->udp_tcp_buf = NULL;
	/*
	 * A private table took the worker's access-log descriptor along (main's
	 * copy went in worker_release_listeners()); otherwise it is in this table.
	 */
	if (w->alog.fd >= 0 && (!atomic_load(&w->started) || !w->private_table))
		close(w->alog.fd);
	w->alog.fd = -1;
	free(w->alog.buf);
	w->alog.buf = NULL;
}

/*
 * Once the worker runs on its own descriptor table, the main thread's copies
 * of its listeners must go, or they would keep queueing connections that no
 * one accepts after the worker stops. With a shared table they are the
 * worker's own: leave them.
 */
void worker_release_listeners(struct worker *w)
{
	while (!atomic_load(&w->started))
		usleep(1000);
	if (!w->private_table)
		return;
	for (size_t j = 0; j < w->cfg->n_inbounds; j++) {
		if (w->listeners[j])
			close(w->listeners[j]->fd);
		if (w->udp_tps[j])
			close(udp_tp_fd(w->udp_tps[j]));
		if (w->tun_queues[j])
			close(tun_queue_fd(w->tun_queues[j]));
	}
	/* Main's copy of the worker's access-log descriptor (no reopen can have run yet). */
	if (w->alog.fd >= 0)
		close(w->alog.fd);
	if (w->metrics)
		close(metrics_fd(w->metrics));
	close(w->plan_rx);
}

/* The counters in struct worker_stats, then the egress refusals by reason (EGRESS_OK skipped). */
static const struct stats_desc worker_stats_desc[] = {
        WORKER_STATS(STATS_DESC_){"egress_rule",
                                  "addresses refused: a rule sends them to a block outbound",
                                  STATS_COUNTER, NULL},
        {"egress_self", "addresses refused: one of spliced's own listeners", STATS_COUNTER, NULL},
        {"egress_private", "addresses refused: deny-private range", STATS_COUNTER, NULL},
        {"egress_owned", "addresses refused: deny-private, an address of this host", STATS_COUNTER,
         NULL},
        {"egress_unknown", "addresses refused: could not tell whether this host owns them",
         STATS_COUNTER, NULL},
};
enum { N_FIELDS = sizeof(struct worker_stats) / sizeof(uint64_t) - EGRESS_N };
_Static_assert(sizeof(worker_stats_desc) / sizeof(worker_stats_desc[0]) == N_FIELDS + EGRESS_N - 1,
               "one description per counter");

static void read_stats(const struct stats_group *g, uint64_t *out)
{
	const struct server *srv = g->ctx;

	for (int i = 0; i < srv->n_workers; i++) {
		const struct worker *w = &srv->workers[i];
		struct worker_stats s = w->stats;
		const uint64_t *v = (const uint64_t *)&s;

		s.copy_fallbacks = w->pipes.copy_fallbacks; /* the pool counts them */
		s.pipe_budget = w->pipes.over_budget;
		for (size_t k = 0; k < N_FIELDS; k++)
			out[k] += v[k];
		for (size_t k = 1; k < EGRESS_N; k++)
			out[N_FIELDS + k - 1] += s.egress[k];
	}
}

void worker_stats_group(struct server *srv)
{
	srv->stats = (struct stats_group){
	        .name = "relay",
	        .family = "relay",
	        .desc = worker_stats_desc,
	        .n = sizeof(worker_stats_desc) / sizeof(worker_stats_desc[0]),
	        .read = read_stats,
	        .ctx = srv,
	};
}
