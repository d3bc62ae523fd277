/* SPDX-License-Identifier: MIT */
/* A userspace WireGuard interface: TUN queues, UDP sockets and worker threads around the core. */
#include "device.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/virtio_net.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "netlink.h"
#include "offload.h"
#include "peer.h"
#include "rx_split.h"
#include "tun.h"
#include "uapi.h"

enum {
	TX_BATCH = OFFLOAD_MAX_SEGS, /* packets read (or cut from a TSO packet) per round */
	GSO_MAX_SEGS = 64,           /* UDP_SEGMENT's limit per sendmsg (before Linux 6.11) */
	RX_MSGS = 8,                 /* recvmmsg entries; each may carry a GRO train of datagrams */
	RX_BUF = 65536 + 64,         /* one GRO train: at most 64 KiB of UDP payload */
	PEER_QUEUE = 256,            /* packets held per peer while a handshake is in progress */
	CTRL_TICK_MS = 20,           /* the control thread's timer granularity */
	UAPI_DEADLINE_MS = 2000,     /* a UAPI client's time in all (wg(8) sends at once) */
	DEFAULT_TABLE = 51820,       /* wg-quick's table and fwmark for a tunnel default route */
	MAX_RULES = 4,
	/* datagrams one rx_round holds: RX_MSGS trains of at most WG_RX_SPLIT_MAX_SEGS */
	RX_SEGS = RX_MSGS * WG_RX_SPLIT_MAX_SEGS,
};

/* Device-level drop counters (the core counts protocol drops in id.stats). */
struct dev_stats {
	atomic_ulong tx_no_peer;      /* TUN packet with no AllowedIPs match */
	atomic_ulong tx_no_endpoint;  /* peer has no endpoint yet */
	atomic_ulong tx_queue_full;   /* handshake pending and the queue is full */
	atomic_ulong tx_bad_packet;   /* TUN packet we could not parse or segment */
	atomic_ulong tx_send_errors;  /* sendmsg failed */
	atomic_ulong rx_truncated;    /* datagram larger than our buffer, or its GRO cmsg cut */
	atomic_ulong rx_gro_runts;    /* datagrams of a GRO train cut below any message size */
	atomic_ulong rx_gro_overflow; /* datagrams past what one round holds (rx_split.h) */
	atomic_ulong rx_exclusive;    /* receive batches that took the device lock exclusive */
	atomic_ulong rx_tun_errors;   /* TUN write failed */
	atomic_ulong tx_packets, rx_packets, tx_gso_sends, rx_gro_trains;
};

struct qpkt {
	uint8_t *buf; /* WG_MSG_DATA_HEADER_LEN of headroom, then the packet, then tailroom */
	size_t len;
};

struct dev_peer {
	struct wg_peer core;
	/*
	 * Guards the peer's per-packet state while the device lock is held
	 * shared: nonce reservation, replay windows, timers, byte counters,
	 * endpoint and queue. Under the exclusive device lock it is not needed.
	 */
	pthread_mutex_t lock;
	bool has_endpoint;
	union wgconf_sockaddr endpoint;
	unsigned int qhead, qlen;
	struct qpkt queue[PEER_QUEUE];
	struct dev_peer *next, **pprev; /* device's list, for freeing; unlinked in O(1) */
};

struct worker {
	struct wg_device *dev;
	pthread_t thread;
	bool started;
	unsigned int index;
	int tun_fd;
	int udp4, udp6; /* numbers fixed for the device's life: a rebind dup3()s new sockets in */
	int wake_fd;    /* eventfd: the control thread asks the worker to poll its sockets anew */
	/* TX: slots hold header + packet + padding + tag, packets read from the TUN */
	size_t slot_size;
	uint8_t *slots;
	uint8_t *tso_buf; /* one TUN read with a virtio-net header (offload mode) */
	/* RX: GRO trains */
	uint8_t *rx_bufs;
	uint8_t *tun_out; /* coalesced TUN writes (offload mode) */
};

/*
 * Locking. The data path (both workers, both directions) holds d->lock
 * shared for a whole batch: it routes, reserves nonces, decrypts and
 * encrypts in parallel, taking a peer's mutex only for the short per-packet
 * bookkeeping (the replay window is the one truly serial step). Whatever
 * frees keypairs or peers or changes the tables (handshake messages, timer
 * ticks, the first packet on a new responder session, UAPI, configuration)
 * takes d->lock exclusive. The rwlock prefers writers so a steady data
 * stream cannot starve the control thread's 20 ms tick.
 */
struct wg_device {
	pthread_rwlock_t lock;
	struct wg_identity id;
	struct dev_peer *peers;
	struct tun tun;
	char name[IFNAMSIZ];
	unsigned int mtu;
	uint16_t port;
	uint32_t fwmark;
	bool offload, gro;
	atomic_bool gso; /* cleared by the first worker whose GSO send fails */
	unsigned int time_scale;
	int stop_fd;
	int kick_fd;        /* the data path asks the control thread to tick (pending actions) */
	atomic_bool kicked; /* a kick is already on its way */
	int uapi_fd;
	char uapi_path[108];
	atomic_bool stopping;
	atomic_bool dump_stats;
	int ready_fd;
	struct dev_stats stats;
	/* routes and rules installed at start, removed at exit */
	size_t n_routes;
	struct netlink_prefix *routes;
	uint32_t route_table;
	size_t n_rules;
	struct netlink_rule rules[MAX_RULES];
	unsigned int nworkers;
	struct worker workers[];
};

