/* SPDX-License-Identifier: MIT */
/* The tun inbound's connections: no handshake, the target from the NAT entry of the accepted socket's peer. */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include "clock.h"
#include "inbound.h"
#include "nat.h"
#include "tun_dev.h"

/*
 * The kernel's TCP stack has terminated the app's flow on the TUN's
 * listener (tun_queue.c rewrote its SYN): the accepted socket's peer is the
 * fake source F:f, whose NAT entry says where the app was going. The entry
 * is held (never expires) until the connection is released, then lingers
 * (nat.h). A connection over a socketpair is the TUN's own DNS query over
 * TCP (tun_dns.c): its target is dns-server.
 */
struct tun_st {
	struct proto_target target;
	uint32_t ref;
	struct sockaddr_storage app; /* the app's own address and port (family 0: none) */
};

static enum proto_res tun_start(void *st, const struct inbound *in, int fd)
{
	struct tun_st *s = st;
	struct tun_dev *d = tun_dev_of(in);
	struct sockaddr_storage peer;
	socklen_t len = sizeof(peer);
	struct nat_flow fl;

	if (!d || getpeername(fd, (struct sockaddr *)&peer, &len) < 0)
		return PROTO_FAIL;
	/* A socketpair the TUN's DNS made (tun_dns.c): a query over TCP to dns-server. */
	if (peer.ss_family == AF_UNIX)
		return in->tun.dns_server.ss_family != AF_UNSPEC &&
		                       proto_target_from_sa(&s->target, &in->tun.dns_server)
		               ? PROTO_REQUEST
		               : PROTO_FAIL;
	if (nat_accept(&d->nat, (struct sockaddr *)&peer, &fl, &s->ref, clock_coarse_ms()) < 0)
		return PROTO_FAIL;
	s->app = fl.src;
	if (d->map.e) {
		/* mapped-dns: an address it gave out stands for a name; the name goes on */
		const struct sockaddr_in6 *d6 = (const struct sockaddr_in6 *)&fl.dst;
		const struct sockaddr_in *d4 = (const struct sockaddr_in *)&fl.dst;
		int fam = fl.dst.ss_family == AF_INET ? 4 : 6;
		const uint8_t *a =
		        fam == 4 ? (const uint8_t *)&d4->sin_addr : (const uint8_t *)&d6->sin6_addr;

		if (dnsmap_contains(&d->map, fam, a)) {
			s->target.kind = TARGET_DOMAIN;
			s->target.port = ntohs(d4->sin_port); /* same offset in sockaddr_in6 */
			return dnsmap_name(&d->map, fam, a, s->target.host) ? PROTO_REQUEST
			                                                    : PROTO_FAIL;
		}
	}
	return proto_target_from_sa(&s->target, &fl.dst) ? PROTO_REQUEST : PROTO_FAIL;
}

static uint32_t tun_hold(const void *st)
{
	return ((const struct tun_st *)st)->ref;
}

static bool tun_client(const void *st, struct sockaddr_storage *out)
{
	const struct tun_st *s = st;

	if (s->app.ss_family == AF_UNSPEC)
		return false;
	*out = s->app;
	return true;
}

static void tun_release(const struct inbound *in, uint32_t ref)
{
	struct tun_dev *d = tun_dev_of(in);

	if (d)
		nat_release(&d->nat, ref, clock_coarse_ms());
}

const struct inbound_ops inbound_tun_ops = {
        .name = "tun",
        .state_size = sizeof(struct tun_st),
        .buf_size = 0,
        .start = tun_start,
        .feed = inbound_nohs_feed,
        .pending = inbound_nohs_pending,
        .target = inbound_nohs_target, /* target is the state's first member */
        .reply = inbound_nohs_reply,
        .hold = tun_hold,
        .release = tun_release,
        .client = tun_client,
        /* its device, queues and NAT are made at start (tun_dev.c): a reload cannot redo them */
        .reload_needs_restart = true,
};
