/* SPDX-License-Identifier: MIT */
/* strspn, strcspn and strtok_r for the configuration parsers, without libc's SSE4.2 versions. */
#ifndef SPLICED_STRSET_H
#define SPLICED_STRSET_H

#include <stdbool.h>
#include <stddef.h>

/*
 * Why not strspn(3)/strcspn(3): glibc resolves them to __strspn_sse42 and
 * __strcspn_sse42, which sit in two 64 KiB windows of libc's text that
 * nothing else an idle spliced runs touches. Parsing the configuration once
 * at start-up faulted both in (with fault-around, 16 pages each; strtok_r(3)
 * calls them too): about 76 KiB of an idle process's RSS on average over
 * where ASLR places libc
 * (issue 16, docs/cross.md#idle-memory). The sets here are a few characters
 * and the strings one configuration line, so a plain loop costs nothing.
 * scripts/test's layers suite refuses strspn, strcspn and strtok_r outside
 * tests/.
 */
static inline bool strset_has(const char *set, char c)
{
	for (; *set; set++)
		if (*set == c)
			return true;
	return false;
}

/* The length of the prefix of s made only of characters in set (strspn). */
static inline size_t strset_span(const char *s, const char *set)
{
	size_t n = 0;

	while (s[n] && strset_has(set, s[n]))
		n++;
	return n;
}

/* The length of the prefix of s with no character in set (strcspn). */
static inline size_t strset_cspan(const char *s, const char *set)
{
	size_t n = 0;

	while (s[n] && !strset_has(set, s[n]))
		n++;
	return n;
}

/*
 * strtok_r(3) with the cursor set to the string before the first call: the
 * next token of *cursor delimited by characters of set, terminated in place,
 * or NULL when only delimiters are left.
 */
static inline char *strset_tok(char **cursor, const char *set)
{
	char *s = *cursor + strset_span(*cursor, set), *e;

	if (!*s) {
		*cursor = s;
		return NULL;
	}
	e = s + strset_cspan(s, set);
	if (*e)
		*e++ = '\0';
	*cursor = e;
	return s;
}

#endif
