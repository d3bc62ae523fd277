/* SPDX-License-Identifier: MIT */
/* The metrics endpoint left out of this build (meson -Dmetrics=disabled): config_stats_none.c refuses [stats]. */
#include <errno.h>
#include <stddef.h>

#include "metrics.h"

/* Never reached: no configuration with a [stats] section gets past the parser. */
const struct loop_module metrics_module = {.name = "metrics"};

int metrics_socket(const struct sockaddr_storage *addr, socklen_t len)
{
	(void)addr, (void)len;
	return -EOPNOTSUPP;
}

int metrics_open(struct worker *w, int fd, struct metrics_listener **out)
{
	(void)w, (void)fd;
	*out = NULL;
	return -EOPNOTSUPP;
}

int metrics_fd(const struct metrics_listener *m)
{
	(void)m;
	return -1;
}

void metrics_arm(struct metrics_listener *m)
{
	(void)m;
}

void metrics_stop(struct metrics_listener *m)
{
	(void)m;
}

void metrics_close_clients(struct worker *w)
{
	(void)w;
}

void metrics_timeout(struct loop *l, struct loop_timer *t)
{
	(void)l, (void)t;
}
