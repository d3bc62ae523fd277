/* SPDX-License-Identifier: MIT */
/* Old-kernel profiles left out (meson -Dkernel_profiles=disabled): the ring runs as the kernel offers. */
#include <errno.h>

#include "loop_internal.h"

int loop_kernel_profile_set(const char *name)
{
	return name && *name ? -EOPNOTSUPP : 0;
}

unsigned loop_kernel_profile(void)
{
	return 0;
}

unsigned loop_kernel_sqe_since(const struct io_uring_sqe *sqe, const char **what)
{
	(void)sqe;
	*what = "";
	return 0;
}

bool loop_kernel_setup_ok(unsigned setup_flags)
{
	(void)setup_flags;
	return true;
}

unsigned loop_kernel_feature_mask(void)
{
	return ~0u;
}

void loop_kernel_check(struct io_uring *ring)
{
	(void)ring;
}
