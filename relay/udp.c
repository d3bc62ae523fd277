/* SPDX-License-Identifier: MIT */
/* SOCKS5 UDP associations (RFC 1928 section 7): the relay socket, the direct sockets, the datagrams between them. */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "access.h"
#include "conn.h"
#include "egress.h"
#include "log.h"
#include "outbound.h"
#include "route.h"
#include "socks5_udp.h"
#include "sockaddr.h"
#include "udp.h"
#include "user_acct.h"
#include "worker.h"

/*
 * What this implements, and what it does not (yet):
 *  - A relay socket per association, bound to the address the client
 *    reached over TCP (a port in udp-ports when set). Datagrams are taken
 *    only from the client's IP address (its TCP peer's), and only from the
 *    port it declared, or, when it declared none, the port of its first
 *    datagram: everything else is dropped and counted.
 *  - FRAG != 0 is dropped (section 7 allows it), as is any malformed
 *    header; nothing malformed is ever answered.
 *  - Each destination is routed (port and cidr rules) and checked by the
 *    egress policy, datagram by datagram. The direct outbound sends from
 *    one unconnected socket per family, bound as the TCP direct outbound
 *    is (bind-address, bind-interface, fwmark); replies are taken from any
 *    source (endpoint-independent filtering) and carry their source as the
 *    header's address.
 *  - A name is looked up (c-ares, on the loop) the first time the client
 *    sends to it and kept for the association's life; its first address is
 *    used. Domain rules apply to the name, cidr rules and the egress policy
 *    to the address. Datagrams wait for the answer in a small bounded
 *    queue; past it they are dropped (udp_queue_full).
 *  - A socks5 upstream carries UDP over an association of our own with it
 *    (udp_up.c): UDP ASSOCIATE, or hev-socks5's FWD UDP with `udp = tcp`.
 *    The http upstream cannot: dropped and counted (udp_unsupported).
 *  - The association ends with its TCP connection, and after udp-timeout
 *    without a datagram either way (which also closes the connection).
 */

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

void udp_arm(struct udp_assoc *a, unsigned op, int fd, unsigned mask)
{
	struct io_uring_sqe *sqe = loop_prep(&a->w->loop, &a->obj, op);

	io_uring_prep_poll_add(sqe, fd, mask);
	a->ops[op] = sqe->user_data;
}

/*
 * ::ffff:a.b.c.d as a.b.c.d, so a dual-stack socket's view compares with a
 * TCP peer's. The helpers below take any of sockaddr_storage, sockaddr_in6
 * or union udp_addr (each holds an AF_INET6 address).
 */
static void unmap(void *sa)
{
	const struct sockaddr_in6 *s6 = sa;
	struct sockaddr_in s4 = {.sin_family = AF_INET};

	if (s6->sin6_family != AF_INET6 || !IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr))
		return;
	s4.sin_port = s6->sin6_port;
	memcpy(&s4.sin_addr, &s6->sin6_addr.s6_addr[12], 4);
	memset(sa, 0, sizeof(struct sockaddr_in6));
	memcpy(sa, &s4, sizeof(s4));
}

static bool same_ip(const void *x, const void *y)
{
	const struct sockaddr_in6 *a = x, *b = y;

	if (a->sin6_family != b->sin6_family)
		return false;
	if (a->sin6_family == AF_INET)
		return ((const struct sockaddr_in *)x)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)y)->sin_addr.s_addr;
	return a->sin6_family == AF_INET6 && !memcmp(&a->sin6_addr, &b->sin6_addr, 16);
}

/* sin_port and sin6_port share their offset. */
static uint16_t port_of(const void *sa)
{
	return ((const struct sockaddr_in *)sa)->sin_port;
}

static void set_port(void *sa, uint16_t port_be)
{
	((struct sockaddr_in *)sa)->sin_port = port_be;
}

/* Whether a datagram from src is the client's; the first one fixes an undeclared port. */
static bool from_client(struct udp_assoc *a, const struct sockaddr_storage *src)
{
	struct sockaddr_storage s = *src;

	unmap(&s);
	if (!same_ip(&s, &a->client))
		return false;
	if (a->port_known)
		return port_of(&s) == port_of(&a->client);
	set_port(&a->client, port_of(&s));
	a->port_known = true;
	return true;
}

/*
 * Whether the request's DST names the port the client will send from: a
 * port, with the client's own address or none (0.0.0.0, ::). Some clients
 * (v2ray) put the destination there instead; a DST with another address is
 * not about the client, and the port is learned from its first datagram.
 */
