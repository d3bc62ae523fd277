/* SPDX-License-Identifier: MIT */
/* Unit tests for proto/http_connect.c: CONNECT heads, Basic auth, limits, every response. */
#include "t.h"

#include "http_connect.h"

#include <arpa/inet.h>
#include <netinet/in.h>

T_SUITE("http_connect");

enum { BUF_MAX = 2 * HTTP_HEADER_MAX };

#define R400 "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
#define R405                                                                                         \
	"HTTP/1.1 405 Method Not Allowed\r\nAllow: CONNECT, GET, HEAD, POST, PUT, DELETE, OPTIONS, " \
	"PATCH\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
#define R407                                                                       \
	"HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic " \
	"realm=\"spliced\"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
#define R431                                                                                \
	"HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Length: 0\r\nConnection: " \
	"close\r\n\r\n"

static bool all_zero(const void *p, size_t n)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		if (b[i])
			return false;
	return true;
}

static void expect_reply(const struct http_connect *h, const char *want)
{
	size_t n = strlen(want);

	T_EQ_INT(h->reply_len, n);
	if (h->reply_len == n)
		T_EQ_MEM(h->reply, want, n);
	else
		T_FAILF("reply was \"%.*s\"", (int)h->reply_len, (const char *)h->reply);
}

/*
 * Feed `in` (a C string) cut at every byte: each proper prefix up to the end of
 * the head must be NEED_MORE with nothing consumed and no reply; the whole gives
 * `want`, consuming the head (`head` octets).
 */
static enum proto_res feed_cuts(struct http_connect *h, bool require_auth, const char *in,
                                enum proto_res want, size_t head)
{
	size_t len = strlen(in), used;
	enum proto_res res;

	for (size_t k = 0; k < head; k++) {
		http_connect_init(h, require_auth);
		used = 777;
		res = http_connect_feed(h, (const uint8_t *)in, k, &used);
		if (res != PROTO_NEED_MORE || used != 0 || h->reply_len != 0) {
			T_FAILF("prefix %zu/%zu: res %d used %zu", k, len, res, used);
			return res;
		}
	}
	http_connect_init(h, require_auth);
	used = 777;
	res = http_connect_feed(h, (const uint8_t *)in, len, &used);
	T_EQ_INT(res, want);
	T_EQ_INT(used, head);
	T_ASSERT(h->reply_len <= PROTO_REPLY_MAX);
	return res;
}

/* Feed the whole string once; return the result. */
static enum proto_res feed1(struct http_connect *h, bool require_auth, const char *in)
{
	size_t used;

	http_connect_init(h, require_auth);
	return http_connect_feed(h, (const uint8_t *)in, strlen(in), &used);
}

static void expect_fail(bool require_auth, const char *in, enum http_error err, const char *reply)
{
	struct http_connect h;

	if (feed1(&h, require_auth, in) != PROTO_FAIL || h.error != err) {
		T_FAILF("\"%s\": not rejected with error %d (got %d)", in, err, h.error);
		return;
	}
	expect_reply(&h, reply);
	T_EQ_INT(h.state, HTTP_S_FAILED);
	T_ASSERT(!h.done);
}

/* ---- requests that succeed ---- */

static void test_domain(void)
{
	struct http_connect h;
	const char *in = "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n"
	                 "User-Agent: curl/7.88.1\r\n\r\n";

	feed_cuts(&h, false, in, PROTO_REQUEST, strlen(in));
	T_EQ_INT(h.target.kind, TARGET_DOMAIN);
	T_EQ_STR(h.target.host, "example.com");
	T_EQ_INT(h.target.port, 443);
	T_ASSERT(h.done);
	T_EQ_INT(h.state, HTTP_S_DONE);
	T_EQ_INT(h.reply_len, 0);
}

