/* SPDX-License-Identifier: MIT */
/* Which outbound a request takes: [route] rules in file order, then the default. */
#ifndef SPLICED_ROUTE_H
#define SPLICED_ROUTE_H

#include "config.h"
#include "proto.h"

/* Outbound index for `t` arriving on inbound `in` from `user` (NULL: none logged in). */
int route_pick(const struct config *cfg, const struct inbound *in, const struct proto_target *t,
               const char *user);
/*
 * Index into cfg->rules of the first rule that matches a connection to
 * address `a` (NULL: not known yet) for request `t`: cidr rules look at `a`,
 * port rules at t->port, domain rules at t->host when t is a TARGET_DOMAIN,
 * user rules at `user` (the name the client logged in with; NULL: none).
 * -1 when none matches. route_pick() is this with a = the IP target.
 */
int route_rule_for(const struct config *cfg, const struct proto_target *t,
                   const struct sockaddr_storage *a, const char *user);
/* Whether `user` is one of a RULE_USER's names. */
bool route_user_match(const struct rule *r, const char *user);
/* True when a dotted name equals `suffix` or ends with "." + suffix (ASCII case-insensitive). */
bool route_domain_match(const char *name, const char *suffix);
/* True when the first `bits` bits of a and net agree. */
bool route_prefix_match(const uint8_t *a, const uint8_t *net, unsigned bits);
/*
 * The IPv4 address an AF_INET or AF_INET6 sockaddr reaches, into v4: the
 * address itself, ::ffff:a.b.c.d (IPv4-mapped: a dual-stack socket connects
 * to a.b.c.d) or 64:ff9b::a.b.c.d (the NAT64 well-known prefix, RFC 6052: a
 * translator connects to a.b.c.d). False for any other IPv6 address.
 */
bool route_addr_v4(const struct sockaddr_storage *a, uint8_t v4[4]);

#endif
