/* SPDX-License-Identifier: MIT */
/*
 * The epoll backend's bookkeeping (loop_epoll.c interprets the operations):
 * posted completions, and pending operations found by user_data (a hash),
 * by descriptor (a list per fd, and what epoll has registered for it) and
 * by deadline (a binary heap).
 */
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#include "log.h"
#include "loop_epoll_internal.h"

__attribute__((noreturn)) void ep_out_of_memory(void)
{
	log_error("epoll backend: out of memory");
	abort();
}

/* --- completions ------------------------------------------------------- */

void ep_post(struct loop_ep *ep, uint64_t ud, int res, unsigned flags)
{
	if (ep->cq_n == ep->cq_cap) {
		unsigned cap = ep->cq_cap ? ep->cq_cap * 2 : 256;
		struct io_uring_cqe *cq = malloc(cap * sizeof(*cq));

		if (!cq)
			ep_out_of_memory();
		for (unsigned i = 0; i < ep->cq_n; i++)
			cq[i] = ep->cq[(ep->cq_head + i) % ep->cq_cap];
		free(ep->cq);
		ep->cq = cq;
		ep->cq_cap = cap;
		ep->cq_head = 0;
	}
	struct io_uring_cqe *c = &ep->cq[(ep->cq_head + ep->cq_n++) % ep->cq_cap];
	c->user_data = ud;
	c->res = res;
	c->flags = flags;
}

/* --- pending operations: by user_data, by descriptor, by deadline ------- */

static unsigned hash_of(const struct loop_ep *ep, uint64_t ud)
{
	return (unsigned)((ud * 0x9e3779b97f4a7c15ull) >> 32) & ep->hash_mask;
}

static void hash_grow(struct loop_ep *ep)
{
	unsigned n = (ep->hash_mask + 1) * 2;
	struct ep_op **h = calloc(n, sizeof(*h)), **old = ep->hash;
	unsigned old_n = ep->hash_mask + 1;

	if (!h)
		ep_out_of_memory();
	ep->hash = h;
	ep->hash_mask = n - 1;
	for (unsigned i = 0; i < old_n; i++) {
		for (struct ep_op *op = old[i], *next; op; op = next) {
			unsigned b = hash_of(ep, op->ud);
			next = op->hnext;
			op->hnext = h[b];
			h[b] = op;
		}
	}
	free(old);
}

struct ep_op *ep_new_op(struct loop_ep *ep, const struct io_uring_sqe *sqe)
{
	struct ep_op *op;

	if (!ep->free_ops) {
		struct ep_op *chunk = calloc(EP_CHUNK, sizeof(*chunk));
		void **chunks = realloc(ep->chunks, (ep->n_chunks + 1) * sizeof(*chunks));

		if (!chunk || !chunks)
			ep_out_of_memory();
		ep->chunks = chunks;
		ep->chunks[ep->n_chunks++] = chunk;
		for (int i = 0; i < EP_CHUNK; i++) {
			chunk[i].hnext = ep->free_ops;
			ep->free_ops = &chunk[i];
		}
	}
	op = ep->free_ops;
	ep->free_ops = op->hnext;
	memset(op, 0, sizeof(*op));
	op->ud = sqe->user_data;
	op->opcode = sqe->opcode;
	op->fd = sqe->fd;
	op->heap = NOT_TIMED;
	op->skip_success = sqe->flags & IOSQE_CQE_SKIP_SUCCESS;
	/* Pending from here on: ASYNC_CANCEL and POLL_REMOVE find it by user_data. */
	if (ep->n_pending >= ep->hash_mask + 1)
		hash_grow(ep);
	unsigned b = hash_of(ep, op->ud);
	op->hnext = ep->hash[b];
	ep->hash[b] = op;
	ep->n_pending++;
	return op;
}

struct ep_op *ep_find(struct loop_ep *ep, uint64_t ud)
{
	for (struct ep_op *op = ep->hash[hash_of(ep, ud)]; op; op = op->hnext)
		if (op->ud == ud)
			return op;
	return NULL;
}

struct ep_fd *ep_fd_at(struct loop_ep *ep, int fd)
{
	if ((unsigned)fd >= ep->n_fds) {
		unsigned n = ep->n_fds ? ep->n_fds : 64;
		struct ep_fd *f;

		while (n <= (unsigned)fd)
			n *= 2;
		if (!(f = realloc(ep->fds, n * sizeof(*f))))
			ep_out_of_memory();
		memset(f + ep->n_fds, 0, (n - ep->n_fds) * sizeof(*f));
		ep->fds = f;
		ep->n_fds = n;
	}
	return &ep->fds[fd];
}

static void heap_swap(struct loop_ep *ep, unsigned a, unsigned b)
{
	struct ep_op *t = ep->heap[a];

	ep->heap[a] = ep->heap[b];
	ep->heap[b] = t;
	ep->heap[a]->heap = a;
	ep->heap[b]->heap = b;
}

static void heap_up(struct loop_ep *ep, unsigned i)
{
	while (i && ep->heap[(i - 1) / 2]->due_ms > ep->heap[i]->due_ms) {
		heap_swap(ep, i, (i - 1) / 2);
		i = (i - 1) / 2;
	}
}

static void heap_down(struct loop_ep *ep, unsigned i)
{
	for (;;) {
		unsigned l = 2 * i + 1, r = l + 1, m = i;

		if (l < ep->heap_n && ep->heap[l]->due_ms < ep->heap[m]->due_ms)
			m = l;
		if (r < ep->heap_n && ep->heap[r]->due_ms < ep->heap[m]->due_ms)
			m = r;
		if (m == i)
			return;
		heap_swap(ep, i, m);
		i = m;
	}
}

