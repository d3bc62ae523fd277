/* SPDX-License-Identifier: MIT */
/* UDP-in-TCP (hev-socks5's FWD UDP): datagrams framed on a TCP stream, both for a client's association and for an upstream leg. */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "log.h"
#include "socks5_udp.h"
#include "udp.h"
#include "worker.h"

/*
 * The frame (socks5_udp.h): DATLEN(2) HDRLEN(1) ATYP ADDR PORT DATA. A
 * frame that does not parse leaves the stream out of step: the stream
 * ends. Frames are written whole or not at all: a short write keeps the
 * rest (udp_frame_out) and a poll for POLLOUT finishes it, and until it
 * has, new frames are dropped (udp_send_errors), as a full UDP socket
 * would drop them; nothing is ever queued without bound.
 */

/* Every whole frame in b[0..len) to fn; *used: where the first incomplete one starts. */
static bool parse(struct worker *w, const uint8_t *b, size_t len, size_t *used, udp_frame_fn *fn,
                  void *ctx)
{
	size_t off = 0;

	for (;;) {
		struct proto_target t;
		size_t hl = 0, dl = 0;
		enum socks5_udp_error e = socks5_tcpudp_parse(b + off, len - off, &t, &hl, &dl);

		if (e == SOCKS5_UDP_AGAIN)
			break;
		if (e != SOCKS5_UDP_OK) {
			w->stats.udp_malformed++;
			log_debug_rl("udp-in-tcp: bad frame (%s): closing",
			             socks5_udp_error_name(e));
			return false;
		}
		if (!fn(ctx, &t, b + off + hl, dl))
			return false;
		off += hl + dl;
	}
	*used = off;
	return true;
}

/* Keep the start of a frame, rest octets at p, in the stream's own buffer (malloc'd for it). */
static bool keep_rest(struct udp_frame_in *in, const uint8_t *p, size_t rest)
{
	if (!rest) {
		free(in->buf); /* an idle stream holds no buffer */
		in->buf = NULL;
		in->len = 0;
		return true;
	}
	if (!in->buf && !(in->buf = malloc(UDP_TCP_IN_MAX)))
		return false;
	memmove(in->buf, p, rest);
	in->len = rest;
	return true;
}

bool udp_frames_parse(struct worker *w, struct udp_frame_in *in, const uint8_t *d, size_t n,
                      udp_frame_fn *fn, void *ctx)
{
	size_t used = 0;

	bool ok = n <= UDP_TCP_IN_MAX && parse(w, d, n, &used, fn, ctx);

	udp_tx_flush(w); /* the datagrams point into d */
	return ok && keep_rest(in, d + used, n - used);
}

/*
 * A stream with nothing pending reads into the worker's buffer and parses
 * there; only the start of a frame that has not all arrived is copied to
 * the stream's own. So a stream of whole frames, and an idle one, costs no
 * buffer of its own.
 */
bool udp_frames_read(struct worker *w, int fd, struct udp_frame_in *in, udp_frame_fn *fn, void *ctx)
{
	if (!w->udp_tcp_buf && !(w->udp_tcp_buf = malloc(UDP_TCP_IN_MAX)))
		return false;
	for (int round = 0; round < 16; round++) {
		bool shared = in->len == 0;
		uint8_t *b = shared ? w->udp_tcp_buf : in->buf;
		size_t have = shared ? 0 : in->len, room = UDP_TCP_IN_MAX - have, used = 0;
		ssize_t n = recv(fd, b + have, room, MSG_DONTWAIT);

		if (n == 0)
			return false;
		if (n < 0)
			return errno == EAGAIN || errno == EINTR;
		have += (size_t)n;
		if (!shared)
			in->len = have;
		bool ok = parse(w, b, have, &used, fn, ctx);

		udp_tx_flush(w); /* the datagrams point into b */
		if (!ok || !keep_rest(in, b + used, have - used))
			return false;
		if ((size_t)n < room)
			return true; /* short read: the socket is (very likely) empty */
	}
	return true;
}