static uint64_t mono_now(const struct wg_device *d)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	/* time_scale > 1 only via the test-only switch of `spliced wg up` */
	return ((uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec) * d->time_scale;
}

static void lock_shared(struct wg_device *d)
{
	pthread_rwlock_rdlock(&d->lock);
}

static void lock_exclusive(struct wg_device *d)
{
	pthread_rwlock_wrlock(&d->lock);
}

static void unlock(struct wg_device *d)
{
	pthread_rwlock_unlock(&d->lock);
}

/* Wakes the control thread to carry out pending peer actions (one eventfd write per tick). */
static void kick(struct wg_device *d)
{
	uint64_t one = 1;

	if (!atomic_exchange(&d->kicked, true) && write(d->kick_fd, &one, sizeof(one)) < 0)
		atomic_store(&d->kicked, false);
}

static socklen_t sa_len(const union wgconf_sockaddr *a)
{
	return a->sa.sa_family == AF_INET6 ? sizeof(a->in6) : sizeof(a->in4);
}

static bool sa_equal(const union wgconf_sockaddr *a, const struct sockaddr *b)
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

static int sock_for(const struct worker *w, const union wgconf_sockaddr *ep)
{
	return ep->sa.sa_family == AF_INET6 ? w->udp6 : w->udp4;
}

/* ---- sending ---- */

static void send_one(struct worker *w, const union wgconf_sockaddr *ep, const void *buf, size_t len)
{
	int fd = sock_for(w, ep);

	if (fd < 0 || sendto(fd, buf, len, 0, &ep->sa, sa_len(ep)) < 0)
		atomic_fetch_add(&w->dev->stats.tx_send_errors, 1);
}

/*
 * Sends n sealed messages to one endpoint. With UDP GSO, a run of equal
 * sizes (the last may be shorter) goes out as one sendmsg and the kernel
 * cuts it into datagrams; otherwise sendmmsg batches the system calls.
 */
static void send_batch(struct worker *w, const union wgconf_sockaddr *ep, struct iovec *iov,
                       unsigned int n)
{
	struct wg_device *d = w->dev;
	int fd = sock_for(w, ep);
	unsigned int i = 0;

	if (fd < 0) {
		atomic_fetch_add(&d->stats.tx_send_errors, n);
		return;
	}
	while (i < n) {
		unsigned int j = i + 1;
		size_t seg = iov[i].iov_len, total = seg;

		if (atomic_load(&d->gso)) {
			while (j < n && j - i < GSO_MAX_SEGS && total + iov[j].iov_len <= 65000 &&
			       iov[j].iov_len <= seg) {
				total += iov[j].iov_len;
				if (iov[j++].iov_len < seg)
					break; /* a shorter datagram ends the train */
			}
		}
		if (j - i > 1) {
			char cbuf[CMSG_SPACE(sizeof(uint16_t))] = {0};
			struct msghdr mh = {.msg_name = (void *)&ep->sa,
			                    .msg_namelen = sa_len(ep),
			                    .msg_iov = &iov[i],
			                    .msg_iovlen = j - i,
			                    .msg_control = cbuf,
			                    .msg_controllen = sizeof(cbuf)};
			struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
			uint16_t gso = (uint16_t)seg;

			cm->cmsg_level = SOL_UDP;
			cm->cmsg_type = UDP_SEGMENT;
			cm->cmsg_len = CMSG_LEN(sizeof(gso));
			memcpy(CMSG_DATA(cm), &gso, sizeof(gso));
			if (sendmsg(fd, &mh, 0) >= 0) {
				atomic_fetch_add(&d->stats.tx_gso_sends, 1);
				i = j;
				continue;
			}
			if (errno == EIO || errno == EINVAL || errno == EOPNOTSUPP) {
				atomic_store(&d->gso, false); /* the egress path cannot segment */
				j = i + 1;
			} else {
				atomic_fetch_add(&d->stats.tx_send_errors, j - i);
				i = j;
				continue;
			}
		}
		/* No train: batch the remaining single datagrams with sendmmsg. */
		{
			struct mmsghdr mm[TX_BATCH];
			unsigned int k = 0;

			while (i + k < n && k < TX_BATCH && (!atomic_load(&d->gso) || k == 0)) {
				memset(&mm[k], 0, sizeof(mm[k]));
				mm[k].msg_hdr.msg_name = (void *)&ep->sa;
				mm[k].msg_hdr.msg_namelen = sa_len(ep);
				mm[k].msg_hdr.msg_iov = &iov[i + k];
				mm[k].msg_hdr.msg_iovlen = 1;
				k++;
			}
			int sent = sendmmsg(fd, mm, k, 0);

			if (sent < (int)k)
				atomic_fetch_add(&d->stats.tx_send_errors,
				                 k - (unsigned)(sent < 0 ? 0 : sent));
			i += k;
		}
	}
}

