/* SPDX-License-Identifier: MIT */
/* Name resolution off the loop: a small thread pool, results posted to the worker. */
#ifndef SPLICED_RESOLVE_H
#define SPLICED_RESOLVE_H

#include <stdint.h>
#include <sys/socket.h>

#include "proto.h"

enum { RESOLVE_MAX_ADDRS = 8 }; /* addresses kept (and tried) per name */

struct worker;

struct resolve_req {
	struct resolve_req *next;
	struct worker *w;
	uint32_t slot, gen; /* the connection waiting for it */
	uint16_t port;
	char host[PROTO_HOST_MAX + 1];
	int err; /* 0 or negative errno (-EHOSTUNREACH when the name has no address) */
	int n;
	struct sockaddr_storage addrs[RESOLVE_MAX_ADDRS];
};

struct resolver;

int resolver_start(struct resolver **out, unsigned threads);
/* Queue a request; the result comes back through worker_inbox_push(). */
int resolver_submit(struct resolver *r, struct resolve_req *req);
void resolver_stop(struct resolver *r);

#endif
