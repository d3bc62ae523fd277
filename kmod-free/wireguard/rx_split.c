/* SPDX-License-Identifier: MIT */
/* Cutting received UDP messages (GRO trains) into WireGuard datagrams, bounded by the caller's array. */
#include "rx_split.h"

#include <netinet/in.h>
#include <netinet/udp.h>
#include <string.h>

#include "messages.h"

/*
 * The segment size the kernel reported for this message, or 0 for none.
 * Walked by hand rather than with CMSG_NXTHDR so that no length, however
 * wrong, moves a pointer outside the control buffer: a cmsg whose header
 * claims more than is left ends the walk.
 */
static size_t gro_size(const struct msghdr *mh)
{
	const uint8_t *ctl = mh->msg_control;
	size_t len = ctl ? mh->msg_controllen : 0, off = 0;

	while (off < len && len - off >= sizeof(struct cmsghdr)) {
		struct cmsghdr h;
		int g;

		memcpy(&h, ctl + off, sizeof(h));
		if (h.cmsg_len < sizeof(struct cmsghdr) || h.cmsg_len > len - off)
			break;
		if (h.cmsg_level == SOL_UDP && h.cmsg_type == UDP_GRO &&
		    h.cmsg_len >= CMSG_LEN(sizeof(int))) {
			memcpy(&g, ctl + off + CMSG_LEN(0), sizeof(g));
			return g > 0 ? (size_t)g : 0;
		}
		off += CMSG_ALIGN(h.cmsg_len);
	}
	return 0;
}

unsigned int wg_rx_split(const struct mmsghdr *mm, unsigned int n, struct wg_rx_seg *segs,
                         unsigned int cap, struct wg_rx_split_counts *counts)
{
	unsigned int nseg = 0;

	for (unsigned int i = 0; i < n; i++) {
		const struct msghdr *mh = &mm[i].msg_hdr;
		size_t total = mm[i].msg_len, seg = total, ndgram, take;
		uint8_t *buf;

		if ((mh->msg_flags & (MSG_TRUNC | MSG_CTRUNC)) || mh->msg_iovlen != 1 ||
		    !mh->msg_iov || total > mh->msg_iov[0].iov_len) {
			counts->truncated++;
			continue;
		}
		buf = mh->msg_iov[0].iov_base;
		{
			size_t g = gro_size(mh);

			if (g && g < total) {
				seg = g;
				counts->trains++;
			}
		}
		/* ceil(total / seg) datagrams; a zero-length one is still one */
		ndgram = total ? (total + seg - 1) / seg : 1;
		if (seg < WG_MSG_DATA_MIN_LEN && ndgram > 1) {
			/* Every datagram of it is shorter than a keepalive, the smallest message. */
			counts->runts += ndgram;
			continue;
		}
		take = ndgram < WG_RX_SPLIT_MAX_SEGS ? ndgram : WG_RX_SPLIT_MAX_SEGS;
		if (take > cap - nseg)
			take = cap - nseg;
		counts->overflow += ndgram - take;
		for (size_t k = 0; k < take; k++) {
			size_t off = k * seg;

			segs[nseg].pkt = buf + off;
			segs[nseg].len = total - off < seg ? total - off : seg;
			segs[nseg++].msg = i;
		}
	}
	return nseg;
}
