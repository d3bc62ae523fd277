/* SPDX-License-Identifier: MIT */
/* A libFuzzer-less driver for the fuzz targets: replay files, or random and mutated inputs for a time. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

/*
 * Usage: fuzz_<target> [-seconds N] [-max_len N] [PATH ...]
 *   Every PATH (a file, or a directory of files) is run once; then, when
 *   -seconds is given, inputs are generated for N seconds: random bytes, or a
 *   loaded input with bytes flipped, inserted, deleted or spliced from
 *   another. This is the fallback when clang's libFuzzer runtime is missing,
 *   and the meson build uses it so the targets always compile with -Werror.
 */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { POOL_MAX = 4096, INPUT_MAX_DEFAULT = 4096 };

static uint8_t *pool[POOL_MAX];
static size_t pool_len[POOL_MAX];
static size_t npool;
static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t next(void)
{
	/* xorshift64*: fast and good enough to pick mutations */
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return rng * 0x2545f4914f6cdd1dull;
}

static void run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf;
	long n;

	if (!f)
		return;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc(n > 0 ? (size_t)n : 1);
	if (buf && fread(buf, 1, (size_t)n, f) == (size_t)n) {
		LLVMFuzzerTestOneInput(buf, (size_t)n);
		if (npool < POOL_MAX) {
			pool[npool] = buf;
			pool_len[npool++] = (size_t)n;
			buf = NULL;
		}
	}
	free(buf);
	fclose(f);
}

static void run_path(const char *path)
{
	struct stat st;
	DIR *d;
	struct dirent *e;
	char sub[4096];

	if (stat(path, &st) != 0)
		return;
	if (!S_ISDIR(st.st_mode)) {
		run_file(path);
		return;
	}
	d = opendir(path);
	if (!d)
		return;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(sub, sizeof(sub), "%s/%s", path, e->d_name);
		run_file(sub);
	}
	closedir(d);
}

/* One generated input into buf; returns its length. */
static size_t generate(uint8_t *buf, size_t max)
{
	size_t n, k;

	if (npool == 0 || next() % 8 == 0) {
		n = next() % (max + 1);
		for (size_t i = 0; i < n; i++)
			buf[i] = (uint8_t)next();
		return n;
	}
	k = next() % npool;
	n = pool_len[k] < max ? pool_len[k] : max;
	memcpy(buf, pool[k], n);
	for (int rounds = 1 + (int)(next() % 4); rounds > 0; rounds--) {
		size_t at = n ? next() % n : 0;

		switch (next() % 5) {
		case 0: /* flip a bit */
			if (n)
				buf[at] ^= (uint8_t)(1u << (next() % 8));
			break;
		case 1: /* set an interesting value */
			if (n) {
				static const uint8_t vals[] = {0,    1,    2,    3,    4,
				                               5,    0x7f, 0x80, 0xff, ':',
				                               '\r', '\n', ' ',  '='};
				buf[at] = vals[next() % sizeof(vals)];
			}
			break;
		case 2: /* insert a byte */
			if (n < max) {
				memmove(buf + at + 1, buf + at, n - at);
				buf[at] = (uint8_t)next();
				n++;
			}
			break;
		case 3: /* delete a byte */
			if (n) {
				memmove(buf + at, buf + at + 1, n - at - 1);
				n--;
			}
			break;
		default: { /* splice: the tail of another input */
			size_t j = next() % npool, from = pool_len[j] ? next() % pool_len[j] : 0;
			size_t take = pool_len[j] - from;

			if (at + take > max)
				take = max - at;
			memcpy(buf + at, pool[j] + from, take);
			n = at + take;
			break;
		}
		}
	}
	return n;
}

int main(int argc, char **argv)
{
	double seconds = 0;
	size_t max = INPUT_MAX_DEFAULT, runs = 0;
	struct timespec t0, t;
	uint8_t *buf;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-seconds") && i + 1 < argc)
			seconds = atof(argv[++i]);
		else if (!strcmp(argv[i], "-max_len") && i + 1 < argc)
			max = (size_t)atol(argv[++i]);
		else
			run_path(argv[i]);
	}
	buf = malloc(max ? max : 1);
	if (!buf)
		return 1;
	rng ^= (uint64_t)time(NULL);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (t = t0; (double)(t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < seconds;
	     runs++) {
		size_t n = generate(buf, max);
		uint8_t *exact = malloc(n ? n : 1); /* exact size, so ASan sees overreads */

		if (!exact)
			return 1;
		memcpy(exact, buf, n);
		LLVMFuzzerTestOneInput(exact, n);
		free(exact);
		if ((runs & 255) == 0)
			clock_gettime(CLOCK_MONOTONIC, &t);
	}
	printf("standalone: %zu seeds, %zu generated runs\n", npool, runs);
	free(buf);
	return 0;
}