static void queue_free(struct dev_peer *p)
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
static void queue_packet(struct worker *w, struct dev_peer *p, const uint8_t *pkt, size_t len)
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
static void peer_actions(struct worker *w, struct dev_peer *p, unsigned int act, uint64_t now)
{
	uint8_t buf[WG_MSG_DATA_HEADER_LEN + WG_AEAD_TAG_LEN + WG_MSG_PADDING];

	if (act & WG_ACT_SEND_INITIATION) {
		uint8_t init[WG_MSG_INITIATION_LEN];

		if (p->has_endpoint && wg_peer_create_initiation(&p->core, init, now) == 0)
			send_one(w, &p->endpoint, init, sizeof(init));
	}
	if (act & WG_ACT_DROP_QUEUE)
		queue_free(p);
	if ((act & WG_ACT_FLUSH_QUEUE) && p->qlen) {
		while (p->qlen && p->has_endpoint) {
			struct qpkt *q = &p->queue[p->qhead];
			long n = wg_peer_encrypt(&p->core, q->buf, q->len, w->slot_size, now);

			if (n == -ENOKEY)
				break;
			if (n > 0)
				send_one(w, &p->endpoint, q->buf, (size_t)n);
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
			send_one(w, &p->endpoint, buf, (size_t)n);
	}
}

static void tick_peer(struct worker *w, struct dev_peer *p, uint64_t now)
{
	unsigned int act = wg_peer_tick(&p->core, now);

	if (act)
		peer_actions(w, p, act, now);
}

/* ---- TUN -> UDP ---- */

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
static void tx_packets(struct worker *w, size_t *len, unsigned int n)
{
	struct wg_device *d = w->dev;
	struct tx_run runs[TX_BATCH];
	struct iovec iov[TX_BATCH];
	unsigned int nruns = 0;
	uint64_t now = mono_now(d);
	bool need_kick = false;

	lock_shared(d);
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
		send_batch(w, &run->ep, iov, k);
	}
	unlock(d);
	if (need_kick)
		kick(d);
}

/* Reads up to TX_BATCH packets (or one offloaded super-packet) and sends them. -EAGAIN: idle. */
static int tx_round(struct worker *w)
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

/* ---- UDP -> TUN ---- */

static void tun_write(struct worker *w, uint8_t *pkt, size_t len)
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
	if (!p->has_endpoint || !sa_equal(&p->endpoint, &src->sa)) {
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
static int rx_round(struct worker *w, int fd)
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
	now = mono_now(d);
	nseg = wg_rx_split(mm, (unsigned int)n, seg, RX_SEGS, &sc);
	count_split(d, &sc);

	lock_shared(d);
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
	unlock(d);

	if (nlater) {
		atomic_fetch_add(&d->stats.rx_exclusive, 1);
		lock_exclusive(d);
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
				send_one(w, &src[s->msg], rx.data, rx.len);
			if (!rx.peer)
				continue;
			p = rx.peer->priv;
			roam(p, &src[s->msg], mm[s->msg].msg_hdr.msg_namelen);
			if (rx.action == WG_RX_DATA) {
				atomic_fetch_add(&d->stats.rx_packets, 1);
				out[nout].data = rx.data;
				out[nout++].len = rx.len;
			}
			tick_peer(w, p, now);
		}
		unlock(d);
	}
	if (need_kick)
		kick(d);

	if (d->tun.vnet_hdr) {
		offload_coalesce_write(w->tun_fd, out, nout, w->tun_out);
	} else {
		for (unsigned int i = 0; i < nout; i++)
			tun_write(w, out[i].data, out[i].len);
	}
	return 0;
}

/*
 * The worker loop: drain the TUN queue and both sockets until all are idle,
 * then poll(). Why poll + read/recvmmsg/sendmsg and not io_uring: with the
 * offloads every system call already moves up to 64 KiB (a TSO read from the
 * TUN, a GSO send of up to 64 sealed datagrams, a GRO train from recvmmsg, a
 * coalesced TUN write), so the syscalls themselves are cheap next to the
 * copies and the network stack. Measured in the wg-bench topology at about
 * 4 Gbit/s (perf trace, both processes): ~70,000 syscalls/s in all, half of
 * them immediate EAGAINs, i.e. 1-2 % of the CPU the two processes use; the
 * copies in those calls are ~15 % and the crypto ~35 %. io_uring would save at
 * most that 1-2 % (its copies are the same; SQPOLL would burn a core this
 * 2-core machine does not have), so batching stays and io_uring does not.
 */
static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct wg_device *d = w->dev;
	struct pollfd pfd[5] = {{.fd = w->tun_fd, .events = POLLIN},
	                        {.fd = w->udp4, .events = POLLIN},
	                        {.fd = w->udp6, .events = POLLIN},
	                        {.fd = d->stop_fd, .events = POLLIN},
	                        {.fd = w->wake_fd, .events = POLLIN}};

	while (!atomic_load(&d->stopping)) {
		/* A source that had nothing is not asked again until the next cycle (no EAGAIN storm). */
		bool tun_idle = false, u4_idle = w->udp4 < 0, u6_idle = w->udp6 < 0;
		int busy = 0, r;

		/* Drain what is ready before sleeping: poll only when every source is idle. */
		for (int round = 0; round < 8; round++) {
			int progress = 0;

			if (!tun_idle) {
				r = tx_round(w);
				if (r == 0) {
					progress = 1;
				} else if (r == -EAGAIN) {
					tun_idle = true;
				} else if (r != -EINTR) {
					/* The interface was deleted (`ip link del`, `spliced wg down`). */
					atomic_store(&d->stopping, true);
					wg_device_stop(d);
					break;
				}
			}
			if (!u4_idle) {
				if (rx_round(w, w->udp4) == 0)
					progress = 1;
				else
					u4_idle = true;
			}
			if (!u6_idle) {
				if (rx_round(w, w->udp6) == 0)
					progress = 1;
				else
					u6_idle = true;
			}
			if (!progress)
				break;
			busy = 1;
		}
		if (busy)
			continue;
		if (poll(pfd, 5, -1) < 0 && errno != EINTR)
			break;
		if (pfd[4].revents & POLLIN) {
			uint64_t x;

			/* The sockets were replaced: the next poll() waits on the new ones. */
			if (read(w->wake_fd, &x, sizeof(x)) < 0)
				continue;
		}
	}
	return NULL;
}

