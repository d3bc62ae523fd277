/* SPDX-License-Identifier: MIT */
/* UDP sessions: the table by client endpoint, lifetimes and eviction, routing per datagram, the direct sockets, replies back to the front end. */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "egress.h"
#include "log.h"
#include "outbound.h"
#include "route.h"
#include "sockaddr.h"
#include "udp.h"
#include "user_acct.h"
#include "worker.h"

/*
 * What a session does with a datagram (udp_session.h says what it is):
 *  - Each destination is routed (port, cidr, domain and user rules) and
 *    checked by the egress policy, datagram by datagram, so one session
 *    carries all of a client's flows (a DNS client asking two servers, a
 *    game talking to several).
 *  - The direct outbound sends from one unconnected socket per family,
 *    bound as the TCP direct outbound is (bind-address, bind-interface,
 *    fwmark); replies are taken from any source (endpoint-independent
 *    filtering) and go to the front end with their source address. So the
 *    mapping is endpoint-independent too: one session, one source port
 *    per family, whatever the destination.
 *  - A name is looked up (c-ares, on the loop) the first time the client
 *    sends to it and kept for the session's life (udp_names.c); its first
 *    address is used. Domain rules apply to the name, cidr rules and the
 *    egress policy to the address.
 *  - A socks5 upstream carries UDP over an association of our own with it
 *    (udp_up.c). The http upstream cannot: dropped and counted
 *    (udp_unsupported); `block` drops and counts (udp_blocked).
 *  - The session ends after udp-timeout without a datagram either way, or
 *    udp-dns-timeout when all it ever sent went to port 53; at
 *    udp-max-sessions in its worker, the one idle longest goes for a new
 *    one (least recently used, to within the second that
 *    loop_timer_touch() allows).
 */

/* ---- endpoints and the table ---- */

socklen_t udp_endpoint_len(const void *sa)
{
	return ((const struct sockaddr *)sa)->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
	                                                            : sizeof(struct sockaddr_in);
}

bool udp_endpoint_eq(const void *x, const void *y)
{
	const struct sockaddr_in6 *a = x, *b = y;

	if (a->sin6_family != b->sin6_family)
		return false;
	if (a->sin6_family == AF_INET) {
		const struct sockaddr_in *p = x, *q = y;
		return p->sin_addr.s_addr == q->sin_addr.s_addr && p->sin_port == q->sin_port;
	}
	return !memcmp(&a->sin6_addr, &b->sin6_addr, 16) && a->sin6_port == b->sin6_port;
}

uint64_t udp_endpoint_hash(const uint8_t key[SIPHASH_KEY_LEN], const void *sa)
{
	const struct sockaddr_in6 *s6 = sa;
	uint8_t k[18];

	if (s6->sin6_family == AF_INET) {
		const struct sockaddr_in *s4 = sa;
		memcpy(k, &s4->sin_addr, 4);
		memcpy(k + 4, &s4->sin_port, 2);
		return siphash24(key, k, 6);
	}
	memcpy(k, &s6->sin6_addr, 16);
	memcpy(k + 16, &s6->sin6_port, 2);
	return siphash24(key, k, 18);
}

void udp_endpoint_unmap(void *sa)
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

/*
 * 64 buckets to start with (512 octets a table), doubled whenever there
 * are twice as many sessions as buckets, so chains stay short at any
 * udp-max-sessions; never shrunk (a worker that held many may again).
 */
enum { TABLE_MIN = 64, TABLE_MAX = 1u << 22 };

static uint32_t bucket(const struct udp_sess_table *t, const void *sa)
{
	return (uint32_t)udp_endpoint_hash(t->key, sa) & t->mask;
}

int udp_sess_table_init(struct udp_sess_table *t)
{
	memset(t, 0, sizeof(*t));
	if (getrandom(t->key, sizeof(t->key), 0) != (ssize_t)sizeof(t->key))
		return -EAGAIN;
	t->b = calloc(TABLE_MIN, sizeof(*t->b));
	if (!t->b)
		return -ENOMEM;
	t->mask = TABLE_MIN - 1;
	return 0;
}

void udp_sess_table_fini(struct udp_sess_table *t)
{
	for (uint32_t i = 0; t->b && i <= t->mask; i++)
		for (struct udp_sess *s = t->b[i]; s; s = s->next)
			s->tab = NULL;
	free(t->b);
	t->b = NULL;
	t->n = 0;
}

