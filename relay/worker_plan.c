/* SPDX-License-Identifier: MIT */
/*
 * A worker's side of a reload: the descriptors main sends ahead of a plan
 * (SCM_RIGHTS over the worker's plan socket), and the plan applied on the
 * worker's own thread (listeners kept, moved, opened or stopped; the new
 * snapshot in force). main's side is app/reload.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "listener.h"
#include "log.h"
#include "metrics.h"
#include "udp_tproxy.h"
#include "worker.h"

/* The per-worker timeouts' queues follow [main] (a reload, or the start). */
static void set_timeouts(struct worker *w, const struct config *cfg)
{
	loop_tq_set(&w->hs_tq, cfg->handshake_timeout_ms);
	loop_tq_set(&w->resolve_tq, cfg->resolve_timeout_ms);
	loop_tq_set(&w->idle_tq, cfg->idle_timeout_ms);
	loop_tq_set(&w->udp_tq, cfg->udp_timeout_ms);
	/* A DNS-only association ends sooner, never later than any other. */
	loop_tq_set(&w->udp_dns_tq, cfg->udp_dns_timeout_ms < cfg->udp_timeout_ms
	                                    ? cfg->udp_dns_timeout_ms
	                                    : cfg->udp_timeout_ms);
	loop_tq_set(&w->udp_up_tq, cfg->connect_timeout_ms + cfg->handshake_timeout_ms);
}