bool udp_addr_unspecified(const void *sa)
{
	const struct sockaddr_in6 *s6 = sa;

	if (s6->sin6_family == AF_INET)
		return ((const struct sockaddr_in *)sa)->sin_addr.s_addr == 0;
	return s6->sin6_family == AF_INET6 && IN6_IS_ADDR_UNSPECIFIED(&s6->sin6_addr);
}

static bool declares_port(const struct proto_target *declared, const union udp_addr *client)
{
	struct sockaddr_storage d;

	if (declared->kind != TARGET_IP || !declared->port)
		return false;
	d = declared->addr;
	unmap(&d);
	return udp_addr_unspecified(&d) || same_ip(&d, client);
}

/* The relay socket on local's address: a port of lo..hi (from a random start), or any. */
static int relay_socket(const struct sockaddr_storage *local, uint16_t lo, uint16_t hi)
{
	struct sockaddr_storage b = *local;
	unsigned span = lo ? (unsigned)(hi - lo) + 1 : 1, start = lo ? (unsigned)rand() % span : 0;
	int fd = socket(local->ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), err;

	if (fd < 0)
		return -errno;
	for (unsigned i = 0; i < span; i++) {
		set_port(&b, htons(lo ? (uint16_t)(lo + (start + i) % span) : 0));
		if (bind(fd, (const struct sockaddr *)&b, sa_len(b.ss_family)) == 0)
			return fd;
		if (errno != EADDRINUSE)
			break;
	}
	err = -errno;
	close(fd);
	return err;
}

/* An association object for connection c, its relay socket fd (-1: UDP-in-TCP). */
/*
 * At udp-max-sessions, the association idle longest goes: the older of the
 * heads of the udp-timeout and udp-dns-timeout queues, each in the order of
 * the last datagram (to within the second loop_timer_touch() allows).
 */
static struct udp_assoc *idlest_of(struct loop_tq *q, uint64_t *last)
{
	struct udp_assoc *a;

	if (list_empty(&q->head))
		return NULL;
	a = list_entry(q->head.next, struct udp_assoc, timer.node);
	*last = a->timer.due_ms - q->dur_ms; /* its last datagram */
	return a;
}

static void evict_idlest(struct worker *w)
{
	uint64_t l1 = 0, l2 = 0;
	struct udp_assoc *a1, *a2, *old;

	if (w->n_udp < w->cfg->udp_max_sessions)
		return;
	a1 = idlest_of(&w->udp_tq, &l1);
	a2 = idlest_of(&w->udp_dns_tq, &l2);
	old = !a2 || (a1 && l1 <= l2) ? a1 : a2;
	if (!old)
		return;
	w->stats.udp_evicted++;
	udp_assoc_close(old);
}

void udp_touch(struct udp_assoc *a)
{
	struct worker *w = a->w;

	loop_timer_touch(&w->loop, a->dns == 1 ? &w->udp_dns_tq : &w->udp_tq, &a->timer);
}

/* The first datagram to port 53 puts the association on udp-dns-timeout; any other takes it off. */
static void note_port(struct udp_assoc *a, uint16_t port)
{
	struct worker *w = a->w;
	uint8_t was = a->dns;

	if (port == 53 && !a->dns)
		a->dns = 1;
	else if (port != 53)
		a->dns = 2;
	if (a->dns != was)
		loop_timer_arm(&w->loop, a->dns == 1 ? &w->udp_dns_tq : &w->udp_tq, &a->timer);
}

static struct udp_assoc *assoc_new_in(struct worker *w, struct snapshot *snap, unsigned inbound,
                                      int fd)
{
	struct udp_assoc *a;

	evict_idlest(w);
	a = calloc(1, sizeof(*a));

	if (!a || loop_add(&w->loop, &a->obj, LOOP_KIND_UDP) < 0) {
		free(a);
		return NULL;
	}
	a->w = w;
	a->snap = worker_snap_hold_this(w, snap);
	a->inbound = inbound;
	a->fd = fd;
	a->tcp_fd = a->ctl_fd = -1;
	a->out_fd[0] = a->out_fd[1] = -1;
	list_init(&a->doom);
	loop_timer_init(&a->timer);
	loop_timer_arm(&w->loop, &w->udp_tq, &a->timer);
	w->stats.udp_assocs++;
	w->n_udp++;
	return a;
}

static struct udp_assoc *assoc_new(struct conn *c, int fd)
{
	return assoc_new_in(c->w, c->snap, c->inbound, fd);
}