static void test_ipv4_ipv6(void)
{
	struct http_connect h;
	const struct sockaddr_in *sin = (const struct sockaddr_in *)&h.target.addr;
	const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)&h.target.addr;
	const char *v4 = "CONNECT 127.0.0.1:8080 HTTP/1.1\r\n\r\n";
	const char *v6 = "CONNECT [2001:db8::5]:22 HTTP/1.1\r\nHost: [2001:db8::5]:22\r\n\r\n";

	feed_cuts(&h, false, v4, PROTO_REQUEST, strlen(v4));
	T_EQ_INT(h.target.kind, TARGET_IP);
	T_EQ_INT(sin->sin_family, AF_INET);
	T_EQ_INT(ntohl(sin->sin_addr.s_addr), 0x7f000001);
	T_EQ_INT(ntohs(sin->sin_port), 8080);
	T_EQ_INT(h.target.port, 8080);

	feed_cuts(&h, false, v6, PROTO_REQUEST, strlen(v6));
	T_EQ_INT(h.target.kind, TARGET_IP);
	T_EQ_INT(sin6->sin6_family, AF_INET6);
	T_EQ_INT(sin6->sin6_addr.s6_addr[15], 5);
	T_EQ_INT(ntohs(sin6->sin6_port), 22);
	T_EQ_STR(h.target.host, "2001:db8::5");
}

static void test_line_endings(void)
{
	struct http_connect h;
	const char *lf = "CONNECT a.example:1 HTTP/1.0\nHost: a\n\n";
	const char *mixed = "CONNECT a.example:65535 HTTP/1.1\r\nX-A: 1\nX-B: 2\r\n\n";
	const char *leading = "\r\n\nCONNECT a.example:1 HTTP/1.1\r\n\r\n";

	feed_cuts(&h, false, lf, PROTO_REQUEST, strlen(lf));
	T_EQ_STR(h.target.host, "a.example");
	feed_cuts(&h, false, mixed, PROTO_REQUEST, strlen(mixed));
	T_EQ_INT(h.target.port, 65535);
	feed_cuts(&h, false, leading, PROTO_REQUEST, strlen(leading));
	T_EQ_INT(h.target.port, 1);
}

static void test_early_payload(void)
{
	struct http_connect h;
	const char *head = "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com\r\n\r\n";
	char in[256];
	size_t used;

	snprintf(in, sizeof(in), "%s%s", head, "\x16\x03\x01\x02\x00 tls hello");
	feed_cuts(&h, false, in, PROTO_REQUEST, strlen(head));
	/* later feeds leave the payload alone */
	T_EQ_INT(http_connect_feed(&h, (const uint8_t *)in + strlen(head), 5, &used),
	         PROTO_NEED_MORE);
	T_EQ_INT(used, 0);
}

static void test_host_255(void)
{
	struct http_connect h;
	char in[512];
	char host[PROTO_HOST_MAX + 2];

	memset(host, 'a', sizeof(host));
	host[PROTO_HOST_MAX] = '\0';
	snprintf(in, sizeof(in), "CONNECT %s:80 HTTP/1.1\r\n\r\n", host);
	feed_cuts(&h, false, in, PROTO_REQUEST, strlen(in));
	T_EQ_INT(strlen(h.target.host), PROTO_HOST_MAX);

	host[PROTO_HOST_MAX] = 'a';
	host[PROTO_HOST_MAX + 1] = '\0';
	snprintf(in, sizeof(in), "CONNECT %s:80 HTTP/1.1\r\n\r\n", host);
	expect_fail(false, in, HTTP_ERR_MALFORMED, R400);
}

/* ---- authentication ---- */

static void test_auth_success(void)
{
	struct http_connect h;
	/* "alice:s3cr:et" - the password may hold ':' (RFC 7617: split at the first) */
	const char *in = "CONNECT example.com:443 HTTP/1.1\r\n"
	                 "Proxy-Authorization: Basic YWxpY2U6czNjcjpldA==\r\n\r\n";

	feed_cuts(&h, true, in, PROTO_AUTH, strlen(in));
	T_EQ_STR(h.user, "alice");
	T_EQ_STR(h.pass, "s3cr:et");
	T_EQ_INT(h.user_len, 5);
	T_EQ_INT(h.pass_len, 7);
	T_EQ_INT(h.state, HTTP_S_AUTH_CHECK);
	T_ASSERT(!h.done);
	T_EQ_INT(http_connect_auth_result(&h, true), PROTO_REQUEST);
	T_ASSERT(h.done);
	T_ASSERT(all_zero(h.pass, sizeof(h.pass)));
	T_EQ_INT(h.reply_len, 0);
	T_EQ_STR(h.target.host, "example.com");
}