struct udp_sess *udp_sess_find(const struct udp_sess_table *t, const void *client)
{
	for (struct udp_sess *s = t->b[bucket(t, client)]; s; s = s->next)
		if (udp_endpoint_eq(&s->client, client))
			return s;
	return NULL;
}

/* Twice the buckets; without the memory the chains only grow longer. */
static void grow(struct udp_sess_table *t)
{
	uint32_t size = (t->mask + 1) * 2;
	struct udp_sess **b;

	if (size > TABLE_MAX || !(b = calloc(size, sizeof(*b))))
		return;
	for (uint32_t i = 0; i <= t->mask; i++) {
		struct udp_sess *s = t->b[i], *next;

		for (; s; s = next) {
			uint32_t j = (uint32_t)udp_endpoint_hash(t->key, &s->client) & (size - 1);

			next = s->next;
			s->next = b[j];
			b[j] = s;
		}
	}
	free(t->b);
	t->b = b;
	t->mask = size - 1;
}

static void table_add(struct udp_sess_table *t, struct udp_sess *s)
{
	struct udp_sess **head;

	if (t->n >= 2 * (t->mask + 1))
		grow(t);
	head = &t->b[bucket(t, &s->client)];
	s->next = *head;
	*head = s;
	s->tab = t;
	t->n++;
}

static void table_del(struct udp_sess *s)
{
	struct udp_sess_table *t = s->tab;

	if (!t)
		return;
	for (struct udp_sess **p = &t->b[bucket(t, &s->client)]; *p; p = &(*p)->next) {
		if (*p == s) {
			*p = s->next;
			t->n--;
			break;
		}
	}
	s->tab = NULL;
}

/* ---- lifetimes ---- */

/*
 * At udp-max-sessions, the session idle longest goes: the older of the
 * heads of the udp-timeout and udp-dns-timeout queues, each in the order
 * of the last datagram.
 */
static struct udp_sess *idlest_of(struct loop_tq *q, uint64_t *last)
{
	struct udp_sess *s;

	if (list_empty(&q->head))
		return NULL;
	s = list_entry(q->head.next, struct udp_sess, timer.node);
	*last = s->timer.due_ms - q->dur_ms; /* its last datagram */
	return s;
}

static void evict_idlest(struct worker *w)
{
	uint64_t l1 = 0, l2 = 0;
	struct udp_sess *s1, *s2, *old;

	if (w->n_udp < w->cfg->udp_max_sessions)
		return;
	s1 = idlest_of(&w->udp_tq, &l1);
	s2 = idlest_of(&w->udp_dns_tq, &l2);
	old = !s2 || (s1 && l1 <= l2) ? s1 : s2;
	if (!old)
		return;
	w->stats.udp_evicted++;
	udp_sess_close(old);
}

void udp_sess_touch(struct udp_sess *s)
{
	struct worker *w = s->w;

	loop_timer_touch(&w->loop, s->dns == 1 ? &w->udp_dns_tq : &w->udp_tq, &s->timer);
}

/* The first datagram to port 53 puts the session on udp-dns-timeout; any other takes it off. */
static void note_port(struct udp_sess *s, uint16_t port)
{
	struct worker *w = s->w;
	uint8_t was = s->dns;

	if (port == 53 && !s->dns)
		s->dns = 1;
	else if (port != 53)
		s->dns = 2;
	if (s->dns != was)
		loop_timer_arm(&w->loop, s->dns == 1 ? &w->udp_dns_tq : &w->udp_tq, &s->timer);
}

struct udp_sess *udp_sess_open(struct worker *w, unsigned inbound, const struct udp_front *f,
                               size_t size, const void *client, struct udp_sess_table *tab)
{
	struct udp_sess *s;

	if (size < sizeof(*s) || !udp_scratch(w))
		return NULL;
	evict_idlest(w);
	s = calloc(1, size);
	if (!s || loop_add(&w->loop, &s->obj, LOOP_KIND_UDP) < 0) {
		free(s);
		return NULL;
	}
	s->w = w;
	s->front = f;
	s->inbound = inbound;
	s->out_fd[0] = s->out_fd[1] = -1;
	list_init(&s->doom);
	loop_timer_init(&s->timer);
	loop_timer_arm(&w->loop, &w->udp_tq, &s->timer);
	if (client)
		memcpy(&s->client, client, udp_endpoint_len(client));
	if (tab)
		table_add(tab, s);
	w->stats.udp_assocs++;
	w->n_udp++;
	return s;
}

