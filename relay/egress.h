/* SPDX-License-Identifier: MIT */
/* Egress policy: may spliced connect to this address for this request, and if not, why. */
#ifndef SPLICED_EGRESS_H
#define SPLICED_EGRESS_H

#include <stdint.h>
#include <sys/socket.h>

#include "config.h"
#include "proto.h"

/* Why an address is refused. Each has its own counter (worker_stats.egress). */
enum egress_verdict {
	EGRESS_OK = 0,
	EGRESS_RULE,    /* the first [route] rule matching the address names a block outbound */
	EGRESS_SELF,    /* one of spliced's own listeners: a proxy loop */
	EGRESS_PRIVATE, /* deny-private: loopback, private, link-local, multicast, ... */
	EGRESS_OWNED,   /* deny-private: an address of this host */
	EGRESS_UNKNOWN, /* ownership could not be told (netlink failed): refused, fail closed */
	EGRESS_N,
};

/* "cidr rule", "own listener", ...: for messages. */
const char *egress_verdict_name(enum egress_verdict v);

/*
 * The deny-private range `a` lies in ("127.0.0.0/8 loopback", ...), or NULL
 * when it is none of them. IPv4 ranges also cover ::ffff:a.b.c.d and
 * 64:ff9b::a.b.c.d.
 */
const char *egress_private_range(const struct sockaddr_storage *a);

/* Does this host own `a` (see hostaddr_owned()): 1, 0 or -errno. */
typedef int (*egress_owned_fn)(const struct sockaddr_storage *a, uint32_t fwmark);

/*
 * May a connection for request `t` (of `user`, NULL: none), from inbound `in`, routed to outbound
 * `ob`, connect to `a`? `a` is one address of the target (ob is direct) or
 * of the upstream server (ob is socks5), about to be connected. In order:
 *  1. EGRESS_RULE: ob is direct, t is a name and `in` has no forced
 *     outbound, and the first rule matching (t's name and port, a as the
 *     address) names a block outbound. An IP target was routed on the
 *     address itself already.
 *  2. EGRESS_SELF: a (as the kernel would connect it) is the address and
 *     port of an inbound, or any address of this host on the port of a
 *     wildcard inbound.
 *  3. EGRESS_PRIVATE / EGRESS_OWNED / EGRESS_UNKNOWN: ob has deny-private.
 * `owned` is asked only when the answer matters (a wildcard listener's
 * port, or deny-private and a public address). Pure apart from `owned`.
 */
enum egress_verdict egress_decide(const struct config *cfg, const struct inbound *in,
                                  const struct outbound *ob, const struct proto_target *t,
                                  const char *user, const struct sockaddr_storage *a,
                                  egress_owned_fn owned);

/*
 * egress_decide() with the kernel's answer (hostaddr_owned()); when the
 * address is refused, counts it in counters[verdict], logs it (debug, rate
 * limited per reason) and returns true.
 */
bool egress_refused(const struct config *cfg, const struct inbound *in, const struct outbound *ob,
                    const struct proto_target *t, const char *user,
                    const struct sockaddr_storage *a, uint64_t counters[EGRESS_N]);

#endif
