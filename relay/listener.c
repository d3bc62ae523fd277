/* SPDX-License-Identifier: MIT */
/* Listening sockets: SO_REUSEPORT per worker, optional CPU steering, multishot accept, EMFILE pause. */
#include <errno.h>
#include <linux/filter.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "conn.h"
#include "listener.h"
#include "log.h"
#include "outbound.h"
#include "sockaddr.h"
#include "tun_dev.h"
#include "worker.h"

enum listener_op {
	OP_ACCEPT = 1,
	OP_ACCEPT_RETRY, /* the pause before re-arming accept after EMFILE/ENFILE */
};

enum {
	LISTEN_BACKLOG = 4096,
	ACCEPT_RETRY_MS = 100, /* pause accepting this long after EMFILE/ENFILE */
};

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

/* Options accepted sockets inherit, set again when a reload keeps the socket. */
void listener_set_options(int fd, const struct config *cfg, const struct inbound *in, int n_workers)
{
	int one = 1;
	unsigned ka = in->keepalive_set ? in->keepalive_ms : cfg->keepalive_ms;

	/*
	 * TCP_NODELAY on the listener: accepted sockets inherit it (the child
	 * is a copy of the listening tcp_sock), which saves a setsockopt per
	 * connection. Why the relay wants it: see outbound_socket().
	 */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	/* Accepted sockets inherit these too: the inbound's own keepalive over [main]'s. */
	if (ka)
		tcp_keepalive(fd, ka / 1000);
	else
		setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &(int){0}, sizeof(int));
	/* Even 0 (the kernel's default again): a kept socket may have had another. */
	setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &in->user_timeout_ms,
	           sizeof(in->user_timeout_ms));
	/* a tun inbound's listeners are one per worker already (tun_dev_listen_socket()) */
	if (in->type == INBOUND_TUN)
		return;
	if (cfg->accept_steering == STEER_CPU && n_workers > 1)
		steer_by_cpu(fd, (unsigned)n_workers, in->name);
	else
		setsockopt(fd, SOL_SOCKET, SO_DETACH_REUSEPORT_BPF, &one,
		           sizeof(one)); /* ENOENT: none */
}

int listener_socket(const struct config *cfg, const struct inbound *in, int n_workers)
{
	int one = 1, fd, ret;
	char addr[SA_STR_MAX];

	fd = socket(in->listen.ss_family, SOCK_STREAM | SOCK_CLOEXEC, IPPROTO_TCP);
	if (fd < 0)
		goto fail;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) < 0)
		goto fail;
	/* "[::]" must not swallow IPv4: a separate 0.0.0.0 inbound can coexist. */
	if (in->listen.ss_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	/* tproxy: accept connections to any address, which stays the local one (CAP_NET_ADMIN). */
	if (in->type == INBOUND_TPROXY && sock_set_transparent(fd, in->listen.ss_family) < 0) {
		ret = -errno;
		log_error("inbound %s: IP_TRANSPARENT: %s%s", in->name, strerror(-ret),
		          ret == -EPERM ? " (tproxy needs CAP_NET_ADMIN: start spliced as root)"
		                        : "");
		close(fd);
		return ret;
	}
	if (bind(fd, (const struct sockaddr *)&in->listen, in->listen_len) < 0)
		goto fail;
	if (listen(fd, LISTEN_BACKLOG) < 0)
		goto fail;
	/* After listen(): the steering program attaches to the SO_REUSEPORT group. */
	listener_set_options(fd, cfg, in, n_workers);
	return fd;
fail:
	ret = -errno;
	log_error("inbound %s: cannot listen on %s: %s", in->name, sa_str(&in->listen, addr),
	          strerror(-ret));
	if (fd >= 0)
		close(fd);
	return ret;
}

int listener_adopt(struct worker *w, unsigned i, int fd, struct listener **out)
{
	struct listener *ls = calloc(1, sizeof(*ls));

	if (!ls || loop_add(&w->loop, &ls->obj, LOOP_KIND_LISTENER) < 0) {
		free(ls);
		close(fd);
		return -ENOMEM;
	}
	ls->w = w;
	ls->inbound = i;
	ls->fd = fd;
	*out = ls;
	return 0;
}

int listener_open(struct worker *w, unsigned i, struct listener **out)
{
	const struct inbound *in = &w->cfg->inbounds[i];
	int fd;

	if (in->type != INBOUND_TUN) {
		fd = listener_socket(w->cfg, in, w->srv->n_workers);
		return fd < 0 ? fd : listener_adopt(w, i, fd, out);
	}
	/* bound to the device, on a port of this worker's own (tun_dev.c) */
	fd = tun_dev_listen_socket(tun_dev_get(i), w->id);
	if (fd >= 0 && listen(fd, LISTEN_BACKLOG) < 0) {
		int err = -errno;
		close(fd);
		fd = err;
	}
	if (fd < 0) {
		log_error("inbound %s: cannot listen on its TUN: %s", in->name, strerror(-fd));
		return fd;
	}
	listener_set_options(fd, w->cfg, in, w->srv->n_workers);
	return listener_adopt(w, i, fd, out);
}

