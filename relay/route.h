/* SPDX-License-Identifier: MIT */
/* Which outbound a request takes: [route] rules in file order, then the default. */
#ifndef SPLICED_ROUTE_H
#define SPLICED_ROUTE_H

#include "config.h"
#include "proto.h"

/* Outbound index for `t` arriving on inbound `in`. */
int route_pick(const struct config *cfg, const struct inbound *in, const struct proto_target *t);
/* True when a dotted name equals `suffix` or ends with "." + suffix (ASCII case-insensitive). */
bool route_domain_match(const char *name, const char *suffix);

#endif
