/* SPDX-License-Identifier: MIT */
/* HTTP forwarding: absolute-form requests and their rewrite, smuggling refused, response heads, chunked bodies. */
#include <string.h>

#include "http_connect.h"
#include "http_forward.h"
#include "t.h"

T_SUITE("http_forward");

/* Parse `in` (no auth); PROTO_REQUEST expected, nothing consumed. */
static bool parse(struct http_connect *h, const char *in)
{
	size_t used = 777;
	enum proto_res r;

	http_connect_init(h, false);
	r = http_connect_feed(h, (const uint8_t *)in, strlen(in), &used);
	if (r != PROTO_REQUEST || !h->forward || used != 0) {
		T_FAILF("\"%s\": res %d forward %d used %zu", in, r, h->forward, used);
		return false;
	}
	return true;
}

static void expect_rewrite(const char *in, const char *want, const char *host, unsigned port)
{
	struct http_connect h;
	uint8_t out[HTTP_HEADER_MAX + HTTP_FWD_EXTRA];
	size_t n;

	if (!parse(&h, in))
		return;
	T_EQ_INT(h.fwd.head_len, strlen(in));
	n = http_fwd_rewrite(&h.fwd, (const uint8_t *)in, NULL, out, sizeof(out));
	T_EQ_INT(n, strlen(want));
	if (n == strlen(want))
		T_EQ_MEM(out, want, n);
	else
		T_FAILF("rewrite was \"%.*s\"", (int)n, (const char *)out);
	T_EQ_STR(h.target.host, host);
	T_EQ_INT(h.target.port, port);
}

static void test_rewrite(void)
{
	expect_rewrite(
	        "GET http://example.com:8080/a/b?c=d HTTP/1.1\r\nHost: wrong\r\n"
	        "User-Agent: t\r\nProxy-Connection: keep-alive\r\nProxy-Authorization: Basic "
	        "eDp5\r\nConnection: keep-alive, X-Hop\r\nX-Hop: 1\r\nKeep-Alive: 5\r\n"
	        "TE: trailers\r\nUpgrade: h2c\r\nAccept: */*\r\n\r\n",
	        "GET /a/b?c=d HTTP/1.1\r\nUser-Agent: t\r\nAccept: */*\r\n"
	        "Host: example.com:8080\r\nConnection: close\r\n\r\n",
	        "example.com", 8080);
	expect_rewrite("GET http://example.com HTTP/1.1\r\n\r\n",
	               "GET / HTTP/1.1\r\nHost: example.com\r\nConnection: close\r\n\r\n",
	               "example.com", 80);
	expect_rewrite("HEAD HTTP://a.b?x=1 HTTP/1.0\n\n",
	               "HEAD /?x=1 HTTP/1.0\r\nHost: a.b\r\nConnection: close\r\n\r\n", "a.b", 80);
	expect_rewrite("POST http://[::1]:81/p HTTP/1.1\r\nContent-Length: 3\r\n"
	               "Expect: 100-continue\r\n\r\n",
	               "POST /p HTTP/1.1\r\nContent-Length: 3\r\nHost: [::1]:81\r\n"
	               "Connection: close\r\n\r\n",
	               "::1", 81);
	/* every forwarded method */
	static const char *const m[] = {"GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH"};
	for (size_t i = 0; i < sizeof(m) / sizeof(m[0]); i++) {
		char in[128], want[160];
		snprintf(in, sizeof(in), "%s http://h/ HTTP/1.1\r\n\r\n", m[i]);
		snprintf(want, sizeof(want),
		         "%s / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n", m[i]);
		expect_rewrite(in, want, "h", 80);
	}
}

/* To an upstream HTTP proxy: absolute-form kept, its Basic credentials added. */
static void test_rewrite_via_proxy(void)
{
	static const char in[] = "GET http://example.com:8080/a?b HTTP/1.1\r\nHost: x\r\n"
	                         "Proxy-Authorization: Basic Y2xpZW50OnB3\r\nAccept: */*\r\n\r\n";
	static const char want[] = "GET http://example.com:8080/a?b HTTP/1.1\r\nAccept: */*\r\n"
	                           "Host: example.com:8080\r\n"
	                           "Proxy-Authorization: Basic YWxpY2U6czNjcjN0\r\n"
	                           "Connection: close\r\n\r\n";
	static const char want_noauth[] =
	        "GET http://h/ HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n";
	struct http_fwd_via via = {.proxy = true, .user = "alice", .pass = "s3cr3t"};
	uint8_t out[HTTP_HEADER_MAX + HTTP_FWD_EXTRA];
	struct http_connect h;
	size_t n;

	if (parse(&h, in)) {
		n = http_fwd_rewrite(&h.fwd, (const uint8_t *)in, &via, out, sizeof(out));
		T_EQ_INT(n, strlen(want));
		if (n == strlen(want))
			T_EQ_MEM(out, want, n);
		else
			T_FAILF("rewrite was \"%.*s\"", (int)n, (const char *)out);
	}
	via.user = via.pass = NULL;
	if (parse(&h, "GET http://h HTTP/1.1\r\n\r\n")) {
		n = http_fwd_rewrite(&h.fwd, (const uint8_t *)"GET http://h HTTP/1.1\r\n\r\n", &via,
		                     out, sizeof(out));
		T_EQ_INT(n, strlen(want_noauth));
		if (n == strlen(want_noauth))
			T_EQ_MEM(out, want_noauth, n);
	}
}

