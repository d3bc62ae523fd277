/* SPDX-License-Identifier: MIT */
/* The metrics endpoint's request head parser: good heads, bad ones, heads split anywhere, limits. */
#include <string.h>

#include "http_get.h"
#include "t.h"

const char *t_suite = "http_get";

static enum http_get_result parse_str(struct http_get *r, const char *s)
{
	http_get_init(r);
	return http_get_parse(r, (const uint8_t *)s, strlen(s));
}

static void test_prometheus_head(void)
{
	/* What Prometheus 2.x sends, byte for byte but for the version strings. */
	const char *h =
	        "GET /metrics HTTP/1.1\r\n"
	        "Host: 127.0.0.1:9100\r\n"
	        "User-Agent: Prometheus/2.42.0\r\n"
	        "Accept: application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5,*/*;q=0.1\r\n"
	        "Accept-Encoding: gzip\r\n"
	        "X-Prometheus-Scrape-Timeout-Seconds: 10\r\n"
	        "\r\n";
	struct http_get r;

	T_EQ_INT(parse_str(&r, h), HTTP_GET_DONE);
	T_EQ_STR(r.method, "GET");
	T_EQ_STR(r.path, "/metrics");
	T_ASSERT(!r.has_query);
	T_EQ_INT(r.head_len, strlen(h));
}

static void test_forms(void)
{
	struct http_get r;

	T_EQ_INT(parse_str(&r, "GET /metrics?x=1 HTTP/1.0\n\n"), HTTP_GET_DONE);
	T_EQ_STR(r.path, "/metrics");
	T_ASSERT(r.has_query);
	T_EQ_INT(parse_str(&r, "POST / HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc"), HTTP_GET_DONE);
	T_EQ_STR(r.method, "POST");
	T_EQ_STR(r.path, "/");
	T_EQ_INT(r.head_len, strlen("POST / HTTP/1.1\r\nContent-Length: 3\r\n\r\n"));
	T_EQ_INT(parse_str(&r, "GET /metrics HTTP/1.9\r\nX:\r\n\r\n"), HTTP_GET_DONE);
	T_EQ_INT(parse_str(&r, "GET /metrics HTTP/1.1\r\nA: b\tc\x80\r\n\r\n"), HTTP_GET_DONE);
}

static void test_bad(void)
{
	static const char *const bad[] = {
	        "\r\n\r\n",
	        "GET\r\n\r\n",
	        "GET /metrics\r\n\r\n",
	        "GET  /metrics HTTP/1.1\r\n\r\n",
	        "GET /metrics  HTTP/1.1\r\n\r\n",
	        "GET http://h/metrics HTTP/1.1\r\n\r\n",
	        "GET * HTTP/1.1\r\n\r\n",
	        "GET /metrics HTTP/2.0\r\n\r\n",
	        "GET /metrics HTTP/1.1 \r\n\r\n",
	        "GET /metrics HTTP/1.x\r\n\r\n",
	        "GE(T /metrics HTTP/1.1\r\n\r\n",
	        "GET /met\rrics HTTP/1.1\r\n\r\n",
	        "GETGETGETGETGETGET / HTTP/1.1\r\n\r\n",
	        "GET /metrics HTTP/1.1\r\nNo colon\r\n\r\n",
	        "GET /metrics HTTP/1.1\r\nName : v\r\n\r\n",
	        "GET /metrics HTTP/1.1\r\n: v\r\n\r\n",
	        "GET /metrics HTTP/1.1\r\nA: b\r\n folded\r\n\r\n",
	        "GET /metrics HTTP/1.1\r\nA: b\x01\r\n\r\n",
	        "GET /metrics HTTP/1.1\r\nA: b\rc\r\n\r\n",
	        "GET /metrics HTTP/1.1\r\nA: \x7f\r\n\r\n",
	};
	struct http_get r;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (parse_str(&r, bad[i]) != HTTP_GET_BAD)
			T_FAILF("accepted bad head #%zu", i);
	}
	/* A malformed request line fails before the head is complete. */
	T_EQ_INT(parse_str(&r, "BAD REQUEST\r\nHost: x\r\n"), HTTP_GET_BAD);
	/* A NUL in the request line */
	T_EQ_INT(http_get_parse(&r, (const uint8_t *)"GET /\0 HTTP/1.1\r\n\r\n", 19), HTTP_GET_BAD);
}

static void test_limits(void)
{
	static char big[HTTP_GET_HEAD_MAX + 64];
	char path[HTTP_GET_PATH_MAX + 40];
	struct http_get r;
	size_t n;

	/* A head that never ends: MORE until the limit, then BAD. */
	n = (size_t)snprintf(big, sizeof(big), "GET /metrics HTTP/1.1\r\n");
	while (n < HTTP_GET_HEAD_MAX - 8)
		n += (size_t)snprintf(big + n, sizeof(big) - n, "A: b\r\n");
	http_get_init(&r);
	T_EQ_INT(http_get_parse(&r, (const uint8_t *)big, n), HTTP_GET_MORE);
	memset(big + n, 'x', HTTP_GET_HEAD_MAX - n);
	T_EQ_INT(http_get_parse(&r, (const uint8_t *)big, HTTP_GET_HEAD_MAX), HTTP_GET_BAD);
	/* The longest path fits; one more octet does not. */
	memset(path, 'p', sizeof(path));
	path[0] = '/';
	snprintf(big, sizeof(big), "GET %.*s HTTP/1.1\r\n\r\n", HTTP_GET_PATH_MAX, path);
	T_EQ_INT(parse_str(&r, big), HTTP_GET_DONE);
	T_EQ_INT(strlen(r.path), HTTP_GET_PATH_MAX);
	snprintf(big, sizeof(big), "GET %.*s HTTP/1.1\r\n\r\n", HTTP_GET_PATH_MAX + 1, path);
	T_EQ_INT(parse_str(&r, big), HTTP_GET_BAD);
	/* ... but a long query after a short path is fine. */
	snprintf(big, sizeof(big), "GET /metrics?%.*s HTTP/1.1\r\n\r\n", HTTP_GET_PATH_MAX + 30,
	         path);
	T_EQ_INT(parse_str(&r, big), HTTP_GET_DONE);
}

/* Every split of a head gives the verdict the whole head does, and no octet is searched twice. */
static void test_split(void)
{
	const char *h = "GET /metrics HTTP/1.1\r\nHost: a\r\nAccept: */*\r\n\r\n";
	size_t n = strlen(h);

	for (size_t cut = 1; cut < n; cut++) {
		struct http_get r;

		http_get_init(&r);
		for (size_t have = cut;; have = have + cut < n ? have + cut : n) {
			enum http_get_result res = http_get_parse(&r, (const uint8_t *)h, have);
			if (r.scan_pos != have)
				T_FAILF("cut %zu: scanned %zu of %zu", cut, r.scan_pos, have);
			if (have < n && res != HTTP_GET_MORE)
				T_FAILF("cut %zu: result %d at %zu of %zu", cut, res, have, n);
			if (have == n) {
				if (res != HTTP_GET_DONE || strcmp(r.path, "/metrics") != 0)
					T_FAILF("cut %zu: not done at the end", cut);
				break;
			}
		}
	}
}

int main(void)
{
	T_RUN(test_prometheus_head);
	T_RUN(test_forms);
	T_RUN(test_bad);
	T_RUN(test_limits);
	T_RUN(test_split);
	return t_finish();
}
