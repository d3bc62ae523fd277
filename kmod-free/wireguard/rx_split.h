/* SPDX-License-Identifier: MIT */
/* Cutting received UDP messages (GRO trains) into WireGuard datagrams, bounded by the caller's array. */
#ifndef SPLICED_WG_RX_SPLIT_H
#define SPLICED_WG_RX_SPLIT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

enum {
	/*
	 * Datagrams taken from one received message. A train that NIC or
	 * software GRO built stops at 64 (the kernel's UDP_GRO_CNT_MAX), but a
	 * GSO train generated on this host (loopback, a veth from a container,
	 * a tap) reaches a UDP_GRO socket intact with up to UDP_MAX_SEGMENTS
	 * datagrams: 128 since commit 1382e3b6a350 (Linux 6.11, and the 5.15,
	 * 6.1 and 6.6 stable series). sendmsg(UDP_SEGMENT) accepts any segment
	 * size from 1 byte, so the cmsg is not trusted: what lies beyond this
	 * many, or beyond the caller's array, is dropped and counted.
	 */
	WG_RX_SPLIT_MAX_SEGS = 128,
};

/* One datagram inside a received message's buffer. */
struct wg_rx_seg {
	uint8_t *pkt;
	size_t len;
	unsigned int msg; /* index of the message it came from (for its source address) */
};

/* What wg_rx_split() saw; the caller adds these to its own counters. */
struct wg_rx_split_counts {
	uint64_t trains; /* messages that were GRO trains (not a drop) */
	/* Drops, one counter per reason (each counts datagrams, except truncated: messages). */
	uint64_t truncated; /* MSG_TRUNC or MSG_CTRUNC, or longer than its buffer: cut unknown */
	uint64_t runts;     /* in a train whose segment size is below any WireGuard message */
	uint64_t overflow;  /* past WG_RX_SPLIT_MAX_SEGS in one message, or past the array */
};

/*
 * Cuts the n messages of a recvmmsg() (one iovec each; a UDP_GRO cmsg, if
 * present, gives the segment size) into datagrams, writing at most cap of
 * them to segs in order, whatever the lengths and cmsgs claim. A message
 * without a usable cmsg is one datagram (a zero-length one too, so the
 * caller's type check counts it). Adds to *counts; returns the number
 * written, at most cap. Never reads past a message's iovec or control buffer.
 */
unsigned int wg_rx_split(const struct mmsghdr *mm, unsigned int n, struct wg_rx_seg *segs,
                         unsigned int cap, struct wg_rx_split_counts *counts);

#endif
