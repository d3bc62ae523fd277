/* SPDX-License-Identifier: MIT */
/* A TUN device: /dev/net/tun queues (IFF_TUN|IFF_NO_PI, multi-queue, optional virtio-net header). */
#ifndef SPLICED_TUN_TUN_H
#define SPLICED_TUN_TUN_H

#include <net/if.h>
#include <stdbool.h>

enum {
	TUN_MAX_QUEUES = 16,
};

enum tun_flags {
	TUN_MULTI_QUEUE = 1u << 0,
	/*
	 * Ask for IFF_VNET_HDR plus checksum and TSO offloads: reads may then
	 * return one TCP super-packet (up to 64 KiB) behind a virtio_net_hdr,
	 * and writes may pass coalesced segments the same way.
	 */
	TUN_VNET_HDR = 1u << 1,
};

struct tun {
	char name[IFNAMSIZ];
	int ifindex;
	unsigned int nqueues;
	bool vnet_hdr; /* offloads were accepted: every read/write carries a virtio_net_hdr */
	int fds[TUN_MAX_QUEUES];
};

/*
 * Creates the TUN interface name ("" or a pattern like "wg%d" lets the
 * kernel pick) with nqueues queues; -EBUSY if an interface of that name
 * already exists (never attaches to a device it did not create). With
 * TUN_VNET_HDR the offloads are requested; if the kernel refuses, the
 * device falls back to plain packets and t->vnet_hdr says which one was
 * obtained.
 */
int tun_open(struct tun *t, const char *name, unsigned int nqueues, unsigned int flags);
/* Closes every queue; the kernel removes a non-persistent device with its last queue. */
void tun_close(struct tun *t);

#endif
