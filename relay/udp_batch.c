/* SPDX-License-Identifier: MIT */
/* Datagrams in and out in batches: recvmmsg(2) into the worker's scratch, and what one receive batch produced out with one sendmmsg(2) per socket. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "udp_session.h"
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

uint8_t *udp_scratch(struct worker *w)
{
	if (!w->udp_buf)
		w->udp_buf = malloc((size_t)UDP_BATCH * UDP_SLOT);
	return w->udp_buf;
}

void udp_set_buffer(struct worker *w, int fd)
{
	int n = (int)w->cfg->udp_buffer;

	if (n)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &n, sizeof(n));
}

/*
 * What fd holds, UDP_BATCH datagrams per recvmmsg(2); callers take at most
 * four batches before they poll again (the other sockets get their turn).
 */
int udp_recv_batch(struct worker *w, int fd, struct udp_rx *rx,
                   uint8_t (*ctl)[CMSG_SPACE(UDP_RX_CTL)])
{
	uint8_t *buf = udp_scratch(w);

	if (!buf)
		return -1;
	for (int i = 0; i < UDP_BATCH; i++) {
		rx->iov[i] =
		        (struct iovec){.iov_base = buf + (size_t)i * UDP_SLOT, .iov_len = UDP_SLOT};
		rx->mm[i].msg_hdr = (struct msghdr){.msg_name = &rx->src[i],
		                                    .msg_namelen = sizeof(rx->src[i]),
		                                    .msg_iov = &rx->iov[i],
		                                    .msg_iovlen = 1,
		                                    .msg_control = ctl ? ctl[i] : NULL,
		                                    .msg_controllen = ctl ? sizeof(ctl[i]) : 0};
	}
	return recvmmsg(fd, rx->mm, UDP_BATCH, MSG_DONTWAIT, NULL);
}
