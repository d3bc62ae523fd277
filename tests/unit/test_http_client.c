/* SPDX-License-Identifier: MIT */
/* Unit tests for proto/http_client.c: the CONNECT request, response heads cut anywhere, status mapping. */
#include "t.h"
#include "t_target.h"

#include "http_client.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>

T_SUITE("http_client");

static struct proto_target literal(const char *host, uint16_t port)
{
	struct proto_target t = t_name(host, port);

	T_ASSERT(proto_target_ip_literal(&t));
	return t;
}

static void expect_out(const struct http_client *c, const char *want)
{
	size_t n = strlen(want);

	T_EQ_INT(c->out_len, n);
	if (c->out_len == n)
		T_EQ_MEM(c->out, want, n);
	else
		T_FAILF("request: %.*s", (int)c->out_len, c->out);
}

static void test_request_forms(void)
{
	struct http_client c;
	struct proto_target t = t_name("example.org", 443);

	T_EQ_INT(http_client_init(&c, &t, NULL, NULL), 0);
	expect_out(&c, "CONNECT example.org:443 HTTP/1.1\r\nHost: example.org:443\r\n\r\n");
	t = literal("192.0.2.7", 8080);
	T_EQ_INT(http_client_init(&c, &t, NULL, NULL), 0);
	expect_out(&c, "CONNECT 192.0.2.7:8080 HTTP/1.1\r\nHost: 192.0.2.7:8080\r\n\r\n");
	t = literal("2001:db8::1", 22);
	T_EQ_INT(http_client_init(&c, &t, NULL, NULL), 0);
	expect_out(&c, "CONNECT [2001:db8::1]:22 HTTP/1.1\r\nHost: [2001:db8::1]:22\r\n\r\n");
	/* RFC 7617's own example: Aladdin / open sesame */
	t = t_name("example.org", 443);
	T_EQ_INT(http_client_init(&c, &t, "Aladdin", "open sesame"), 0);
	expect_out(&c, "CONNECT example.org:443 HTTP/1.1\r\nHost: example.org:443\r\n"
	               "Proxy-Authorization: Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==\r\n\r\n");
}

static void test_request_limits(void)
{
	struct http_client c;
	struct proto_target t = t_name("", 443);
	char user[PROTO_CRED_MAX + 2];

	T_EQ_INT(http_client_init(&c, &t, NULL, NULL), -EINVAL); /* no host */
	t = t_name("a b", 443);
	T_EQ_INT(http_client_init(&c, &t, NULL, NULL), -EINVAL); /* would break the line */
	t = t_name("a\r\nX: y", 443);
	T_EQ_INT(http_client_init(&c, &t, NULL, NULL), -EINVAL);
	t = t_name("example.org", 443);
	T_EQ_INT(http_client_init(&c, &t, "a:b", "p"), -EINVAL); /* Basic cannot carry it */
	T_EQ_INT(http_client_init(&c, &t, "", "p"), -EINVAL);
	memset(user, 'u', sizeof(user) - 1);
	user[sizeof(user) - 1] = '\0';
	T_EQ_INT(http_client_init(&c, &t, user, "p"), -EINVAL); /* 256 octets */
	user[PROTO_CRED_MAX] = '\0';
	/* the longest of everything fits the request buffer */
	t = t_name("", 65535);
	memset(t.host, 'h', PROTO_HOST_MAX);
	T_EQ_INT(http_client_init(&c, &t, user, user), 0);
	T_ASSERT(c.out_len <= sizeof(c.out));
	T_ASSERT(c.out_len > 2 * PROTO_HOST_MAX + 2 * (2 * PROTO_CRED_MAX) * 4 / 3 / 2);
}

/* Feeds `head` cut in two at every octet; every cut gives the same answer. */
static void expect_feed(const char *head, enum proto_res want, size_t want_used,
                        enum proto_connect_result want_result, int want_status)
{
	size_t len = strlen(head);

	for (size_t cut = 0; cut <= len; cut++) {
		struct http_client c;
		struct proto_target t = t_name("example.org", 443);
		size_t used = 99;
		enum proto_res res = PROTO_NEED_MORE;

		T_EQ_INT(http_client_init(&c, &t, NULL, NULL), 0);
		if (cut)
			res = http_client_feed(&c, (const uint8_t *)head, cut, &used);
		if (res == PROTO_NEED_MORE)
			res = http_client_feed(&c, (const uint8_t *)head, len, &used);
		if (res != want || (want == PROTO_REQUEST && used != want_used) ||
		    (want == PROTO_FAIL && c.result != want_result) ||
		    (want_status && c.status != want_status)) {
			T_FAILF("cut %zu of %zu: res %d used %zu result %d status %d; want %d %zu %d %d: "
			        "%s",
			        cut, len, res, used, c.result, c.status, want, want_used,
			        want_result, want_status, head);
			return;
		}
	}
}