static void test_auth_case_insensitive(void)
{
	struct http_connect h;

	/* "u:p" */
	T_EQ_INT(feed1(&h, true,
	               "CONNECT h:1 HTTP/1.1\r\nproxy-AUTHORIZATION:bAsIc   dTpw  \r\n\r\n"),
	         PROTO_AUTH);
	T_EQ_STR(h.user, "u");
	T_EQ_STR(h.pass, "p");
}

static void test_auth_failure(void)
{
	struct http_connect h;

	T_EQ_INT(feed1(&h, true, "CONNECT h:1 HTTP/1.1\r\nProxy-Authorization: Basic dTpw\r\n\r\n"),
	         PROTO_AUTH);
	T_EQ_INT(http_connect_auth_result(&h, false), PROTO_FAIL);
	expect_reply(&h, R407);
	T_EQ_INT(h.error, HTTP_ERR_AUTH_FAILED);
	T_ASSERT(all_zero(h.pass, sizeof(h.pass)));
	T_ASSERT(!h.done);
}

static void test_auth_missing(void)
{
	expect_fail(true, "CONNECT h:1 HTTP/1.1\r\nHost: h:1\r\n\r\n", HTTP_ERR_AUTH_MISSING, R407);
	expect_fail(true, "CONNECT h:1 HTTP/1.1\r\nProxy-Authorization: Bearer abc\r\n\r\n",
	            HTTP_ERR_AUTH_MISSING, R407);
	expect_fail(true, "CONNECT h:1 HTTP/1.1\r\nProxy-Authorization: Basic\r\n\r\n",
	            HTTP_ERR_AUTH_MISSING, R407);
	/* Authorization (to the origin) is not Proxy-Authorization */
	expect_fail(true, "CONNECT h:1 HTTP/1.1\r\nAuthorization: Basic dTpw\r\n\r\n",
	            HTTP_ERR_AUTH_MISSING, R407);
}

static void test_auth_malformed(void)
{
	static const char *bad[] = {
	        "Basic dTpw=",    /* bad base64 length */
	        "Basic dTp*",     /* bad character */
	        "Basic dXNlcg==", /* "user": no colon */
	        "Basic dQA6cA==", /* "u\0:p" */
	        "Basic ",         /* empty after trimming → no space → "Basic" alone */
	};
	char in[256];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]) - 1; i++) {
		snprintf(in, sizeof(in), "CONNECT h:1 HTTP/1.1\r\nProxy-Authorization: %s\r\n\r\n",
		         bad[i]);
		expect_fail(true, in, HTTP_ERR_MALFORMED, R400);
	}
	expect_fail(true,
	            "CONNECT h:1 HTTP/1.1\r\nProxy-Authorization: Basic dTpw\r\n"
	            "Proxy-Authorization: Basic dTpw\r\n\r\n",
	            HTTP_ERR_MALFORMED, R400);
}

static void encode_basic(char *out, size_t cap, size_t ulen, size_t plen)
{
	static const char a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	uint8_t raw[1024];
	size_t n = 0, o = 0;

	memset(raw, 'u', ulen);
	raw[ulen] = ':';
	memset(raw + ulen + 1, 'p', plen);
	n = ulen + 1 + plen;
	/* an independent encoder, so the test does not trust base64.c */
	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = raw[i] << 16 | (i + 1 < n ? raw[i + 1] << 8 : 0) |
		             (i + 2 < n ? raw[i + 2] : 0);

		out[o++] = a[v >> 18];
		out[o++] = a[(v >> 12) & 63];
		out[o++] = i + 1 < n ? a[(v >> 6) & 63] : '=';
		out[o++] = i + 2 < n ? a[v & 63] : '=';
	}
	T_ASSERT(o < cap);
	out[o] = '\0';
}

