/* SPDX-License-Identifier: MIT */
/* The spliced command line, read without getopt_long(3): see args.h. */
#include <stdio.h>
#include <string.h>

#include "args.h"

const struct option args_spliced[] = {
        {"config", required_argument, NULL, 'c'},
        {"check", no_argument, NULL, 'k'},
        {"version", no_argument, NULL, 'V'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
};

static int long_option(struct args *a, const char *body, const struct option *longs)
{
	const char *eq = strchr(body, '=');
	size_t n = eq ? (size_t)(eq - body) : strlen(body);
	const struct option *hit = NULL;
	int matches = 0;

	for (const struct option *o = longs; o->name; o++) {
		if (strncmp(o->name, body, n) != 0)
			continue;
		if (o->name[n] == '\0') { /* an exact name beats any prefix */
			hit = o;
			matches = 1;
			break;
		}
		hit = o;
		matches++;
	}
	if (matches == 0) {
		fprintf(stderr, "spliced: unrecognized option '--%.*s'\n", (int)n, body);
		return '?';
	}
	if (matches > 1) {
		fprintf(stderr, "spliced: option '--%.*s' is ambiguous; possibilities:", (int)n,
		        body);
		for (const struct option *o = longs; o->name; o++)
			if (strncmp(o->name, body, n) == 0)
				fprintf(stderr, " '--%s'", o->name);
		fputc('\n', stderr);
		return '?';
	}
	if (hit->has_arg == no_argument) {
		if (eq) {
			fprintf(stderr, "spliced: option '--%s' doesn't allow an argument\n",
			        hit->name);
			return '?';
		}
	} else if (eq) {
		a->arg = eq + 1;
	} else if (a->ind < a->argc) {
		a->arg = a->argv[a->ind++];
	} else {
		fprintf(stderr, "spliced: option '--%s' requires an argument\n", hit->name);
		return '?';
	}
	return hit->val;
}

int args_next(struct args *a, const char *shorts, const struct option *longs)
{
	const char *s;

	a->arg = NULL;
	if (a->sub == 0) {
		if (a->ind >= a->argc)
			return -1;
		s = a->argv[a->ind];
		if (s[0] != '-' || s[1] == '\0') /* an operand, or "-" */
			return -1;
		a->ind++;
		if (strcmp(s, "--") == 0)
			return -1;
		if (s[1] == '-')
			return long_option(a, s + 2, longs);
		a->sub = 1;
	}
	s = a->argv[a->ind - 1];
	char c = s[a->sub++];
	const char *rest = s + a->sub; /* what follows c in the cluster */
	const char *spec = c == ':' ? NULL : strchr(shorts, c);

	a->sub = *rest ? a->sub : 0;
	if (!spec) {
		fprintf(stderr, "spliced: invalid option -- '%c'\n", c);
		a->sub = 0;
		return '?';
	}
	if (spec[1] != ':')
		return c;
	a->sub = 0; /* an option with an argument ends the cluster */
	if (*rest) {
		a->arg = rest;
		return c;
	}
	if (a->ind >= a->argc) {
		fprintf(stderr, "spliced: option requires an argument -- '%c'\n", c);
		return '?';
	}
	a->arg = a->argv[a->ind++];
	return c;
}
