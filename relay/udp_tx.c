/* SPDX-License-Identifier: MIT */
/* Datagrams out in batches: what one receive batch produced leaves with one sendmmsg(2) per socket. */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include "udp.h"
#include "worker.h"

/*
 * A receive batch (recvmmsg: up to UDP_BATCH datagrams) mostly goes out
 * on one socket: every datagram from a client to the direct outbound's
 * socket of its family, every reply to the client's relay socket. So
 * udp_tx_add() queues, and the code that took the batch calls
 * udp_tx_flush() before the buffers the payloads point into are reused:
 * one sendmmsg per socket and batch instead of a sendto per datagram.
 * A datagram the kernel refuses (a full buffer, an unreachable network) is
 * dropped and counted; the rest of the batch still goes.
 */

void udp_tx_flush(struct worker *w)
{
	struct udp_tx *q = &w->udp_tx;
	unsigned i = 0;

	while (i < q->n) {
		int r = sendmmsg(q->fd, q->mm + i, q->n - i, MSG_DONTWAIT);

		if (r <= 0) {
			w->stats.udp_send_errors++;
			i++;
			continue;
		}
		for (int k = 0; k < r; k++, i++) {
			if (q->down[i])
				w->stats.udp_down++;
			else
				w->stats.udp_up++;
		}
	}
	q->n = 0;
	q->fd = -1;
}

void udp_tx_add(struct worker *w, int fd, const void *to, socklen_t to_len, const uint8_t *hdr,
                size_t hl, const uint8_t *d, size_t n, bool down)
{
	struct udp_tx *q = &w->udp_tx;
	unsigned i;

	if (q->n && (q->fd != fd || q->n == UDP_TX_MAX))
		udp_tx_flush(w);
	i = q->n++;
	q->fd = fd;
	q->down[i] = down;
	if (to_len)
		memcpy(&q->to[i], to, to_len);
	if (hl)
		memcpy(q->hdr[i], hdr, hl);
	q->iov[i][0] = (struct iovec){.iov_base = q->hdr[i], .iov_len = hl};
	q->iov[i][1] = (struct iovec){.iov_base = (void *)d, .iov_len = n};
	q->mm[i].msg_hdr = (struct msghdr){.msg_name = to_len ? &q->to[i] : NULL,
	                                   .msg_namelen = to_len,
	                                   .msg_iov = q->iov[i],
	                                   .msg_iovlen = 2};
}
