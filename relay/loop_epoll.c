/* SPDX-License-Identifier: MIT */
/* The loop without io_uring: the SQEs modules prepare, interpreted over epoll(7) readiness and plain syscalls. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"
#include "loop_internal.h"

/*
 * Where io_uring_setup fails (a container's seccomp profile, the
 * io_uring_disabled sysctl, a kernel built without it) or `[main] backend =
 * epoll` asks for it, the modules still prepare SQEs with loop_prep() and
 * still get CQEs in complete(): not one line of theirs knows which backend
 * runs. loop_prep() hands out SQEs from a staging array; a submit (the
 * turn, a full stage, loop_reserve(), loop_submit()) interprets them in
 * order, as the kernel would: an operation that can run at once runs
 * (non-blocking), the others wait on the descriptor's readiness
 * (level-triggered epoll) and run when it comes, and each posts a
 * CQE-shaped completion that the next turn dispatches exactly as the
 * ring's are.
 *
 * What it interprets (COMMON.md's set, what the modules may use):
 *   NOP; POLL_ADD, one-shot or IORING_POLL_ADD_MULTI; POLL_REMOVE;
 *   ASYNC_CANCEL by user_data; ACCEPT, one-shot or IORING_ACCEPT_MULTISHOT;
 *   CONNECT; RECV, SEND (MSG_WAITALL completes the whole length, as the
 *   ring does on a stream socket); RECVMSG, SENDMSG; READ, WRITE (waiting
 *   for readiness first: the descriptor may be blocking, an eventfd);
 *   TIMEOUT (count 0, relative or IORING_TIMEOUT_ABS); LINK_TIMEOUT after
 *   one request linked with IOSQE_IO_LINK; IOSQE_CQE_SKIP_SUCCESS.
 * Anything else aborts the process naming it: a module waiting for a
 * completion the interpreter cannot produce would hang without a word, and
 * the integration pass that forces this backend (scripts/test) is where a
 * stray opcode shows. loop_features.cqe_skip is off here, so the one link
 * chain with skipped CQEs (conn.c's reply ahead of its poll) is not used.
 *
 * Level-triggered. A descriptor's registration is kept while operations
 * wait on it; arming one on a descriptor nothing waits on costs one
 * epoll_ctl(2) (its number may belong to a new socket by then), arming
 * another on one already registered for those events costs none. An event
 * nobody waits for (a writable socket whose writer is not blocked) narrows
 * the registration, or removes it, since level-triggered epoll would report
 * it every turn. A multishot poll
 * is reported every turn its descriptor stays ready (io_uring reports each
 * new wake-up): a module that stops reading with one armed spins here.
 */

enum {
	EP_STAGE = 128,       /* SQEs prepared between two submits (loop_reserve()'s n is <= 2) */
	EP_EVENTS = 256,      /* epoll events taken per turn */
	EP_ACCEPT_BURST = 64, /* connections a multishot accept takes per readiness */
	EP_CHUNK = 64,        /* operations allocated at once */
	NOT_TIMED = ~0u,
};

struct ep_op {
	uint64_t ud;                 /* the SQE's user_data: the CQE's, and the cancel key */
	struct ep_op *hnext;         /* hash chain by ud (every pending operation) */
	struct ep_op *fprev, *fnext; /* waiting on fd */
	struct ep_op *link; /* a request and its LINK_TIMEOUT, each pointing at the other */
	uint64_t due_ms;
	unsigned heap; /* index in the timer heap, or NOT_TIMED */
	int fd;
	uint8_t opcode;
	bool multishot, skip_success, waiting;
	uint32_t events; /* the epoll events it waits for */
	uint32_t arg;    /* POLL_ADD: mask; RECV, SEND, ...MSG: msg flags; ACCEPT: accept4 flags */
	void *addr;      /* buffer, msghdr, sockaddr */
	void *addr2;     /* ACCEPT: socklen_t * */
	uint32_t len, done;
};

struct ep_fd {
	struct ep_op *head, *tail;
	uint32_t reg; /* what epoll has for it; 0 = not registered */
};

