/* SPDX-License-Identifier: MIT */
/* The transparent inbounds: redirect (nftables REDIRECT/DNAT) and tproxy (nftables TPROXY). */
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

#include "inbound.h"

/*
 * Neither has a handshake: the client believes it is talking to its
 * target, so the accepted socket itself says where the connection was
 * going, and the connection is routed and relayed like any other.
 *
 * redirect: REDIRECT and DNAT rewrite the destination; conntrack keeps
 * the original, which SO_ORIGINAL_DST (IPv4) and IP6T_SO_ORIGINAL_DST
 * (IPv6) read back. A connection that was not translated at all (someone
 * connected to the listener directly) reads back the listener's own
 * address, or fails with ENOENT when there is no conntrack entry; the
 * first is refused at connect time as a loop (egress.c: EGRESS_SELF), the
 * second here.
 *
 * tproxy: TPROXY delivers the packet unchanged to a listener with
 * IP_TRANSPARENT, so the accepted socket's local address is the original
 * destination (getsockname()). A direct connection has the listener's own
 * address there, and is refused as a loop in the same way.
 */

/* <linux/netfilter_ipv4.h> and <linux/netfilter_ipv6/ip6_tables.h> clash with glibc's headers. */
#ifndef SO_ORIGINAL_DST
#define SO_ORIGINAL_DST 80
#endif
#ifndef IP6T_SO_ORIGINAL_DST
#define IP6T_SO_ORIGINAL_DST 80
#endif

static enum proto_res redirect_start(void *st, const struct inbound *in, int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	int level = in->listen.ss_family == AF_INET6 ? IPPROTO_IPV6 : IPPROTO_IP;
	int name = in->listen.ss_family == AF_INET6 ? IP6T_SO_ORIGINAL_DST : SO_ORIGINAL_DST;

	memset(&ss, 0, sizeof(ss));
	if (getsockopt(fd, level, name, &ss, &len) < 0)
		return PROTO_FAIL; /* ENOENT: not translated (or no conntrack at all) */
	return proto_target_from_sa(st, &ss) ? PROTO_REQUEST : PROTO_FAIL;
}

static enum proto_res tproxy_start(void *st, const struct inbound *in, int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	(void)in;
	if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
		return PROTO_FAIL;
	return proto_target_from_sa(st, &ss) ? PROTO_REQUEST : PROTO_FAIL;
}

const struct inbound_ops inbound_redirect_ops = {
        .name = "redirect",
        .state_size = sizeof(struct proto_target),
        .buf_size = 0,
        .start = redirect_start,
        .feed = inbound_nohs_feed,
        .pending = inbound_nohs_pending,
        .target = inbound_nohs_target,
        .reply = inbound_nohs_reply,
};

const struct inbound_ops inbound_tproxy_ops = {
        .name = "tproxy",
        .state_size = sizeof(struct proto_target),
        .buf_size = 0,
        .start = tproxy_start,
        .feed = inbound_nohs_feed,
        .pending = inbound_nohs_pending,
        .target = inbound_nohs_target,
        .reply = inbound_nohs_reply,
};
