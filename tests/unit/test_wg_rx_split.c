/* SPDX-License-Identifier: MIT */
/* wg_rx_split(): GRO trains cut into datagrams, bounded by the array whatever the cmsg says. */
#include <netinet/in.h>
#include <netinet/udp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "rx_split.h"
#include "t.h"

T_SUITE("wg_rx_split");

enum { BUF = 65536 + 64, MSGS = 8, CAP = MSGS * WG_RX_SPLIT_MAX_SEGS, NO_CMSG = INT32_MIN };

/* What recvmmsg would have filled in: MSGS buffers, each with room for one int cmsg. */
struct batch {
	struct mmsghdr mm[MSGS];
	struct iovec iov[MSGS];
	union {
		struct cmsghdr align;
		uint8_t b[CMSG_SPACE(sizeof(int)) * 2];
	} ctl[MSGS];
	uint8_t *buf;
	struct wg_rx_seg seg[CAP];
	struct wg_rx_split_counts c;
};

static struct batch *batch_new(void)
{
	struct batch *b = calloc(1, sizeof(*b));

	b->buf = malloc((size_t)BUF * MSGS);
	for (unsigned int i = 0; i < MSGS; i++) {
		b->iov[i].iov_base = b->buf + (size_t)i * BUF;
		b->iov[i].iov_len = BUF;
		b->mm[i].msg_hdr.msg_iov = &b->iov[i];
		b->mm[i].msg_hdr.msg_iovlen = 1;
	}
	return b;
}

static void batch_free(struct batch *b)
{
	free(b->buf);
	free(b);
}

/* Message i: len bytes received, with a UDP_GRO cmsg of gso (or NO_CMSG). */
static void set_msg(struct batch *b, unsigned int i, size_t len, int gso)
{
	struct msghdr *mh = &b->mm[i].msg_hdr;
	struct cmsghdr *cm;

	b->mm[i].msg_len = (unsigned int)len;
	mh->msg_flags = 0;
	if (gso == NO_CMSG) {
		mh->msg_control = NULL;
		mh->msg_controllen = 0;
		return;
	}
	mh->msg_control = b->ctl[i].b;
	mh->msg_controllen = CMSG_SPACE(sizeof(int));
	cm = CMSG_FIRSTHDR(mh);
	cm->cmsg_level = SOL_UDP;
	cm->cmsg_type = UDP_GRO;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &gso, sizeof(gso));
}

static unsigned int split(struct batch *b, unsigned int n, unsigned int cap)
{
	memset(&b->c, 0, sizeof(b->c));
	return wg_rx_split(b->mm, n, b->seg, cap, &b->c);
}

/* The largest UDP payload as 65,507 one-byte datagrams: all refused, none stored. */
static void test_gso_one_byte_max_payload(void)
{
	struct batch *b = batch_new();

	set_msg(b, 0, 65507, 1);
	T_EQ_INT(split(b, 1, CAP), 0);
	T_EQ_INT(b->c.runts, 65507);
	T_EQ_INT(b->c.trains, 1);
	T_EQ_INT(b->c.overflow, 0);
	/* eight of them, the whole batch */
	for (unsigned int i = 0; i < MSGS; i++)
		set_msg(b, i, 65507, 1);
	T_EQ_INT(split(b, MSGS, CAP), 0);
	T_EQ_INT(b->c.runts, 8 * 65507);
	batch_free(b);
}

/* 31 bytes is below a keepalive (32): a whole train of them is junk; 32 is not. */
static void test_runt_boundary(void)
{
	struct batch *b = batch_new();

	set_msg(b, 0, 31 * 128, 31);
	T_EQ_INT(split(b, 1, CAP), 0);
	T_EQ_INT(b->c.runts, 128);
	set_msg(b, 0, 32 * 128, 32);
	T_EQ_INT(split(b, 1, CAP), 128);
	T_EQ_INT(b->c.runts, 0);
	batch_free(b);
}

/* Eight maximal trains of 128 datagrams fill the array exactly; every datagram in place. */
static void test_128_segments_per_message(void)
{
	struct batch *b = batch_new();
	unsigned int n;

	for (unsigned int i = 0; i < MSGS; i++)
		set_msg(b, i, 40 * 128, 40);
	n = split(b, MSGS, CAP);
	T_EQ_INT(n, CAP);
	T_EQ_INT(b->c.trains, MSGS);
	T_EQ_INT(b->c.overflow, 0);
	for (unsigned int k = 0; k < n; k++) {
		unsigned int i = k / 128, j = k % 128;

		T_EQ_INT(b->seg[k].msg, i);
		T_EQ_INT(b->seg[k].len, 40);
		T_ASSERT(b->seg[k].pkt == b->buf + (size_t)i * BUF + (size_t)j * 40);
	}
	batch_free(b);
}

/* More datagrams than one message may bring (a kernel that allows longer trains). */
static void test_over_128_segments(void)
{
	struct batch *b = batch_new();

	set_msg(b, 0, 65507, 32); /* 2048 datagrams, the last 3 bytes */
	set_msg(b, 1, 100, NO_CMSG);
	T_EQ_INT(split(b, 2, CAP), 129);
	T_EQ_INT(b->c.overflow, 2048 - 128);
	T_EQ_INT(b->seg[127].len, 32);
	T_EQ_INT(b->seg[128].msg, 1); /* the next message is not crowded out */
	T_EQ_INT(b->seg[128].len, 100);
	batch_free(b);
}