static void test_responses(void)
{
	static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
	static const char ok_hdrs[] =
	        "HTTP/1.0 200 OK\r\nProxy-Agent: tinyproxy/1.11.1\r\n\r\nDATA";

	expect_feed(ok, PROTO_REQUEST, sizeof(ok) - 1, CONNECT_OK, 200);
	/* payload right after the head is the tunnel's: not consumed */
	expect_feed(ok_hdrs, PROTO_REQUEST, sizeof(ok_hdrs) - 1 - 4, CONNECT_OK, 200);
	expect_feed("HTTP/1.1 204 No Content\n\n", PROTO_REQUEST, 25, CONNECT_OK, 204);
	expect_feed("HTTP/1.1 200\r\n\r\n", PROTO_REQUEST, 16, CONNECT_OK, 200);
	expect_feed("HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic "
	            "realm=\"x\"\r\n\r\n",
	            PROTO_FAIL, 0, CONNECT_NOT_ALLOWED, 407);
	expect_feed("HTTP/1.1 403 Forbidden\r\n\r\n", PROTO_FAIL, 0, CONNECT_NOT_ALLOWED, 403);
	expect_feed("HTTP/1.0 401 Unauthorized\r\nWWW-Authenticate: Basic realm=\"T\"\r\n\r\n",
	            PROTO_FAIL, 0, CONNECT_NOT_ALLOWED, 401);
	expect_feed("HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n", PROTO_FAIL, 0,
	            CONNECT_HOST_UNREACHABLE, 502);
	expect_feed("HTTP/1.1 504 Gateway Timeout\r\n\r\n", PROTO_FAIL, 0, CONNECT_TIMEOUT, 504);
	expect_feed("HTTP/1.0 500 Unable to connect\r\n\r\n", PROTO_FAIL, 0,
	            CONNECT_GENERAL_FAILURE, 500);
	/* 1xx and 3xx do not open a tunnel either */
	expect_feed("HTTP/1.1 301 Moved\r\nLocation: x\r\n\r\n", PROTO_FAIL, 0,
	            CONNECT_GENERAL_FAILURE, 301);
}

static void test_malformed(void)
{
	static const char *const bad[] = {
	        "HTTP/2 200 OK\r\n\r\n",    "HTTP/1.1 20 OK\r\n\r\n",
	        "HTTP/1.1 2000 OK\r\n\r\n", "HTTP/1.1 abc OK\r\n\r\n",
	        "SOCKS/5 200 OK\r\n\r\n",   "\r\nHTTP/1.1 200 OK\r\n\r\n",
	        "HTTP/1.x 200 OK\r\n\r\n",  "HTTP/1.1  200 OK\r\n\r\n",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		expect_feed(bad[i], PROTO_FAIL, 0, CONNECT_GENERAL_FAILURE, 0);
}

/* A head that never ends within the limit fails, once the limit is reached. */
static void test_head_limit(void)
{
	static uint8_t buf[HTTP_CLIENT_HEAD_MAX + 16];
	struct http_client c;
	struct proto_target t = t_name("example.org", 443);
	size_t used;

	memcpy(buf, "HTTP/1.1 200 OK\r\n", 17);
	for (size_t i = 17; i < sizeof(buf); i += 8)
		memcpy(buf + i, "X: y\r\n\0\0", 8 < sizeof(buf) - i ? 8 : sizeof(buf) - i);
	for (size_t i = 17; i < sizeof(buf); i++)
		if (!buf[i])
			buf[i] = 'z';
	T_EQ_INT(http_client_init(&c, &t, NULL, NULL), 0);
	T_EQ_INT(http_client_feed(&c, buf, HTTP_CLIENT_HEAD_MAX - 1, &used), PROTO_NEED_MORE);
	T_EQ_INT(http_client_feed(&c, buf, HTTP_CLIENT_HEAD_MAX, &used), PROTO_FAIL);
	T_EQ_INT(c.result, CONNECT_GENERAL_FAILURE);
	/* a failed client stays failed */
	T_EQ_INT(http_client_feed(&c, (const uint8_t *)"HTTP/1.1 200 OK\r\n\r\n", 19, &used),
	         PROTO_FAIL);
}

/* Feeding one octet at a time looks at each octet once: the scan resumes (linear work). */
static void test_scan_resumes(void)
{
	static uint8_t buf[4096];
	struct http_client c;
	struct proto_target t = t_name("example.org", 443);
	size_t used = 0, n;

	n = (size_t)snprintf((char *)buf, sizeof(buf), "HTTP/1.1 200 OK\r\n");
	while (n < sizeof(buf) - 8)
		n += (size_t)snprintf((char *)buf + n, sizeof(buf) - n, "A: b\r\n");
	n += (size_t)snprintf((char *)buf + n, sizeof(buf) - n, "\r\n");
	T_EQ_INT(http_client_init(&c, &t, NULL, NULL), 0);
	for (size_t i = 1; i < n; i++) {
		T_EQ_INT(http_client_feed(&c, buf, i, &used), PROTO_NEED_MORE);
		T_EQ_INT(c.scanned, i); /* never behind, never rescanning from 0 */
	}
	T_EQ_INT(http_client_feed(&c, buf, n, &used), PROTO_REQUEST);
	T_EQ_INT(used, n);
}

int main(void)
{
	T_RUN(test_request_forms);
	T_RUN(test_request_limits);
	T_RUN(test_responses);
	T_RUN(test_malformed);
	T_RUN(test_head_limit);
	T_RUN(test_scan_resumes);
	return t_finish();
}
