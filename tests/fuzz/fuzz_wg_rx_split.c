/* SPDX-License-Identifier: MIT */
/* libFuzzer target: wg_rx_split() on forged recvmmsg results, then the shared-lock precheck. */
#include "fuzz.h"
#include "peer.h"
#include "rx_split.h"

#include <netinet/udp.h>

/*
 * What rx_round() does after recvmmsg(): wg_rx_split() cuts the messages,
 * wg_receive_precheck() sorts each datagram. Here the "kernel" is the input:
 *   [0]     bits 0-2: messages - 1; bit 3: a small array (cap = [1])
 *   [1]     the small cap
 *   then per message:
 *     [flags] bit 0 MSG_TRUNC, bit 1 MSG_CTRUNC, bit 2 raw control bytes
 *             follow, bit 3 no control at all, bit 4 iov one byte shorter
 *             than msg_len, bit 5 a second cmsg before UDP_GRO
 *     [len 3 bytes, little endian, 17 bits]  msg_len
 *     [gso 2 bytes, little endian]           the UDP_GRO value (bit 7 of
 *                                            the last byte: negative)
 *     raw control (bit 2): [n] then n bytes as the whole control buffer
 *   the rest fills the datagram buffers (repeated).
 * Buffers and control areas are exact-size heap blocks, so ASan sees any
 * read past what a message holds.
 */
enum { MSGS = 8, CAP = MSGS * WG_RX_SPLIT_MAX_SEGS, IOV_MAX_LEN = 65536 + 64 };

static struct wg_identity *identity(void)
{
	static struct wg_identity *id;
	uint8_t priv[WG_KEY_LEN];

	if (id)
		return id;
	id = calloc(1, sizeof(*id));
	CHECK(id && wg_identity_init(id) == 0);
	memset(priv, 0x33, sizeof(priv));
	CHECK(wg_identity_set_private_key(id, priv) == 0);
	return id;
}

static size_t take(const uint8_t *data, size_t size, size_t *off, size_t n, uint8_t *out)
{
	size_t k = size - *off < n ? size - *off : n;

	memset(out, 0, n);
	memcpy(out, data + *off, k);
	*off += k;
	return k;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mmsghdr mm[MSGS];
	struct iovec iov[MSGS];
	uint8_t *ctl[MSGS] = {0}, *bufs[MSGS] = {0};
	static struct wg_rx_seg segs[CAP];
	struct wg_rx_split_counts c = {0};
	struct wg_identity *id = identity();
	unsigned int n, cap, nseg, per[MSGS] = {0};
	size_t off = 2;

	if (size < 2)
		return 0;
	n = (data[0] & 7) + 1;
	cap = (data[0] & 8) ? data[1] : CAP;
	memset(mm, 0, sizeof(mm));
	for (unsigned int i = 0; i < n; i++) {
		struct msghdr *mh = &mm[i].msg_hdr;
		uint8_t h[6];
		size_t len, iovlen, clen = 0;

		take(data, size, &off, sizeof(h), h);
		len = ((size_t)h[1] | (size_t)h[2] << 8 | (size_t)h[3] << 16) & 0x1ffff;
		iovlen = len > IOV_MAX_LEN ? IOV_MAX_LEN : len;
		if ((h[0] & 16) && iovlen)
			iovlen--;
		bufs[i] = malloc(iovlen ? iovlen : 1);
		CHECK(bufs[i]);
		iov[i].iov_base = bufs[i];
		iov[i].iov_len = iovlen;
		mh->msg_iov = &iov[i];
		mh->msg_iovlen = 1;
		mh->msg_flags = ((h[0] & 1) ? MSG_TRUNC : 0) | ((h[0] & 2) ? MSG_CTRUNC : 0);
		mm[i].msg_len = (unsigned int)len;
		if (h[0] & 4) {
			uint8_t k = 0;

			take(data, size, &off, 1, &k);
			clen = k;
			ctl[i] = malloc(clen ? clen : 1);
			CHECK(ctl[i]);
			take(data, size, &off, clen, ctl[i]);
		} else if (!(h[0] & 8)) {
			/* a well-formed UDP_GRO cmsg, maybe after another one */
			int gso = (int)(h[4] | (h[5] & 0x7f) << 8) * ((h[5] & 0x80) ? -1 : 1);
			size_t first = (h[0] & 32) ? CMSG_SPACE(sizeof(int)) : 0;
			struct cmsghdr cm = {.cmsg_len = CMSG_LEN(sizeof(int))};

			clen = first + CMSG_SPACE(sizeof(int));
			ctl[i] = calloc(1, clen);
			CHECK(ctl[i]);
			if (first) {
				cm.cmsg_level = SOL_IP;
				cm.cmsg_type = IP_TOS;
				memcpy(ctl[i], &cm, sizeof(cm));
			}
			cm.cmsg_level = SOL_UDP;
			cm.cmsg_type = UDP_GRO;
			memcpy(ctl[i] + first, &cm, sizeof(cm));
			memcpy(ctl[i] + first + CMSG_LEN(0), &gso, sizeof(gso));
		}
		mh->msg_control = ctl[i];
		mh->msg_controllen = clen;
	}
	/* datagram bytes: the rest of the input, repeated (or zeros) */
	for (unsigned int i = 0; i < n; i++) {
		size_t rest = size - off;

		memset(bufs[i], 0, iov[i].iov_len);
		for (size_t k = 0; rest && k < iov[i].iov_len; k += rest)
			memcpy(bufs[i] + k, data + off,
			       iov[i].iov_len - k < rest ? iov[i].iov_len - k : rest);
	}

	nseg = wg_rx_split(mm, n, segs, cap, &c);
	CHECK(nseg <= cap);
	for (unsigned int k = 0; k < nseg; k++) {
		const struct wg_rx_seg *s = &segs[k];
		unsigned int i = s->msg;

		CHECK(i < n);
		CHECK(k == 0 || segs[k - 1].msg <= i);
		CHECK(!(mm[i].msg_hdr.msg_flags & (MSG_TRUNC | MSG_CTRUNC)));
		/* inside what the message holds, contiguous with the previous datagram */
		CHECK(mm[i].msg_len <= iov[i].iov_len);
		CHECK(s->pkt >= bufs[i] && s->pkt + s->len <= bufs[i] + mm[i].msg_len);
		if (per[i]) {
			CHECK(s->pkt == segs[k - 1].pkt + segs[k - 1].len);
			CHECK(s->len <= segs[k - 1].len);
		} else {
			CHECK(s->pkt == bufs[i]);
		}
		CHECK(s->len > 0 || mm[i].msg_len == 0);
		CHECK(++per[i] <= WG_RX_SPLIT_MAX_SEGS);
		/* what rx_round does next under the shared lock */
		(void)wg_receive_precheck(id, s->pkt, s->len);
	}
	for (unsigned int i = 0; i < n; i++) {
		free(bufs[i]);
		free(ctl[i]);
	}
	return 0;
}