struct udp_assoc *udp_assoc_new_session(struct worker *w, unsigned inbound)
{
	if (!udp_scratch(w))
		return NULL;
	return assoc_new_in(w, w->snap, inbound, -1);
}

int udp_assoc_open(struct conn *c, const struct sockaddr_storage *peer,
                   const struct sockaddr_storage *local, const struct proto_target *declared,
                   struct udp_assoc **out, struct sockaddr_storage *bound)
{
	struct worker *w = c->w;
	const struct inbound *in = &c->snap->cfg->inbounds[c->inbound];
	struct udp_assoc *a;
	socklen_t len = sizeof(*bound);
	int fd;

	if (!udp_scratch(w))
		return -ENOMEM;
	fd = relay_socket(local, in->udp_port_lo, in->udp_port_hi);
	if (fd < 0)
		return fd;
	udp_set_buffer(w, fd);
	a = assoc_new(c, fd);
	if (!a) {
		close(fd);
		return -ENOMEM;
	}
	a->relay_v6 = local->ss_family == AF_INET6;
	memcpy(&a->client, peer,
	       peer->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6)
	                                   : sizeof(struct sockaddr_in));
	unmap(&a->client);
	if (declares_port(declared, &a->client)) {
		set_port(&a->client, htons(declared->port));
		a->port_known = true;
	}
	getsockname(fd, (struct sockaddr *)bound, &len);
	if (in->udp_advertise.ss_family != AF_UNSPEC) {
		uint16_t port = port_of(bound);

		*bound = in->udp_advertise;
		set_port(bound, port);
	}
	udp_arm(a, UDP_OP_RELAY, fd, POLLIN);
	*out = a;
	return 0;
}

int udp_assoc_open_tcp(struct conn *c, int tcp_fd, struct udp_assoc **out)
{
	struct udp_assoc *a;

	if (!udp_scratch(c->w))
		return -ENOMEM;
	a = assoc_new(c, -1);
	if (!a)
		return -ENOMEM;
	a->tcp_fd = tcp_fd;
	*out = a;
	return 0;
}

void udp_assoc_adopt(struct udp_assoc *a, int fd, uint32_t src_slot)
{
	a->ctl_fd = fd;
	a->src_slot = src_slot;
	a->counted = true;
	udp_arm(a, UDP_OP_CTL, fd, POLLIN | POLLRDHUP);
}

void udp_assoc_adopt_user(struct udp_assoc *a, struct user_acct *u)
{
	a->user = u;
}

const char *udp_user(const struct udp_assoc *a)
{
	return a->user ? a->user->name : NULL;
}

/* The control connection is readable: frames (UDP-in-TCP), or bytes to drop, or its end. */
static bool ctl_readable(struct udp_assoc *a)
{
	uint8_t junk[512];
	ssize_t n;

	if (a->tcp_fd >= 0)
		return udp_tcp_readable(a);
	n = recv(a->ctl_fd, junk, sizeof(junk), MSG_DONTWAIT);
	return n > 0 || (n < 0 && (errno == EAGAIN || errno == EINTR));
}

/* The direct outbound's socket for a family: made, bound and polled on first use. */
static int out_socket(struct udp_assoc *a, const struct outbound *ob, int family)
{
	int i = family == AF_INET6, fd;

	if (a->out_fd[i] >= 0)
		return a->out_fd[i];
	fd = outbound_udp_socket(ob, family);
	if (fd < 0)
		return fd;
	udp_set_buffer(a->w, fd);
	a->out_fd[i] = fd;
	udp_arm(a, i ? UDP_OP_OUT6 : UDP_OP_OUT4, fd, POLLIN);
	return fd;
}

/* Send a payload to addr (t's address, or its name's) through ob, if the egress policy says yes. */
void udp_send_to(struct udp_assoc *a, const struct outbound *ob, const struct proto_target *t,
                 const struct sockaddr_storage *addr, const uint8_t *d, size_t n)
{
	struct worker *w = a->w;
	const struct inbound *in = &a->snap->cfg->inbounds[a->inbound];
	struct sockaddr_storage to = *addr;
	int fd;

	unmap(&to);
	if (egress_refused(a->snap->cfg, in, ob, t, udp_user(a), &to, w->stats.egress))
		return;
	fd = out_socket(a, ob, to.ss_family);
	if (fd < 0) {
		w->stats.udp_send_errors++;
		return;
	}
	udp_tx_add(w, fd, &to, sa_len(to.ss_family), NULL, 0, d, n, false);
}