/* ---- configuration ---- */

static struct dev_peer *find_peer(struct wg_device *d, const uint8_t *pub)
{
	struct wg_peer *p = wg_identity_lookup_peer(&d->id, pub);

	return p ? p->priv : NULL;
}

static void remove_peer(struct dev_peer *p)
{
	*p->pprev = p->next;
	if (p->next)
		p->next->pprev = p->pprev;
	queue_free(p);
	wg_peer_destroy(&p->core);
	pthread_mutex_destroy(&p->lock);
	wg_wipe(p, sizeof(*p));
	free(p);
}

static int udp_socket(int family, uint16_t *port, uint32_t fwmark, bool gro);

/*
 * `wg set listen-port`: binds a full new set of sockets (one per worker and
 * family, SO_REUSEPORT, port 0 = pick one) and only when all of them bound
 * swaps them in with dup3() onto the old descriptor numbers, so a worker
 * never sees a closed or reused number; a call already running on the old
 * socket finishes there. Then each worker is woken to poll the new ones.
 * On failure nothing changed. Device lock exclusive.
 */
static int rebind(struct wg_device *d, uint16_t want, uint32_t fwmark)
{
	int fresh[2 * TUN_MAX_QUEUES];
	uint16_t port = want;
	unsigned int n = 0;
	int ret = 0;

	for (unsigned int i = 0; i < d->nworkers && ret == 0; i++) {
		const struct worker *w = &d->workers[i];

		fresh[n] = udp_socket(AF_INET, &port, fwmark, d->gro);
		ret = fresh[n] < 0 ? fresh[n] : 0;
		n++;
		if (ret == 0 && w->udp6 >= 0) {
			fresh[n] = udp_socket(AF_INET6, &port, fwmark, d->gro);
			ret = fresh[n] < 0 ? fresh[n] : 0;
			n++;
		}
	}
	if (ret == 0) {
		n = 0;
		for (unsigned int i = 0; i < d->nworkers; i++) {
			struct worker *w = &d->workers[i];
			uint64_t one = 1;

			if (dup3(fresh[n++], w->udp4, O_CLOEXEC) < 0)
				ret = -errno;
			if (w->udp6 >= 0 && dup3(fresh[n++], w->udp6, O_CLOEXEC) < 0)
				ret = -errno;
			if (write(w->wake_fd, &one, sizeof(one)) < 0)
				ret = ret ? ret : -errno;
		}
		d->port = port;
	}
	for (unsigned int i = 0; i < n; i++)
		if (fresh[i] >= 0)
			close(fresh[i]);
	return ret;
}

/* Applies a set=1 request (also used for the config file). Device lock exclusive. */
static int apply_set(struct wg_device *d, const struct wg_uapi_set *s)
{
	int ret;

	/* First, so that a port already in use fails the request before anything changed. */
	if (s->has_listen_port && s->listen_port != d->port) {
		ret = rebind(d, s->listen_port, s->has_fwmark ? s->fwmark : d->fwmark);
		if (ret < 0)
			return ret;
	}
	if (s->has_private_key) {
		ret = wg_identity_set_private_key(&d->id, s->private_key);
		if (ret < 0)
			return ret;
		/* A peer whose key is now ours cannot exist: the core refuses it. */
	}
	if (s->has_fwmark && s->fwmark != d->fwmark) {
		for (unsigned int i = 0; i < d->nworkers; i++) {
			struct worker *w = &d->workers[i];

			if (w->udp4 >= 0)
				setsockopt(w->udp4, SOL_SOCKET, SO_MARK, &s->fwmark,
				           sizeof(s->fwmark));
			if (w->udp6 >= 0)
				setsockopt(w->udp6, SOL_SOCKET, SO_MARK, &s->fwmark,
				           sizeof(s->fwmark));
		}
		d->fwmark = s->fwmark;
	}
	if (s->replace_peers)
		while (d->peers)
			remove_peer(d->peers);
	for (size_t i = 0; i < s->n_peers; i++) {
		const struct wg_uapi_peer_set *ps = &s->peers[i];
		struct dev_peer *p = find_peer(d, ps->public_key);

		if (ps->remove) {
			if (p)
				remove_peer(p);
			continue;
		}
		if (!p) {
			if (ps->update_only)
				continue;
			p = calloc(1, sizeof(*p));
			if (!p)
				return -ENOMEM;
			ret = wg_peer_init(&p->core, &d->id, ps->public_key);
			if (ret < 0) {
				free(p);
				return ret;
			}
			pthread_mutex_init(&p->lock, NULL);
			p->core.priv = p;
			p->next = d->peers;
			if (p->next)
				p->next->pprev = &p->next;
			p->pprev = &d->peers;
			d->peers = p;
		}
		if (ps->has_preshared_key)
			wg_peer_set_preshared_key(&p->core, ps->preshared_key);
		if (ps->has_endpoint) {
			p->endpoint = ps->endpoint;
			p->has_endpoint = true;
		}
		if (ps->has_keepalive) {
			bool was_off = p->core.timers.persistent_keepalive_interval == 0;

			p->core.timers.persistent_keepalive_interval = ps->keepalive;
			/* Turning keepalives on sends one now, as wg(8) users expect. */
			if (was_off && ps->keepalive && p->has_endpoint)
				p->core.pending_actions |= WG_ACT_SEND_KEEPALIVE;
		}
		if (ps->replace_allowed_ips)
			wg_allowedips_remove_by_peer(&d->id.allowedips, &p->core);
		for (size_t j = 0; j < ps->n_allowed_ips; j++) {
			const struct netlink_prefix *a = &ps->allowed_ips[j];

			ret = wg_allowedips_insert(&d->id.allowedips, a->family, a->addr.bytes,
			                           a->prefixlen, &p->core);
			if (ret < 0)
				return ret;
		}
	}
	return 0;
}