struct loop_ep {
	int epfd;
	unsigned n_stage;
	struct io_uring_sqe stage[EP_STAGE];
	/* Posted completions, a ring buffer: dispatched by the next turn, in order. */
	struct io_uring_cqe *cq;
	unsigned cq_head, cq_n, cq_cap;
	struct ep_op **hash;
	unsigned hash_mask, n_pending;
	struct ep_op *free_ops;
	void **chunks;
	unsigned n_chunks;
	struct ep_fd *fds;
	unsigned n_fds;
	struct ep_op **heap;
	unsigned heap_n, heap_cap;
};

/* A programming error, not an input: see the top of this file. */
__attribute__((noreturn)) static void unsupported(const struct io_uring_sqe *sqe, const char *what)
{
	log_error("epoll backend: %s (opcode %u, SQE flags %#x, tag kind %u op %u) is not "
	          "supported: aborting",
	          what, sqe->opcode, sqe->flags, loop_tag_kind(sqe->user_data),
	          loop_tag_op(sqe->user_data));
	abort();
}

__attribute__((noreturn)) static void out_of_memory(void)
{
	log_error("epoll backend: out of memory");
	abort();
}

/* --- completions ------------------------------------------------------- */

static void post(struct loop_ep *ep, uint64_t ud, int res, unsigned flags)
{
	if (ep->cq_n == ep->cq_cap) {
		unsigned cap = ep->cq_cap ? ep->cq_cap * 2 : 256;
		struct io_uring_cqe *cq = malloc(cap * sizeof(*cq));

		if (!cq)
			out_of_memory();
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
		out_of_memory();
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

static struct ep_op *new_op(struct loop_ep *ep, const struct io_uring_sqe *sqe)
{
	struct ep_op *op;

	if (!ep->free_ops) {
		struct ep_op *chunk = calloc(EP_CHUNK, sizeof(*chunk));
		void **chunks = realloc(ep->chunks, (ep->n_chunks + 1) * sizeof(*chunks));

		if (!chunk || !chunks)
			out_of_memory();
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

static struct ep_op *find(struct loop_ep *ep, uint64_t ud)
{
	for (struct ep_op *op = ep->hash[hash_of(ep, ud)]; op; op = op->hnext)
		if (op->ud == ud)
			return op;
	return NULL;
}

static struct ep_fd *fd_at(struct loop_ep *ep, int fd)
{
	if ((unsigned)fd >= ep->n_fds) {
		unsigned n = ep->n_fds ? ep->n_fds : 64;
		struct ep_fd *f;

		while (n <= (unsigned)fd)
			n *= 2;
		if (!(f = realloc(ep->fds, n * sizeof(*f))))
			out_of_memory();
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

static void timer_add(struct loop_ep *ep, struct ep_op *op, uint64_t due_ms)
{
	if (ep->heap_n == ep->heap_cap) {
		unsigned cap = ep->heap_cap ? ep->heap_cap * 2 : 64;
		struct ep_op **h = realloc(ep->heap, cap * sizeof(*h));

		if (!h)
			out_of_memory();
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
static int set_reg(struct loop_ep *ep, int fd, struct ep_fd *f, uint32_t events)
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
static void finish(struct loop_ep *ep, struct ep_op *op, int res)
{
	struct ep_op *partner = op->link;

	if (!(op->skip_success && res >= 0))
		post(ep, op->ud, res, 0);
	if (partner) {
		partner->link = NULL;
		finish(ep, partner, -ECANCELED);
	}
	drop(ep, op);
}

/*
 * Wait for events on op->fd. false when it cannot (the descriptor is bad:
 * op completed with the error; or epoll cannot watch it: the caller runs
 * it now).
 */
static bool wait_on(struct loop_ep *ep, struct ep_op *op, uint32_t events, bool *always_ready)
{
	struct ep_fd *f;
	int ret;

	*always_ready = false;
	if (op->fd < 0) {
		finish(ep, op, -EBADF);
		return false;
	}
	f = fd_at(ep, op->fd);
	/*
	 * With nothing waiting on it, the descriptor may have been closed and
	 * its number reused since we registered it (epoll then forgot the
	 * old one): register again (one EPOLL_CTL_MOD, or ADD). Something
	 * still waiting proves it open: only a wider mask needs a call.
	 */
	if (!f->head)
		ret = set_reg(ep, op->fd, f, events);
	else if ((f->reg & events) != events)
		ret = set_reg(ep, op->fd, f, f->reg | events);
	else
		ret = 0;
	if (ret < 0) {
		if (ret == -EPERM) {
			*always_ready = true;
			return false;
		}
		finish(ep, op, ret);
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

/* --- the operations ---------------------------------------------------- */

/*
 * Run op now that its descriptor reported ev (or at submit, ev = 0: try
 * first). true when it finished, false when it goes on waiting (EAGAIN, a
 * multishot accept or poll).
 */
static bool run_op(struct loop_ep *ep, struct ep_op *op, uint32_t ev)
{
	ssize_t n;

	switch (op->opcode) {
	case IORING_OP_POLL_ADD: {
		uint32_t res = ev & (op->arg | POLLERR | POLLHUP | POLLNVAL);

		if (!res)
			return false;
		if (op->multishot) {
			post(ep, op->ud, (int)res, IORING_CQE_F_MORE);
			return false;
		}
		finish(ep, op, (int)res);
		return true;
	}
	case IORING_OP_ACCEPT:
		for (int i = 0; i < EP_ACCEPT_BURST; i++) {
			int fd = accept4(op->fd, op->addr, op->addr2, (int)op->arg);

			if (fd < 0 && errno == EINTR)
				continue;
			if (fd < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
				return false;
			/* An error ends a multishot accept, as it does on the ring. */
			if (fd < 0 || !op->multishot) {
				finish(ep, op, fd < 0 ? -errno : fd);
				return true;
			}
			post(ep, op->ud, fd, IORING_CQE_F_MORE);
		}
		return false; /* more next turn: the other descriptors get their turn too */
	case IORING_OP_CONNECT: {
		int err = 0;
		socklen_t len = sizeof(err);

		if (getsockopt(op->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
			err = errno;
		if (!err && !(ev & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
			return false;
		finish(ep, op, -err);
		return true;
	}
	case IORING_OP_RECV:
	case IORING_OP_SEND:
		for (;;) {
			uint8_t *buf = (uint8_t *)op->addr + op->done;
			size_t left = op->len - op->done;
			int flags = (int)op->arg | MSG_DONTWAIT;

			n = op->opcode == IORING_OP_RECV ? recv(op->fd, buf, left, flags)
			                                 : send(op->fd, buf, left, flags);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
				return false;
			/* MSG_WAITALL: the whole length, or what came before EOF or an error */
			if (n > 0 && (op->arg & MSG_WAITALL) && op->done + (size_t)n < op->len) {
				op->done += (uint32_t)n;
				continue;
			}
			finish(ep, op,
			       n < 0 ? (op->done ? (int)op->done : -errno) : (int)(op->done + n));
			return true;
		}
	case IORING_OP_RECVMSG:
	case IORING_OP_SENDMSG: {
		int flags = (int)op->arg | MSG_DONTWAIT;

		do
			n = op->opcode == IORING_OP_RECVMSG ? recvmsg(op->fd, op->addr, flags)
			                                    : sendmsg(op->fd, op->addr, flags);
		while (n < 0 && errno == EINTR);
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return false;
		finish(ep, op, n < 0 ? -errno : (int)n);
		return true;
	}
	case IORING_OP_READ:
	case IORING_OP_WRITE:
		/* Only once epoll said so (or it cannot watch the descriptor): it may be blocking. */
		if (!ev)
			return false;
		do
			n = op->opcode == IORING_OP_READ ? read(op->fd, op->addr, op->len)
			                                 : write(op->fd, op->addr, op->len);
		while (n < 0 && errno == EINTR);
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return false;
		finish(ep, op, n < 0 ? -errno : (int)n);
		return true;
	default:
		return false; /* TIMEOUT, LINK_TIMEOUT: their deadline runs them */
	}
}

/* The events op waits for when it cannot run at once. */
static uint32_t events_of(const struct ep_op *op)
{
	switch (op->opcode) {
	case IORING_OP_POLL_ADD:
		return op->arg & ~(uint32_t)(POLLERR | POLLHUP | POLLNVAL);
	case IORING_OP_SEND:
	case IORING_OP_SENDMSG:
	case IORING_OP_WRITE:
	case IORING_OP_CONNECT:
		return EPOLLOUT;
	default:
		return EPOLLIN; /* ACCEPT, RECV, RECVMSG, READ */
	}
}

/* liburing stores a poll mask halfword-swapped on big-endian hosts (__io_uring_prep_poll_mask). */
static uint32_t poll_mask_of(const struct io_uring_sqe *sqe)
{
	uint32_t m = sqe->poll32_events;
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	m = (m << 16) | (m >> 16);
#endif
	return m;
}

static uint64_t ms_of(const struct io_uring_sqe *sqe)
{
	const struct __kernel_timespec *ts = (const struct __kernel_timespec *)(uintptr_t)sqe->addr;

	if (!ts || sqe->len != 1 || ts->tv_sec < 0 || ts->tv_nsec < 0)
		unsupported(sqe, "a timeout without one valid timespec");
	/* rounded up: a timer never fires early */
	return (uint64_t)ts->tv_sec * 1000 + ((uint64_t)ts->tv_nsec + 999999) / 1000000;
}

/*
 * accept4(2) and connect(2) have no MSG_DONTWAIT: the socket itself must not
 * block (the ring's accept does not care; listeners are created blocking).
 */
static void set_nonblocking(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl >= 0 && !(fl & O_NONBLOCK))
		fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

/* Cancel (ASYNC_CANCEL, POLL_REMOVE) the pending operation with user_data ud. */
static int cancel(struct loop_ep *ep, uint64_t ud, bool polls_only)
{
	struct ep_op *op = find(ep, ud);

	if (!op || (polls_only && op->opcode != IORING_OP_POLL_ADD))
		return -ENOENT;
	op->skip_success = false;
	finish(ep, op, -ECANCELED);
	return 0;
}

static void submit_one(struct loop *l, const struct io_uring_sqe *sqe,
                       const struct io_uring_sqe *lt)
{
	struct loop_ep *ep = l->ep;
	struct ep_op *op;
	bool always_ready, poll_first = false;

	if (sqe->flags & ~(IOSQE_IO_LINK | IOSQE_CQE_SKIP_SUCCESS))
		unsupported(sqe, "an SQE flag other than IO_LINK and CQE_SKIP_SUCCESS");
	switch (sqe->opcode) {
	case IORING_OP_NOP:
		if (!(sqe->flags & IOSQE_CQE_SKIP_SUCCESS))
			post(ep, sqe->user_data, 0, 0);
		return;
	case IORING_OP_ASYNC_CANCEL:
	case IORING_OP_POLL_REMOVE: {
		int res;

		if (sqe->opcode == IORING_OP_ASYNC_CANCEL && sqe->cancel_flags)
			unsupported(sqe, "ASYNC_CANCEL by anything but user_data");
		if (sqe->opcode == IORING_OP_POLL_REMOVE && sqe->len)
			unsupported(sqe, "a poll update");
		res = cancel(ep, sqe->addr, sqe->opcode == IORING_OP_POLL_REMOVE);
		if (!(res == 0 && (sqe->flags & IOSQE_CQE_SKIP_SUCCESS)))
			post(ep, sqe->user_data, res, 0);
		return;
	}
	case IORING_OP_POLL_ADD:
	case IORING_OP_ACCEPT:
	case IORING_OP_CONNECT:
	case IORING_OP_RECV:
	case IORING_OP_SEND:
	case IORING_OP_RECVMSG:
	case IORING_OP_SENDMSG:
	case IORING_OP_READ:
	case IORING_OP_WRITE:
	case IORING_OP_TIMEOUT:
		break;
	default:
		unsupported(sqe, "this opcode");
	}

	op = new_op(ep, sqe);
	op->addr = (void *)(uintptr_t)sqe->addr;
	op->len = sqe->len;
	switch (sqe->opcode) {
	case IORING_OP_POLL_ADD:
		if (sqe->len & ~IORING_POLL_ADD_MULTI)
			unsupported(sqe, "a poll update");
		op->arg = poll_mask_of(sqe);
		op->multishot = sqe->len & IORING_POLL_ADD_MULTI;
		break;
	case IORING_OP_ACCEPT:
		if (sqe->ioprio & ~IORING_ACCEPT_MULTISHOT || sqe->file_index)
			unsupported(sqe, "an accept into a fixed file");
		op->multishot = sqe->ioprio & IORING_ACCEPT_MULTISHOT;
		op->arg = sqe->accept_flags;
		op->addr2 = (void *)(uintptr_t)sqe->addr2;
		set_nonblocking(op->fd);
		break;
	case IORING_OP_CONNECT:
		set_nonblocking(op->fd);
		break;
	case IORING_OP_RECV:
	case IORING_OP_SEND:
	case IORING_OP_RECVMSG:
	case IORING_OP_SENDMSG:
		if (sqe->ioprio & ~IORING_RECVSEND_POLL_FIRST)
			unsupported(sqe, "a multishot or fixed-buffer send/recv");
		op->arg = sqe->msg_flags;
		if ((op->arg & MSG_WAITALL) &&
		    (sqe->opcode == IORING_OP_RECVMSG || sqe->opcode == IORING_OP_SENDMSG))
			unsupported(sqe, "MSG_WAITALL on sendmsg/recvmsg");
		poll_first = sqe->ioprio & IORING_RECVSEND_POLL_FIRST;
		break;
	case IORING_OP_READ:
	case IORING_OP_WRITE:
		if (sqe->rw_flags || sqe->buf_index)
			unsupported(sqe, "read/write flags or fixed buffers");
		break;
	case IORING_OP_TIMEOUT:
		if (sqe->off || sqe->timeout_flags & ~IORING_TIMEOUT_ABS)
			unsupported(sqe, "a timeout with a count, an update or another clock");
		if (lt)
			unsupported(sqe, "a linked TIMEOUT");
		/* from now, as the kernel counts: l->now_ms is as old as the turn */
		timer_add(ep, op,
		          sqe->timeout_flags & IORING_TIMEOUT_ABS ? ms_of(sqe)
		                                                  : clock_coarse_ms() + ms_of(sqe));
		return;
	}
	if (lt) {
		struct ep_op *t;

		if (op->multishot)
			unsupported(sqe, "a multishot request in a link");
		if (lt->timeout_flags)
			unsupported(lt, "a LINK_TIMEOUT with flags");
		t = new_op(ep, lt);
		t->link = op;
		op->link = t;
		timer_add(ep, t, clock_coarse_ms() + ms_of(lt));
	}
	if (sqe->opcode == IORING_OP_CONNECT) {
		/* The kernel copies the address now, as the ring does: the caller may free it. */
		if (connect(op->fd, op->addr, (socklen_t)sqe->off) == 0) {
			finish(ep, op, 0);
			return;
		}
		if (errno != EINPROGRESS && errno != EINTR) {
			finish(ep, op, -errno);
			return;
		}
	} else if (sqe->opcode != IORING_OP_POLL_ADD && !poll_first && run_op(ep, op, 0)) {
		return; /* done at once, as a non-blocking call could */
	}
	if (!wait_on(ep, op, events_of(op), &always_ready) && always_ready) {
		/* A regular file: never "not ready"; a poll on one completes once. */
		op->multishot = false;
		if (!run_op(ep, op, EPOLLIN | EPOLLOUT))
			finish(ep, op, -EAGAIN);
	}
}

/* --- the loop's side ------------------------------------------------------ */

int loop_ep_setup(struct loop *l)
{
	struct loop_ep *ep = calloc(1, sizeof(*ep));

	if (!ep)
		return -ENOMEM;
	ep->hash = calloc(256, sizeof(*ep->hash));
	ep->hash_mask = 255;
	ep->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (!ep->hash || ep->epfd < 0) {
		int ret = ep->epfd < 0 ? -errno : -ENOMEM;
		if (ep->epfd >= 0)
			close(ep->epfd);
		free(ep->hash);
		free(ep);
		return ret;
	}
	l->ep = ep;
	return 0;
}

void loop_ep_destroy(struct loop *l)
{
	struct loop_ep *ep = l->ep;

	close(ep->epfd);
	for (unsigned i = 0; i < ep->n_chunks; i++)
		free(ep->chunks[i]);
	free(ep->chunks);
	free(ep->hash);
	free(ep->fds);
	free(ep->heap);
	free(ep->cq);
	free(ep);
	l->ep = NULL;
}

int loop_ep_fd(const struct loop *l)
{
	return l->ep->epfd;
}

struct io_uring_sqe *loop_ep_sqe(struct loop *l)
{
	struct loop_ep *ep = l->ep;
	struct io_uring_sqe *sqe;

	if (ep->n_stage == EP_STAGE)
		loop_ep_submit(l);
	sqe = &ep->stage[ep->n_stage++];
	memset(sqe, 0, sizeof(*sqe));
	return sqe;
}

void loop_ep_reserve(struct loop *l, unsigned n)
{
	if (EP_STAGE - l->ep->n_stage < n)
		loop_ep_submit(l);
}

void loop_ep_submit(struct loop *l)
{
	struct loop_ep *ep = l->ep;
	unsigned n = ep->n_stage;

	/* Interpreting runs no module code, so nothing is staged meanwhile. */
	ep->n_stage = 0;
	for (unsigned i = 0; i < n; i++) {
		const struct io_uring_sqe *sqe = &ep->stage[i], *lt = NULL;

		if (sqe->flags & IOSQE_IO_LINK) {
			if (i + 1 == n || ep->stage[i + 1].opcode != IORING_OP_LINK_TIMEOUT)
				unsupported(sqe, "a link to anything but a LINK_TIMEOUT");
			lt = &ep->stage[++i];
			if (lt->flags)
				unsupported(lt, "a LINK_TIMEOUT with SQE flags");
		} else if (sqe->opcode == IORING_OP_LINK_TIMEOUT) {
			unsupported(sqe, "a LINK_TIMEOUT linked to nothing");
		}
		submit_one(l, sqe, lt);
	}
}

/* A descriptor epoll reported: run what waits on it, then keep the registration honest. */
static void on_ready(struct loop_ep *ep, int fd, uint32_t ev)
{
	struct ep_fd *f = fd_at(ep, fd);
	uint32_t waited = 0;

	for (struct ep_op *op = f->head, *next; op; op = next) {
		next = op->fnext;
		waited |= op->events;
		if (ev & (op->events | EPOLLERR | EPOLLHUP))
			run_op(ep, op, ev);
	}
	/*
	 * Level-triggered, an event nobody waited for comes back every turn:
	 * narrow the registration to what was waited for, or remove it when
	 * nothing was (EPOLLERR and EPOLLHUP cannot be masked). What was
	 * served stays registered: it is usually re-armed at once.
	 */
	if (!waited)
		set_reg(ep, fd, f, 0);
	else if (ev & f->reg & ~waited & ~(uint32_t)(EPOLLERR | EPOLLHUP))
		set_reg(ep, fd, f, f->reg & waited);
}

int loop_ep_turn(struct loop *l, uint64_t wait_ms)
{
	struct loop_ep *ep = l->ep;
	struct epoll_event evs[EP_EVENTS];
	int n, timeout, ret = 0;
	unsigned count;

	loop_ep_submit(l);
	if (ep->cq_n) {
		timeout = 0;
	} else {
		if (ep->heap_n) {
			uint64_t due = ep->heap[0]->due_ms, now = clock_coarse_ms();
			uint64_t left = due > now ? due - now : 0;
			if (left < wait_ms)
				wait_ms = left;
		}
		timeout = wait_ms > 60000 ? 60000 : (int)wait_ms;
	}
	n = epoll_wait(ep->epfd, evs, EP_EVENTS, timeout);
	if (n < 0) {
		ret = errno == EINTR ? -EINTR : -errno;
		n = 0;
	}
	l->now_ms = clock_coarse_ms();
	l->turns++;
	for (int i = 0; i < n; i++)
		on_ready(ep, evs[i].data.fd, evs[i].events);
	while (ep->heap_n && ep->heap[0]->due_ms <= l->now_ms) {
		struct ep_op *op = ep->heap[0];
		struct ep_op *req = op->link;

		if (req) {
			/* A LINK_TIMEOUT expired: its request is cancelled, it reports -ETIME. */
			op->link = req->link = NULL;
			req->skip_success = false;
			finish(ep, req, -ECANCELED);
		}
		finish(ep, op, -ETIME);
	}
	/*
	 * The completions posted so far, as the ring's CQ holds them; those a
	 * module's submit posts while this runs wait for the next turn.
	 */
	count = ep->cq_n;
	while (count--) {
		struct io_uring_cqe cqe = ep->cq[ep->cq_head];

		ep->cq_head = (ep->cq_head + 1) % ep->cq_cap;
		ep->cq_n--;
		loop_dispatch(l, &cqe);
	}
	return ret;
}
