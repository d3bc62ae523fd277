/* SPDX-License-Identifier: MIT */
/* A TUN queue in its worker: wait for readiness with a poll SQE, then read, rewrite in place and write back inline. */
#include <errno.h>
#include <linux/virtio_net.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "nat.h"
#include "packet.h"
#include "tun_dev.h"
#include "tun_internal.h"
#include "tun_queue.h"
#include "worker.h"

/*
 * The project's shape: a one-shot POLL_ADD on the queue's descriptor, then
 * read(2) in a loop inside the completion until EAGAIN or a budget, each
 * packet handled and written back at once, then the poll again (a poll
 * armed on a descriptor that is already readable completes at once, so
 * stopping at the budget loses no wake-up). Every write runs the kernel's
 * receive path for that packet in this thread (a TUN without IFF_NAPI
 * calls netif_receive_skb() synchronously): the SYN reaches the listener,
 * and a segment its socket, before write() returns.
 *
 * A TCP packet is rewritten whole, whatever its size: with offloads on,
 * the kernel hands us TSO super-packets of up to 64 KiB (gso_type TCPV4/6,
 * NEEDS_CSUM) and takes them back the same way, so a bulk flow costs two
 * syscalls per 64 KiB whatever the MTU (counters reads/read_bytes).
 *
 * A rewritten TCP packet is not written at once but left in its read
 * buffer (one of WRITE_SLOTS) as a WRITE SQE, and the reading goes on
 * into the next free buffer; the ring then writes the whole batch in the
 * next io_uring_enter (a TUN takes IOCB_NOWAIT writes inline, in order).
 * Why: a write that delivers data to a local app wakes it, and the
 * scheduler puts a TCP reader woken that way on the writer's CPU, where it
 * preempts the writer at its next return to user space. One write(2) per
 * packet meant one context switch, one wake-up and so one ACK from the app
 * (which crosses the TUN twice more) per 64 KiB downstream; a batch hands
 * the app all the packets read so far in one go (bench/tun, docs/tun.md).
 * When all slots are being written the queue reads again on the first
 * write's completion instead of polling.
 */

int tun_queue_fd(const struct tun_queue *q)
{
	return q->fd;
}

int tun_queue_open(struct worker *w, unsigned i, struct tun_queue **out)
{
	struct tun_dev *d = tun_dev_get(i);
	struct tun_queue *q;
	int ret;

	*out = NULL;
	if (!d || (unsigned)w->id >= d->tun.nqueues)
		return 0;
	q = calloc(1, sizeof(*q));
	if (!q)
		return -ENOMEM;
	ret = 0;
	for (unsigned k = 0; k < WRITE_SLOTS; k++)
		if (!(q->slot[k] = malloc(QUEUE_BUF)))
			ret = -ENOMEM;
	q->buf = q->slot[0];
	list_init(&q->dnsq);
	if (ret == 0)
		ret = tun_udp_init(q);
	if (ret == 0 && (ret = loop_add(&w->loop, &q->obj, LOOP_KIND_TUN)) < 0)
		tun_udp_stop(q);
	if (ret < 0) {
		for (unsigned k = 0; k < WRITE_SLOTS; k++)
			free(q->slot[k]);
		free(q);
		return ret;
	}
	q->w = w;
	q->dev = d;
	q->st = &d->qstats[w->id];
	q->inbound = i;
	q->vnet = d->tun.vnet_hdr;
	/* The queue is the worker's now (the device's copy of the number is forgotten). */
	q->fd = d->tun.fds[w->id];
	d->tun.fds[w->id] = -1;
	*out = q;
	return 0;
}

static void arm(struct tun_queue *q)
{
	struct io_uring_sqe *sqe = loop_prep(&q->w->loop, &q->obj, TUN_OP_POLL);

	io_uring_prep_poll_add(sqe, q->fd, POLLIN);
}

void tun_queue_arm(struct tun_queue *q)
{
	arm(q);
}

void tun_queue_put_iov(struct tun_queue *q, struct iovec *iov, int n)
{
	ssize_t r = writev(q->fd, iov, n);

	if (r < 0) {
		q->st->write_errors++;
		log_debug_rl("tun: write: %s", strerror(errno));
		return;
	}
	q->st->writes++;
	q->st->write_bytes += (size_t)r - (q->vnet ? PACKET_VNET_HDR : 0);
}

static void put(struct tun_queue *q, const uint8_t *buf, size_t len)
{
	struct iovec iov = {(void *)buf, len};

	tun_queue_put_iov(q, &iov, 1);
}