static int uapi_set(void *ctx, const struct wg_uapi_set *req)
{
	struct wg_device *d = ctx;
	int ret;

	lock_exclusive(d);
	ret = apply_set(d, req);
	unlock(d);
	return ret;
}

struct aip_collect {
	struct wg_uapi_peer_info *pi;
	size_t cap;
	int err;
};

static int collect_aip(void *ctx, int family, const uint8_t *addr, uint8_t cidr)
{
	struct aip_collect *c = ctx;
	struct netlink_prefix *a = c->pi->allowed_ips;

	if (c->pi->n_allowed_ips == c->cap) {
		/* doubling: a peer with many prefixes costs no quadratic copying */
		c->cap = c->cap ? 2 * c->cap : 4;
		a = realloc(a, c->cap * sizeof(*a));
		if (!a) {
			c->err = -ENOMEM;
			return -ENOMEM;
		}
		c->pi->allowed_ips = a;
	}
	a = &a[c->pi->n_allowed_ips++];
	memset(a, 0, sizeof(*a));
	a->family = family;
	a->prefixlen = cidr;
	memcpy(a->addr.bytes, addr, family == AF_INET ? 4 : 16);
	return 0;
}

static int uapi_get(void *ctx, struct wg_uapi_info *out)
{
	struct wg_device *d = ctx;
	size_t n = 0;
	int ret = 0;

	lock_exclusive(d);
	out->has_private_key = d->id.has_private_key;
	memcpy(out->private_key, d->id.static_private, WG_KEY_LEN);
	out->listen_port = d->port;
	out->fwmark = d->fwmark;
	for (struct dev_peer *p = d->peers; p; p = p->next)
		n++;
	out->peers = calloc(n ? n : 1, sizeof(*out->peers));
	if (!out->peers) {
		ret = -ENOMEM;
		goto out;
	}
	for (struct dev_peer *p = d->peers; p; p = p->next) {
		struct wg_uapi_peer_info *pi = &out->peers[out->n_peers++];
		struct aip_collect c = {.pi = pi};

		memcpy(pi->public_key, p->core.public_key, WG_KEY_LEN);
		pi->has_preshared_key = !wg_ct_is_zero(p->core.handshake.preshared_key, WG_KEY_LEN);
		memcpy(pi->preshared_key, p->core.handshake.preshared_key, WG_KEY_LEN);
		pi->has_endpoint = p->has_endpoint;
		pi->endpoint = p->endpoint;
		pi->last_handshake = p->core.last_handshake_real;
		pi->rx_bytes = p->core.rx_bytes;
		pi->tx_bytes = p->core.tx_bytes;
		pi->keepalive = p->core.timers.persistent_keepalive_interval;
		wg_allowedips_walk(&d->id.allowedips, &p->core, collect_aip, &c);
		if (c.err) {
			ret = c.err;
			goto out;
		}
	}
out:
	unlock(d);
	return ret;
}

/* ---- sockets, routes ---- */

static int udp_socket(int family, uint16_t *port, uint32_t fwmark, bool gro)
{
	union wgconf_sockaddr a;
	int fd, one = 1, ret;
	socklen_t alen;

	fd = socket(family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_UDP);
	if (fd < 0)
		return -errno;
	memset(&a, 0, sizeof(a));
	if (family == AF_INET6) {
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
		a.in6.sin6_family = AF_INET6;
		a.in6.sin6_port = htons(*port);
		alen = sizeof(a.in6);
	} else {
		a.in4.sin_family = AF_INET;
		a.in4.sin_port = htons(*port);
		alen = sizeof(a.in4);
	}
	/* Every worker binds its own socket to the port; the kernel spreads flows by hash. */
	setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
	if (fwmark)
		setsockopt(fd, SOL_SOCKET, SO_MARK, &fwmark, sizeof(fwmark));
	if (gro)
		setsockopt(fd, SOL_UDP, UDP_GRO, &one, sizeof(one));
	{
		int sz = 4 << 20;

		setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &sz, sizeof(sz));
		setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &sz, sizeof(sz));
	}
	if (bind(fd, &a.sa, alen) < 0) {
		ret = -errno;
		close(fd);
		return ret;
	}
	if (getsockname(fd, &a.sa, &alen) == 0)
		*port = ntohs(family == AF_INET6 ? a.in6.sin6_port : a.in4.sin_port);
	return fd;
}

static int add_route(struct wg_device *d, const struct netlink_prefix *p, uint32_t table)
{
	struct netlink_prefix *a = realloc(d->routes, (d->n_routes + 1) * sizeof(*a));
	int ret;

	if (!a)
		return -ENOMEM;
	d->routes = a;
	ret = netlink_route_add(d->tun.ifindex, p, table);
	if (ret == 0)
		a[d->n_routes++] = *p;
	return ret;
}