/* A datagram for t from the client (either front-end): route, check, send. */
void udp_send_up(struct udp_assoc *a, const struct proto_target *t, const uint8_t *d, size_t n)
{
	struct worker *w = a->w;
	const struct config *cfg = a->snap->cfg;
	const struct outbound *ob =
	        &cfg->outbounds[route_pick(cfg, &cfg->inbounds[a->inbound], t, udp_user(a))];

	note_port(a, t->port);
	if (ob->type == OUTBOUND_BLOCK) {
		w->stats.udp_blocked++;
		return;
	}
	a->user_up += n; /* the user's bytes: what is routed out (a later drop is still counted) */
	if (ob->type == OUTBOUND_SOCKS5 && ob->udp_mode != OUTBOUND_UDP_OFF) {
		udp_up_send(a, ob, t, d, n); /* a name goes to the upstream as a name */
		return;
	}
	if (ob->type != OUTBOUND_DIRECT) {
		w->stats.udp_unsupported++;
		return;
	}
	if (t->kind == TARGET_DOMAIN)
		udp_up_name(a, ob, t, d, n);
	else
		udp_send_to(a, ob, t, &t->addr, d, n);
}

/* One datagram on the relay socket: parse the RFC 1928 header, then as any other. */
bool udp_parse(struct worker *w, const uint8_t *d, size_t n, struct proto_target *t, size_t *hl)
{
	enum socks5_udp_error e = socks5_udp_parse(d, n, t, hl);

	if (e == SOCKS5_UDP_FRAG) {
		w->stats.udp_frag++;
		return false;
	}
	if (e != SOCKS5_UDP_OK) {
		w->stats.udp_malformed++;
		log_debug_rl("udp: datagram dropped: %s header", socks5_udp_error_name(e));
		return false;
	}
	return true;
}

static void up(struct udp_assoc *a, const uint8_t *d, size_t n)
{
	struct proto_target t;
	size_t hl = 0;

	if (udp_parse(a->w, d, n, &t, &hl))
		udp_send_up(a, &t, d + hl, n - hl);
}

void udp_deliver(struct udp_assoc *a, const uint8_t *d, size_t n, const struct sockaddr *sa,
                 const struct proto_target *t)
{
	struct worker *w = a->w;
	uint8_t hdr[SOCKS5_UDP_HDR_MAX];
	size_t hl;
	struct sockaddr_in6 mapped;

	a->user_down += n;
	if (a->tp) {
		/*
		 * tproxy: from the target's own address, as it is; through a socks5
		 * upstream, the address its header names (a name there cannot be
		 * sent from: dropped and counted by udp_tp_deliver()).
		 */
		if (!sa && t && t->kind == TARGET_IP)
			sa = (const struct sockaddr *)&t->addr;
		udp_tp_deliver(a, d, n, sa);
		return;
	}
	if (a->tcp_fd >= 0) {
		udp_tcp_down(a, hdr,
		             sa ? socks5_tcpudp_put_header_sa(hdr, sa, n)
		                : socks5_tcpudp_put_header(hdr, t, n),
		             d, n);
		return;
	}
	if (!a->port_known) {
		w->stats.udp_foreign++; /* nobody to send it to yet */
		return;
	}
	hl = sa ? socks5_udp_put_header_sa(hdr, sa) : socks5_udp_put_header(hdr, t);
	/* A dual-stack relay socket (the client came over IPv4 to [::]) needs the mapped form. */
	if (a->relay_v6 && a->client.sa.sa_family == AF_INET) {
		const struct sockaddr_in *c4 = &a->client.in4;

		memset(&mapped, 0, sizeof(mapped));
		mapped.sin6_family = AF_INET6;
		mapped.sin6_port = c4->sin_port;
		mapped.sin6_addr.s6_addr[10] = mapped.sin6_addr.s6_addr[11] = 0xff;
		memcpy(&mapped.sin6_addr.s6_addr[12], &c4->sin_addr, 4);
		udp_tx_add(w, a->fd, &mapped, sizeof(mapped), hdr, hl, d, n, true);
		return;
	}
	udp_tx_add(w, a->fd, &a->client, sa_len(a->client.sa.sa_family), hdr, hl, d, n, true);
}

