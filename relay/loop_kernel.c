/* SPDX-License-Identifier: MIT */
/* What each kernel's io_uring offers: the first kernel of every opcode and flag, the old-kernel profiles, the submit-time check. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "loop_internal.h"

/*
 * The first kernel of each opcode, SQE flag and opcode flag, from liburing
 * 2.3's io_uring_enter(2), io_uring_setup(2) and io_uring_prep_*(3) ("Available
 * since"). Opcodes were numbered as they were added, so a kernel's set is a
 * prefix of the enum; the table still names each one's own version.
 */
static const struct {
	unsigned short since;
	const char *name;
} ops[IORING_OP_LAST] = {
#define OP(o, v) [IORING_OP_##o] = {v, "IORING_OP_" #o}
        OP(NOP, KV(5, 1)),
        OP(READV, KV(5, 1)),
        OP(WRITEV, KV(5, 1)),
        OP(FSYNC, KV(5, 1)),
        OP(READ_FIXED, KV(5, 1)),
        OP(WRITE_FIXED, KV(5, 1)),
        OP(POLL_ADD, KV(5, 1)),
        OP(POLL_REMOVE, KV(5, 1)),
        OP(SYNC_FILE_RANGE, KV(5, 2)),
        OP(SENDMSG, KV(5, 3)),
        OP(RECVMSG, KV(5, 3)),
        OP(TIMEOUT, KV(5, 4)),
        OP(TIMEOUT_REMOVE, KV(5, 5)),
        OP(ACCEPT, KV(5, 5)),
        OP(ASYNC_CANCEL, KV(5, 5)),
        OP(LINK_TIMEOUT, KV(5, 5)),
        OP(CONNECT, KV(5, 5)),
        OP(FALLOCATE, KV(5, 6)),
        OP(OPENAT, KV(5, 6)),
        OP(CLOSE, KV(5, 6)),
        OP(FILES_UPDATE, KV(5, 6)),
        OP(STATX, KV(5, 6)),
        OP(READ, KV(5, 6)),
        OP(WRITE, KV(5, 6)),
        OP(FADVISE, KV(5, 6)),
        OP(MADVISE, KV(5, 6)),
        OP(SEND, KV(5, 6)),
        OP(RECV, KV(5, 6)),
        OP(OPENAT2, KV(5, 6)),
        OP(EPOLL_CTL, KV(5, 6)),
        OP(SPLICE, KV(5, 7)),
        OP(PROVIDE_BUFFERS, KV(5, 7)),
        OP(REMOVE_BUFFERS, KV(5, 7)),
        OP(TEE, KV(5, 8)),
        OP(SHUTDOWN, KV(5, 11)),
        OP(RENAMEAT, KV(5, 11)),
        OP(UNLINKAT, KV(5, 11)),
        OP(MKDIRAT, KV(5, 15)),
        OP(SYMLINKAT, KV(5, 15)),
        OP(LINKAT, KV(5, 15)),
        OP(MSG_RING, KV(5, 18)),
        OP(FSETXATTR, KV(5, 19)),
        OP(SETXATTR, KV(5, 19)),
        OP(FGETXATTR, KV(5, 19)),
        OP(GETXATTR, KV(5, 19)),
        OP(SOCKET, KV(5, 19)),
        OP(URING_CMD, KV(5, 19)),
        OP(SEND_ZC, KV(6, 0)),
        OP(SENDMSG_ZC, KV(6, 1)),
#undef OP
};

enum { UNKNOWN = 9999 };

struct bit_since {
	unsigned bit;
	unsigned short since;
	const char *name;
};

#define B(f, v)          \
	{                \
		f, v, #f \
	}