/*
 * Installs what wg-quick would: addresses, MTU, link up, one route per
 * allowed prefix; a /0 goes into table 51820 with the two rules wg-quick
 * uses, so the tunnel's own UDP packets (fwmark) still reach the real
 * default route.
 */
static int setup_routes(struct wg_device *d, const struct wgconf *conf)
{
	int ret;

	for (size_t i = 0; i < conf->n_addresses; i++) {
		ret = netlink_addr_add(d->tun.ifindex, &conf->addresses[i]);
		if (ret < 0) {
			fprintf(stderr, "%s: adding an address failed: %s\n", d->name,
			        strerror(-ret));
			return ret;
		}
	}
	if (conf->table == WGCONF_TABLE_OFF)
		return 0;
	d->route_table = conf->table == WGCONF_TABLE_ID ? conf->table_id : 0;
	for (size_t i = 0; i < conf->n_peers; i++) {
		for (size_t j = 0; j < conf->peers[i].n_allowed_ips; j++) {
			const struct netlink_prefix *p = &conf->peers[i].allowed_ips[j];
			uint32_t table = d->route_table;

			if (p->prefixlen == 0 && conf->table == WGCONF_TABLE_AUTO) {
				struct netlink_rule r1 = {.family = p->family,
				                          .table = DEFAULT_TABLE,
				                          .fwmark = d->fwmark,
				                          .invert = true,
				                          .suppress_prefixlen = -1};
				struct netlink_rule r2 = {
				        .family = p->family, .table = 254, .suppress_prefixlen = 0};

				table = DEFAULT_TABLE;
				if (d->n_rules + 2 <= MAX_RULES && netlink_rule_add(&r2) == 0)
					d->rules[d->n_rules++] = r2;
				if (d->n_rules + 1 <= MAX_RULES && netlink_rule_add(&r1) == 0)
					d->rules[d->n_rules++] = r1;
			}
			ret = add_route(d, p, table);
			if (ret < 0 && ret != -EEXIST) {
				fprintf(stderr, "%s: adding a route failed: %s\n", d->name,
				        strerror(-ret));
				return ret;
			}
		}
	}
	return 0;
}

static bool conf_has_default_route(const struct wgconf *conf)
{
	for (size_t i = 0; i < conf->n_peers; i++)
		for (size_t j = 0; j < conf->peers[i].n_allowed_ips; j++)
			if (conf->peers[i].allowed_ips[j].prefixlen == 0)
				return true;
	return false;
}

