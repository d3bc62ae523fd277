/* SPDX-License-Identifier: MIT */
/* TUN offloads in userspace: split TSO super-packets, coalesce TCP segments into GSO writes. */
#ifndef SPLICED_TUN_OFFLOAD_H
#define SPLICED_TUN_OFFLOAD_H

#include <stddef.h>
#include <stdint.h>

enum {
	OFFLOAD_VNET_HDR_LEN = 10, /* struct virtio_net_hdr */
	OFFLOAD_MAX_PACKET = 65536 + 64,
	OFFLOAD_MAX_SEGS = 128,
};

struct offload_pkt {
	uint8_t *data; /* an IP packet with at least OFFLOAD_VNET_HDR_LEN bytes of headroom */
	size_t len;
};

/*
 * in/inlen: one read from a TUN with IFF_VNET_HDR (header then packet).
 * Writes each resulting IP packet at slots + i * slot_size + headroom with
 * its length in lens[i], completing checksums the kernel left partial, and
 * cutting TCP TSO packets at gso_size. Returns the number of packets, or
 * -EINVAL (malformed) / -E2BIG (more than max segments).
 */
int offload_segment(const uint8_t *in, size_t inlen, uint8_t *slots, size_t slot_size,
                    size_t headroom, unsigned int max, size_t *lens);

/*
 * Writes n decrypted IP packets to a TUN with IFF_VNET_HDR: runs of
 * consecutive segments of one TCP flow become one GSO write (what the
 * kernel's GRO would have built), others go alone marked checksum-valid
 * (the AEAD already authenticated them). scratch: OFFLOAD_MAX_PACKET bytes.
 * Returns the number of failed writes.
 */
unsigned int offload_coalesce_write(int fd, struct offload_pkt *pkts, unsigned int n,
                                    uint8_t *scratch);

#endif
