/* SPDX-License-Identifier: MIT */
/* Shared by tun_queue.c (the queue: read, NAT, write) and tun_udp.c (its UDP sessions and DNS). */
#ifndef SPLICED_TUN_INTERNAL_H
#define SPLICED_TUN_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "list.h"
#include "loop.h"
#include "packet.h"
#include "udp_session.h"

struct worker;
struct tun_dev;
struct tun_qstats;

enum {
	QUEUE_BUF = PACKET_VNET_HDR + 65536 + 64, /* a 64 KiB super-packet and its header */
	READ_BUDGET = 64,                         /* reads per completion before the poll again */
	WRITE_SLOTS = 8, /* read buffers whose packet may await its write */
	OUT_BUF = PACKET_VNET_HDR + PACKET_IPV6_HDR + PACKET_TCP_MIN_HDR, /* a RST */
};

enum tun_queue_op { TUN_OP_POLL = 1, TUN_OP_WRITE = 2 /* + the slot: 2..9 */ };

struct tun_queue {
	struct loop_obj obj; /* first: the loop hands it back */
	struct worker *w;
	struct tun_dev *dev;
	struct tun_qstats *st;
	unsigned inbound;
	int fd;
	bool vnet;
	bool stopped;
	uint8_t *buf;               /* the slot being read into and handled */
	uint8_t *slot[WRITE_SLOTS]; /* read buffers; a busy one's packet is being written */
	unsigned busy;              /* bit i: slot[i]'s WRITE is in the ring */
	unsigned cur;               /* buf == slot[cur] */
	bool starved;               /* every slot was busy: read again when a write completes */
	uint64_t queued;            /* WRITE SQEs prepared, ever: a turn adding one is a batch */
	uint8_t out[OUT_BUF];
	struct udp_sess_table udp; /* this queue's UDP sessions, by the app's endpoint */
	bool udp_ready;
	uint64_t dns_over_tcp; /* outbounds (by index) that refused UDP: DNS over TCP */
	struct list_node dnsq; /* DNS queries over TCP in flight (tun_dns.c) */
};

/* A packet built by us (headers, then payload at iov[1..]) to the app, with an empty vnet header. */
void tun_queue_put_iov(struct tun_queue *q, struct iovec *iov, int n);

/* tun_udp.c: an app's UDP packet (its checksum completed if it was partial). */
void tun_udp_packet(struct tun_queue *q, struct packet_view *v);
/* A UDP packet to the app: from src (an address and port) to client, payload d[0..n). */
void tun_udp_reply(struct tun_queue *q, const union udp_addr *src, const union udp_addr *client,
                   const uint8_t *d, size_t n);

/*
 * tun_dns.c: one DNS query of the app `client`, asked of `asked`, over TCP
 * to dns-server through the route's outbound (a connection of the relay
 * over a socketpair); the answer comes back as from `asked`.
 */
void tun_dns_tcp(struct tun_queue *q, const union udp_addr *client, const union udp_addr *asked,
                 const uint8_t *query, size_t n);
/* The queue stops: its queries in flight end. */
void tun_dns_stop(struct tun_queue *q);
extern const struct loop_module tun_dns_module;

/* Its session table (0 or -errno). */
int tun_udp_init(struct tun_queue *q);
/* The queue stops: its sessions go. */
void tun_udp_stop(struct tun_queue *q);

#endif
