/* SPDX-License-Identifier: MIT */
/* libFuzzer target: offload_segment() on hostile virtio-net headers, then offload_coalesce_write(). */
#include "fuzz.h"
#include "offload.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

/* How WireGuard's device uses the offloads (kmod-free/wireguard/messages.h's sizes). */
enum {
	HEADROOM = 16, /* the data message header before each packet */
	PADDING = 16,  /* plaintext padded to a multiple of 16 */
	TAG = 16,      /* the Poly1305 tag after it */
};

/*
 * What the device's TX path does with one TUN read (virtio_net_hdr, then
 * the packet): cut it into slots with offload_segment(), and what its RX
 * path does with decrypted packets: offload_coalesce_write() (to
 * /dev/null here). Input: [selector] then the TUN read. Selector bits 0-1
 * choose the tunnel MTU (slot size) as the device computes it, bits 2-3
 * the number of slots (1, 4, 64, OFFLOAD_MAX_SEGS). The virtio header's
 * gso_type, gso_size, hdr_len, csum_start and csum_offset are the input's.
 * The read and the slots are exact-size heap blocks, so ASan sees any
 * access outside them.
 * Selector bit 4: instead, the rest is decrypted packets as a peer could
 * send them, records [len hi][len lo][bytes] (at most 128), each in its
 * own block behind 16 bytes of headroom, given to offload_coalesce_write()
 * as the RX path does.
 */
static void coalesce_raw(int fd, const uint8_t *data, size_t size, uint8_t *scratch)
{
	struct offload_pkt pkts[OFFLOAD_MAX_SEGS];
	uint8_t *bufs[OFFLOAD_MAX_SEGS];
	unsigned int n = 0;
	size_t off = 0;

	while (n < OFFLOAD_MAX_SEGS && off + 2 <= size) {
		size_t len = (size_t)data[off] << 8 | data[off + 1];

		off += 2;
		if (len > size - off)
			len = size - off;
		bufs[n] = malloc(HEADROOM + len);
		CHECK(bufs[n]);
		memcpy(bufs[n] + HEADROOM, data + off, len);
		pkts[n].data = bufs[n] + HEADROOM;
		pkts[n++].len = len;
		off += len;
	}
	CHECK(offload_coalesce_write(fd, pkts, n, scratch) <= n);
	for (unsigned int i = 0; i < n; i++)
		free(bufs[i]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const unsigned int mtus[] = {576, 1280, 1420, 9000};
	static const unsigned int maxes[] = {1, 4, 64, OFFLOAD_MAX_SEGS};
	static int devnull = -1;
	size_t lens[OFFLOAD_MAX_SEGS], slot_size, inlen;
	struct offload_pkt pkts[OFFLOAD_MAX_SEGS];
	unsigned int max;
	uint8_t *in, *slots, *scratch;
	int n;

	if (size < 1 || size - 1 > OFFLOAD_MAX_PACKET)
		return 0;
	if (devnull < 0)
		devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
	CHECK(devnull >= 0);
	/* as the WireGuard device sizes its TX slots: header + MTU + padding + tag, 64-byte aligned */
	slot_size = (HEADROOM + mtus[data[0] & 3] + PADDING + TAG + 63) & ~(size_t)63;
	max = maxes[(data[0] >> 2) & 3];
	inlen = size - 1;
	in = malloc(inlen ? inlen : 1);
	slots = malloc(slot_size * max);
	scratch = malloc(OFFLOAD_MAX_PACKET);
	CHECK(in && slots && scratch);
	memcpy(in, data + 1, inlen);
	if (data[0] & 16) {
		coalesce_raw(devnull, in, inlen, scratch);
		goto out;
	}

	n = offload_segment(in, inlen, slots, slot_size, HEADROOM, max, lens);
	CHECK(n == -EINVAL || n == -E2BIG || (n >= 1 && (unsigned int)n <= max));
	for (int i = 0; i < n; i++) {
		CHECK(lens[i] >= 1 && lens[i] <= slot_size - HEADROOM);
		pkts[i].data = slots + (size_t)i * slot_size + HEADROOM;
		pkts[i].len = lens[i];
	}
	if (n > 0)
		CHECK(offload_coalesce_write(devnull, pkts, (unsigned int)n, scratch) <=
		      (unsigned int)n);
out:
	free(in);
	free(slots);
	free(scratch);
	return 0;
}
