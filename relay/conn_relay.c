/* SPDX-License-Identifier: MIT */
/* The relay between two connected legs: a pump per direction, half-close, and what an error in one direction leaves to the other. */
#include <errno.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>

#include "conn_internal.h"
#include "log.h"

void conn_dir_release(struct conn *c, int d)
{
	struct worker *w = conn_worker(c);

	splice_dir_release(&w->pipes, &w->bufs, &c->dir[d]);
	xform_dir_release(&w->xbufs, &c->dir[d]);
}

/*
 * Bytes our kernel still holds for the peer of fd (unsent, or sent and not
 * acknowledged). A leg that was reset has none it can deliver, but SIOCOUTQ
 * still counts them (it is write_seq - snd_una, which the reset does not
 * rewind): without the state check, a client that aborted a download held
 * its connection, and the target's bytes in our receive buffers, for the
 * whole linger time instead of passing the reset on at once.
 */
static bool unacked(int fd)
{
	struct tcp_info ti;
	socklen_t len = sizeof(ti);
	int n = 0;

	if (fd < 0)
		return false;
	if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) == 0 && ti.tcpi_state == TCP_CLOSE)
		return false;
	return ioctl(fd, SIOCOUTQ, &n) == 0 && n > 0;
}

/*
 * Both directions have ended, at least one with an error, so the reset is
 * passed on. A reset throws away what the kernel still holds for the peer,
 * so first let those bytes reach it: check every CONN_FLUSH_MS, until
 * nothing is left unacknowledged or the linger time is over.
 */
void conn_relay_end_after_error(struct conn *c)
{
	struct worker *w = conn_worker(c);

	if (w->loop.now_ms < c->linger_due_ms &&
	    (unacked(c->leg[LEG_IN].fd) || unacked(c->leg[LEG_OUT].fd))) {
		loop_timer_arm(&w->loop, &w->flush_tq, &c->timer);
		return;
	}
	conn_close(c, true);
}

/*
 * A pump failed in direction d. A failed write means dst can take nothing
 * more: d's bytes are undeliverable, and the other direction, which reads
 * from that peer, still delivers what it holds (a server's answer to an
 * upload it cut short). A failed read (src reset) still lets the bytes d
 * already holds go to dst, while the other direction, which writes to src,
 * is over. What is left runs for at most CONN_LINGER_MS, and the reset is
 * passed on when both directions have ended.
 */
static void relay_failed(struct conn *c, int d, int err)
{
	struct worker *w = conn_worker(c);
	struct pump_dir *dir = &c->dir[d];

	if (err == -EMFILE || err == -ENFILE || err == -ENOMEM) {
		w->stats.no_pipe++;
		log_debug_rl("relay ended: no pipe or buffer: %s", strerror(-err));
		conn_close(c, true);
		return;
	}
	if (!c->rst) {
		w->stats.resets++;
		log_debug_rl("relay ended: %s", strerror(-err));
		c->rst = true;
		c->linger_due_ms = w->loop.now_ms + CONN_LINGER_MS;
		loop_timer_arm(&w->loop, &w->linger_tq, &c->timer);
	}
	if (dir->wr_err) {
		conn_dir_release(c, d);
		dir->done = true;
	} else {
		/* The other direction writes to the peer that reset: it can deliver nothing. */
		struct pump_dir *other = &c->dir[!d];
		if (!other->done) {
			if (c->ops[!d])
				loop_cancel(&w->loop, c->ops[!d]);
			c->ops[!d] = 0;
			conn_dir_release(c, !d);
			other->done = true;
		}
		dir->eof = true;
		if (dir->held) {
			conn_arm_poll(c, d, d ? OP_DIR1_POLL : OP_DIR0_POLL, c->leg[!d].fd,
			              POLLOUT);
			return;
		}
		dir->done = true;
	}
	if (c->dir[!d].done)
		conn_relay_end_after_error(c);
}

void conn_relay_ready(struct conn *c, int d)
{
	struct worker *w = conn_worker(c);
	struct pump_dir *dir = &c->dir[d];
	int src = c->leg[d].fd, dst = c->leg[!d].fd;
	int err = 0;
	uint64_t before = dir->bytes, copied = dir->copied;
	bool last = c->dir[!d].done;
	enum pump_next next;

	if (dir->done)
		return; /* a poll that completed as relay_failed() cancelled it */
	if (c->leg[d].x || c->leg[!d].x) {
		/* A leg transforms: src's opens what it reads, dst's seals what it gets. */
		struct xform_ctx ctx = {.unix_s = (uint64_t)time(NULL)};

		next = xform_pump(&w->xbufs, dir, src, dst, c->leg[d].x, c->leg[!d].x, last,
		                  PUMP_BUDGET, &ctx, &err);
	} else if (c->spliced) {
		next = splice_pump(&w->pipes, &w->bufs, dir, src, dst, last, &err);
	} else {
		next = buf_pump(&w->bufs, dir, src, dst, last, PUMP_BUDGET, &err);
	}

	conn_count(c, d, dir->bytes - before, dir->copied - copied);
	if (dir->bytes != before && !c->rst)
		loop_timer_touch(&w->loop, &w->idle_tq, &c->timer);
	switch (next) {
	case PUMP_WAIT_SRC:
		conn_arm_poll(c, d, d ? OP_DIR1_POLL : OP_DIR0_POLL, src, POLLIN);
		return;
	case PUMP_WAIT_DST:
		conn_arm_poll(c, d, d ? OP_DIR1_POLL : OP_DIR0_POLL, dst, POLLOUT);
		return;
	case PUMP_DONE:
		if (!c->dir[!d].done)
			return; /* half-close: the other direction keeps flowing */
		if (c->rst) {
			conn_relay_end_after_error(c);
			return;
		}
		w->stats.completed++;
		conn_close(c, false);
		return;
	case PUMP_ERROR:
		relay_failed(c, d, err);
		return;
	}
}
