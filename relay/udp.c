/* SPDX-License-Identifier: MIT */
/* SOCKS5 UDP associations (RFC 1928 section 7): the front end of a UDP session with a relay socket (or UDP-in-TCP) and a control connection. */
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
#include "log.h"
#include "socks5_udp.h"
#include "sockaddr.h"
#include "udp.h"
#include "worker.h"

/*
 * The association is a UDP session (udp_session.c) whose front end is
 * this file:
 *  - A relay socket per association, bound to the address the client
 *    reached over TCP (a port in udp-ports when set). Datagrams are taken
 *    only from the client's IP address (its TCP peer's), and only from the
 *    port it declared, or, when it declared none, the port of its first
 *    datagram: everything else is dropped and counted. RFC 1928 asks for
 *    the relay socket, and it keeps each association on the worker that
 *    holds its control connection.
 *  - FRAG != 0 is dropped (section 7 allows it), as is any malformed
 *    header; nothing malformed is ever answered.
 *  - Replies carry their source as the header's address (a name, when a
 *    socks5 upstream named one).
 *  - UDP-in-TCP (hev-socks5's FWD UDP): no relay socket; datagrams are
 *    frames on the control connection (udp_tcp.c).
 *  - The association ends with its TCP connection, and when its session
 *    ends (udp-timeout, eviction), which also closes the connection.
 */

static const struct udp_front socks5_front;

void udp_assoc_arm(struct udp_assoc *a, unsigned op, int fd, unsigned mask)
{
	a->ops[op - UDP_SESS_OP_FRONT] = udp_sess_arm(&a->s, op, fd, mask);
}

void udp_assoc_close(struct udp_assoc *a)
{
	udp_sess_close(&a->s);
}

/*
 * A dual-stack socket's view of an IPv4 client is ::ffff:a.b.c.d, unmapped
 * (udp_endpoint_unmap()) to compare with a TCP peer's. The helpers below
 * take any of sockaddr_storage, sockaddr_in6 or union udp_addr.
 */
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

	udp_endpoint_unmap(&s);
	if (!same_ip(&s, &a->s.client))
		return false;
	if (a->port_known)
		return port_of(&s) == port_of(&a->s.client);
	set_port(&a->s.client, port_of(&s));
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
	udp_endpoint_unmap(&d);
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

/* An association for connection c, with its relay socket fd (-1: UDP-in-TCP). */
static struct udp_assoc *assoc_new(struct conn *c, int fd)
{
	struct udp_assoc *a = (struct udp_assoc *)udp_sess_open(c->w, c->inbound, &socks5_front,
	                                                        sizeof(*a), NULL, NULL);

	if (!a)
		return NULL;
	udp_sess_set_snap(&a->s,
	                  c->snap); /* the connection's, which a reload may have left behind */
	a->fd = fd;
	a->tcp_fd = a->ctl_fd = -1;
	return a;
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
	memcpy(&a->s.client, peer, udp_endpoint_len(peer));
	udp_endpoint_unmap(&a->s.client);
	if (declares_port(declared, &a->s.client)) {
		set_port(&a->s.client, htons(declared->port));
		a->port_known = true;
	}
	getsockname(fd, (struct sockaddr *)bound, &len);
	if (in->udp_advertise.ss_family != AF_UNSPEC) {
		uint16_t port = port_of(bound);

		*bound = in->udp_advertise;
		set_port(bound, port);
	}
	udp_assoc_arm(a, UDP_OP_RELAY, fd, POLLIN);
	*out = a;
	return 0;
}