void udp_sess_close(struct udp_sess *s)
{
	struct worker *w = s->w;

	if (s->obj.closed)
		return;
	for (unsigned i = 0; i < 2; i++) {
		if (s->ops[i])
			loop_cancel(&w->loop, s->ops[i]);
		s->ops[i] = 0;
	}
	table_del(s);
	if (s->front->closing)
		s->front->closing(s);
	loop_timer_stop(&s->timer);
	list_del(&s->doom);
	udp_up_close_all(s);
	udp_names_free(s);
	s->obj.closed = true;
	loop_close(&w->loop, &s->obj); /* s may be freed from here on */
}

void udp_sess_doom(struct udp_sess *s)
{
	if (s->doomed || s->obj.closed)
		return;
	s->doomed = true;
	list_add_tail(&s->w->udp_doomed, &s->doom);
}

void udp_sess_reap(struct worker *w)
{
	while (!list_empty(&w->udp_doomed))
		udp_sess_close(list_entry(w->udp_doomed.next, struct udp_sess, doom));
}

void udp_sess_timeout(struct loop *l, struct loop_timer *t)
{
	struct udp_sess *s = list_entry(t, struct udp_sess, timer);

	(void)l;
	s->w->stats.udp_timeouts++;
	udp_sess_close(s);
}

void udp_sess_set_user(struct udp_sess *s, struct user_acct *u)
{
	s->user = u;
}

const char *udp_sess_user(const struct udp_sess *s)
{
	return s->user ? s->user->name : NULL;
}

const struct inbound *udp_sess_inbound(const struct udp_sess *s)
{
	return s->inbound == UDP_SESS_NO_INBOUND ? NULL : &s->w->cfg->inbounds[s->inbound];
}

static uint64_t arm(struct udp_sess *s, unsigned op, int fd, unsigned mask)
{
	struct io_uring_sqe *sqe = loop_prep(&s->w->loop, &s->obj, op);

	io_uring_prep_poll_add(sqe, fd, mask);
	return sqe->user_data;
}

uint64_t udp_sess_arm(struct udp_sess *s, unsigned op, int fd, unsigned mask)
{
	return arm(s, op, fd, mask);
}

/* ---- out: routing and the direct sockets ---- */

/* The direct outbound's socket for a family: made, bound and polled on first use. */
static int out_socket(struct udp_sess *s, const struct outbound *ob, int family)
{
	int i = family == AF_INET6, fd;

	if (s->out_fd[i] >= 0)
		return s->out_fd[i];
	fd = outbound_udp_socket(ob, family);
	if (fd < 0)
		return fd;
	udp_set_buffer(s->w, fd);
	s->out_fd[i] = fd;
	s->ops[i] = arm(s, i ? UDP_SESS_OP_OUT6 : UDP_SESS_OP_OUT4, fd, POLLIN);
	return fd;
}

void udp_sess_send_to(struct udp_sess *s, const struct outbound *ob, const struct proto_target *t,
                      const struct sockaddr_storage *addr, const uint8_t *d, size_t n)
{
	struct worker *w = s->w;
	struct sockaddr_storage to = *addr;
	int fd;

	udp_endpoint_unmap(&to); /* the direct sockets are one per family */
	if (egress_refused(w->cfg, udp_sess_inbound(s), ob, t, udp_sess_user(s), &to,
	                   w->stats.egress))
		return;
	fd = out_socket(s, ob, to.ss_family);
	if (fd < 0) {
		w->stats.udp_send_errors++;
		return;
	}
	udp_tx_add(w, fd, &to, sa_len(to.ss_family), NULL, 0, d, n, false);
}

