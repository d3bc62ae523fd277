/* SPDX-License-Identifier: MIT */
/* TUN -> UDP: read a batch (or cut a TSO packet), route, seal in parallel, send; the per-peer queue. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "device_internal.h"

void wg_dev_queue_free(struct dev_peer *p)
{
	while (p->qlen) {
		struct qpkt *q = &p->queue[p->qhead];

		free(q->buf);
		q->buf = NULL;
		p->qhead = (p->qhead + 1) % PEER_QUEUE;
		p->qlen--;
	}
}

/* Keeps a copy of an IP packet until a session exists. Called with the peer's lock held. */
static void queue_packet(struct wg_worker *w, struct dev_peer *p, const uint8_t *pkt, size_t len)
{
	struct qpkt *q;

	if (p->qlen == PEER_QUEUE) {
		/* Like the kernel: the oldest packet makes room for the newest. */
		free(p->queue[p->qhead].buf);
		p->queue[p->qhead].buf = NULL;
		p->qhead = (p->qhead + 1) % PEER_QUEUE;
		p->qlen--;
		atomic_fetch_add(&w->dev->stats.tx_queue_full, 1);
	}
	q = &p->queue[(p->qhead + p->qlen) % PEER_QUEUE];
	q->buf = malloc(w->slot_size);
	if (!q->buf)
		return;
	memcpy(q->buf + WG_MSG_DATA_HEADER_LEN, pkt, len);
	q->len = len;
	p->qlen++;
}

/* Carries out a peer's WG_ACT_* mask. Called with the device lock exclusive (rare path). */
void wg_dev_peer_actions(struct wg_worker *w, struct dev_peer *p, unsigned int act, uint64_t now)
{
	uint8_t buf[WG_MSG_DATA_HEADER_LEN + WG_AEAD_TAG_LEN + WG_MSG_PADDING];

	if (act & WG_ACT_SEND_INITIATION) {
		uint8_t init[WG_MSG_INITIATION_LEN];

		if (p->has_endpoint && wg_peer_create_initiation(&p->core, init, now) == 0)
			wg_dev_send_one(w, &p->endpoint, init, sizeof(init));
	}
	if (act & WG_ACT_DROP_QUEUE)
		wg_dev_queue_free(p);
	if ((act & WG_ACT_FLUSH_QUEUE) && p->qlen) {
		while (p->qlen && p->has_endpoint) {
			struct qpkt *q = &p->queue[p->qhead];
			long n = wg_peer_encrypt(&p->core, q->buf, q->len, w->slot_size, now);

			if (n == -ENOKEY)
				break;
			if (n > 0)
				wg_dev_send_one(w, &p->endpoint, q->buf, (size_t)n);
			free(q->buf);
			q->buf = NULL;
			p->qhead = (p->qhead + 1) % PEER_QUEUE;
			p->qlen--;
		}
		act &= ~(unsigned int)WG_ACT_SEND_KEEPALIVE;
	}
	if ((act & WG_ACT_SEND_KEEPALIVE) && p->has_endpoint) {
		long n = wg_peer_encrypt(&p->core, buf, 0, sizeof(buf), now);

		if (n > 0)
			wg_dev_send_one(w, &p->endpoint, buf, (size_t)n);
	}
}

void wg_dev_tick_peer(struct wg_worker *w, struct dev_peer *p, uint64_t now)
{
	unsigned int act = wg_peer_tick(&p->core, now);

	if (act)
		wg_dev_peer_actions(w, p, act, now);
}

struct tx_run {
	struct dev_peer *peer;
	unsigned int first, n; /* slots [first, first + n) */
	struct wg_keypair *kp; /* stays valid while the device lock is held shared */
	uint64_t counter;
	bool sealed;
	union wgconf_sockaddr ep;
};

/*
 * Seals and sends the n packets sitting in the worker's slots (each at
 * slot + WG_MSG_DATA_HEADER_LEN, lengths in len[]). The device lock is held
 * shared throughout (keypairs cannot be freed meanwhile), a peer's lock only
 * to reserve a run of nonces; the ChaCha20-Poly1305 work and the sendmsg
 * calls run in parallel with the other worker.
 */
