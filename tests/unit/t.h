/* SPDX-License-Identifier: MIT */
/* Minimal unit-test harness: each case prints "PASS: suite/name" or "FAIL: ...". */
#ifndef SPLICED_TESTS_T_H
#define SPLICED_TESTS_T_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * Usage:
 *   static void test_foo(void) { T_ASSERT(1 + 1 == 2); T_EQ_INT(x, 3); }
 *   int main(void) { T_RUN(test_foo); return t_finish(); }
 * scripts/test counts the PASS/FAIL/SKIP lines of every unit binary.
 */
extern const char *t_suite;
static int t_failed_case __attribute__((unused)), t_pass __attribute__((unused)),
        t_fail __attribute__((unused));

#define T_FAILF(...)                                              \
	do {                                                      \
		fprintf(stdout, "  %s:%d: ", __FILE__, __LINE__); \
		fprintf(stdout, __VA_ARGS__);                     \
		fputc('\n', stdout);                              \
		t_failed_case = 1;                                \
	} while (0)

#define T_ASSERT(c)                                          \
	do {                                                 \
		if (!(c))                                    \
			T_FAILF("assertion failed: %s", #c); \
	} while (0)

#define T_EQ_INT(a, b)                                                                  \
	do {                                                                            \
		long long t_a_ = (long long)(a), t_b_ = (long long)(b);                 \
		if (t_a_ != t_b_)                                                       \
			T_FAILF("%s == %lld, expected %s == %lld", #a, t_a_, #b, t_b_); \
	} while (0)

#define T_EQ_STR(a, b)                                                                       \
	do {                                                                                 \
		const char *t_a_ = (a), *t_b_ = (b);                                         \
		if (!t_a_ || !t_b_ || strcmp(t_a_, t_b_) != 0)                               \
			T_FAILF("%s == \"%s\", expected \"%s\"", #a, t_a_ ? t_a_ : "(null)", \
			        t_b_ ? t_b_ : "(null)");                                     \
	} while (0)

#define T_EQ_MEM(a, b, n)                                                            \
	do {                                                                         \
		if (memcmp((a), (b), (n)) != 0)                                      \
			T_FAILF("memory %s != %s (%zu bytes)", #a, #b, (size_t)(n)); \
	} while (0)

#define T_RUN(fn)                                              \
	do {                                                   \
		t_failed_case = 0;                             \
		fn();                                          \
		if (t_failed_case) {                           \
			t_fail++;                              \
			printf("FAIL: %s/%s\n", t_suite, #fn); \
		} else {                                       \
			t_pass++;                              \
			printf("PASS: %s/%s\n", t_suite, #fn); \
		}                                              \
		fflush(stdout);                                \
	} while (0)

/* Decode a hex string into out (at most cap bytes); returns the length. */
static inline size_t t_unhex(uint8_t *out, size_t cap, const char *hex)
{
	size_t n = 0;

	for (; hex[0] && hex[1] && n < cap; hex += 2) {
		unsigned int b;

		if (sscanf(hex, "%2x", &b) != 1)
			break;
		out[n++] = (uint8_t)b;
	}
	return n;
}

static inline int t_finish(void)
{
	printf("# %s: %d passed, %d failed\n", t_suite, t_pass, t_fail);
	return t_fail ? 1 : 0;
}

#define T_SUITE(name) const char *t_suite = name

#endif