void listener_arm(struct listener *ls)
{
	struct io_uring_sqe *sqe = loop_prep(&ls->w->loop, &ls->obj, OP_ACCEPT);

	/* Before 5.19 an accept per SQE: on_accept() re-arms when a CQE has no F_MORE. */
	if (ls->w->loop.feat.multishot_accept)
		io_uring_prep_multishot_accept(sqe, ls->fd, NULL, NULL,
		                               SOCK_NONBLOCK | SOCK_CLOEXEC);
	else
		io_uring_prep_accept(sqe, ls->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
}

/*
 * Who is this client, and may it come in: the inbound's allow list, then
 * max-connections-per-source (a getpeername(2) only when either is set).
 * True with *slot to give back when the connection ends.
 */
static bool admit(struct worker *w, const struct inbound *in, struct sec_row *row, int fd,
                  uint32_t *slot)
{
	struct sockaddr_storage peer;
	socklen_t len = sizeof(peer);
	char addr[SA_STR_MAX];
	bool log;

	*slot = SOURCE_UNCOUNTED;
	if (!in->n_allow && !w->cfg->max_per_source)
		return true;
	if (getpeername(fd, (struct sockaddr *)&peer, &len) < 0) {
		w->stats.accept_errors++;
		return false;
	}
	if (!access_allowed(in, &peer)) {
		/* Refused before a byte is read (the client sees a reset). */
		w->stats.refused_allow++;
		row->refused[REFUSED_ALLOW]++;
		log_debug_rl("inbound %s: %s is not in allow: refused", in->name,
		             sa_str(&peer, addr));
		return false;
	}
	if (!source_limit_take(w->srv->per_source, &peer, (uint64_t)(w->loop.now_ms / 1000), slot,
	                       &log)) {
		w->stats.refused_source++;
		row->refused[REFUSED_SOURCE]++;
		if (log)
			log_warn(
			        "inbound %s: %s has max-connections-per-source (%u) open: refusing "
			        "more from it (logged once a minute)",
			        in->name, auth_guard_source_str(&peer, addr, sizeof(addr)),
			        w->cfg->max_per_source);
		return false;
	}
	return true;
}

static bool out_of_resources(int res)
{
	return res == -EMFILE || res == -ENFILE || res == -ENOBUFS || res == -ENOMEM;
}

static void on_accept(struct listener *ls, int res, unsigned flags)
{
	struct worker *w = ls->w;

	if (res >= 0) {
		const struct inbound *in = &w->cfg->inbounds[ls->inbound];
		struct sec_row *row = &w->snap->in_stats[ls->inbound]->rows[w->id];
		uint32_t slot;
		unsigned n;

		w->stats.accepted++;
		row->accepted++;
		if (!admit(w, in, row, res, &slot)) {
			close(res);
			goto rearm;
		}
		n = atomic_fetch_add_explicit(&w->srv->n_conns, 1, memory_order_relaxed);
		if (n >= w->cfg->max_connections) {
			/* Over the limit: refuse this one, leave the others alone. */
			atomic_fetch_sub_explicit(&w->srv->n_conns, 1, memory_order_relaxed);
			source_limit_put(w->srv->per_source, slot);
			w->stats.refused_limit++;
			row->refused[REFUSED_LIMIT]++;
			log_debug_rl("max-connections (%u) reached: refusing",
			             w->cfg->max_connections);
			close(res);
		} else {
			conn_accept(w, ls->inbound, res, slot);
		}
	} else if (res != -ECANCELED) {
		w->stats.accept_errors++;
		if (out_of_resources(res))
			log_warn("inbound %s: accept: %s (pausing accepts for %d ms)",
			         w->cfg->inbounds[ls->inbound].name, strerror(-res),
			         ACCEPT_RETRY_MS);
		else
			log_debug_rl("accept: %s", strerror(-res));
	}
rearm:
	if (flags & IORING_CQE_F_MORE)
		return; /* still armed */
	if (out_of_resources(res)) {
		/* Let connections close and free descriptors before trying again. */
		static struct __kernel_timespec retry = {.tv_nsec = ACCEPT_RETRY_MS * 1000000LL};
		struct io_uring_sqe *sqe = loop_prep(&w->loop, &ls->obj, OP_ACCEPT_RETRY);
		io_uring_prep_timeout(sqe, &retry, 0, 0);
		return;
	}
	listener_arm(ls);
}

static void complete(struct loop *l, struct loop_obj *o, unsigned op,
                     const struct io_uring_cqe *cqe)
{
	struct listener *ls = (struct listener *)o;

	(void)l;
	if (op == OP_ACCEPT)
		on_accept(ls, cqe->res, cqe->flags);
	else
		listener_arm(ls); /* OP_ACCEPT_RETRY: the pause is over */
}

void listener_stop(struct listener *ls)
{
	struct loop *l = &ls->w->loop;

	if (ls->stopped)
		return;
	ls->stopped = true;
	/* At most one of the two is in flight; cancelling the other finds nothing. */
	loop_cancel(l, loop_tag_of(l, &ls->obj, OP_ACCEPT));
	loop_cancel(l, loop_tag_of(l, &ls->obj, OP_ACCEPT_RETRY));
	loop_close(l, &ls->obj);
}

/* Stopped: a connection accepted as the cancel went in is refused (its client sees a RST). */
static void discard(struct loop *l, struct loop_obj *o, unsigned op, const struct io_uring_cqe *cqe)
{
	(void)l, (void)o;
	if (op == OP_ACCEPT && cqe->res >= 0)
		close(cqe->res);
}

static void release(struct loop *l, struct loop_obj *o)
{
	struct listener *ls = (struct listener *)o;

	(void)l;
	close(ls->fd);
	/* A reload may have given the slot to another listener already. */
	if (ls->w->listeners[ls->inbound] == ls)
		ls->w->listeners[ls->inbound] = NULL;
	free(ls);
}

const struct loop_module listener_module = {
        .name = "listener",
        .complete = complete,
        .discard = discard,
        .release = release,
};
