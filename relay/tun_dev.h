/* SPDX-License-Identifier: MIT */
/* A type = tun inbound's device: the TUN and its queues, addresses, routes and rules, the NAT; process-wide, shared by the workers. */
#ifndef SPLICED_TUN_DEV_H
#define SPLICED_TUN_DEV_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "dnsmap.h"
#include "nat.h"
#include "packet.h"
#include "routing.h"
#include "stats.h"
#include "tun.h"

/*
 * Each queue's counters (one worker writes them; the group sums them).
 * One per drop reason.
 */
#define TUN_QSTATS(X)                                                                  \
	X(reads, "packets read from the TUN")                                          \
	X(read_bytes, "bytes read from the TUN (IP packets, GSO super-packets whole)") \
	X(writes, "packets written to the TUN")                                        \
	X(write_bytes, "bytes written to the TUN")                                     \
	X(gso_reads, "reads that were TSO super-packets")                              \
	X(data_reads, "reads of TCP segments with payload (bulk)")                     \
	X(data_read_bytes, "bytes of those reads")                                     \
	X(tcp_app, "TCP packets from apps rewritten to the listener")                  \
	X(tcp_listener, "TCP packets from the listener rewritten back to apps")        \
	X(ring_writes, "of those, written through the ring in batches")                \
	X(ring_batches, "the batches (read turns that left writes in the ring)")       \
	X(rst_full, "SYNs answered with a RST: max-flows reached")                     \
	X(drop_no_flow, "TCP packets dropped: no NAT entry (and not a SYN)")           \
	X(drop_bad_dst, "TCP packets dropped: to the TUN's own prefix")                \
	X(drop_no_family, "packets dropped: the TUN has no address of their family")   \
	X(drop_truncated, "packets dropped: truncated")                                \
	X(drop_version, "packets dropped: not IPv4 or IPv6")                           \
	X(drop_length, "packets dropped: impossible length fields")                    \
	X(drop_options, "packets dropped: IPv4 options or IPv6 routing headers")       \
	X(drop_fragment, "packets dropped: fragments")                                 \
	X(drop_vnet, "packets dropped: virtio-net header disagrees with the packet")   \
	X(drop_udp, "UDP packets dropped")                                             \
	X(dns_tcp, "DNS queries sent over TCP (the outbound carries no UDP)")          \
	X(dns_mapped, "DNS queries answered from mapped-dns")                          \
	X(mapped_unknown, "flows to a mapped address whose name is forgotten")         \
	X(dns_tcp_failed, "DNS queries over TCP that got no answer")                   \
	X(icmp_echo, "ICMP echo requests answered")                                    \
	X(drop_icmp, "ICMP packets dropped (all but echo requests)")                   \
	X(drop_proto, "packets dropped: another transport protocol")                   \
	X(write_errors, "writes to the TUN that failed")

struct tun_qstats {
	STATS_FIELDS(TUN_QSTATS)
} __attribute__((aligned(64)));

struct tun_dev {
	const struct inbound *in; /* in the start's configuration (main keeps it) */
	unsigned inbound;         /* its index */
	struct tun tun;           /* queue descriptors move to their workers' tun_queue */
	struct nat nat;
	bool nat_ready;
	struct dnsmap map; /* mapped-dns (map.e NULL: off) */
	struct routing_set routes;
	bool routes_ready;
	int listen_family;  /* AF_INET6 (dual-stack) or AF_INET (no IPv6 in this kernel) */
	int old_valid_mark; /* net.ipv4.conf.all.src_valid_mark before auto-route (-1: untouched) */
	int nsfd, hostfd;   /* netns: the device's namespace and ours (-1: no netns) */
	/* the TUN's own addresses (family 0: none) */
	struct cidr addr[2];
	struct tun_qstats *qstats; /* one per worker */
	int n_workers;
	struct stats_group stats;
	char stats_name[CONFIG_NAME_MAX + 8];
	char stats_labels[CONFIG_NAME_MAX + 16]; /* metrics: inbound="NAME" */
};

/*
 * Main thread, before the workers: every tun inbound's device (with one
 * queue per worker, at most `queues`), its addresses, routes and rules,
 * and its NAT; after removing what a killed earlier run left. Logs and
 * returns -errno on failure (then tun_devs_destroy() undoes what was done).
 */
int tun_devs_create(const struct config *cfg, int n_workers);
/* Each device's counters, as "stats: tun NAME: ..." lines (at exit). */
void tun_devs_log_stats(void);
/* Main thread, once the workers have stopped: rules, routes and sysctls restored. */
void tun_devs_destroy(void);
/* The device of inbound `in` (its index), or NULL. */
struct tun_dev *tun_dev_get(unsigned inbound);
struct tun_dev *tun_dev_of(const struct inbound *in);

/*
 * A listening socket for worker w_id (called in worker order) of the
 * device: [::]:port (dual stack) bound to the TUN (SO_BINDTODEVICE), a port
 * of its own, which the NAT sends the flows whose SYN this worker read to.
 * fd or -errno.
 */
int tun_dev_listen_socket(struct tun_dev *d, int w_id);

#endif
