/* SPDX-License-Identifier: MIT */
/* Unit tests for app/args.c: the command-line forms getopt_long took, and its refusals. */
#include "t.h"

#include "args.h"

T_SUITE("args");

/*
 * Reads argv (NULL-terminated, argv[0] included) to the end; returns the
 * options seen as a string of their letters ('c' followed by "=arg;"), with
 * "?" for a refusal and "|N" for the index of the first operand.
 */
static const char *run(char **argv)
{
	static char out[256];
	struct args a = {.argv = argv, .ind = 1};
	size_t n = 0;
	int opt;

	while (argv[a.argc])
		a.argc++;
	while ((opt = args_next(&a, ARGS_SPLICED_SHORT, args_spliced)) != -1) {
		n += (size_t)snprintf(out + n, sizeof(out) - n, "%c", opt);
		if (a.arg)
			n += (size_t)snprintf(out + n, sizeof(out) - n, "=%s;", a.arg);
		if (opt == '?')
			break;
	}
	snprintf(out + n, sizeof(out) - n, "|%d", a.ind);
	return out;
}

#define ARGV(...) ((char *[]){"spliced", __VA_ARGS__, NULL})

static void test_short(void)
{
	T_EQ_STR(run(ARGV("-c", "f.ini")), "c=f.ini;|3");
	T_EQ_STR(run(ARGV("-cf.ini")), "c=f.ini;|2");
	T_EQ_STR(run(ARGV("-V")), "V|2");
	T_EQ_STR(run(ARGV("-hV")), "hV|2");
	T_EQ_STR(run(ARGV("-Vcf.ini")), "Vc=f.ini;|2"); /* the argument ends the cluster */
	T_EQ_STR(run(ARGV("-Vc", "f.ini", "-h")), "Vc=f.ini;h|4");
	T_EQ_STR(run(ARGV("-c", "-V")), "c=-V;|3"); /* taken as the argument, as getopt does */
}

static void test_long(void)
{
	T_EQ_STR(run(ARGV("--config", "f.ini")), "c=f.ini;|3");
	T_EQ_STR(run(ARGV("--config=f.ini")), "c=f.ini;|2");
	T_EQ_STR(run(ARGV("--config=")), "c=;|2");
	T_EQ_STR(run(ARGV("--check", "--version")), "kV|3");
	T_EQ_STR(run(ARGV("--conf", "f.ini")), "c=f.ini;|3"); /* an unambiguous prefix */
	T_EQ_STR(run(ARGV("--che")), "k|2");
	T_EQ_STR(run(ARGV("--h")), "h|2");
}

static void test_end_of_options(void)
{
	T_EQ_STR(run(ARGV("file")), "|1");
	T_EQ_STR(run(ARGV("-V", "file", "-h")),
	         "V|2"); /* no permutation: options end at an operand */
	T_EQ_STR(run(ARGV("--", "-V")), "|2");
	T_EQ_STR(run(ARGV("-")), "|1"); /* "-" is an operand */
	T_EQ_STR(run(ARGV("-c", "f.ini", "--")), "c=f.ini;|4");
}

static void test_refusals(void)
{
	T_EQ_STR(run(ARGV("-x")), "?|2");
	T_EQ_STR(run(ARGV("-Vx")), "V?|2");
	T_EQ_STR(run(ARGV("-:")), "?|2"); /* ':' only marks arguments in the spec */
	T_EQ_STR(run(ARGV("-c")), "?|2");
	T_EQ_STR(run(ARGV("--config")), "?|2");
	T_EQ_STR(run(ARGV("--c")), "?|2"); /* --config or --check */
	T_EQ_STR(run(ARGV("--check=yes")), "?|2");
	T_EQ_STR(run(ARGV("--bogus")), "?|2");
	T_EQ_STR(run(ARGV("--configx")), "?|2");
}

int main(void)
{
	T_RUN(test_short);
	T_RUN(test_long);
	T_RUN(test_end_of_options);
	T_RUN(test_refusals);
	return t_finish();
}