static void test_auth_lengths(void)
{
	struct http_connect h;
	char b64[1024], in[2048];

	encode_basic(b64, sizeof(b64), PROTO_CRED_MAX, PROTO_CRED_MAX);
	snprintf(in, sizeof(in), "CONNECT h:1 HTTP/1.1\r\nProxy-Authorization: Basic %s\r\n\r\n",
	         b64);
	T_EQ_INT(feed1(&h, true, in), PROTO_AUTH);
	T_EQ_INT(strlen(h.user), PROTO_CRED_MAX);
	T_EQ_INT(strlen(h.pass), PROTO_CRED_MAX);

	encode_basic(b64, sizeof(b64), 0, 0); /* ":" - empty user and password */
	snprintf(in, sizeof(in), "CONNECT h:1 HTTP/1.1\r\nProxy-Authorization: Basic %s\r\n\r\n",
	         b64);
	T_EQ_INT(feed1(&h, true, in), PROTO_AUTH);
	T_EQ_INT(h.user_len, 0);
	T_EQ_INT(h.pass_len, 0);

	encode_basic(b64, sizeof(b64), PROTO_CRED_MAX + 1, 1);
	snprintf(in, sizeof(in), "CONNECT h:1 HTTP/1.1\r\nProxy-Authorization: Basic %s\r\n\r\n",
	         b64);
	expect_fail(true, in, HTTP_ERR_MALFORMED, R400);
	encode_basic(b64, sizeof(b64), 1, PROTO_CRED_MAX + 1);
	snprintf(in, sizeof(in), "CONNECT h:1 HTTP/1.1\r\nProxy-Authorization: Basic %s\r\n\r\n",
	         b64);
	expect_fail(true, in, HTTP_ERR_MALFORMED, R400);
}

static void test_auth_ignored_when_not_required(void)
{
	struct http_connect h;

	T_EQ_INT(feed1(&h, false, "CONNECT h:1 HTTP/1.1\r\nProxy-Authorization: Basic !!!\r\n\r\n"),
	         PROTO_REQUEST);
	T_EQ_INT(h.user_len, 0);
}

/* ---- rejected requests ---- */

static void test_method(void)
{
	/* forwarded methods in absolute-form are requests (test_http_forward.c) */
	expect_fail(false, "TRACE http://example.com/ HTTP/1.1\r\nHost: example.com\r\n\r\n",
	            HTTP_ERR_METHOD, R405);
	expect_fail(false, "connect example.com:443 HTTP/1.1\r\n\r\n", HTTP_ERR_METHOD, R405);
	expect_fail(false, "get http://example.com/ HTTP/1.1\r\n\r\n", HTTP_ERR_METHOD, R405);
	/* a forwarded method with a target a proxy cannot forward: 400 */
	expect_fail(true, "POST /x HTTP/1.1\r\n\r\n", HTTP_ERR_MALFORMED, R400);
	expect_fail(false, "GET https://example.com/ HTTP/1.1\r\n\r\n", HTTP_ERR_MALFORMED, R400);
}

