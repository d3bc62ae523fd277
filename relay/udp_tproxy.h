/* SPDX-License-Identifier: MIT */
/* A tproxy inbound's UDP: a front end of the UDP sessions (loop module LOOP_KIND_UDP_TP). */
#ifndef SPLICED_UDP_TPROXY_H
#define SPLICED_UDP_TPROXY_H

#include "loop.h"

struct worker;
struct udp_tp;
struct config;
struct inbound;

extern const struct loop_module udp_tp_module;
/* Main thread, before the worker runs: the socket for inbound i. 0 or -errno (logged). */
int udp_tp_open(struct worker *w, unsigned i, struct udp_tp **out);
/* The socket alone (IP_TRANSPARENT, bound, udp-buffer): fd or -errno (logged). */
int udp_tp_socket(const struct config *cfg, const struct inbound *in);
/* The object around fd (taken) for inbound i. 0 or -errno (fd closed). */
int udp_tp_adopt(struct worker *w, unsigned i, int fd, struct udp_tp **out);
/* A reload kept the socket for what is now inbound i. */
void udp_tp_reinbound(struct udp_tp *t, unsigned i);
int udp_tp_fd(const struct udp_tp *t);
/* In the worker: start taking datagrams; stop (the drain): it is released once idle. */
void udp_tp_arm(struct udp_tp *t);
void udp_tp_stop(struct udp_tp *t);

#endif
