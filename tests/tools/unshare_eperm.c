/* SPDX-License-Identifier: MIT */
/* LD_PRELOAD shim for the tests only: unshare(2) fails with EPERM, as under a seccomp profile that denies it. */
#include <errno.h>
#include <sched.h>

int unshare(int flags)
{
	(void)flags;
	errno = EPERM;
	return -1;
}