static void tx_packets(struct wg_worker *w, size_t *len, unsigned int n)
{
	struct wg_device *d = w->dev;
	struct tx_run runs[TX_BATCH];
	struct iovec iov[TX_BATCH];
	unsigned int nruns = 0;
	uint64_t now = wg_dev_now(d);
	bool need_kick = false;

	wg_dev_lock_shared(d);
	for (unsigned int i = 0; i < n; i++) {
		uint8_t *pkt = w->slots + (size_t)i * w->slot_size + WG_MSG_DATA_HEADER_LEN;
		struct wg_peer *cp = wg_allowedips_lookup_dst(&d->id.allowedips, pkt, len[i]);
		struct dev_peer *p = cp ? cp->priv : NULL;

		if (!p) {
			atomic_fetch_add(&d->stats.tx_no_peer, 1);
			len[i] = 0;
			continue;
		}
		if (nruns && runs[nruns - 1].peer == p &&
		    runs[nruns - 1].first + runs[nruns - 1].n == i) {
			runs[nruns - 1].n++;
			continue;
		}
		runs[nruns++] = (struct tx_run){.peer = p, .first = i, .n = 1};
	}
	for (unsigned int r = 0; r < nruns; r++) {
		struct tx_run *run = &runs[r];
		struct dev_peer *p = run->peer;

		pthread_mutex_lock(&p->lock);
		if (p->has_endpoint && wg_peer_encrypt_prepare_n(&p->core, now, run->n, &run->kp,
		                                                 &run->counter) == 0) {
			run->ep = p->endpoint;
			run->sealed = true;
			for (unsigned int i = run->first; i < run->first + run->n; i++)
				p->core.tx_bytes += len[i] + WG_MSG_DATA_OVERHEAD;
		} else {
			if (!p->has_endpoint)
				atomic_fetch_add(&d->stats.tx_no_endpoint, run->n);
			for (unsigned int i = run->first; i < run->first + run->n; i++)
				queue_packet(w, p,
				             w->slots + (size_t)i * w->slot_size +
				                     WG_MSG_DATA_HEADER_LEN,
				             len[i]);
		}
		/* A handshake to start or a rekey: the control thread does it. */
		need_kick |= p->core.pending_actions != 0;
		pthread_mutex_unlock(&p->lock);
	}

	for (unsigned int r = 0; r < nruns; r++) {
		struct tx_run *run = &runs[r];
		unsigned int k = 0;

		if (!run->sealed)
			continue;
		for (unsigned int i = run->first; i < run->first + run->n; i++) {
			uint8_t *slot = w->slots + (size_t)i * w->slot_size;
			long m = wg_keypair_seal(run->kp, run->counter + (i - run->first), slot,
			                         len[i], w->slot_size, d->mtu);

			if (m < 0) {
				atomic_fetch_add(&d->stats.tx_bad_packet, 1);
				continue;
			}
			iov[k].iov_base = slot;
			iov[k++].iov_len = (size_t)m;
		}
		atomic_fetch_add(&d->stats.tx_packets, k);
		wg_dev_send_batch(w, &run->ep, iov, k);
	}
	wg_dev_unlock(d);
	if (need_kick)
		wg_dev_kick(d);
}

/* Reads up to TX_BATCH packets (or one offloaded super-packet) and sends them. -EAGAIN: idle. */
int wg_dev_tx_round(struct wg_worker *w)
{
	struct wg_device *d = w->dev;
	size_t len[TX_BATCH];
	unsigned int n = 0;

	if (d->tun.vnet_hdr) {
		ssize_t r = read(w->tun_fd, w->tso_buf, OFFLOAD_MAX_PACKET);
		int segs;

		if (r < 0)
			return -errno;
		segs = offload_segment(w->tso_buf, (size_t)r, w->slots, w->slot_size,
		                       WG_MSG_DATA_HEADER_LEN, TX_BATCH, len);
		if (segs <= 0) {
			atomic_fetch_add(&d->stats.tx_bad_packet, 1);
			return 0;
		}
		n = (unsigned int)segs;
	} else {
		while (n < TX_BATCH) {
			uint8_t *p = w->slots + (size_t)n * w->slot_size + WG_MSG_DATA_HEADER_LEN;
			ssize_t r = read(w->tun_fd, p, d->mtu);

			if (r < 0) {
				if (n)
					break;
				return -errno;
			}
			len[n++] = (size_t)r;
		}
	}
	tx_packets(w, len, n);
	return 0;
}
