/* SPDX-License-Identifier: MIT */
/* Unit tests for lib/strset.h: strset_span, strset_cspan and strset_tok agree with libc's strspn, strcspn and strtok_r. */
#include "t.h"

#include "strset.h"

T_SUITE("strset");

static const char *const strings[] = {
        "",      " ",     "\t \tx",     "abc",  "abc,def",    ",",           "a b\tc",
        "0123x", "x0123", "  =  value", "\f\v", "key: value", "trailing   ",
};
static const char *const sets[] = {"",     " ",       " \t", ",",   "0123456789",
                                   ": \t", " \t\f\v", "abc", "xyz="};

/* Every pair of string and set, and every suffix of each string. */
static void test_agrees_with_libc(void)
{
	for (size_t i = 0; i < sizeof(strings) / sizeof(strings[0]); i++)
		for (size_t j = 0; j < sizeof(sets) / sizeof(sets[0]); j++)
			for (const char *s = strings[i]; *s; s++) {
				T_EQ_INT(strset_span(s, sets[j]), strspn(s, sets[j]));
				T_EQ_INT(strset_cspan(s, sets[j]), strcspn(s, sets[j]));
			}
}

static void test_edges(void)
{
	T_EQ_INT(strset_span("", " "), 0);
	T_EQ_INT(strset_cspan("", ","), 0);
	T_EQ_INT(strset_span("abc", ""), 0);  /* nothing is in the empty set */
	T_EQ_INT(strset_cspan("abc", ""), 3); /* so the whole string is outside it */
	T_EQ_INT(strset_span("   x", " "), 3);
	T_EQ_INT(strset_cspan("ab,cd", ","), 2);
	T_EQ_INT(strset_cspan("abcd", ","), 4); /* no delimiter: the whole string */
	T_ASSERT(!strset_has(" \t", '\0'));     /* the terminator is never in a set */
}

/* strset_tok walks the same tokens as strtok_r, on copies of each string. */
static void test_tok_agrees_with_strtok_r(void)
{
	for (size_t i = 0; i < sizeof(strings) / sizeof(strings[0]); i++)
		for (size_t j = 0; j < sizeof(sets) / sizeof(sets[0]); j++) {
			char a[64], b[64], *save = NULL, *cur = b, *x, *y;

			snprintf(a, sizeof(a), "%s", strings[i]);
			snprintf(b, sizeof(b), "%s", strings[i]);
			x = strtok_r(a, sets[j], &save);
			y = strset_tok(&cur, sets[j]);
			for (int k = 0; k < 16; k++) {
				T_ASSERT(!x == !y);
				if (!x || !y)
					break;
				T_EQ_STR(y, x);
				x = strtok_r(NULL, sets[j], &save);
				y = strset_tok(&cur, sets[j]);
			}
			T_ASSERT(!strset_tok(&cur, sets[j])); /* and stays at the end */
		}
}

int main(void)
{
	T_RUN(test_agrees_with_libc);
	T_RUN(test_edges);
	T_RUN(test_tok_agrees_with_strtok_r);
	return t_finish();
}
