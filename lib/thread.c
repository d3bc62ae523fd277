/* SPDX-License-Identifier: MIT */
/* Starting a named thread. */
#include <stdarg.h>
#include <stdio.h>

#include "thread.h"

int thread_start(pthread_t *t, void *(*fn)(void *), void *arg, const char *fmt, ...)
{
	char name[16]; /* the kernel's limit, NUL included */
	va_list ap;
	int ret = pthread_create(t, NULL, fn, arg);

	if (ret)
		return -ret;
	va_start(ap, fmt);
	vsnprintf(name, sizeof(name), fmt, ap);
	va_end(ap);
	pthread_setname_np(*t, name); /* a name is a convenience: its failure is not the caller's */
	return 0;
}
