/* SPDX-License-Identifier: MIT */
/* The spliced command line, read without getopt_long(3) (idle memory, issue 16). */
#ifndef SPLICED_ARGS_H
#define SPLICED_ARGS_H

#include <getopt.h> /* struct option and its no_argument/required_argument only */

/*
 * Why not getopt_long(3): it is the one function of its 64 KiB window of
 * glibc's text that an idle spliced runs, so reading four options faulted
 * that window in for the life of the process (about 40 KiB of RSS on
 * average over where ASLR puts libc; docs/cross.md#idle-memory). The
 * options table keeps getopt's struct option, which tests/integration/man.sh
 * reads to check --help and spliced.8 against what is accepted.
 *
 * What getopt_long does that is kept: clustered short options (-Vh), a short
 * option's argument attached or next (-cFILE, -c FILE), --name=value and
 * --name value, unambiguous prefixes of long names (--conf), "--" ending the
 * options, and getopt's messages. Not kept: permutation; options end at the
 * first operand, which spliced refuses anyway.
 */
struct args {
	int argc;
	char **argv;
	int ind;         /* the next argument to read; operands start here at the end */
	int sub;         /* the position inside a cluster of short options, 0 if none */
	const char *arg; /* the option's argument, when it takes one */
};

/* spliced's own options (wg_cli.c has those of spliced wg): the long table and the short letters. */
extern const struct option args_spliced[];
#define ARGS_SPLICED_SHORT "c:Vh"

/*
 * The next option's val (or its short letter), -1 at the end of the options,
 * or '?' after printing what is wrong to stderr, prefixed with "spliced: ".
 */
int args_next(struct args *a, const char *shorts, const struct option *longs);

#endif