static const struct bit_since sqe_flags[] = {
        B(IOSQE_FIXED_FILE, KV(5, 1)),
        B(IOSQE_IO_DRAIN, KV(5, 2)),
        B(IOSQE_IO_LINK, KV(5, 3)),
        B(IOSQE_IO_HARDLINK, KV(5, 5)),
        B(IOSQE_ASYNC, KV(5, 6)),
        B(IOSQE_BUFFER_SELECT, KV(5, 7)),
        B(IOSQE_CQE_SKIP_SUCCESS, KV(5, 17)),
};
/* sqe->len of POLL_ADD */
static const struct bit_since poll_flags[] = {
        B(IORING_POLL_ADD_MULTI, KV(5, 13)),
        B(IORING_POLL_UPDATE_EVENTS, KV(5, 13)),
        B(IORING_POLL_UPDATE_USER_DATA, KV(5, 13)),
};
/* sqe->ioprio of ACCEPT */
static const struct bit_since accept_flags[] = {
        B(IORING_ACCEPT_MULTISHOT, KV(5, 19)),
};
/* sqe->ioprio of SEND, RECV, SENDMSG, RECVMSG */
static const struct bit_since sendrecv_flags[] = {
        B(IORING_RECVSEND_POLL_FIRST, KV(5, 19)),
        B(IORING_RECV_MULTISHOT, KV(6, 0)),
        B(IORING_RECVSEND_FIXED_BUF, KV(6, 0)),
};
/* sqe->timeout_flags of TIMEOUT, LINK_TIMEOUT, TIMEOUT_REMOVE */
static const struct bit_since timeout_flags[] = {
        B(IORING_TIMEOUT_ABS, KV(5, 4)),          B(IORING_TIMEOUT_UPDATE, KV(5, 11)),
        B(IORING_TIMEOUT_BOOTTIME, KV(5, 15)),    B(IORING_TIMEOUT_REALTIME, KV(5, 15)),
        B(IORING_LINK_TIMEOUT_UPDATE, KV(5, 15)), B(IORING_TIMEOUT_ETIME_SUCCESS, KV(5, 16)),
};
/* sqe->cancel_flags of ASYNC_CANCEL */
static const struct bit_since cancel_flags[] = {
        B(IORING_ASYNC_CANCEL_ALL, KV(5, 19)),
        B(IORING_ASYNC_CANCEL_FD, KV(5, 19)),
        B(IORING_ASYNC_CANCEL_ANY, KV(5, 19)),
        B(IORING_ASYNC_CANCEL_FD_FIXED, KV(6, 0)),
};
/* io_uring_setup(2) flags */
static const struct bit_since setup_flags[] = {
        B(IORING_SETUP_IOPOLL, KV(5, 1)),        B(IORING_SETUP_SQPOLL, KV(5, 1)),
        B(IORING_SETUP_SQ_AFF, KV(5, 1)),        B(IORING_SETUP_CQSIZE, KV(5, 5)),
        B(IORING_SETUP_CLAMP, KV(5, 6)),         B(IORING_SETUP_ATTACH_WQ, KV(5, 6)),
        B(IORING_SETUP_R_DISABLED, KV(5, 10)),   B(IORING_SETUP_SUBMIT_ALL, KV(5, 18)),
        B(IORING_SETUP_COOP_TASKRUN, KV(5, 19)), B(IORING_SETUP_TASKRUN_FLAG, KV(5, 19)),
        B(IORING_SETUP_SQE128, KV(5, 19)),       B(IORING_SETUP_CQE32, KV(5, 19)),
        B(IORING_SETUP_SINGLE_ISSUER, KV(6, 0)), B(IORING_SETUP_DEFER_TASKRUN, KV(6, 1)),
};
/* io_uring_params.features */
static const struct bit_since features[] = {
        B(IORING_FEAT_SINGLE_MMAP, KV(5, 4)),     B(IORING_FEAT_NODROP, KV(5, 5)),
        B(IORING_FEAT_SUBMIT_STABLE, KV(5, 5)),   B(IORING_FEAT_RW_CUR_POS, KV(5, 6)),
        B(IORING_FEAT_CUR_PERSONALITY, KV(5, 6)), B(IORING_FEAT_FAST_POLL, KV(5, 7)),
        B(IORING_FEAT_POLL_32BITS, KV(5, 9)),     B(IORING_FEAT_SQPOLL_NONFIXED, KV(5, 11)),
        B(IORING_FEAT_EXT_ARG, KV(5, 11)),        B(IORING_FEAT_NATIVE_WORKERS, KV(5, 12)),
        B(IORING_FEAT_RSRC_TAGS, KV(5, 13)),      B(IORING_FEAT_CQE_SKIP, KV(5, 17)),
        B(IORING_FEAT_LINKED_FILE, KV(5, 17)),
};
#undef B

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* The newest of the bits set in v; a bit the table does not know is UNKNOWN. */
static unsigned bits_since(unsigned v, const struct bit_since *t, size_t n, const char **what,
                           const char *unknown)
{
	unsigned newest = 0;

	for (size_t i = 0; i < n; i++) {
		if (!(v & t[i].bit))
			continue;
		v &= ~t[i].bit;
		if (t[i].since > newest) {
			newest = t[i].since;
			*what = t[i].name;
		}
	}
	if (v) {
		newest = UNKNOWN;
		*what = unknown;
	}
	return newest;
}