int udp_frame_write(struct udp_frame_out *o, int fd, const uint8_t *hdr, size_t hl,
                    const uint8_t *d, size_t n)
{
	struct iovec iov[2] = {{.iov_base = (void *)hdr, .iov_len = hl},
	                       {.iov_base = (void *)d, .iov_len = n}};
	struct msghdr mh = {.msg_iov = iov, .msg_iovlen = 2};
	size_t total = hl + n;
	ssize_t sent;

	if (!hl || o->len)
		return 0; /* too large to frame, or the last frame is still going */
	sent = sendmsg(fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
	if (sent < 0 && (errno == EAGAIN || errno == EINTR))
		return 0; /* nothing of it went: dropped whole, the stream stays in step */
	if (sent < 0)
		return -1;
	if ((size_t)sent == total)
		return 1;
	if (sent == 0)
		return 0;
	/* Part of the frame went: the rest must follow before anything else. */
	if (!o->buf && !(o->buf = malloc(UDP_TCP_OUT_MAX)))
		return -2;
	if ((size_t)sent < hl) {
		memcpy(o->buf, hdr + sent, hl - (size_t)sent);
		memcpy(o->buf + hl - (size_t)sent, d, n);
	} else {
		memcpy(o->buf, d + ((size_t)sent - hl), total - (size_t)sent);
	}
	o->len = total - (size_t)sent;
	o->off = 0;
	return 2;
}

int udp_frame_flush(struct udp_frame_out *o, int fd)
{
	ssize_t n = send(fd, o->buf + o->off, o->len, MSG_DONTWAIT | MSG_NOSIGNAL);

	if (n < 0 && errno != EAGAIN && errno != EINTR)
		return -1;
	if (n > 0) {
		o->off += (size_t)n;
		o->len -= (size_t)n;
	}
	if (o->len)
		return 2;
	free(o->buf); /* rarely needed: not kept */
	o->buf = NULL;
	return 1;
}

/* ---- the client's side: its association's datagrams on its own connection ---- */

static bool frame_up(void *ctx, const struct proto_target *t, const uint8_t *d, size_t n)
{
	struct udp_assoc *a = ctx;

	udp_sess_send(&a->s, t, d, n);
	return !a->s.obj.closed;
}

bool udp_tcp_early(struct udp_assoc *a, const uint8_t *d, size_t n)
{
	return udp_frames_parse(a->s.w, &a->tcp_in, d, n, frame_up, a);
}

bool udp_tcp_readable(struct udp_assoc *a)
{
	bool ok = udp_frames_read(a->s.w, a->tcp_fd, &a->tcp_in, frame_up, a);

	if (!a->s.obj.closed)
		udp_sess_touch(&a->s);
	return ok;
}

void udp_tcp_down(struct udp_assoc *a, const uint8_t *hdr, size_t hl, const uint8_t *d, size_t n)
{
	struct worker *w = a->s.w;
	int r = udp_frame_write(&a->tcp_out, a->tcp_fd, hdr, hl, d, n);

	if (r == -2) {
		udp_assoc_close(a); /* no memory for the rest of a frame */
		return;
	}
	if (r <= 0) {
		/* The connection's own poll sees a failed stream and ends it. */
		w->stats.udp_send_errors++;
		return;
	}
	w->stats.udp_down++;
	if (r == 2)
		udp_assoc_arm(a, UDP_OP_TCP_OUT, a->tcp_fd, POLLOUT);
}

void udp_tcp_writable(struct udp_assoc *a)
{
	int r = udp_frame_flush(&a->tcp_out, a->tcp_fd);

	if (r < 0)
		udp_assoc_close(a);
	else if (r == 2)
		udp_assoc_arm(a, UDP_OP_TCP_OUT, a->tcp_fd, POLLOUT);
}
