/* SPDX-License-Identifier: MIT */
/* UDP -> TUN: receive GRO trains, check and decrypt in parallel, handshakes under the exclusive lock. */
#include <errno.h>
#include <linux/virtio_net.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "device_internal.h"

/* Address and port equal (the roaming check; a is a peer endpoint, b a datagram source). */
static bool same_endpoint(const union wgconf_sockaddr *a, const struct sockaddr *b)
{
	if (a->sa.sa_family != b->sa_family)
		return false;
	if (b->sa_family == AF_INET) {
		const struct sockaddr_in *x = (const void *)b;
		return a->in4.sin_port == x->sin_port &&
		       a->in4.sin_addr.s_addr == x->sin_addr.s_addr;
	}
	const struct sockaddr_in6 *y = (const void *)b;
	return a->in6.sin6_port == y->sin6_port &&
	       !memcmp(&a->in6.sin6_addr, &y->sin6_addr, sizeof(y->sin6_addr));
}

static void tun_write(struct wg_worker *w, uint8_t *pkt, size_t len)
{
	if (w->dev->tun.vnet_hdr) {
		/* The WireGuard header before the plaintext is room for a zero virtio header. */
		pkt -= sizeof(struct virtio_net_hdr);
		memset(pkt, 0, sizeof(struct virtio_net_hdr));
		len += sizeof(struct virtio_net_hdr);
	}
	if (write(w->tun_fd, pkt, len) < 0)
		atomic_fetch_add(&w->dev->stats.rx_tun_errors, 1);
}

/* Roaming: the latest authenticated source is where we answer. Peer's lock or exclusive. */
static void roam(struct dev_peer *p, const union wgconf_sockaddr *src, socklen_t len)
{
	if (!p->has_endpoint || !same_endpoint(&p->endpoint, &src->sa)) {
		memset(&p->endpoint, 0, sizeof(p->endpoint));
		memcpy(&p->endpoint, src, len < sizeof(*src) ? len : sizeof(*src));
		p->has_endpoint = true;
	}
}

/* A datagram the shared pass left for the exclusive one. */
struct rx_later {
	const struct wg_rx_seg *seg;
	bool opened;         /* a decrypted data message waiting for finish(exclusive) */
	struct wg_rx_open o; /* when opened */
};

static void count_split(struct wg_device *d, const struct wg_rx_split_counts *c)
{
	if (c->trains)
		atomic_fetch_add(&d->stats.rx_gro_trains, c->trains);
	if (c->truncated)
		atomic_fetch_add(&d->stats.rx_truncated, c->truncated);
	if (c->runts)
		atomic_fetch_add(&d->stats.rx_gro_runts, c->runts);
	if (c->overflow)
		atomic_fetch_add(&d->stats.rx_gro_overflow, c->overflow);
}

/*
 * Receives up to RX_MSGS GRO trains from fd, decrypts them and writes to the
 * TUN. wg_rx_split() cuts the trains into at most RX_SEGS datagrams; each
 * ends in at most one of out[] or later[], so neither can overflow. Data
 * messages are decrypted under the shared lock, in parallel with the other
 * worker, and junk is dropped there too (wg_receive_precheck: bad type or
 * length, bad MAC1, cookie for nobody), so unauthenticated datagrams never
 * serialise the workers. Handshakes with a valid MAC1, cookie replies for
 * a handshake of ours and the first packet of a new session are set aside
 * and handled after the batch under the exclusive lock.
 */
