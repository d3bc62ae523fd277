/* SPDX-License-Identifier: MIT */
/* Constant-time helpers for secrets: comparisons whose time depends on lengths only. */
#ifndef SPLICED_CT_H
#define SPLICED_CT_H

#include <stdbool.h>
#include <stddef.h>

/* Two byte strings equal? The length leaks, the content does not. */
bool ct_equal(const void *a, size_t alen, const void *b, size_t blen);

#endif