static void test_malformed(void)
{
	static const char *bad[] = {
	        "CONNECT example.com HTTP/1.1\r\n\r\n",            /* no port */
	        "CONNECT example.com: HTTP/1.1\r\n\r\n",           /* empty port */
	        "CONNECT example.com:0 HTTP/1.1\r\n\r\n",          /* port 0 */
	        "CONNECT example.com:65536 HTTP/1.1\r\n\r\n",      /* port too big */
	        "CONNECT example.com:000443 HTTP/1.1\r\n\r\n",     /* 6 digits */
	        "CONNECT example.com:44a HTTP/1.1\r\n\r\n",        /* not a number */
	        "CONNECT example.com:+443 HTTP/1.1\r\n\r\n",       /* sign */
	        "CONNECT :443 HTTP/1.1\r\n\r\n",                   /* empty host */
	        "CONNECT a:b:443 HTTP/1.1\r\n\r\n",                /* colon in host */
	        "CONNECT ::1:443 HTTP/1.1\r\n\r\n",                /* v6 without brackets */
	        "CONNECT [::1]443 HTTP/1.1\r\n\r\n",               /* no colon after bracket */
	        "CONNECT [::1:443 HTTP/1.1\r\n\r\n",               /* unclosed bracket */
	        "CONNECT [example.com]:443 HTTP/1.1\r\n\r\n",      /* bracketed name */
	        "CONNECT [1.2.3.4]:443 HTTP/1.1\r\n\r\n",          /* bracketed IPv4 */
	        "CONNECT []:443 HTTP/1.1\r\n\r\n",                 /* empty brackets */
	        "CONNECT ex/ample.com:443 HTTP/1.1\r\n\r\n",       /* bad host char */
	        "CONNECT http://example.com:443 HTTP/1.1\r\n\r\n", /* absolute-form */
	        "CONNECT  example.com:443 HTTP/1.1\r\n\r\n",       /* double space */
	        "CONNECT example.com:443  HTTP/1.1\r\n\r\n",
	        "CONNECT example.com:443 HTTP/1.1 \r\n\r\n", /* trailing space */
	        "CONNECT example.com:443\r\n\r\n",           /* no version */
	        "CONNECT example.com:443 HTTP/2.0\r\n\r\n",  /* not 1.x */
	        "CONNECT example.com:443 HTTP/1.\r\n\r\n",
	        "CONNECT example.com:443 http/1.1\r\n\r\n",
	        "CONNECT example.com:443 HTTP/1.1\r\nNoColon\r\n\r\n",
	        "CONNECT example.com:443 HTTP/1.1\r\n: empty name\r\n\r\n",
	        "CONNECT example.com:443 HTTP/1.1\r\nName : v\r\n\r\n",
	        "CONNECT example.com:443 HTTP/1.1\r\nA: b\r\n folded\r\n\r\n",
	        "CONNECT example.com:443 HTTP/1.1\r\nA: b\rc\r\n\r\n",  /* bare CR */
	        "CONNECT example.com:443 HTTP/1.1\r\nA: b\x01\r\n\r\n", /* control */
	        "CONNECT example.com:443 HTTP/1.1\r\nA: b\x7f\r\n\r\n", /* DEL */
	        "CONNECT\texample.com:443 HTTP/1.1\r\n\r\n",            /* tab */
	        "CONNECT example.com:443 HTTP/1.1\r\r\n\r\n",
	        " CONNECT example.com:443 HTTP/1.1\r\n\r\n", /* empty method */
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		expect_fail(false, bad[i], HTTP_ERR_MALFORMED, R400);

	/* a NUL inside the request line */
	struct http_connect h;
	const uint8_t nul[] = "CONNECT exa\0mple.com:443 HTTP/1.1\r\n\r\n";
	size_t used;

	http_connect_init(&h, false);
	T_EQ_INT(http_connect_feed(&h, nul, sizeof(nul) - 1, &used), PROTO_FAIL);
	expect_reply(&h, R400);
}

static void test_too_large(void)
{
	static uint8_t in[BUF_MAX];
	const char *line = "CONNECT example.com:443 HTTP/1.1\r\n";
	struct http_connect h;
	size_t used, n = strlen(line);

	/* exactly HTTP_HEADER_MAX: request line, one padding header, CRLF CRLF */
	memcpy(in, line, n);
	memcpy(in + n, "X: ", 3);
	memset(in + n + 3, 'x', HTTP_HEADER_MAX - n - 3 - 4);
	memcpy(in + HTTP_HEADER_MAX - 4, "\r\n\r\n", 4);
	in[HTTP_HEADER_MAX] = '!'; /* early payload */
	http_connect_init(&h, false);
	T_EQ_INT(http_connect_feed(&h, in, HTTP_HEADER_MAX + 1, &used), PROTO_REQUEST);
	T_EQ_INT(used, HTTP_HEADER_MAX);

	/* one more octet of header: 431 once HTTP_HEADER_MAX octets are there */
	memset(in + n + 3, 'x', HTTP_HEADER_MAX - n - 3 - 3);
	memcpy(in + HTTP_HEADER_MAX - 3, "\r\n\r\n", 4);
	http_connect_init(&h, false);
	T_EQ_INT(http_connect_feed(&h, in, HTTP_HEADER_MAX - 1, &used), PROTO_NEED_MORE);
	T_EQ_INT(http_connect_feed(&h, in, HTTP_HEADER_MAX, &used), PROTO_FAIL);
	expect_reply(&h, R431);
	T_EQ_INT(h.error, HTTP_ERR_TOO_LARGE);
	http_connect_init(&h, false);
	T_EQ_INT(http_connect_feed(&h, in, HTTP_HEADER_MAX + 1, &used), PROTO_FAIL);
	T_EQ_INT(h.error, HTTP_ERR_TOO_LARGE);

	/* a stream of bytes that never ends a line */
	memset(in, 'A', sizeof(in));
	http_connect_init(&h, false);
	T_EQ_INT(http_connect_feed(&h, in, sizeof(in), &used), PROTO_FAIL);
	T_EQ_INT(h.error, HTTP_ERR_TOO_LARGE);
	/* nothing but empty lines */
	for (size_t i = 0; i < HTTP_HEADER_MAX; i += 2)
		memcpy(in + i, "\r\n", 2);
	http_connect_init(&h, false);
	T_EQ_INT(http_connect_feed(&h, in, HTTP_HEADER_MAX, &used), PROTO_FAIL);
	T_EQ_INT(h.error, HTTP_ERR_TOO_LARGE);
}

/*
 * Review L3: one octet per feed up to a full 8 KiB head. The verdict is the
 * one of a single feed, and the search for the end of the head looks at each
 * octet once: examined stays at the octets fed, not their triangular sum
 * (33 M for 8 KiB with a rescan per feed).
 */
static void test_one_octet_per_feed(void)
{
	static uint8_t in[BUF_MAX];
	const char *line = "CONNECT example.com:443 HTTP/1.1\r\n";
	struct http_connect h, whole;
	size_t used = 0, n = strlen(line), k;
	enum proto_res res = PROTO_NEED_MORE;

	/* 8 KiB: the request line, padding headers of 60 octets, CRLF CRLF */
	memcpy(in, line, n);
	for (k = n; k + 64 <= HTTP_HEADER_MAX - 2; k += 62) {
		memcpy(in + k, "X-Pad: ", 7);
		memset(in + k + 7, 'p', 53);
		memcpy(in + k + 60, "\r\n", 2);
	}
	memcpy(in + k, "\r\n", 2);
	k += 2;
	http_connect_init(&whole, false);
	T_EQ_INT(http_connect_feed(&whole, in, k, &used), PROTO_REQUEST);
	T_EQ_INT(used, k);

	http_connect_init(&h, false);
	for (size_t len = 1; len <= k; len++) {
		used = 0;
		res = http_connect_feed(&h, in, len, &used);
		if (len < k && (res != PROTO_NEED_MORE || used != 0)) {
			T_FAILF("after %zu of %zu octets: res %d, used %zu", len, k, res, used);
			return;
		}
	}
	T_EQ_INT(res, PROTO_REQUEST);
	T_EQ_INT(used, k);
	T_EQ_STR(h.target.host, whole.target.host);
	T_EQ_INT(h.target.port, 443);
	T_ASSERT(h.examined <= k);
	T_EQ_INT(h.examined, whole.examined);

	/* 8 KiB that never end the head: 431 at the limit, each octet looked at once */
	memset(in + n, 'A', sizeof(in) - n);
	http_connect_init(&h, false);
	for (size_t len = 1; len <= HTTP_HEADER_MAX; len++) {
		res = http_connect_feed(&h, in, len, &used);
		if (len < HTTP_HEADER_MAX && res != PROTO_NEED_MORE) {
			T_FAILF("after %zu octets: res %d", len, res);
			return;
		}
	}
	T_EQ_INT(res, PROTO_FAIL);
	T_EQ_INT(h.error, HTTP_ERR_TOO_LARGE);
	T_ASSERT(h.examined <= HTTP_HEADER_MAX);
}

/*
 * The same, seen from outside: octets the parser searched once are not
 * searched again. Changed behind its back into a blank line (a contract
 * violation, on purpose), they must not end the head early; a parser that
 * rescanned from octet 0 would stop there.
 */
static void test_scanned_octets_not_revisited(void)
{
	char in[256];
	struct http_connect h;
	size_t used = 0, len, at;
	enum proto_res res = PROTO_NEED_MORE;

	len = (size_t)snprintf(in, sizeof(in),
	                       "CONNECT example.com:443 HTTP/1.1\r\nX-Pad: %s\r\nX-More: y\r\n\r\n",
	                       "abcdefghijklmnopqrstuvwxyz");
	at = strlen("CONNECT example.com:443 HTTP/1.1\r\nX-Pad: abc");
	http_connect_init(&h, false);
	for (size_t k = 1; k <= len; k++) {
		if (k == at + 8)
			memcpy(in + at, "\r\n\r\n", 4); /* after the parser has passed it */
		used = 0;
		res = http_connect_feed(&h, (const uint8_t *)in, k, &used);
		if (k < len && res != PROTO_NEED_MORE) {
			T_FAILF("ended after %zu of %zu octets (res %d, used %zu)", k, len, res,
			        used);
			return;
		}
	}
	T_EQ_INT(res, PROTO_REQUEST);
	T_EQ_INT(used, len);
	/* a buffer shorter than the last one (another contract violation) restarts the search */
	const char *first = "CONNECT a:1 HTTP/1.1\r\nX: y",
	           *second = "CONNECT a:1 HTTP/1.1\r\n\r\n";
	http_connect_init(&h, false);
	T_EQ_INT(http_connect_feed(&h, (const uint8_t *)first, strlen(first), &used),
	         PROTO_NEED_MORE);
	T_ASSERT(strlen(second) < strlen(first));
	T_EQ_INT(http_connect_feed(&h, (const uint8_t *)second, strlen(second), &used),
	         PROTO_REQUEST);
	T_EQ_INT(used, strlen(second));
}

/* Review H2: the authority's host in every IPv4 spelling the resolver reads as an address. */
static void test_numeric_hosts(void)
{
	static const char *loop[] = {"127.0.0.1", "127.1", "2130706433", "0x7f000001",
	                             "017700000001"};
	struct http_connect h;
	char req[128];
	const struct sockaddr_in *sin = (const struct sockaddr_in *)&h.target.addr;

	for (size_t i = 0; i < sizeof(loop) / sizeof(loop[0]); i++) {
		snprintf(req, sizeof(req), "CONNECT %s:80 HTTP/1.1\r\n\r\n", loop[i]);
		if (feed1(&h, false, req) != PROTO_REQUEST || h.target.kind != TARGET_IP ||
		    sin->sin_family != AF_INET || ntohl(sin->sin_addr.s_addr) != 0x7f000001)
			T_FAILF("\"%s\" is not the IP target 127.0.0.1", loop[i]);
	}
	T_EQ_INT(feed1(&h, false, "CONNECT 0:80 HTTP/1.1\r\n\r\n"), PROTO_REQUEST);
	T_EQ_INT(h.target.kind, TARGET_IP);
	T_EQ_INT(sin->sin_addr.s_addr, 0);
	T_EQ_INT(feed1(&h, false, "CONNECT localhost.:80 HTTP/1.1\r\n\r\n"), PROTO_REQUEST);
	T_EQ_INT(h.target.kind, TARGET_DOMAIN);
	T_EQ_STR(h.target.host, "localhost.");
}

static void test_states_after_end(void)
{
	struct http_connect h;
	size_t used = 5;
	const char *ok = "CONNECT h:1 HTTP/1.1\r\n\r\n";

	T_EQ_INT(feed1(&h, false, "GET / HTTP/1.1\r\n\r\n"), PROTO_FAIL);
	T_EQ_INT(http_connect_feed(&h, (const uint8_t *)ok, strlen(ok), &used), PROTO_FAIL);
	T_EQ_INT(h.reply_len, 0);
	T_EQ_INT(used, 0);

	T_EQ_INT(feed1(&h, true, "CONNECT h:1 HTTP/1.1\r\nProxy-Authorization: Basic dTpw\r\n\r\n"),
	         PROTO_AUTH);
	T_EQ_INT(http_connect_feed(&h, (const uint8_t *)ok, strlen(ok), &used), PROTO_NEED_MORE);
	T_EQ_INT(used, 0);

	/* auth_result without a pending check fails closed */
	T_EQ_INT(feed1(&h, false, ok), PROTO_REQUEST);
	T_EQ_INT(http_connect_auth_result(&h, true), PROTO_FAIL);
	expect_reply(&h, R400);
}

/* ---- responses ---- */

static void test_replies(void)
{
	static const struct {
		enum proto_connect_result r;
		const char *want;
	} map[] = {
	        {CONNECT_OK, "HTTP/1.1 200 Connection established\r\n\r\n"},
	        {CONNECT_GENERAL_FAILURE,
	         "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"},
	        {CONNECT_REFUSED,
	         "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"},
	        {CONNECT_NET_UNREACHABLE,
	         "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"},
	        {CONNECT_HOST_UNREACHABLE,
	         "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"},
	        {CONNECT_TIMEOUT,
	         "HTTP/1.1 504 Gateway Timeout\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"},
	        {CONNECT_NOT_ALLOWED,
	         "HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"},
	};
	struct http_connect h;

	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
		feed1(&h, false, "CONNECT h:1 HTTP/1.1\r\n\r\n");
		http_connect_reply(&h, map[i].r);
		expect_reply(&h, map[i].want);
		T_EQ_INT(h.state, map[i].r == CONNECT_OK ? HTTP_S_DONE : HTTP_S_FAILED);
	}
}

