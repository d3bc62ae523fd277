/* SPDX-License-Identifier: MIT */
/* The metrics endpoint left out of this build (meson -Dmetrics=disabled): a [stats] section is refused. */
#include "config_internal.h"

static void ignore(struct parser *p, const char *v)
{
	(void)p, (void)v;
}

/* Its keys are read and dropped: the one error is the section's (config_close_stats). */
const struct key config_stats_keys[] = {
        {"listen", ignore, false, 0},
        {"allow", ignore, true, 0},
        {NULL, NULL, false, 0},
};

void config_close_stats(struct parser *p)
{
	p->c->stats_line = p->sec_line;
	config_err(p, p->sec_line, NULL,
	           "this build has no metrics endpoint (built with -Dmetrics=disabled)");
}