/* The array's capacity binds even when every message is within its own limit. */
static void test_capacity_bound(void)
{
	struct batch *b = batch_new();

	for (unsigned int i = 0; i < MSGS; i++)
		set_msg(b, i, 64 * 128, 64);
	T_EQ_INT(split(b, MSGS, 1000), 1000);
	T_EQ_INT(b->c.overflow, CAP - 1000);
	set_msg(b, 0, 640, 64);
	T_EQ_INT(split(b, 1, 5), 5);
	T_EQ_INT(b->c.overflow, 5);
	T_EQ_INT(split(b, 1, 0), 0);
	T_EQ_INT(b->c.overflow, 10);
	batch_free(b);
}

static void test_short_last_segment(void)
{
	struct batch *b = batch_new();

	set_msg(b, 0, 1050, 100);
	T_EQ_INT(split(b, 1, CAP), 11);
	T_EQ_INT(b->seg[9].len, 100);
	T_EQ_INT(b->seg[10].len, 50);
	T_ASSERT(b->seg[10].pkt == b->buf + 1000);
	/* a runt train with a short last segment: every datagram counted */
	set_msg(b, 0, 129, 2);
	T_EQ_INT(split(b, 1, CAP), 0);
	T_EQ_INT(b->c.runts, 65);
	batch_free(b);
}

static void test_truncated(void)
{
	struct batch *b = batch_new();

	set_msg(b, 0, 1000, 100);
	b->mm[0].msg_hdr.msg_flags = MSG_TRUNC;
	set_msg(b, 1, 1000, 100);
	b->mm[1].msg_hdr.msg_flags = MSG_CTRUNC; /* the cut is unknown */
	set_msg(b, 2, BUF + 1, NO_CMSG);         /* longer than its buffer */
	set_msg(b, 3, 148, NO_CMSG);
	T_EQ_INT(split(b, 4, CAP), 1);
	T_EQ_INT(b->c.truncated, 3);
	T_EQ_INT(b->seg[0].msg, 3);
	T_EQ_INT(b->seg[0].len, 148);
	batch_free(b);
}

/* No cmsg, gso_size 0, negative, or not smaller than the message: one datagram. */
static void test_not_a_train(void)
{
	struct batch *b = batch_new();

	set_msg(b, 0, 1500, NO_CMSG);
	set_msg(b, 1, 1500, 0);
	set_msg(b, 2, 1500, -5);
	set_msg(b, 3, 1500, 1500);
	set_msg(b, 4, 1500, 65535);
	T_EQ_INT(split(b, 5, CAP), 5);
	T_EQ_INT(b->c.trains, 0);
	for (unsigned int k = 0; k < 5; k++) {
		T_EQ_INT(b->seg[k].len, 1500);
		T_EQ_INT(b->seg[k].msg, k);
	}
	batch_free(b);
}

/* A zero-length datagram is passed on (the type check counts it), not silently lost. */
static void test_zero_length(void)
{
	struct batch *b = batch_new();

	set_msg(b, 0, 0, NO_CMSG);
	set_msg(b, 1, 0, 16);
	T_EQ_INT(split(b, 2, CAP), 2);
	T_EQ_INT(b->seg[0].len, 0);
	T_EQ_INT(b->seg[1].len, 0);
	batch_free(b);
}

/* Lying cmsg headers are ignored without reading outside the control buffer. */
static void test_bad_cmsg(void)
{
	struct batch *b = batch_new();
	struct cmsghdr *cm;
	struct msghdr *mh = &b->mm[0].msg_hdr;
	int g = 16;

	/* cmsg_len far past the buffer */
	set_msg(b, 0, 1024, 16);
	CMSG_FIRSTHDR(mh)->cmsg_len = 1u << 30;
	T_EQ_INT(split(b, 1, CAP), 1);
	/* too short to hold the int */
	set_msg(b, 0, 1024, 16);
	CMSG_FIRSTHDR(mh)->cmsg_len = CMSG_LEN(2);
	T_EQ_INT(split(b, 1, CAP), 1);
	/* control length shorter than a header */
	set_msg(b, 0, 1024, 16);
	mh->msg_controllen = sizeof(struct cmsghdr) - 1;
	T_EQ_INT(split(b, 1, CAP), 1);
	/* another cmsg first, then UDP_GRO: found */
	set_msg(b, 0, 1024, 16);
	mh->msg_controllen = sizeof(b->ctl[0].b);
	cm = CMSG_FIRSTHDR(mh);
	cm->cmsg_level = SOL_IP;
	cm->cmsg_type = IP_TOS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	cm = CMSG_NXTHDR(mh, cm);
	T_ASSERT(cm != NULL);
	cm->cmsg_level = SOL_UDP;
	cm->cmsg_type = UDP_GRO;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &g, sizeof(g));
	T_EQ_INT(split(b, 1, CAP), 0);
	T_EQ_INT(b->c.runts, 64);
	/* iovec count other than one */
	set_msg(b, 0, 1024, 64);
	mh->msg_iovlen = 2;
	T_EQ_INT(split(b, 1, CAP), 0);
	T_EQ_INT(b->c.truncated, 1);
	batch_free(b);
}

int main(void)
{
	T_RUN(test_gso_one_byte_max_payload);
	T_RUN(test_runt_boundary);
	T_RUN(test_128_segments_per_message);
	T_RUN(test_over_128_segments);
	T_RUN(test_capacity_bound);
	T_RUN(test_short_last_segment);
	T_RUN(test_truncated);
	T_RUN(test_not_a_train);
	T_RUN(test_zero_length);
	T_RUN(test_bad_cmsg);
	return t_finish();
}