/* Every error response is a complete HTTP/1.1 response that closes. */
static void test_error_reply_shape(void)
{
	const char *all[] = {R400, R405, R407, R431};

	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
		T_ASSERT(strncmp(all[i], "HTTP/1.1 ", 9) == 0);
		T_ASSERT(strstr(all[i], "\r\nContent-Length: 0\r\n") != NULL);
		T_ASSERT(strstr(all[i], "\r\nConnection: close\r\n") != NULL);
		T_ASSERT(strstr(all[i], "\r\n\r\n") == all[i] + strlen(all[i]) - 4);
		T_ASSERT(strlen(all[i]) <= PROTO_REPLY_MAX);
	}
}

int main(void)
{
	T_RUN(test_domain);
	T_RUN(test_ipv4_ipv6);
	T_RUN(test_line_endings);
	T_RUN(test_early_payload);
	T_RUN(test_host_255);
	T_RUN(test_auth_success);
	T_RUN(test_auth_case_insensitive);
	T_RUN(test_auth_failure);
	T_RUN(test_auth_missing);
	T_RUN(test_auth_malformed);
	T_RUN(test_auth_lengths);
	T_RUN(test_auth_ignored_when_not_required);
	T_RUN(test_method);
	T_RUN(test_malformed);
	T_RUN(test_too_large);
	T_RUN(test_one_octet_per_feed);
	T_RUN(test_scanned_octets_not_revisited);
	T_RUN(test_numeric_hosts);
	T_RUN(test_states_after_end);
	T_RUN(test_replies);
	T_RUN(test_error_reply_shape);
	return t_finish();
}