/* The packet at buf (in the current slot) goes out with the ring's next batch; the slot is busy till then. */
static void put_slot(struct tun_queue *q, const uint8_t *buf, size_t len)
{
	struct io_uring_sqe *sqe = loop_prep(&q->w->loop, &q->obj, TUN_OP_WRITE + q->cur);

	io_uring_prep_write(sqe, q->fd, buf, (unsigned)len, 0);
	q->busy |= 1u << q->cur;
	q->queued++;
}

/* A slot's write completed. */
static void wrote(struct tun_queue *q, unsigned i, int res)
{
	q->busy &= ~(1u << i);
	if (res < 0) {
		q->st->write_errors++;
		log_debug_rl("tun: write: %s", strerror(-res));
		return;
	}
	q->st->writes++;
	q->st->ring_writes++;
	q->st->write_bytes += (size_t)res - (q->vnet ? PACKET_VNET_HDR : 0);
}

/* A free slot as q->buf; false when every slot is being written. */
static bool take_slot(struct tun_queue *q)
{
	for (unsigned k = 0; k < WRITE_SLOTS; k++) {
		unsigned i = (q->cur + k) % WRITE_SLOTS;

		if (!(q->busy & (1u << i))) {
			q->cur = i;
			q->buf = q->slot[i];
			return true;
		}
	}
	return false;
}

/* A packet of ours (a RST): a plain one behind an empty header, checksums complete. */
static void put_built(struct tun_queue *q, size_t len)
{
	if (q->vnet) {
		memset(q->out, 0, PACKET_VNET_HDR);
		put(q, q->out, PACKET_VNET_HDR + len);
	} else {
		put(q, q->out + PACKET_VNET_HDR, len);
	}
}

static void tcp(struct tun_queue *q, struct packet_view *v, struct packet_vnet *h, uint8_t *hdr)
{
	struct nat *nat = &q->dev->nat;
	bool partial = h->flags & VIRTIO_NET_HDR_F_NEEDS_CSUM;
	bool to_app = nat_is_listener(nat, v);
	enum nat_verdict r;

	if (to_app) {
		r = nat_from_listener(nat, v, partial);
		if (r == NAT_PASS)
			q->st->tcp_listener++;
	} else {
		r = nat_from_app(nat, v, partial, q->w->loop.now_ms, (unsigned)q->w->id);
		if (r == NAT_PASS)
			q->st->tcp_app++;
	}
	switch (r) {
	case NAT_PASS:
		break;
	case NAT_FULL:
		q->st->rst_full++;
		put_built(q, packet_build_rst(q->out + PACKET_VNET_HDR, v));
		return;
	case NAT_NO_FLOW:
		q->st->drop_no_flow++;
		return;
	case NAT_BAD_DST:
		q->st->drop_bad_dst++;
		return;
	case NAT_NO_FAMILY:
		q->st->drop_no_family++;
		return;
	}
	if (!q->vnet) {
		(to_app ? put_slot : put)(q, v->ip, v->len);
		return;
	}
	/*
	 * The same header back: GSO type and size, NEEDS_CSUM and its offsets
	 * (the transport header did not move). hdr_len = the headers, so the
	 * kernel puts only them in the linear part and the payload in pages,
	 * which the accepted socket's splice(2) then passes on by reference.
	 */
	if (h->gso_type != VIRTIO_NET_HDR_GSO_NONE)
		h->hdr_len = (uint16_t)((v->l4 - v->ip) + v->thl);
	packet_vnet_put(hdr, h);
	(to_app ? put_slot : put)(q, hdr, PACKET_VNET_HDR + v->len);
}

static void icmp(struct tun_queue *q, struct packet_view *v, struct packet_vnet *h, uint8_t *hdr)
{
	if (h->gso_type != VIRTIO_NET_HDR_GSO_NONE) {
		q->st->drop_vnet++;
		return;
	}
	packet_vnet_complete(h, v);
	if (!packet_echo_reply(v)) {
		q->st->drop_icmp++;
		return;
	}
	q->st->icmp_echo++;
	if (q->vnet) {
		memset(hdr, 0, PACKET_VNET_HDR);
		put(q, hdr, PACKET_VNET_HDR + v->len);
	} else {
		put(q, v->ip, v->len);
	}
}