/*
 * Drain what fd holds, UDP_BATCH datagrams per recvmmsg(2), at most four
 * rounds before the poll is armed again (the other sockets get their turn).
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

static void drain(struct udp_assoc *a, int fd, bool from_relay)
{
	struct udp_rx rx;
	const struct sockaddr_storage *src = rx.src;

	for (int round = 0; round < 4; round++) {
		int n = udp_recv_batch(a->w, fd, &rx, NULL);

		if (n <= 0)
			return;
		udp_touch(a);
		for (int i = 0; i < n; i++) {
			uint8_t *d = rx.iov[i].iov_base;
			size_t len = rx.mm[i].msg_len;

			if (rx.mm[i].msg_hdr.msg_flags & MSG_TRUNC) {
				a->w->stats.udp_malformed++;
				continue;
			}
			if (!from_relay) {
				udp_deliver(a, d, len, (const struct sockaddr *)&src[i], NULL);
			} else if (!from_client(a, &src[i])) {
				a->w->stats.udp_foreign++;
			} else {
				up(a, d, len);
			}
		}
		udp_tx_flush(a->w); /* before the next round reuses the buffers */
		if (n < UDP_BATCH)
			return;
	}
}

static void complete(struct loop *l, struct loop_obj *o, unsigned op,
                     const struct io_uring_cqe *cqe)
{
	struct udp_assoc *a = (struct udp_assoc *)o;
	int fd = op == UDP_OP_RELAY ? a->fd : a->out_fd[op == UDP_OP_OUT6];

	(void)l;
	a->ops[op] = 0;
	if (cqe->res < 0) {
		log_debug_rl("udp: poll failed: %s", strerror(-cqe->res));
		udp_assoc_close(a);
		return;
	}
	if (op == UDP_OP_TCP_OUT) {
		udp_tcp_writable(a);
		return;
	}
	if (op == UDP_OP_CTL) {
		if (!ctl_readable(a))
			udp_assoc_close(
			        a); /* the client closed (or reset) its control connection */
		else if (!a->obj.closed)
			udp_arm(a, UDP_OP_CTL, a->ctl_fd, POLLIN | POLLRDHUP);
		return;
	}
	/* An error queued on the socket (an ICMP report) would make every poll return at once. */
	if (cqe->res & POLLERR) {
		int e;
		socklen_t el = sizeof(e);

		getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &el);
	}
	drain(a, fd, op == UDP_OP_RELAY);
	if (!a->obj.closed)
		udp_arm(a, op, fd, POLLIN);
}

void udp_assoc_close(struct udp_assoc *a)
{
	struct worker *w = a->w;

	if (a->obj.closed)
		return;
	for (unsigned i = 0; i < UDP_OP_END; i++) {
		if (a->ops[i])
			loop_cancel(&w->loop, a->ops[i]);
		a->ops[i] = 0;
	}
	loop_timer_stop(&a->timer);
	list_del(&a->doom);
	udp_up_close_all(a);
	udp_names_free(a);
	udp_tp_unlink(a);
	a->obj.closed = true;
	loop_close(&w->loop, &a->obj); /* a may be freed from here on */
}

void udp_assoc_doom(struct udp_assoc *a)
{
	if (a->doomed || a->obj.closed)
		return;
	a->doomed = true;
	list_add_tail(&a->w->udp_doomed, &a->doom);
}

void udp_reap(struct worker *w)
{
	while (!list_empty(&w->udp_doomed))
		udp_assoc_close(list_entry(w->udp_doomed.next, struct udp_assoc, doom));
}

void udp_timeout(struct loop *l, struct loop_timer *t)
{
	struct udp_assoc *a = list_entry(t, struct udp_assoc, timer);

	(void)l;
	a->w->stats.udp_timeouts++;
	udp_assoc_close(a);
}

static void release(struct loop *l, struct loop_obj *o)
{
	struct udp_assoc *a = (struct udp_assoc *)o;

	(void)l;
	struct worker *w = a->w;

	w->n_udp--;
	if (a->fd >= 0)
		close(a->fd);
	if (a->ctl_fd >= 0)
		close(a->ctl_fd);
	if (a->user)
		user_acct_close(a->user, a->user_up, a->user_down);
	if (a->counted) {
		source_limit_put(w->srv->per_source, a->src_slot);
		w->n_conns--;
		atomic_fetch_sub_explicit(&w->srv->n_conns, 1, memory_order_relaxed);
		a->snap->in_stats[a->inbound]->rows[w->id].closed++;
	}
	worker_snap_drop(w, a->snap);
	udp_tp_free(a);
	free(a->tcp_in.buf);
	free(a->tcp_out.buf);
	for (int i = 0; i < 2; i++)
		if (a->out_fd[i] >= 0)
			close(a->out_fd[i]);
	free(a);
}

const struct loop_module udp_module = {
        .name = "udp",
        .complete = complete,
        .release = release,
};