static void test_framing(void)
{
	struct http_connect h;

	if (parse(&h, "POST http://h/ HTTP/1.1\r\nContent-Length: 10\r\n\r\n")) {
		T_ASSERT(h.fwd.has_length && h.fwd.length == 10 && !h.fwd.chunked);
		T_ASSERT(!h.fwd.client_close);
	}
	if (parse(&h, "POST http://h/ HTTP/1.1\r\nTransfer-Encoding: Chunked\r\n\r\n"))
		T_ASSERT(h.fwd.chunked && !h.fwd.has_length);
	if (parse(&h, "GET http://h/ HTTP/1.1\r\nConnection: close\r\n\r\n"))
		T_ASSERT(h.fwd.client_close);
	if (parse(&h, "GET http://h/ HTTP/1.0\r\n\r\n"))
		T_ASSERT(h.fwd.client_close); /* 1.0 closes unless it says keep-alive */
	if (parse(&h, "GET http://h/ HTTP/1.0\r\nProxy-Connection: Keep-Alive\r\n\r\n"))
		T_ASSERT(!h.fwd.client_close);
	if (parse(&h, "HEAD http://h/ HTTP/1.1\r\n\r\n"))
		T_ASSERT(h.fwd.head);
	if (parse(&h, "POST http://h/ HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n"))
		T_ASSERT(h.fwd.length == 5); /* the same value twice is one value */
}

static void expect_400(const char *in)
{
	struct http_connect h;
	size_t used;

	http_connect_init(&h, false);
	if (http_connect_feed(&h, (const uint8_t *)in, strlen(in), &used) != PROTO_FAIL ||
	    h.error != HTTP_ERR_MALFORMED)
		T_FAILF("\"%s\": not refused with 400 (error %d)", in, h.error);
	else
		T_ASSERT(memcmp(h.reply, "HTTP/1.1 400 ", 13) == 0);
}

/* Requests that could be read two ways (smuggling), and targets a proxy does not forward. */
static void test_refused(void)
{
	expect_400(
	        "POST http://h/ HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n");
	expect_400(
	        "POST http://h/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n");
	expect_400("POST http://h/ HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n");
	expect_400("POST http://h/ HTTP/1.1\r\nContent-Length: 5, 5\r\n\r\n");
	expect_400("POST http://h/ HTTP/1.1\r\nContent-Length: -1\r\n\r\n");
	expect_400("POST http://h/ HTTP/1.1\r\nContent-Length: \r\n\r\n");
	expect_400("POST http://h/ HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n");
	expect_400("POST http://h/ HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n");
	expect_400("POST http://h/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n"
	           "Transfer-Encoding: chunked\r\n\r\n");
	expect_400("POST http://h/ HTTP/1.1\r\nTransfer-Encoding : chunked\r\n\r\n");
	expect_400("GET http://h/ HTTP/1.1\r\nExpect: tea\r\n\r\n");
	expect_400("GET http://u:p@h/ HTTP/1.1\r\n\r\n");
	expect_400("GET http://h/#frag HTTP/1.1\r\n\r\n");
	expect_400("GET http:///x HTTP/1.1\r\n\r\n");
	expect_400("GET http://h:0/ HTTP/1.1\r\n\r\n");
	expect_400("GET http://h:99999/ HTTP/1.1\r\n\r\n");
	expect_400("GET ftp://h/ HTTP/1.1\r\n\r\n");
	expect_400("GET /path HTTP/1.1\r\nHost: h\r\n\r\n");
	expect_400("GET http://h/ HTTP/1.1\r\nConnection: a, b, c, d, e, f, g, h, i\r\n\r\n");
}

static int resp(const char *in, bool head_req, struct http_resp *r)
{
	return http_resp_parse((const uint8_t *)in, strlen(in), head_req, r);
}

