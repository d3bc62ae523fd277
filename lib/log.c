/* SPDX-License-Identifier: MIT */
/* One-line log messages to stderr. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "log.h"

enum log_level log_level = LOG_INFO;

static const char *const level_names[] = {"error", "warn", "info", "debug"};

void log_msg(enum log_level level, const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	int n;

	if (level > log_level)
		return;
	n = snprintf(line, sizeof(line), "spliced: %s: ", level_names[level]);
	va_start(ap, fmt);
	n += vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	/* One write per line so lines from different threads never interleave. */
	if (write(STDERR_FILENO, line, (size_t)n) < 0) {
		/* nowhere left to report it */
	}
}