int udp_assoc_open_tcp(struct conn *c, int tcp_fd, struct udp_assoc **out)
{
	struct udp_assoc *a = assoc_new(c, -1);

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
	udp_assoc_arm(a, UDP_OP_CTL, fd, POLLIN | POLLRDHUP);
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

/* One datagram on the relay socket: parse the RFC 1928 header. */
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

/* A reply: a header naming its source, then the payload, to the client's port or stream. */
static void deliver(struct udp_sess *s, const uint8_t *d, size_t n, const struct sockaddr *sa,
                    const struct proto_target *t)
{
	struct udp_assoc *a = (struct udp_assoc *)s;
	struct worker *w = s->w;
	uint8_t hdr[SOCKS5_UDP_HDR_MAX];
	size_t hl;
	struct sockaddr_in6 mapped;

	if (a->tcp_fd >= 0) {
		udp_tcp_down(a, hdr,
		             t ? socks5_tcpudp_put_header(hdr, t, n)
		               : socks5_tcpudp_put_header_sa(hdr, sa, n),
		             d, n);
		return;
	}
	if (!a->port_known) {
		w->stats.udp_foreign++; /* nobody to send it to yet */
		return;
	}
	hl = t ? socks5_udp_put_header(hdr, t) : socks5_udp_put_header_sa(hdr, sa);
	/* A dual-stack relay socket (the client came over IPv4 to [::]) needs the mapped form. */
	if (a->relay_v6 && s->client.sa.sa_family == AF_INET) {
		const struct sockaddr_in *c4 = &s->client.in4;

		memset(&mapped, 0, sizeof(mapped));
		mapped.sin6_family = AF_INET6;
		mapped.sin6_port = c4->sin_port;
		mapped.sin6_addr.s6_addr[10] = mapped.sin6_addr.s6_addr[11] = 0xff;
		memcpy(&mapped.sin6_addr.s6_addr[12], &c4->sin_addr, 4);
		udp_tx_add(w, a->fd, &mapped, sizeof(mapped), hdr, hl, d, n, true);
		return;
	}
	udp_tx_add(w, a->fd, &s->client, sa_len(s->client.sa.sa_family), hdr, hl, d, n, true);
}

/* What the relay socket holds: the client's datagrams, UDP_BATCH per recvmmsg(2), four rounds. */
static void relay_in(struct udp_assoc *a)
{
	struct worker *w = a->s.w;
	struct udp_rx rx;

	for (int round = 0; round < 4; round++) {
		int n = udp_recv_batch(w, a->fd, &rx, NULL);

		if (n <= 0)
			return;
		for (int i = 0; i < n && !a->s.obj.closed; i++) {
			const uint8_t *d = rx.iov[i].iov_base;
			size_t len = rx.mm[i].msg_len, hl = 0;
			struct proto_target t;

			if (rx.mm[i].msg_hdr.msg_flags & MSG_TRUNC)
				w->stats.udp_malformed++;
			else if (!from_client(a, &rx.src[i]))
				w->stats.udp_foreign++;
			else if (udp_parse(w, d, len, &t, &hl))
				udp_sess_send(&a->s, &t, d + hl, len - hl);
		}
		udp_tx_flush(w); /* before the next round reuses the buffers */
		if (n < UDP_BATCH || a->s.obj.closed)
			return;
	}
}

static void complete(struct udp_sess *s, unsigned op, const struct io_uring_cqe *cqe)
{
	struct udp_assoc *a = (struct udp_assoc *)s;

	a->ops[op - UDP_SESS_OP_FRONT] = 0;
	if (cqe->res < 0) {
		log_debug_rl("udp: poll failed: %s", strerror(-cqe->res));
		udp_assoc_close(a);
		return;
	}
	switch (op) {
	case UDP_OP_TCP_OUT:
		udp_tcp_writable(a);
		break;
	case UDP_OP_CTL:
		if (!ctl_readable(a))
			udp_assoc_close(
			        a); /* the client closed (or reset) its control connection */
		else if (!s->obj.closed)
			udp_assoc_arm(a, UDP_OP_CTL, a->ctl_fd, POLLIN | POLLRDHUP);
		break;
	case UDP_OP_RELAY:
		/* An error queued on the socket (an ICMP report) would make every poll return at once. */
		if (cqe->res & POLLERR) {
			int e;
			socklen_t el = sizeof(e);

			getsockopt(a->fd, SOL_SOCKET, SO_ERROR, &e, &el);
		}
		relay_in(a);
		if (!s->obj.closed)
			udp_assoc_arm(a, UDP_OP_RELAY, a->fd, POLLIN);
		break;
	}
}

static void closing(struct udp_sess *s)
{
	struct udp_assoc *a = (struct udp_assoc *)s;

	for (unsigned i = 0; i < UDP_OP_END - UDP_SESS_OP_FRONT; i++) {
		if (a->ops[i])
			loop_cancel(&s->w->loop, a->ops[i]);
		a->ops[i] = 0;
	}
}

static void release(struct udp_sess *s)
{
	struct udp_assoc *a = (struct udp_assoc *)s;
	struct worker *w = s->w;

	if (a->fd >= 0)
		close(a->fd);
	if (a->ctl_fd >= 0)
		close(a->ctl_fd);
	if (a->counted) {
		source_limit_put(w->srv->per_source, a->src_slot);
		w->n_conns--;
		atomic_fetch_sub_explicit(&w->srv->n_conns, 1, memory_order_relaxed);
		s->snap->in_stats[s->inbound]->rows[w->id].closed++;
	}
	free(a->tcp_in.buf);
	free(a->tcp_out.buf);
}

static const struct udp_front socks5_front = {
        .deliver = deliver,
        .complete = complete,
        .closing = closing,
        .release = release,
};