static void test_response(void)
{
	static const char in[] =
	        "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close, X-A\r\n"
	        "X-A: 1\r\nKeep-Alive: timeout=5\r\nX: y\r\n\r\nhello";
	uint8_t out[HTTP_RESP_HEAD_MAX + HTTP_FWD_EXTRA];
	struct http_resp r;
	size_t n;

	T_EQ_INT(resp(in, false, &r), 1);
	T_EQ_INT(r.head_len, strlen(in) - 5);
	T_ASSERT(r.status == 200 && r.has_length && r.close && !r.interim && !r.bodiless);
	T_ASSERT(!http_resp_close_delimited(&r));
	n = http_resp_rewrite(&r, (const uint8_t *)in, true, out, sizeof(out));
	static const char want[] = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX: y\r\n"
	                           "Connection: keep-alive\r\n\r\n";
	T_EQ_INT(n, strlen(want));
	if (n == strlen(want))
		T_EQ_MEM(out, want, n);
	/* no length, not chunked: the body runs to the close */
	T_EQ_INT(resp("HTTP/1.0 200 OK\r\n\r\nbody", false, &r), 1);
	T_ASSERT(http_resp_close_delimited(&r) && r.close);
	n = http_resp_rewrite(&r, (const uint8_t *)"HTTP/1.0 200 OK\r\n\r\n", false, out,
	                      sizeof(out));
	T_EQ_INT(n, strlen("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n"));
	T_EQ_INT(resp("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", false, &r), 1);
	T_ASSERT(r.chunked && !http_resp_close_delimited(&r));
	T_EQ_INT(resp("HTTP/1.1 204 No Content\r\n\r\n", false, &r), 1);
	T_ASSERT(r.bodiless && !http_resp_close_delimited(&r));
	T_EQ_INT(resp("HTTP/1.1 200 OK\r\n\r\n", true, &r), 1); /* HEAD */
	T_ASSERT(r.bodiless && !http_resp_close_delimited(&r));
	T_EQ_INT(resp("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n", false, &r), 1);
	T_ASSERT(r.interim && r.head_len == 25);
	T_EQ_INT(resp("HTTP/1.1 200", false, &r), 0); /* not complete yet */
	T_EQ_INT(resp("HTTP/1.1 200 OK\r\nX: 1\r\n", false, &r), 0);
	/* malformed */
	static const char *const bad[] = {
	        "HTTP/1.1 20 OK\r\n\r\n",
	        "HTTP/2 200 OK\r\n\r\n",
	        "HTTP/1.1 200OK\r\n\r\n",
	        "HTTP/1.1 099 Low\r\n\r\n",
	        "HTTP/1.1 200 OK\r\nNoColon\r\n\r\n",
	        "HTTP/1.1 200 OK\r\n folded: x\r\n\r\n",
	        "HTTP/1.1 200 OK\r\nX : y\r\n\r\n",
	        "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n",
	        "HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n",
	        "HTTP/1.1 200 OK\r\nX: a\x01\r\n\r\n",
	        "\r\nHTTP/1.1 200 OK\r\n\r\n",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (resp(bad[i], false, &r) != -1)
			T_FAILF("accepted \"%s\"", bad[i]);
	/* a head that does not end within the limit */
	static uint8_t big[HTTP_RESP_HEAD_MAX + 10];
	memcpy(big, "HTTP/1.1 200 OK\r\nX: ", 20);
	memset(big + 20, 'a', sizeof(big) - 20);
	T_EQ_INT(http_resp_parse(big, sizeof(big), false, &r), -1);
	T_EQ_INT(http_resp_parse(big, HTTP_RESP_HEAD_MAX - 1, false, &r), 0);
}

/* The body's length found by feeding all at once and octet by octet. */
static void expect_chunked(const char *in, size_t want_len, enum http_chunk_state want)
{
	struct http_chunked c;
	size_t n = strlen(in), k = 0;

	http_chunked_init(&c);
	T_EQ_INT(http_chunked_feed(&c, (const uint8_t *)in, n), want_len);
	T_EQ_INT(c.st, want);
	http_chunked_init(&c);
	for (size_t i = 0; i < n && c.st != CH_DONE && c.st != CH_ERROR; i++)
		k += http_chunked_feed(&c, (const uint8_t *)in + i, 1);
	T_EQ_INT(k, want_len);
	T_EQ_INT(c.st, want);
}

static void test_chunked(void)
{
	static const char a[] = "5\r\nhello\r\n0\r\n\r\n";
	static const char b[] =
	        "a;name=\"v\"\r\n0123456789\r\n1\r\nx\r\n0\r\nX-T: 1\r\nY: 2\r\n\r\n";

	expect_chunked("5\r\nhello\r\n0\r\n\r\nGET http://next/ HTTP/1.1", strlen(a), CH_DONE);
	expect_chunked(b, strlen(b), CH_DONE);
	expect_chunked("5\nhello\n0\n\n", 11, CH_DONE); /* bare LFs */
	expect_chunked("5\r\nhel", 6, CH_DATA);         /* goes on */
	expect_chunked("0\r\n\r", 4, CH_TRAILER);
	expect_chunked("g\r\n", 0, CH_ERROR);
	expect_chunked("\r\n", 0, CH_ERROR);
	expect_chunked("5\r\nhelloXX", 9, CH_ERROR);
	expect_chunked("1000000000000000\r\n", 15, CH_ERROR); /* 16 digits */
	expect_chunked("5\r\r\nhello\r\n", 3, CH_ERROR);      /* a bare CR in the size line */
	expect_chunked("5;\x01\r\n", 3, CH_ERROR);
}

int main(void)
{
	T_RUN(test_rewrite);
	T_RUN(test_rewrite_via_proxy);
	T_RUN(test_framing);
	T_RUN(test_refused);
	T_RUN(test_response);
	T_RUN(test_chunked);
	return t_finish();
}
