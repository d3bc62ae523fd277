/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the metrics endpoint's request head parser (proto/http_get.c). */
#include "fuzz.h"
#include "http_get.h"

/*
 * Input: one selector octet (chunk size), then the client's bytes. Parsed
 * whole and as they would arrive in chunks (the buffer growing, as the
 * endpoint keeps it); both must agree, and a DONE head must hold a method
 * of tchars and an origin-form path.
 */
struct outcome {
	enum http_get_result res;
	struct http_get r;
	size_t at; /* octets read when the result was final */
};

static void run(struct outcome *o, const uint8_t *in, size_t len, size_t chunk)
{
	size_t have = 0;

	http_get_init(&o->r);
	o->res = HTTP_GET_MORE;
	while (have < len) {
		have += len - have < chunk ? len - have : chunk;
		o->res = http_get_parse(&o->r, in, have);
		CHECK(o->r.scan_pos <= have);
		if (o->res != HTTP_GET_MORE)
			break;
		CHECK(have < HTTP_GET_HEAD_MAX);
	}
	o->at = have;
	if (o->res == HTTP_GET_DONE) {
		size_t m = strlen(o->r.method);
		CHECK(m >= 1 && m <= HTTP_GET_METHOD_MAX);
		CHECK(o->r.path[0] == '/' && strlen(o->r.path) <= HTTP_GET_PATH_MAX);
		CHECK(o->r.head_len >= 14 && o->r.head_len <= have &&
		      o->r.head_len <= HTTP_GET_HEAD_MAX);
		CHECK(in[o->r.head_len - 1] == '\n');
		CHECK(!strchr(o->r.path, '?') && !strchr(o->r.path, ' '));
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct outcome whole, split;

	if (size < 1 || size - 1 > FUZZ_BUF_MAX / 2)
		return 0;
	run(&whole, data + 1, size - 1, size - 1);
	run(&split, data + 1, size - 1, fuzz_chunk(data[0], size - 1));
	/* Whole or in chunks: a head that is complete gets one verdict. */
	if (whole.res == HTTP_GET_DONE)
		CHECK(split.res == HTTP_GET_DONE && split.r.head_len == whole.r.head_len &&
		      !strcmp(split.r.method, whole.r.method) &&
		      !strcmp(split.r.path, whole.r.path));
	if (split.res == HTTP_GET_DONE)
		CHECK(whole.res == HTTP_GET_DONE);
	return 0;
}