int wg_dev_rx_round(struct wg_worker *w, int fd)
{
	struct wg_device *d = w->dev;
	struct mmsghdr mm[RX_MSGS];
	struct iovec iov[RX_MSGS];
	union wgconf_sockaddr src[RX_MSGS];
	char cbuf[RX_MSGS][CMSG_SPACE(sizeof(int))];
	struct wg_rx_seg seg[RX_SEGS];
	struct offload_pkt out[RX_SEGS];
	struct rx_later later[RX_SEGS];
	struct wg_rx_split_counts sc = {0};
	unsigned int nseg, nout = 0, nlater = 0;
	bool need_kick = false;
	struct wg_rx rx;
	uint64_t now;
	int n;

	for (unsigned int i = 0; i < RX_MSGS; i++) {
		iov[i].iov_base = w->rx_bufs + (size_t)i * RX_BUF;
		iov[i].iov_len = RX_BUF;
		memset(&mm[i], 0, sizeof(mm[i]));
		mm[i].msg_hdr.msg_name = &src[i];
		mm[i].msg_hdr.msg_namelen = sizeof(src[i]);
		mm[i].msg_hdr.msg_iov = &iov[i];
		mm[i].msg_hdr.msg_iovlen = 1;
		mm[i].msg_hdr.msg_control = cbuf[i];
		mm[i].msg_hdr.msg_controllen = sizeof(cbuf[i]);
	}
	n = recvmmsg(fd, mm, RX_MSGS, MSG_DONTWAIT, NULL);
	if (n <= 0)
		return n < 0 ? -errno : -EAGAIN;
	now = wg_dev_now(d);
	nseg = wg_rx_split(mm, (unsigned int)n, seg, RX_SEGS, &sc);
	count_split(d, &sc);

	wg_dev_lock_shared(d);
	for (unsigned int k = 0; k < nseg; k++) {
		const struct wg_rx_seg *s = &seg[k];
		struct rx_later *l = &later[nlater];
		enum wg_message_type type = wg_receive_precheck(&d->id, s->pkt, s->len);
		struct dev_peer *p;
		int r;

		if (type == WG_MSG_INVALID)
			continue; /* counted */
		*l = (struct rx_later){.seg = s};
		if (type != WG_MSG_DATA) {
			nlater++;
			continue;
		}
		if (wg_receive_data_open(&d->id, s->pkt, s->len, now, &l->o, &rx) < 0)
			continue;
		p = l->o.kp->entry.peer->priv;
		pthread_mutex_lock(&p->lock);
		r = wg_receive_data_finish(&d->id, s->pkt, s->len, &l->o, false, now, &rx);
		if (r == 0)
			roam(p, &src[s->msg], mm[s->msg].msg_hdr.msg_namelen);
		need_kick |= p->core.pending_actions != 0;
		pthread_mutex_unlock(&p->lock);
		if (r == -EWOULDBLOCK) {
			l->opened = true;
			nlater++;
		} else if (r == 0 && rx.action == WG_RX_DATA) {
			atomic_fetch_add(&d->stats.rx_packets, 1);
			out[nout].data = rx.data;
			out[nout++].len = rx.len;
		}
	}
	wg_dev_unlock(d);

	if (nlater) {
		atomic_fetch_add(&d->stats.rx_exclusive, 1);
		wg_dev_lock_exclusive(d);
		for (unsigned int k = 0; k < nlater; k++) {
			struct rx_later *l = &later[k];
			const struct wg_rx_seg *s = l->seg;
			struct dev_peer *p;
			int r;

			if (l->opened)
				r = wg_receive_data_finish(&d->id, s->pkt, s->len, &l->o, true, now,
				                           &rx);
			else
				r = wg_receive(&d->id, s->pkt, s->len, &src[s->msg].sa, now, &rx);
			if (r < 0)
				continue;
			if (rx.action == WG_RX_REPLY)
				wg_dev_send_one(w, &src[s->msg], rx.data, rx.len);
			if (!rx.peer)
				continue;
			p = rx.peer->priv;
			roam(p, &src[s->msg], mm[s->msg].msg_hdr.msg_namelen);
			if (rx.action == WG_RX_DATA) {
				atomic_fetch_add(&d->stats.rx_packets, 1);
				out[nout].data = rx.data;
				out[nout++].len = rx.len;
			}
			wg_dev_tick_peer(w, p, now);
		}
		wg_dev_unlock(d);
	}
	if (need_kick)
		wg_dev_kick(d);

	if (d->tun.vnet_hdr) {
		offload_coalesce_write(w->tun_fd, out, nout, w->tun_out);
	} else {
		for (unsigned int i = 0; i < nout; i++)
			tun_write(w, out[i].data, out[i].len);
	}
	return 0;
}