void udp_sess_send(struct udp_sess *s, const struct proto_target *t, const uint8_t *d, size_t n)
{
	struct worker *w = s->w;
	const struct config *cfg = w->cfg;
	const struct outbound *ob =
	        &cfg->outbounds[route_pick(cfg, udp_sess_inbound(s), t, udp_sess_user(s))];

	udp_sess_touch(s);
	note_port(s, t->port);
	if (ob->type == OUTBOUND_BLOCK) {
		w->stats.udp_blocked++;
		return;
	}
	s->user_up += n; /* the user's bytes: what is routed out (a later drop is still counted) */
	if (ob->type == OUTBOUND_SOCKS5 && ob->udp_mode != OUTBOUND_UDP_OFF) {
		udp_up_send(s, ob, t, d, n); /* a name goes to the upstream as a name */
		return;
	}
	if (ob->type != OUTBOUND_DIRECT) {
		w->stats.udp_unsupported++;
		return;
	}
	if (t->kind == TARGET_DOMAIN)
		udp_names_send(s, ob, t, d, n);
	else
		udp_sess_send_to(s, ob, t, &t->addr, d, n);
}

/* ---- back: replies to the front end ---- */

void udp_sess_deliver(struct udp_sess *s, const uint8_t *d, size_t n, const struct sockaddr *sa,
                      const struct proto_target *t)
{
	struct sockaddr_storage plain;

	s->user_down += n;
	if (!sa && t && t->kind == TARGET_IP)
		sa = (const struct sockaddr *)&t->addr; /* an upstream's header: an address */
	if (sa && sa->sa_family == AF_INET6 &&
	    IN6_IS_ADDR_V4MAPPED(&((const struct sockaddr_in6 *)sa)->sin6_addr)) {
		memcpy(&plain, sa, sizeof(struct sockaddr_in6));
		udp_endpoint_unmap(&plain);
		sa = (const struct sockaddr *)&plain;
	}
	s->front->deliver(s, d, n, sa, t);
}

/* What a direct socket holds: replies, UDP_BATCH per recvmmsg(2), at most four rounds a poll. */
static void replies(struct udp_sess *s, int fd)
{
	struct worker *w = s->w;
	struct udp_rx rx;

	for (int round = 0; round < 4; round++) {
		int n = udp_recv_batch(w, fd, &rx, NULL);

		if (n <= 0)
			return;
		udp_sess_touch(s);
		for (int i = 0; i < n && !s->obj.closed; i++) {
			if (rx.mm[i].msg_hdr.msg_flags & MSG_TRUNC)
				w->stats.udp_malformed++;
			else
				udp_sess_deliver(s, rx.iov[i].iov_base, rx.mm[i].msg_len,
				                 (const struct sockaddr *)&rx.src[i], NULL);
		}
		udp_tx_flush(w); /* before the next round reuses the buffers */
		if (n < UDP_BATCH || s->obj.closed)
			return;
	}
}

static void complete(struct loop *l, struct loop_obj *o, unsigned op,
                     const struct io_uring_cqe *cqe)
{
	struct udp_sess *s = (struct udp_sess *)o;
	int i = op == UDP_SESS_OP_OUT6, fd;

	(void)l;
	if (op >= UDP_SESS_OP_FRONT) {
		s->front->complete(s, op, cqe);
		return;
	}
	s->ops[i] = 0;
	fd = s->out_fd[i];
	if (cqe->res < 0) {
		log_debug_rl("udp: poll failed: %s", strerror(-cqe->res));
		udp_sess_close(s);
		return;
	}
	/* An error queued on the socket (an ICMP report) would make every poll return at once. */
	if (cqe->res & POLLERR) {
		int e;
		socklen_t el = sizeof(e);

		getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &el);
	}
	replies(s, fd);
	if (!s->obj.closed)
		s->ops[i] = arm(s, op, fd, POLLIN);
}

static void release(struct loop *l, struct loop_obj *o)
{
	struct udp_sess *s = (struct udp_sess *)o;
	struct worker *w = s->w;

	(void)l;
	/* The batch may still hold a datagram for one of its sockets: it goes first. */
	udp_tx_flush(w);
	w->n_udp--;
	if (s->front->release)
		s->front->release(s);
	if (s->user)
		user_acct_close(s->user, s->user_up, s->user_down);
	for (int i = 0; i < 2; i++)
		if (s->out_fd[i] >= 0)
			close(s->out_fd[i]);
	free(s);
}

const struct loop_module udp_sess_module = {
        .name = "udp",
        .complete = complete,
        .release = release,
};