int wg_device_create(struct wg_device **out, const struct wgconf *conf,
                     const struct wg_device_opts *opts)
{
	struct wg_device *d;
	struct wg_uapi_set set;
	unsigned int nw =
	        opts->workers ? opts->workers : (unsigned int)sysconf(_SC_NPROCESSORS_ONLN);
	int ret;

	if (nw == 0)
		nw = 1;
	if (nw > TUN_MAX_QUEUES)
		nw = TUN_MAX_QUEUES;
	*out = NULL;
	d = calloc(1, sizeof(*d) + nw * sizeof(struct worker));
	if (!d)
		return -ENOMEM;
	d->nworkers = nw;
	d->stop_fd = d->kick_fd = d->uapi_fd = -1;
	d->ready_fd = opts->ready_fd;
	d->time_scale = opts->time_scale ? opts->time_scale : 1;
	d->mtu = conf->mtu ? conf->mtu : WGCONF_DEFAULT_MTU;
	d->offload = opts->offload;
	d->fwmark = conf->fwmark;
	for (unsigned int i = 0; i < TUN_MAX_QUEUES; i++)
		d->tun.fds[i] = -1;
	for (unsigned int i = 0; i < nw; i++) {
		d->workers[i].udp4 = d->workers[i].udp6 = d->workers[i].tun_fd = -1;
		d->workers[i].wake_fd = -1;
		d->workers[i].dev = d;
		d->workers[i].index = i;
	}
	snprintf(d->name, sizeof(d->name), "%s", opts->name);
	{
		pthread_rwlockattr_t attr;

		pthread_rwlockattr_init(&attr);
		pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
		pthread_rwlock_init(&d->lock, &attr);
		pthread_rwlockattr_destroy(&attr);
	}
	ret = wg_identity_init(&d->id);
	if (ret < 0)
		goto fail;
	d->id.mtu = d->mtu;
	d->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	d->kick_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (d->stop_fd < 0 || d->kick_fd < 0) {
		ret = -errno;
		goto fail;
	}
	/* A tunnel default route needs the fwmark that keeps our own UDP out of it. */
	if (opts->routes && conf->table == WGCONF_TABLE_AUTO && !d->fwmark &&
	    conf_has_default_route(conf))
		d->fwmark = DEFAULT_TABLE;

	ret = tun_open(&d->tun, d->name, nw, opts->offload ? TUN_VNET_HDR : 0);
	if (ret == -EBUSY) {
		fprintf(stderr,
		        "%s: an interface of that name already exists; spliced creates its own "
		        "TUN device and does not attach to another one\n",
		        d->name);
		goto fail;
	}
	if (ret < 0) {
		fprintf(stderr, "%s: cannot create the TUN device: %s\n", d->name, strerror(-ret));
		goto fail;
	}
	for (unsigned int i = 0; i < nw; i++) {
		int fl = fcntl(d->tun.fds[i], F_GETFL);

		fcntl(d->tun.fds[i], F_SETFL, fl | O_NONBLOCK);
	}

	d->port = conf->listen_port;
	d->gro = opts->offload;
	atomic_store(&d->gso, opts->offload);
	for (unsigned int i = 0; i < nw; i++) {
		struct worker *w = &d->workers[i];

		w->tun_fd = d->tun.fds[i];
		w->udp4 = udp_socket(AF_INET, &d->port, d->fwmark, d->gro);
		if (w->udp4 < 0) {
			ret = w->udp4;
			fprintf(stderr, "%s: cannot bind UDP port %u: %s\n", d->name, d->port,
			        strerror(-ret));
			goto fail;
		}
		w->udp6 = udp_socket(AF_INET6, &d->port, d->fwmark, d->gro);
		w->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (w->wake_fd < 0) {
			ret = -errno;
			goto fail;
		}
		w->slot_size =
		        (WG_MSG_DATA_HEADER_LEN + d->mtu + WG_MSG_PADDING + WG_AEAD_TAG_LEN + 63) &
		        ~(size_t)63;
		w->slots = malloc(w->slot_size * TX_BATCH);
		w->rx_bufs = malloc((size_t)RX_BUF * RX_MSGS);
		w->tso_buf = d->tun.vnet_hdr ? malloc(OFFLOAD_MAX_PACKET) : NULL;
		w->tun_out = d->tun.vnet_hdr ? malloc(OFFLOAD_MAX_PACKET) : NULL;
		if (!w->slots || !w->rx_bufs || (d->tun.vnet_hdr && (!w->tso_buf || !w->tun_out))) {
			ret = -ENOMEM;
			goto fail;
		}
	}

	ret = wg_uapi_set_from_conf(&set, conf);
	if (ret < 0)
		goto fail;
	set.has_listen_port = false;
	set.has_fwmark = false;
	lock_exclusive(d);
	ret = apply_set(d, &set);
	unlock(d);
	wg_uapi_set_free(&set);
	if (ret < 0) {
		fprintf(stderr, "%s: applying the configuration failed: %s\n", d->name,
		        strerror(-ret));
		goto fail;
	}

	ret = netlink_link_set_mtu(d->tun.ifindex, d->mtu);
	if (ret == 0)
		ret = netlink_link_set_up(d->tun.ifindex, true);
	if (ret < 0) {
		fprintf(stderr, "%s: cannot set MTU/up: %s\n", d->name, strerror(-ret));
		goto fail;
	}
	if (opts->routes) {
		ret = setup_routes(d, conf);
		if (ret < 0)
			goto fail;
	}
	d->uapi_fd = wg_uapi_listen(d->name, d->uapi_path, sizeof(d->uapi_path));
	if (d->uapi_fd < 0) {
		/* wg(8) will not see the device, but the tunnel itself works. */
		fprintf(stderr, "%s: warning: no UAPI socket: %s\n", d->name,
		        strerror(-d->uapi_fd));
	}
	*out = d;
	return 0;
fail:
	wg_device_destroy(d);
	return ret;
}

/* ---- control thread: timers, UAPI, stats ---- */

struct tick_ctx {
	struct worker *w;
	uint64_t now;
};

static void on_tick(void *ctx, struct wg_peer *peer, unsigned int actions)
{
	struct tick_ctx *t = ctx;

	peer_actions(t->w, peer->priv, actions, t->now);
}

static void print_stats(struct wg_device *d)
{
	const struct wg_stats *s = &d->id.stats;
	const struct dev_stats *x = &d->stats;

	fprintf(stderr,
	        "%s: stats: rx_data=%llu tx_data=%llu rx_handshakes=%llu invalid_message=%llu "
	        "bad_mac1=%llu cookie_sent=%llu ratelimited=%llu handshake_invalid=%llu "
	        "cookie_invalid=%llu unknown_index=%llu expired_key=%llu decrypt_failed=%llu "
	        "replay=%llu bad_inner=%llu src_not_allowed=%llu truncated=%lu tx_no_peer=%lu "
	        "tx_no_endpoint=%lu tx_queue_full=%lu tx_bad_packet=%lu tx_send_errors=%lu "
	        "rx_tun_errors=%lu gso_sends=%lu gro_trains=%lu gro_runts=%lu gro_overflow=%lu "
	        "rx_exclusive=%lu offload=%s\n",
	        d->name, (unsigned long long)s->rx_data_packets,
	        (unsigned long long)atomic_load(&x->tx_packets),
	        (unsigned long long)s->rx_handshakes, (unsigned long long)s->rx_invalid_message,
	        (unsigned long long)s->rx_bad_mac1, (unsigned long long)s->rx_cookie_sent,
	        (unsigned long long)s->rx_ratelimited, (unsigned long long)s->rx_handshake_invalid,
	        (unsigned long long)s->rx_cookie_invalid, (unsigned long long)s->rx_unknown_index,
	        (unsigned long long)s->rx_expired_key, (unsigned long long)s->rx_decrypt_failed,
	        (unsigned long long)s->rx_replay, (unsigned long long)s->rx_bad_inner,
	        (unsigned long long)s->rx_src_not_allowed, atomic_load(&x->rx_truncated),
	        atomic_load(&x->tx_no_peer), atomic_load(&x->tx_no_endpoint),
	        atomic_load(&x->tx_queue_full), atomic_load(&x->tx_bad_packet),
	        atomic_load(&x->tx_send_errors), atomic_load(&x->rx_tun_errors),
	        atomic_load(&x->tx_gso_sends), atomic_load(&x->rx_gro_trains),
	        atomic_load(&x->rx_gro_runts), atomic_load(&x->rx_gro_overflow),
	        atomic_load(&x->rx_exclusive),
	        d->tun.vnet_hdr ? "tun+udp" : (atomic_load(&d->gso) ? "udp" : "off"));
}

