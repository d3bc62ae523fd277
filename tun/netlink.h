/* SPDX-License-Identifier: MIT */
/* rtnetlink over libmnl: link MTU/up, addresses, routes and policy rules, no `ip` at runtime. */
#ifndef SPLICED_TUN_NETLINK_H
#define SPLICED_TUN_NETLINK_H

#include <stdbool.h>
#include <stdint.h>
#include <netinet/in.h>

/* An IPv4 or IPv6 prefix; addr holds 4 or 16 bytes in network order. */
struct netlink_prefix {
	int family; /* AF_INET or AF_INET6 */
	uint8_t prefixlen;
	union {
		struct in_addr v4;
		struct in6_addr v6;
		uint8_t bytes[16];
	} addr;
};

/*
 * The rtm_protocol / FRA_PROTOCOL value spliced tags its routes and rules
 * with (not in /etc/iproute2/rt_protos: `ip route` shows "proto 83"), so a
 * start after a SIGKILL finds what the killed process left behind.
 */
enum { NETLINK_PROTO_SPLICED = 83 };

/* A policy rule as wg-quick installs them for a default route over the tunnel. */
struct netlink_rule {
	int family;
	uint32_t table;
	uint32_t fwmark;        /* 0: no fwmark selector */
	bool invert;            /* "not fwmark X" */
	int suppress_prefixlen; /* -1: not set */
	uint32_t priority;      /* 0: let the kernel choose */
	uint8_t protocol;       /* FRA_PROTOCOL (4.17+); 0: not set */
};

/* A route through a device: dst via ifindex in table, tagged with protocol. */
struct netlink_route {
	int ifindex;
	struct netlink_prefix dst;
	uint32_t table;   /* 0: main */
	uint8_t protocol; /* 0: RTPROT_BOOT, as `ip route add` */
};

int netlink_link_set_mtu(int ifindex, unsigned int mtu);
/* The device's transmit queue length (a TUN drops what does not fit its ring: 500 by default). */
int netlink_link_set_txqlen(int ifindex, unsigned int qlen);
int netlink_link_set_up(int ifindex, bool up);
/* Moves the link into the network namespace nsfd refers to (its descriptors stay valid). */
int netlink_link_set_netns(int ifindex, int nsfd);
int netlink_link_del(int ifindex);
int netlink_addr_add(int ifindex, const struct netlink_prefix *p);
/* table 0 means the main table. Adding an existing route replaces it. */
int netlink_route_add(int ifindex, const struct netlink_prefix *dst, uint32_t table);
int netlink_route_del(int ifindex, const struct netlink_prefix *dst, uint32_t table);
int netlink_rule_add(const struct netlink_rule *r);
int netlink_rule_del(const struct netlink_rule *r);
int netlink_route_add_r(const struct netlink_route *r);
int netlink_route_del_r(const struct netlink_route *r);
/*
 * Deletes every rule tagged `protocol` whose priority lies in
 * prio_lo..prio_hi or whose table is `table` (0: no table matches), and
 * every route tagged `protocol` in `table`, of both families: what a
 * process killed before its clean-up left. Returns how many were deleted,
 * or -errno.
 */
int netlink_flush_tagged(uint8_t protocol, uint32_t table, uint32_t prio_lo, uint32_t prio_hi);

/* Parses "192.0.2.1/24", "fd00::1/64" or a bare address (full-length prefix). */
int netlink_prefix_parse(const char *s, struct netlink_prefix *out);
/* Zeroes the host bits, so 10.0.0.1/24 becomes 10.0.0.0/24. */
void netlink_prefix_mask(struct netlink_prefix *p);

#endif
