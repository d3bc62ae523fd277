/* SPDX-License-Identifier: MIT */
/* Starting a named thread, so that `top -H`, `ps -L` and perf tell spliced's threads apart. */
#ifndef SPLICED_THREAD_H
#define SPLICED_THREAD_H

#include <pthread.h>

/*
 * pthread_create(t, NULL, fn, arg), then names the thread from the
 * printf-style fmt, cut to the kernel's 15 characters. 0 or -errno; on
 * error no thread was started.
 */
int thread_start(pthread_t *t, void *(*fn)(void *), void *arg, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));

#endif
