/* SPDX-License-Identifier: MIT */
/* A configuration from INI text for the relay's unit tests; NULL (and why, printed) if it fails. */
#ifndef SPLICED_TESTS_T_CONFIG_H
#define SPLICED_TESTS_T_CONFIG_H

#include <stdio.h>

#include "config.h"

static inline struct config *load(const char *text)
{
	struct config *c = NULL;
	int rc = config_load_string("t.ini", text, &c, stdout);

	if (rc != 0 || !c) {
		printf("  config_load_string: %d\n", rc);
		return NULL;
	}
	return c;
}

#endif