unsigned loop_kernel_sqe_since(const struct io_uring_sqe *sqe, const char **what)
{
	const char *w = "an opcode newer than liburing 2.3", *fw = NULL;
	unsigned v = UNKNOWN, f;

	if (sqe->opcode < IORING_OP_LAST) {
		v = ops[sqe->opcode].since;
		w = ops[sqe->opcode].name;
	}
	f = bits_since(sqe->flags, sqe_flags, N(sqe_flags), &fw, "an unknown IOSQE_ flag");
	switch (sqe->opcode) {
	case IORING_OP_POLL_ADD: {
		unsigned g = bits_since(sqe->len, poll_flags, N(poll_flags), &fw,
		                        "an unknown poll flag");
		f = g > f ? g : f;
		break;
	}
	case IORING_OP_ACCEPT: {
		unsigned g = bits_since(sqe->ioprio, accept_flags, N(accept_flags), &fw,
		                        "an unknown accept flag");
		f = g > f ? g : f;
		break;
	}
	case IORING_OP_SEND:
	case IORING_OP_RECV:
	case IORING_OP_SENDMSG:
	case IORING_OP_RECVMSG: {
		unsigned g = bits_since(sqe->ioprio, sendrecv_flags, N(sendrecv_flags), &fw,
		                        "an unknown send/recv flag");
		f = g > f ? g : f;
		break;
	}
	case IORING_OP_TIMEOUT:
	case IORING_OP_LINK_TIMEOUT:
	case IORING_OP_TIMEOUT_REMOVE: {
		unsigned g = bits_since(sqe->timeout_flags, timeout_flags, N(timeout_flags), &fw,
		                        "an unknown timeout flag");
		f = g > f ? g : f;
		break;
	}
	case IORING_OP_ASYNC_CANCEL: {
		unsigned g = bits_since(sqe->cancel_flags, cancel_flags, N(cancel_flags), &fw,
		                        "an unknown cancel flag");
		f = g > f ? g : f;
		break;
	}
	default:
		break;
	}
	if (f > v) {
		v = f;
		w = fw;
	}
	*what = w;
	return v;
}

static unsigned profile;

int loop_kernel_profile_set(const char *name)
{
	static const struct {
		const char *name;
		unsigned kv;
	} known[] = {{"5.10", KV(5, 10)}, {"5.15", KV(5, 15)}, {"6.1", KV(6, 1)}};

	if (!name || !*name) {
		profile = 0;
		return 0;
	}
	for (size_t i = 0; i < N(known); i++) {
		if (!strcmp(name, known[i].name)) {
			profile = known[i].kv;
			return 0;
		}
	}
	return -EINVAL;
}

unsigned loop_kernel_profile(void)
{
	return profile;
}

bool loop_kernel_setup_ok(unsigned flags)
{
	const char *what;

	return !profile ||
	       bits_since(flags, setup_flags, N(setup_flags), &what, "unknown") <= profile;
}

unsigned loop_kernel_feature_mask(void)
{
	unsigned mask = 0;

	if (!profile)
		return ~0u;
	for (size_t i = 0; i < N(features); i++)
		if (features[i].since <= profile)
			mask |= features[i].bit;
	return mask;
}

/*
 * Under a profile, before each submit: a stray use of something the old
 * kernel lacks would fail there (EINVAL, or a flag silently ignored) but
 * work here, so it ends the test run at once, saying what and where.
 */
void loop_kernel_check(struct io_uring *ring)
{
	struct io_uring_sq *sq = &ring->sq;

	for (unsigned i = sq->sqe_head; i != sq->sqe_tail; i++) {
		const struct io_uring_sqe *sqe = &sq->sqes[i & sq->ring_mask];
		const char *what;
		unsigned since = loop_kernel_sqe_since(sqe, &what);
		uint64_t tag = sqe->user_data;

		if (since <= profile)
			continue;
		log_error("kernel profile %u.%u: %s needs Linux %u.%u (opcode %u, SQE flags %#x, "
		          "tag kind %u op %u): refusing it",
		          profile / 100, profile % 100, what, since / 100, since % 100, sqe->opcode,
		          sqe->flags, loop_tag_kind(tag), loop_tag_op(tag));
		abort();
	}
}
