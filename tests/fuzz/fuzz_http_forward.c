/* SPDX-License-Identifier: MIT */
/* libFuzzer target: HTTP forwarding: absolute-form requests and their rewrite, response heads, chunked bodies. */
#include <strings.h>

#include "fuzz.h"
#include "http_connect.h"
#include "http_forward.h"

/*
 * Input: one selector octet (bits 0-1: what to parse; bit 2: keep-alive for
 * the response rewrite; bits 4-7 a chunk size), then the bytes.
 *  0: a request head: when it is a request to forward, its rewrite fits,
 *     has a request line, Host and "Connection: close", whole CRLF lines,
 *     and none of the fields a proxy must drop;
 *  1: a response head: the same for its rewrite, and a prefix of a head is
 *     never complete;
 *  2: a chunked body, whole and in chunks: both runs agree.
 */

static bool has_field(const uint8_t *p, size_t n, const char *name)
{
	size_t k = strlen(name);

	for (size_t i = 0; i + 2 + k < n; i++)
		if (p[i] == '\r' && p[i + 1] == '\n' &&
		    !strncasecmp((const char *)p + i + 2, name, k) && p[i + 2 + k] == ':')
			return true;
	return false;
}

static void check_lines(const uint8_t *p, size_t n)
{
	CHECK(n >= 4 && !memcmp(p + n - 4, "\r\n\r\n", 4));
	for (size_t i = 0; i < n; i++) {
		if (p[i] == '\n')
			CHECK(i > 0 && p[i - 1] == '\r');
		if (p[i] == '\r')
			CHECK(i + 1 < n && p[i + 1] == '\n');
	}
}

static void request(const uint8_t *in, size_t len)
{
	static struct http_connect h;
	static uint8_t out[HTTP_HEADER_MAX + HTTP_FWD_EXTRA];
	size_t used = 0, n;

	http_connect_init(&h, false);
	if (http_connect_feed(&h, in, len, &used) != PROTO_REQUEST || !h.forward)
		return;
	CHECK(used == 0 && h.fwd.head_len <= len && h.fwd.head_len <= HTTP_HEADER_MAX);
	CHECK(h.fwd.method_off + h.fwd.method_len <= h.fwd.head_len);
	CHECK(h.fwd.auth_off + h.fwd.auth_len <= h.fwd.head_len);
	CHECK(h.fwd.path_off + h.fwd.path_len <= h.fwd.head_len);
	CHECK(!(h.fwd.chunked && h.fwd.has_length));
	CHECK(h.target.port != 0);
	fuzz_check_target(&h.target);
	n = http_fwd_rewrite(&h.fwd, in, NULL, out, h.fwd.head_len + HTTP_FWD_EXTRA);
	CHECK(n > 0 && n <= h.fwd.head_len + HTTP_FWD_EXTRA);
	check_lines(out, n);
	CHECK(!memcmp(out, in + h.fwd.method_off, h.fwd.method_len) &&
	      out[h.fwd.method_len] == ' ');
	CHECK(out[h.fwd.method_len + 1] == '/');
	CHECK(n >= 25 && !memcmp(out + n - 23, "\r\nConnection: close\r\n\r\n", 23));
	CHECK(has_field(out, n, "Host"));
	CHECK(!has_field(out, n, "Proxy-Authorization") && !has_field(out, n, "Proxy-Connection"));
	CHECK(!has_field(out, n, "Keep-Alive") && !has_field(out, n, "Upgrade"));
	CHECK(!has_field(out, n, "TE") && !has_field(out, n, "Expect"));
	/* too small a buffer: 0, never a cut head */
	CHECK(http_fwd_rewrite(&h.fwd, in, NULL, out, n - 1) == 0);
	/* to an upstream proxy, with its credentials: absolute-form, and still fits */
	struct http_fwd_via via = {.proxy = true, .user = "u", .pass = "p:w"};
	n = http_fwd_rewrite(&h.fwd, in, &via, out, h.fwd.head_len + HTTP_FWD_EXTRA);
	CHECK(n > 0 && !memcmp(out + h.fwd.method_len + 1, "http://", 7));
	CHECK(has_field(out, n, "Proxy-Authorization"));
	check_lines(out, n);
}

static void response(const uint8_t *in, size_t len, bool keep_alive)
{
	static uint8_t out[HTTP_RESP_HEAD_MAX + HTTP_FWD_EXTRA];
	struct http_resp r, r2;
	size_t n;
	int res = http_resp_parse(in, len, false, &r);

	CHECK(res >= -1 && res <= 1);
	if (res != 1)
		return;
	CHECK(r.head_len <= len && r.head_len <= HTTP_RESP_HEAD_MAX && r.status >= 100 &&
	      r.status <= 999);
	CHECK(http_resp_parse(in, r.head_len - 1, false, &r2) == 0);
	CHECK(http_resp_parse(in, r.head_len, true, &r2) == 1 && r2.bodiless);
	n = http_resp_rewrite(&r, in, keep_alive, out, r.head_len + HTTP_FWD_EXTRA);
	CHECK(n > 0 && n <= r.head_len + HTTP_FWD_EXTRA);
	CHECK(!memcmp(out, "HTTP/1.1 ", 9));
	check_lines(out, n);
	CHECK(!has_field(out, n, "Keep-Alive") && !has_field(out, n, "Proxy-Connection"));
	CHECK(has_field(out, n, "Connection"));
}

static void chunked(const uint8_t *in, size_t len, size_t chunk)
{
	struct http_chunked a, b;
	size_t whole, parts = 0, have = 0;

	http_chunked_init(&a);
	whole = http_chunked_feed(&a, in, len);
	CHECK(whole <= len);
	CHECK(a.st == CH_DONE || a.st == CH_ERROR || whole == len);
	http_chunked_init(&b);
	while (have < len && b.st != CH_DONE && b.st != CH_ERROR) {
		size_t k = len - have < chunk ? len - have : chunk,
		       got = http_chunked_feed(&b, in + have, k);
		CHECK(got <= k);
		parts += got;
		if (got < k) {
			CHECK(b.st == CH_DONE || b.st == CH_ERROR);
			break;
		}
		have += k;
	}
	CHECK(a.st == b.st && whole == parts);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size - 1 > FUZZ_BUF_MAX / 2)
		return 0;
	switch (data[0] & 3) {
	case 0:
		request(data + 1, size - 1);
		break;
	case 1:
		response(data + 1, size - 1, data[0] & 4);
		break;
	default:
		chunked(data + 1, size - 1, 1 + (data[0] >> 4));
		break;
	}
	return 0;
}
