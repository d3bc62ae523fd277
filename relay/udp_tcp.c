/* SPDX-License-Identifier: MIT */
/* UDP-in-TCP (hev-socks5's FWD UDP): datagrams framed on the client's TCP connection, for an association. */
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
 * frame that does not parse leaves the stream out of step: the connection
 * ends. Replies are written whole or not at all: a short write keeps the
 * rest in tcp_out and the poll for POLLOUT finishes it, and until it has,
 * replies are dropped (udp_send_errors), as a full UDP socket would drop
 * them; nothing is ever queued without bound.
 */

/* Every whole frame in tcp_in, sent on; the start of the next kept. false: close. */
static bool frames(struct udp_assoc *a)
{
	struct worker *w = a->w;
	size_t off = 0;

	for (;;) {
		struct proto_target t;
		size_t hl = 0, dl = 0;
		enum socks5_udp_error e =
		        socks5_tcpudp_parse(a->tcp_in + off, a->tcp_in_len - off, &t, &hl, &dl);

		if (e == SOCKS5_UDP_AGAIN)
			break;
		if (e != SOCKS5_UDP_OK) {
			w->stats.udp_malformed++;
			log_debug_rl("udp-in-tcp: bad frame (%s): closing",
			             socks5_udp_error_name(e));
			return false;
		}
		udp_send_up(a, &t, a->tcp_in + off + hl, dl);
		off += hl + dl;
		if (a->obj.closed)
			return false;
	}
	/* What is left is the start of one frame: it fits (UDP_TCP_IN_MAX). */
	memmove(a->tcp_in, a->tcp_in + off, a->tcp_in_len - off);
	a->tcp_in_len -= off;
	return true;
}

bool udp_tcp_early(struct udp_assoc *a, const uint8_t *d, size_t n)
{
	if (n > UDP_TCP_IN_MAX)
		return false;
	memcpy(a->tcp_in, d, n);
	a->tcp_in_len = n;
	return frames(a);
}

bool udp_tcp_readable(struct udp_assoc *a)
{
	struct worker *w = a->w;

	for (int round = 0; round < 16; round++) {
		size_t room = UDP_TCP_IN_MAX - a->tcp_in_len;
		ssize_t n = recv(a->tcp_fd, a->tcp_in + a->tcp_in_len, room, MSG_DONTWAIT);

		if (n == 0)
			return false;
		if (n < 0)
			return errno == EAGAIN || errno == EINTR;
		a->tcp_in_len += (size_t)n;
		loop_timer_touch(&w->loop, &w->udp_tq, &a->timer);
		if (!frames(a))
			return false;
		if ((size_t)n < room)
			return true; /* short read: the socket is (very likely) empty */
	}
	return true;
}

void udp_tcp_down(struct udp_assoc *a, const uint8_t *d, size_t n,
                  const struct sockaddr_storage *src)
{
	struct worker *w = a->w;
	uint8_t hdr[SOCKS5_UDP_HDR_MAX];
	struct iovec iov[2] = {{.iov_base = hdr}, {.iov_base = (void *)d, .iov_len = n}};
	struct msghdr mh = {.msg_iov = iov, .msg_iovlen = 2};
	size_t total, rest;
	ssize_t sent;

	iov[0].iov_len = socks5_tcpudp_put_header_sa(hdr, (const struct sockaddr *)src, n);
	if (!iov[0].iov_len || a->tcp_out_len) {
		w->stats.udp_send_errors++; /* too large to frame, or the last frame is still going */
		return;
	}
	total = iov[0].iov_len + n;
	sent = sendmsg(a->tcp_fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
	if (sent < 0 && (errno == EAGAIN || errno == EINTR))
		sent = 0;
	if (sent < 0) {
		w->stats.udp_send_errors++;
		return; /* the connection's own poll sees the error and ends it */
	}
	w->stats.udp_down++;
	if ((size_t)sent == total)
		return;
	if (sent == 0) {
		/* Nothing of it went: drop it whole, the stream stays in step. */
		w->stats.udp_down--;
		w->stats.udp_send_errors++;
		return;
	}
	/* Part of the frame went: the rest must follow before anything else. */
	if (!a->tcp_out && !(a->tcp_out = malloc(UDP_TCP_OUT_MAX))) {
		udp_assoc_close(a);
		return;
	}
	rest = total - (size_t)sent;
	if ((size_t)sent < iov[0].iov_len) {
		size_t hl = iov[0].iov_len - (size_t)sent;

		memcpy(a->tcp_out, hdr + sent, hl);
		memcpy(a->tcp_out + hl, d, n);
	} else {
		memcpy(a->tcp_out, d + ((size_t)sent - iov[0].iov_len), rest);
	}
	a->tcp_out_len = rest;
	a->tcp_out_off = 0;
	udp_arm(a, UDP_OP_TCP_OUT, a->tcp_fd, POLLOUT);
}

void udp_tcp_writable(struct udp_assoc *a)
{
	ssize_t n = send(a->tcp_fd, a->tcp_out + a->tcp_out_off, a->tcp_out_len,
	                 MSG_DONTWAIT | MSG_NOSIGNAL);

	if (n < 0 && errno != EAGAIN && errno != EINTR) {
		udp_assoc_close(a);
		return;
	}
	if (n > 0) {
		a->tcp_out_off += (size_t)n;
		a->tcp_out_len -= (size_t)n;
	}
	if (a->tcp_out_len)
		udp_arm(a, UDP_OP_TCP_OUT, a->tcp_fd, POLLOUT);
}
