/* SPDX-License-Identifier: MIT */
/* The timing loop, options and CPU pinning shared by bench_chacha and bench_aesgcm. */
#ifndef SPLICED_BENCH_HARNESS_H
#define SPLICED_BENCH_HARNESS_H

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { BENCH_REPEATS = 3, BENCH_BATCH = 16 };

static inline double bench_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Calls of fn(arg) per second: the best of BENCH_REPEATS runs of secs, timed per batch. */
static inline double bench_rate(double secs, void (*fn)(void *), void *arg)
{
	double best = 0;

	for (int r = 0; r < BENCH_REPEATS; r++) {
		double t0 = bench_now(), t;
		long n = 0;

		do {
			for (int i = 0; i < BENCH_BATCH; i++)
				fn(arg);
			n += BENCH_BATCH;
			t = bench_now() - t0;
		} while (t < secs);
		if ((double)n / t > best)
			best = (double)n / t;
	}
	return best;
}

/* [-t SECONDS] [-c CPU], then pin to that CPU (default: the one we run on); 0 or an exit status. */
static inline int bench_args(int argc, char **argv, double *secs, int *cpu)
{
	cpu_set_t set;
	int opt;

	*secs = 0.3;
	*cpu = -1;
	while ((opt = getopt(argc, argv, "t:c:")) != -1) {
		if (opt == 't')
			*secs = atof(optarg);
		else if (opt == 'c')
			*cpu = atoi(optarg);
		else {
			fprintf(stderr, "usage: %s [-t SECONDS] [-c CPU]\n", argv[0]);
			return 2;
		}
	}
	if (*cpu < 0)
		*cpu = sched_getcpu();
	CPU_ZERO(&set);
	if (*cpu >= 0)
		CPU_SET(*cpu, &set);
	if (*cpu < 0 || sched_setaffinity(0, sizeof(set), &set) != 0) {
		fprintf(stderr, "cannot pin to one CPU: %s\n", strerror(errno));
		return 1;
	}
	return 0;
}

#endif
