/* SPDX-License-Identifier: MIT */
/* A tproxy inbound's UDP: a front end of the UDP sessions (loop module LOOP_KIND_UDP_TP). */
#ifndef SPLICED_UDP_TPROXY_H
#define SPLICED_UDP_TPROXY_H

#include "loop.h"

struct worker;
struct udp_tp;

extern const struct loop_module udp_tp_module;
/* Main thread, before the worker runs: the socket for inbound i. 0 or -errno (logged). */
int udp_tp_open(struct worker *w, unsigned i, struct udp_tp **out);
int udp_tp_fd(const struct udp_tp *t);
/* In the worker: start taking datagrams; stop (the drain): it is released once idle. */
void udp_tp_arm(struct udp_tp *t);
void udp_tp_stop(struct udp_tp *t);

#endif