int wg_device_run(struct wg_device *d)
{
	struct itimerspec its = {.it_interval = {0, CTRL_TICK_MS * 1000000L},
	                         .it_value = {0, CTRL_TICK_MS * 1000000L}};
	struct wg_uapi_ops ops = {.get = uapi_get, .set = uapi_set, .ctx = d};
	int tfd, ret = 0;

	tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (tfd < 0)
		return -errno;
	timerfd_settime(tfd, 0, &its, NULL);
	for (unsigned int i = 0; i < d->nworkers; i++) {
		ret = pthread_create(&d->workers[i].thread, NULL, worker_main, &d->workers[i]);
		if (ret) {
			ret = -ret;
			atomic_store(&d->stopping, true);
			wg_device_stop(d);
			break;
		}
		d->workers[i].started = true;
		char name[16]; /* the kernel's limit, NUL included */
		/* % 10000: four digits fit the limit (and keep -Wformat-truncation quiet) */
		snprintf(name, sizeof(name), "spliced-wg%u", i % 10000);
		pthread_setname_np(d->workers[i].thread, name);
	}
	if (ret == 0 && d->ready_fd >= 0) {
		char c = 1;

		if (write(d->ready_fd, &c, 1) < 0)
			ret = 0; /* the launcher went away; keep running */
		close(d->ready_fd);
		d->ready_fd = -1;
	}
	while (!atomic_load(&d->stopping)) {
		struct pollfd pfd[4] = {{.fd = tfd, .events = POLLIN},
		                        {.fd = d->stop_fd, .events = POLLIN},
		                        {.fd = d->kick_fd, .events = POLLIN},
		                        {.fd = d->uapi_fd, .events = POLLIN}};
		uint64_t x;

		if (poll(pfd, d->uapi_fd >= 0 ? 4 : 3, -1) < 0 && errno != EINTR)
			break;
		if (pfd[1].revents & POLLIN)
			break;
		if ((pfd[0].revents | pfd[2].revents) & POLLIN) {
			struct tick_ctx t = {.w = &d->workers[0], .now = mono_now(d)};

			if ((pfd[0].revents & POLLIN) && read(tfd, &x, sizeof(x)) < 0)
				x = 0;
			if ((pfd[2].revents & POLLIN) && read(d->kick_fd, &x, sizeof(x)) < 0)
				x = 0;
			/* Cleared first: a kick raised while we tick wakes us again. */
			atomic_store(&d->kicked, false);
			lock_exclusive(d);
			wg_identity_tick(&d->id, t.now, on_tick, &t);
			unlock(d);
			if (atomic_exchange(&d->dump_stats, false))
				print_stats(d);
		}
		if (d->uapi_fd >= 0 && (pfd[3].revents & POLLIN)) {
			int c = accept4(d->uapi_fd, NULL, NULL, SOCK_CLOEXEC);

			if (c >= 0) {
				wg_uapi_serve(c, &ops, UAPI_DEADLINE_MS);
				close(c);
			}
		}
	}
	atomic_store(&d->stopping, true);
	wg_device_stop(d);
	for (unsigned int i = 0; i < d->nworkers; i++)
		if (d->workers[i].started) {
			pthread_join(d->workers[i].thread, NULL);
			d->workers[i].started = false;
		}
	print_stats(d);
	close(tfd);
	return ret;
}

void wg_device_stop(struct wg_device *d)
{
	uint64_t one = 1;

	atomic_store(&d->stopping, true);
	if (write(d->stop_fd, &one, sizeof(one)) < 0)
		return; /* already signalled (counter full) */
}

void wg_device_dump_stats(struct wg_device *d)
{
	atomic_store(&d->dump_stats, true);
}

void wg_device_destroy(struct wg_device *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->n_rules; i++)
		netlink_rule_del(&d->rules[i]);
	if (d->tun.nqueues)
		for (size_t i = 0; i < d->n_routes; i++)
			netlink_route_del(d->tun.ifindex, &d->routes[i], d->route_table);
	free(d->routes);
	if (d->uapi_fd >= 0) {
		close(d->uapi_fd);
		unlink(d->uapi_path);
	}
	for (unsigned int i = 0; i < d->nworkers; i++) {
		struct worker *w = &d->workers[i];

		if (w->udp4 >= 0)
			close(w->udp4);
		if (w->udp6 >= 0)
			close(w->udp6);
		if (w->wake_fd >= 0)
			close(w->wake_fd);
		free(w->slots);
		free(w->rx_bufs);
		free(w->tso_buf);
		free(w->tun_out);
	}
	while (d->peers)
		remove_peer(d->peers);
	wg_identity_destroy(&d->id);
	tun_close(&d->tun);
	if (d->stop_fd >= 0)
		close(d->stop_fd);
	if (d->kick_fd >= 0)
		close(d->kick_fd);
	if (d->ready_fd >= 0)
		close(d->ready_fd);
	pthread_rwlock_destroy(&d->lock);
	wg_wipe(d, sizeof(*d));
	free(d);
}
