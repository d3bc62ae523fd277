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
#include "loop_epoll_internal.h"

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

/* A programming error, not an input: see the top of this file. */
__attribute__((noreturn)) static void unsupported(const struct io_uring_sqe *sqe, const char *what)
{
	log_error("epoll backend: %s (opcode %u, SQE flags %#x, tag kind %u op %u) is not "
	          "supported: aborting",
	          what, sqe->opcode, sqe->flags, loop_tag_kind(sqe->user_data),
	          loop_tag_op(sqe->user_data));
	abort();
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
			ep_post(ep, op->ud, (int)res, IORING_CQE_F_MORE);
			return false;
		}
		ep_finish(ep, op, (int)res);
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
				ep_finish(ep, op, fd < 0 ? -errno : fd);
				return true;
			}
			ep_post(ep, op->ud, fd, IORING_CQE_F_MORE);
		}
		return false; /* more next turn: the other descriptors get their turn too */
	case IORING_OP_CONNECT: {
		int err = 0;
		socklen_t len = sizeof(err);

		if (getsockopt(op->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
			err = errno;
		if (!err && !(ev & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
			return false;
		ep_finish(ep, op, -err);
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
			ep_finish(ep, op,
			          n < 0 ? (op->done ? (int)op->done : -errno)
			                : (int)(op->done + n));
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
		ep_finish(ep, op, n < 0 ? -errno : (int)n);
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
		ep_finish(ep, op, n < 0 ? -errno : (int)n);
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
	struct ep_op *op = ep_find(ep, ud);

	if (!op || (polls_only && op->opcode != IORING_OP_POLL_ADD))
		return -ENOENT;
	op->skip_success = false;
	ep_finish(ep, op, -ECANCELED);
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
			ep_post(ep, sqe->user_data, 0, 0);
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
			ep_post(ep, sqe->user_data, res, 0);
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

	op = ep_new_op(ep, sqe);
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
		ep_timer_add(ep, op,
		             sqe->timeout_flags & IORING_TIMEOUT_ABS
		                     ? ms_of(sqe)
		                     : clock_coarse_ms() + ms_of(sqe));
		return;
	}
	if (lt) {
		struct ep_op *t;

		if (op->multishot)
			unsupported(sqe, "a multishot request in a link");
		if (lt->timeout_flags)
			unsupported(lt, "a LINK_TIMEOUT with flags");
		t = ep_new_op(ep, lt);
		t->link = op;
		op->link = t;
		ep_timer_add(ep, t, clock_coarse_ms() + ms_of(lt));
	}
	if (sqe->opcode == IORING_OP_CONNECT) {
		/* The kernel copies the address now, as the ring does: the caller may free it. */
		if (connect(op->fd, op->addr, (socklen_t)sqe->off) == 0) {
			ep_finish(ep, op, 0);
			return;
		}
		if (errno != EINPROGRESS && errno != EINTR) {
			ep_finish(ep, op, -errno);
			return;
		}
	} else if (sqe->opcode != IORING_OP_POLL_ADD && !poll_first && run_op(ep, op, 0)) {
		return; /* done at once, as a non-blocking call could */
	}
	if (!ep_wait_on(ep, op, events_of(op), &always_ready) && always_ready) {
		/* A regular file: never "not ready"; a poll on one completes once. */
		op->multishot = false;
		if (!run_op(ep, op, EPOLLIN | EPOLLOUT))
			ep_finish(ep, op, -EAGAIN);
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
	struct ep_fd *f = ep_fd_at(ep, fd);
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
		ep_set_reg(ep, fd, f, 0);
	else if (ev & f->reg & ~waited & ~(uint32_t)(EPOLLERR | EPOLLHUP))
		ep_set_reg(ep, fd, f, f->reg & waited);
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
			ep_finish(ep, req, -ECANCELED);
		}
		ep_finish(ep, op, -ETIME);
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