int worker_send_fds(struct worker *w, unsigned seq, int *fds, unsigned n)
{
	union {
		char buf[CMSG_SPACE(PLAN_FDS_MAX * sizeof(int))];
		struct cmsghdr align;
	} ctl;
	uint32_t hdr[2] = {seq, n};
	struct iovec iov = {.iov_base = hdr, .iov_len = sizeof(hdr)};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	int ret = 0;

	if (n > PLAN_FDS_MAX) {
		ret = -E2BIG;
		goto out;
	}
	if (n) {
		struct cmsghdr *cm;

		memset(&ctl, 0, sizeof(ctl));
		mh.msg_control = ctl.buf;
		mh.msg_controllen = CMSG_SPACE(n * sizeof(int));
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(n * sizeof(int));
		memcpy(CMSG_DATA(cm), fds, n * sizeof(int));
	}
	if (sendmsg(w->plan_tx, &mh, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
		ret = -errno;
out:
	/* In flight, the descriptors are the socket's: main's copies go either way. */
	for (unsigned i = 0; i < n; i++)
		close(fds[i]);
	return ret;
}

void worker_post_plan(struct worker *w, struct worker_plan *p)
{
	struct worker_plan *old = atomic_exchange(&w->plan, p);

	if (old) { /* cannot happen: main waits for every worker before the next reload */
		snapshot_unref(old->snap);
		free(old);
	}
	worker_post(w, WORKER_MSG_RELOAD);
}

/* The descriptors of message seq, in order; those of messages no plan names are closed. */
unsigned worker_take_fds(struct worker *w, unsigned seq, int *fds, unsigned want)
{
	for (;;) {
		union {
			char buf[CMSG_SPACE(PLAN_FDS_MAX * sizeof(int))];
			struct cmsghdr align;
		} ctl;
		uint32_t hdr[2] = {0, 0};
		struct iovec iov = {.iov_base = hdr, .iov_len = sizeof(hdr)};
		struct msghdr mh = {.msg_iov = &iov,
		                    .msg_iovlen = 1,
		                    .msg_control = ctl.buf,
		                    .msg_controllen = sizeof(ctl.buf)};
		unsigned got = 0;
		int recvd[PLAN_FDS_MAX];

		if (recvmsg(w->plan_rx, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC) < 0)
			return 0;
		for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
			if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
				continue;
			unsigned k = (unsigned)((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int));
			memcpy(recvd + got, CMSG_DATA(cm), k * sizeof(int));
			got += k;
		}
		if (hdr[0] == seq && got == want) {
			memcpy(fds, recvd, got * sizeof(int));
			return got;
		}
		for (unsigned i = 0; i < got; i++)
			close(recvd[i]);
		if (hdr[0] == seq)
			return 0;
	}
}

/*
 * Switch to the plan's snapshot: sockets kept move to their new inbound
 * index, new ones start, those of inbounds that are gone stop accepting
 * (their connections go on, on the snapshot they started on), [main]'s
 * settings that live in the worker follow.
 */
void worker_apply_plan(struct worker *w)
{
	struct worker_plan *p = atomic_exchange(&w->plan, NULL);
	struct listener *ls[CONFIG_MAX_INBOUNDS] = {0};
	struct udp_tp *tp[CONFIG_MAX_INBOUNDS] = {0};
	int fds[PLAN_FDS_MAX];
	const struct config *nc;
	struct snapshot *old;
	unsigned k = 0, n;

	if (!p)
		return;
	nc = p->snap->cfg;
	n = worker_take_fds(w, p->fd_seq, fds, p->n_fds);
	if (n != p->n_fds)
		log_error("worker %d: reload %u: the new sockets did not arrive; inbounds that "
		          "needed one do not accept on this worker",
		          w->id, p->gen);
	for (size_t i = 0; i < nc->n_inbounds; i++) {
		int j = p->listener[i];

		if (j >= 0 && w->listeners[j]) {
			ls[i] = w->listeners[j];
			w->listeners[j] = NULL;
			ls[i]->inbound = (unsigned)i;
			listener_set_options(ls[i]->fd, nc, &nc->inbounds[i], w->srv->n_workers);
		} else if (j == PLAN_NEW && k < n &&
		           listener_adopt(w, (unsigned)i, fds[k++], &ls[i]) == 0) {
			listener_arm(ls[i]);
		}
	}
	for (size_t i = 0; i < nc->n_inbounds; i++) {
		int j = p->udp_tp[i];

		if (j >= 0 && w->udp_tps[j]) {
			tp[i] = w->udp_tps[j];
			w->udp_tps[j] = NULL;
			udp_tp_reinbound(tp[i], (unsigned)i);
		} else if (j == PLAN_NEW && k < n &&
		           udp_tp_adopt(w, (unsigned)i, fds[k++], &tp[i]) == 0) {
			udp_tp_arm(tp[i]);
		}
	}
	/* What is left belongs to inbounds that are gone or moved: they stop accepting. */
	for (size_t j = 0; j < CONFIG_MAX_INBOUNDS; j++) {
		if (w->listeners[j])
			listener_stop(w->listeners[j]);
		if (w->udp_tps[j])
			udp_tp_stop(w->udp_tps[j]);
	}
	memcpy(w->listeners, ls, sizeof(ls));
	memcpy(w->udp_tps, tp, sizeof(tp));
	if (p->metrics != PLAN_KEEP && w->metrics) {
		metrics_stop(w->metrics);
		w->metrics = NULL;
	}
	if (p->metrics == PLAN_NEW && k < n && metrics_open(w, fds[k++], &w->metrics) == 0)
		metrics_arm(w->metrics);
	if (p->alog != PLAN_KEEP) {
		alog_tick(w, 1); /* what waits belongs to the old file */
		if (w->alog.fd >= 0)
			close(w->alog.fd);
		w->alog.fd = p->alog == PLAN_NEW && k < n ? fds[k++] : -1;
	}
	while (k < n) /* not used after all (an adopt that failed took its own) */
		close(fds[k++]);
	old = w->snap;
	w->snap = p->snap;
	w->cfg = nc;
	/* Its path lives in the configuration: the new one's. */
	w->alog.path = nc->access_log && strcmp(nc->access_log, "stderr") ? nc->access_log : NULL;
	set_timeouts(w, nc);
	worker_set_memory_budget(w);
	if (old->holds[w->id].n == 0)
		snapshot_unref(old);
	atomic_store(&w->applied, p->gen);
	free(p);
}