void ep_timer_add(struct loop_ep *ep, struct ep_op *op, uint64_t due_ms)
{
	if (ep->heap_n == ep->heap_cap) {
		unsigned cap = ep->heap_cap ? ep->heap_cap * 2 : 64;
		struct ep_op **h = realloc(ep->heap, cap * sizeof(*h));

		if (!h)
			ep_out_of_memory();
		ep->heap = h;
		ep->heap_cap = cap;
	}
	op->due_ms = due_ms;
	op->heap = ep->heap_n;
	ep->heap[ep->heap_n++] = op;
	heap_up(ep, op->heap);
}

static void timer_del(struct loop_ep *ep, struct ep_op *op)
{
	unsigned i = op->heap;

	if (i == NOT_TIMED)
		return;
	op->heap = NOT_TIMED;
	if (i != --ep->heap_n) {
		ep->heap[i] = ep->heap[ep->heap_n];
		ep->heap[i]->heap = i;
		heap_down(ep, i);
		heap_up(ep, i);
	}
}

/*
 * Make epoll report at least `events` for fd (a registration may be
 * wider, see the top). 0 or -errno: EPERM is a descriptor epoll cannot
 * watch (a regular file: always ready), EBADF one that is not open.
 */
int ep_set_reg(struct loop_ep *ep, int fd, struct ep_fd *f, uint32_t events)
{
	struct epoll_event ev = {.events = events, .data.fd = fd};

	if (!events) {
		if (f->reg && epoll_ctl(ep->epfd, EPOLL_CTL_DEL, fd, NULL) < 0 && errno != ENOENT &&
		    errno != EBADF)
			log_debug("epoll backend: EPOLL_CTL_DEL %d: %s", fd, strerror(errno));
		f->reg = 0;
		return 0;
	}
	/*
	 * What we remember may be stale: the descriptor was closed (epoll
	 * forgot it) and its number reused. Either way round, try the other.
	 */
	if (epoll_ctl(ep->epfd, f->reg ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, fd, &ev) < 0) {
		int op = errno == ENOENT ? EPOLL_CTL_ADD : errno == EEXIST ? EPOLL_CTL_MOD : 0;
		if (!op || epoll_ctl(ep->epfd, op, fd, &ev) < 0) {
			f->reg = 0;
			return -errno;
		}
	}
	f->reg = events;
	return 0;
}

static void fd_unlink(struct loop_ep *ep, struct ep_op *op)
{
	struct ep_fd *f;

	if (!op->waiting)
		return;
	f = &ep->fds[op->fd];
	if (op->fprev)
		op->fprev->fnext = op->fnext;
	else
		f->head = op->fnext;
	if (op->fnext)
		op->fnext->fprev = op->fprev;
	else
		f->tail = op->fprev;
	op->waiting = false;
}

/* Off every list, back to the free list; no completion posted. */
static void drop(struct loop_ep *ep, struct ep_op *op)
{
	struct ep_op **pp = &ep->hash[hash_of(ep, op->ud)];

	while (*pp != op)
		pp = &(*pp)->hnext;
	*pp = op->hnext;
	ep->n_pending--;
	fd_unlink(ep, op);
	timer_del(ep, op);
	op->hnext = ep->free_ops;
	ep->free_ops = op;
}

/*
 * The operation is over with res: its CQE (unless skipped on success), and
 * what io_uring does to its link partner. A request that completes takes
 * its LINK_TIMEOUT with it (-ECANCELED); a LINK_TIMEOUT that expires
 * (-ETIME) cancels its request (-ECANCELED).
 */
void ep_finish(struct loop_ep *ep, struct ep_op *op, int res)
{
	struct ep_op *partner = op->link;

	if (!(op->skip_success && res >= 0))
		ep_post(ep, op->ud, res, 0);
	if (partner) {
		partner->link = NULL;
		ep_finish(ep, partner, -ECANCELED);
	}
	drop(ep, op);
}

/*
 * Wait for events on op->fd. false when it cannot (the descriptor is bad:
 * op completed with the error; or epoll cannot watch it: the caller runs
 * it now).
 */
bool ep_wait_on(struct loop_ep *ep, struct ep_op *op, uint32_t events, bool *always_ready)
{
	struct ep_fd *f;
	int ret;

	*always_ready = false;
	if (op->fd < 0) {
		ep_finish(ep, op, -EBADF);
		return false;
	}
	f = ep_fd_at(ep, op->fd);
	/*
	 * With nothing waiting on it, the descriptor may have been closed and
	 * its number reused since we registered it (epoll then forgot the
	 * old one): register again (one EPOLL_CTL_MOD, or ADD). Something
	 * still waiting proves it open: only a wider mask needs a call.
	 */
	if (!f->head)
		ret = ep_set_reg(ep, op->fd, f, events);
	else if ((f->reg & events) != events)
		ret = ep_set_reg(ep, op->fd, f, f->reg | events);
	else
		ret = 0;
	if (ret < 0) {
		if (ret == -EPERM) {
			*always_ready = true;
			return false;
		}
		ep_finish(ep, op, ret);
		return false;
	}
	op->events = events;
	op->waiting = true;
	op->fnext = NULL;
	op->fprev = f->tail;
	if (f->tail)
		f->tail->fnext = op;
	else
		f->head = op;
	f->tail = op;
	return true;
}