static void count_parse_error(struct tun_queue *q, enum packet_err e)
{
	switch (e) {
	case PACKET_ERR_TRUNCATED:
		q->st->drop_truncated++;
		break;
	case PACKET_ERR_VERSION:
		q->st->drop_version++;
		break;
	case PACKET_ERR_LENGTH:
		q->st->drop_length++;
		break;
	case PACKET_ERR_OPTIONS:
		q->st->drop_options++;
		break;
	case PACKET_ERR_FRAGMENT:
		q->st->drop_fragment++;
		break;
	default:
		break;
	}
}

/* One read: the header (with offloads), then one IP packet. */
static void packet(struct tun_queue *q, size_t n)
{
	size_t hl = q->vnet ? PACKET_VNET_HDR : 0;
	struct packet_vnet h = {0};
	struct packet_view v;
	enum packet_err e;

	if (n < hl) {
		q->st->drop_truncated++;
		return;
	}
	if (q->vnet)
		packet_vnet_get(q->buf, &h);
	e = packet_parse(q->buf + hl, n - hl, &v);
	if (e != PACKET_OK) {
		count_parse_error(q, e);
		return;
	}
	if (q->vnet && !packet_vnet_ok(&h, &v)) {
		q->st->drop_vnet++;
		return;
	}
	if (h.gso_type != VIRTIO_NET_HDR_GSO_NONE)
		q->st->gso_reads++;
	switch (v.proto) {
	case IPPROTO_TCP:
		if (v.l4len > v.thl) {
			q->st->data_reads++;
			q->st->data_read_bytes += v.len;
		}
		tcp(q, &v, &h, q->buf);
		break;
	case IPPROTO_ICMP:
	case IPPROTO_ICMPV6:
		if ((v.proto == IPPROTO_ICMP) != (v.family == 4))
			q->st->drop_icmp++;
		else
			icmp(q, &v, &h, q->buf);
		break;
	case IPPROTO_UDP:
		if (h.gso_type != VIRTIO_NET_HDR_GSO_NONE)
			q->st->drop_vnet++; /* USO is not asked for */
		else
			tun_udp_packet(q, &v);
		break;
	default:
		q->st->drop_proto++;
		break;
	}
}

static void readable(struct tun_queue *q)
{
	uint64_t queued = q->queued;

	for (int i = 0; i < READ_BUDGET; i++) {
		ssize_t n;

		if (!take_slot(q)) {
			q->starved = true; /* wrote() reads on; no poll meanwhile */
			break;
		}
		n = read(q->fd, q->buf, QUEUE_BUF);
		if (n < 0) {
			if (errno != EAGAIN && errno != EINTR)
				log_debug_rl("tun: read: %s", strerror(errno));
			break;
		}
		q->st->reads++;
		q->st->read_bytes +=
		        (size_t)n - (q->vnet && n >= PACKET_VNET_HDR ? PACKET_VNET_HDR : 0);
		packet(q, (size_t)n);
	}
	if (q->queued != queued)
		q->st->ring_batches++;
	nat_expire(&q->dev->nat, q->w->loop.now_ms);
	if (!q->starved)
		arm(q);
}

void tun_queue_tick(struct tun_queue *q)
{
	nat_expire(&q->dev->nat, q->w->loop.now_ms);
}

static void complete(struct loop *l, struct loop_obj *o, unsigned op,
                     const struct io_uring_cqe *cqe)
{
	struct tun_queue *q = (struct tun_queue *)o;

	(void)l;
	if (op >= TUN_OP_WRITE) {
		wrote(q, op - TUN_OP_WRITE, cqe->res);
		if (q->starved) {
			q->starved = false;
			readable(q);
		}
		return;
	}
	if (cqe->res < 0 && cqe->res != -EINTR) {
		log_warn("tun %s: poll: %s", q->dev->tun.name, strerror(-cqe->res));
		return;
	}
	readable(q);
}

void tun_queue_stop(struct tun_queue *q)
{
	struct loop *l = &q->w->loop;

	if (q->stopped)
		return;
	q->stopped = true;
	tun_udp_stop(q);
	loop_cancel(l, loop_tag_of(l, &q->obj, TUN_OP_POLL));
	loop_close(l, &q->obj);
}

static void release(struct loop *l, struct loop_obj *o)
{
	struct tun_queue *q = (struct tun_queue *)o;

	(void)l;
	if (q->fd >= 0)
		close(q->fd);
	q->w->tun_queues[q->inbound] = NULL;
	for (unsigned k = 0; k < WRITE_SLOTS; k++)
		free(q->slot[k]);
	free(q);
}

const struct loop_module tun_queue_module = {
        .name = "tun",
        .complete = complete,
        .release = release,
};
