/* SPDX-License-Identifier: MIT */
/* io_uring set-up with fallbacks, and an SQE getter that never returns NULL. */
#include <errno.h>
#include <string.h>

#include "log.h"
#include "loop.h"

/*
 * SINGLE_ISSUER + DEFER_TASKRUN (6.1+) run completion work only when this
 * thread enters the kernel to wait, which batches it and avoids IPIs; COOP_TASKRUN
 * (5.19+) is the next best; plain rings work everywhere io_uring does. The CQ
 * is 4x the SQ so multishot accept bursts and cancellations do not overflow.
 */
int loop_init(struct io_uring *ring, unsigned entries, struct loop_features *feat)
{
	/*
	 * R_DISABLED: the ring is created by the main thread but used by its
	 * worker; with SINGLE_ISSUER the issuer is the task that enables the
	 * ring (loop_enable()), otherwise io_uring_enter() fails with EEXIST.
	 */
	static const unsigned flag_sets[] = {
	        IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_R_DISABLED,
	        IORING_SETUP_COOP_TASKRUN,
	        0,
	};
	struct io_uring_params p;
	int ret = -ENOSYS;

	for (size_t i = 0; i < sizeof(flag_sets) / sizeof(flag_sets[0]); i++) {
		memset(&p, 0, sizeof(p));
		p.flags = flag_sets[i] | IORING_SETUP_CQSIZE;
		p.cq_entries = entries * 4;
		ret = io_uring_queue_init_params(entries, ring, &p);
		if (ret == 0) {
			if (feat) {
				memset(feat, 0, sizeof(*feat));
				feat->defer_taskrun = p.flags & IORING_SETUP_DEFER_TASKRUN;
				feat->single_issuer = p.flags & IORING_SETUP_SINGLE_ISSUER;
				feat->coop_taskrun = p.flags & IORING_SETUP_COOP_TASKRUN;
				feat->ext_arg = p.features & IORING_FEAT_EXT_ARG;
				feat->fast_poll = p.features & IORING_FEAT_FAST_POLL;
				feat->cqe_skip = p.features & IORING_FEAT_CQE_SKIP;
				feat->disabled = p.flags & IORING_SETUP_R_DISABLED;
			}
			return 0;
		}
		if (ret != -EINVAL)
			break; /* ENOSYS, EPERM (sysctl/seccomp), ENOMEM: flags won't help */
	}
	return ret;
}

int loop_enable(struct io_uring *ring, const struct loop_features *feat)
{
	/* Debian's liburing 2.3 declares io_uring_enable_rings() but does not export it. */
	if (!feat->disabled)
		return 0;
	return io_uring_register((unsigned)ring->ring_fd, IORING_REGISTER_ENABLE_RINGS, NULL, 0);
}

struct io_uring_sqe *loop_sqe(struct io_uring *ring)
{
	struct io_uring_sqe *sqe;

	while (!(sqe = io_uring_get_sqe(ring))) {
		int ret = io_uring_submit(ring);
		if (ret < 0 && ret != -EAGAIN && ret != -EBUSY && ret != -EINTR)
			log_error("io_uring_submit: %s", strerror(-ret));
	}
	return sqe;
}

int loop_probe(struct loop_features *feat)
{
	struct io_uring ring;
	int ret = loop_init(&ring, 8, feat);

	if (ret == 0)
		io_uring_queue_exit(&ring);
	return ret;
}
