/* SPDX-License-Identifier: MIT */
/* HTTP/1.x CONNECT request head parser with Basic proxy authentication, and its responses. */
#include "http_connect.h"

#include "base64.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>

/*
 * Choices where RFC 9110/9112 leave room:
 *  - The head (request line to blank line, line endings included) must fit in
 *    HTTP_HEADER_MAX octets, else 431. Empty lines before the request line are
 *    skipped (RFC 9112 section 2.2); lines may end in CRLF or a bare LF; a CR
 *    or any other control octet elsewhere is 400.
 *  - Request line: exactly METHOD SP authority SP HTTP/1.<digit>, else 400
 *    (HTTP/2.0 or HTTP/0.9 included: 400 rather than 505, we only speak 1.x).
 *    A well-formed request with another method gets 405 with Allow: CONNECT.
 *  - authority-form: host ":" port with a mandatory port 1..65535; host is a
 *    DNS-ish name (letters, digits, '-', '.', '_'), an IPv4 literal, or an
 *    IPv6 literal in brackets (no zone). Literals become TARGET_IP.
 *  - Obsolete line folding, a header without ':' or with whitespace before
 *    ':', and a repeated Proxy-Authorization are 400.
 *  - With require_auth: no Proxy-Authorization, or one with another scheme,
 *    is 407 (with Proxy-Authenticate); Basic credentials that do not decode
 *    (bad base64, no ':', a NUL, a part over 255 octets) are 400. Without
 *    require_auth the header is ignored.
 *  - Every response but 200 carries Content-Length: 0 and Connection: close;
 *    the 200 carries no Content-Length (RFC 9110 section 9.3.6).
 */

#define ERROR_RESPONSE(status, extra) \
	"HTTP/1.1 " status "\r\n" extra "Content-Length: 0\r\nConnection: close\r\n\r\n"

static const char resp_200[] = "HTTP/1.1 200 Connection established\r\n\r\n";
static const char resp_400[] = ERROR_RESPONSE("400 Bad Request", "");
static const char resp_403[] = ERROR_RESPONSE("403 Forbidden", "");
static const char resp_405[] =
        ERROR_RESPONSE("405 Method Not Allowed",
                       "Allow: CONNECT, GET, HEAD, POST, PUT, DELETE, OPTIONS, PATCH\r\n");
static const char resp_407[] = ERROR_RESPONSE("407 Proxy Authentication Required",
                                              "Proxy-Authenticate: Basic realm=\"spliced\"\r\n");
static const char resp_431[] = ERROR_RESPONSE("431 Request Header Fields Too Large", "");
static const char resp_502[] = ERROR_RESPONSE("502 Bad Gateway", "");
static const char resp_504[] = ERROR_RESPONSE("504 Gateway Timeout", "");

enum {
	PORT_DIGITS_MAX = 5,
	/* Basic credentials "user:pass" with both parts at their limit. */
	CRED_RAW_MAX = 2 * PROTO_CRED_MAX + 1,
};

static void set_reply(struct http_connect *h, const char *resp, size_t len)
{
	memcpy(h->reply, resp, len);
	h->reply_len = len;
}

#define SET_REPLY(h, resp) set_reply((h), (resp), sizeof(resp) - 1)

static enum proto_res fail(struct http_connect *h, enum http_error err)
{
	switch (err) {
	case HTTP_ERR_METHOD:
		SET_REPLY(h, resp_405);
		break;
	case HTTP_ERR_TOO_LARGE:
		SET_REPLY(h, resp_431);
		break;
	case HTTP_ERR_AUTH_MISSING:
	case HTTP_ERR_AUTH_FAILED:
		SET_REPLY(h, resp_407);
		break;
	default:
		SET_REPLY(h, resp_400);
		break;
	}
	explicit_bzero(h->pass, sizeof(h->pass));
	h->pass_len = 0;
	h->error = err;
	h->state = HTTP_S_FAILED;
	return PROTO_FAIL;
}

static bool is_tchar(uint8_t c)
{
	/* RFC 9110 section 5.6.2 token characters */
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c && strchr("!#$%&'*+-.^_`|~", c));
}

static bool is_host_char(uint8_t c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       c == '-' || c == '.' || c == '_';
}

/*
 * Length of the head through its blank line, or 0 when the blank line is not
 * within the first min(len, HTTP_HEADER_MAX) octets. Resumes where the last
 * call stopped (h->scan_pos): the octets before it were searched already.
 */
static size_t head_length(struct http_connect *h, const uint8_t *buf, size_t len)
{
	size_t lim = len < HTTP_HEADER_MAX ? len : HTTP_HEADER_MAX;

	if (h->scan_pos > lim) {
		/* A shorter buffer than last time breaks the feed contract: start over. */
		h->scan_pos = h->line_start = 0;
		h->have_line = false;
	}
	while (h->scan_pos < lim) {
		const uint8_t *nl = memchr(buf + h->scan_pos, '\n', lim - h->scan_pos);
		size_t i, n;

		if (!nl) {
			h->examined += lim - h->scan_pos;
			h->scan_pos = lim;
			break;
		}
		i = (size_t)(nl - buf);
		h->examined += i + 1 - h->scan_pos;
		h->scan_pos = i + 1;
		n = i - h->line_start;
		if (n > 0 && buf[i - 1] == '\r')
			n--;
		if (n > 0)
			h->have_line = true;
		else if (h->have_line)
			return i + 1;
		h->line_start = i + 1;
	}
	return 0;
}

static bool has_ctl(const uint8_t *p, size_t n, bool allow_tab)
{
	for (size_t i = 0; i < n; i++)
		if ((p[i] < 0x20 && !(allow_tab && p[i] == '\t')) || p[i] == 0x7f)
			return true;
	return false;
}

/* authority-form (RFC 9112 section 3.2.3): host ":" port, host may be "[v6]". */
static int parse_authority(struct proto_target *t, const uint8_t *p, size_t n)
{
	const uint8_t *host, *colon;
	size_t hlen, plen;
	unsigned long port = 0;

	if (n > 0 && p[0] == '[') {
		const uint8_t *close = memchr(p, ']', n);

		if (!close || close + 1 == p + n || close[1] != ':')
			return -EINVAL;
		host = p + 1;
		hlen = (size_t)(close - host);
		colon = close + 1;
		for (size_t i = 0; i < hlen; i++)
			if (!(is_host_char(host[i]) || host[i] == ':'))
				return -EINVAL;
	} else {
		colon = memchr(p, ':', n);
		if (!colon)
			return -EINVAL;
		host = p;
		hlen = (size_t)(colon - p);
		for (size_t i = 0; i < hlen; i++)
			if (!is_host_char(host[i]))
				return -EINVAL;
	}
	plen = n - (size_t)(colon + 1 - p);
	if (hlen == 0 || hlen > PROTO_HOST_MAX || plen == 0 || plen > PORT_DIGITS_MAX)
		return -EINVAL;
	for (size_t i = 0; i < plen; i++) {
		if (colon[1 + i] < '0' || colon[1 + i] > '9')
			return -EINVAL;
		port = port * 10 + (colon[1 + i] - '0');
	}
	if (port == 0 || port > 65535)
		return -EINVAL;

	memset(t, 0, sizeof(*t));
	t->kind = TARGET_DOMAIN;
	t->port = (uint16_t)port;
	memcpy(t->host, host, hlen);
	t->host[hlen] = '\0';
	/* An IPv4 literal or a bracketed IPv6 literal needs no resolver; a
	 * bracket holding something else is malformed. */
	if (!proto_target_ip_literal(t) && p[0] == '[')
		return -EINVAL;
	if (p[0] == '[' && t->addr.ss_family != AF_INET6)
		return -EINVAL;
	return 0;
}

/* The methods forwarded in absolute-form: RFC 9110 section 9.3 but CONNECT and TRACE, and PATCH. */
static bool forwarded_method(const uint8_t *p, size_t n)
{
	static const char *const m[] = {"GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH"};

	for (size_t i = 0; i < sizeof(m) / sizeof(m[0]); i++)
		if (n == strlen(m[i]) && memcmp(p, m[i], n) == 0)
			return true;
	return false;
}

/*
 * absolute-form (RFC 9112 section 3.2.2) with the http scheme:
 * "http://" authority [ path-abempty ] [ "?" query ]; the authority has no
 * userinfo, its port defaults to 80. base: the start of the head, for the
 * offsets kept in h->fwd.
 */
static int parse_absolute(struct http_connect *h, const uint8_t *base, const uint8_t *p, size_t n)
{
	char hp[PROTO_HOST_MAX + 16];
	size_t alen = 0;
	const uint8_t *a;
	bool has_port = false;

	if (n < 8 || !http_eq_nocase(p, 7, "http://"))
		return -EINVAL;
	a = p + 7;
	n -= 7;
	while (alen < n && a[alen] != '/' && a[alen] != '?' && a[alen] != '#')
		alen++;
	if (alen == 0 || alen > PROTO_HOST_MAX + 7 || memchr(a, '@', alen))
		return -EINVAL;
	for (size_t i = alen; i < n; i++)
		if (a[i] == '#' || a[i] <= ' ' || a[i] == 0x7f)
			return -EINVAL; /* a fragment is never sent; nor a blank or control */
	/* A port is what follows the last ':' outside the brackets of an IPv6 literal. */
	if (a[0] == '[') {
		const uint8_t *close = memchr(a, ']', alen);
		if (!close)
			return -EINVAL;
		has_port = (size_t)(close - a) + 1 < alen;
	} else {
		has_port = memchr(a, ':', alen) != NULL;
	}
	memcpy(hp, a, alen);
	if (has_port)
		hp[alen] = '\0';
	else
		memcpy(hp + alen, ":80", 4);
	if (parse_authority(&h->target, (const uint8_t *)hp, strlen(hp)) < 0)
		return -EINVAL;
	h->fwd.auth_off = (size_t)(a - base);
	h->fwd.auth_len = alen;
	h->fwd.has_path = alen < n;
	h->fwd.path_off = (size_t)(a + alen - base);
	h->fwd.path_len = n - alen;
	return 0;
}

/* METHOD SP request-target SP HTTP-version (RFC 9112 section 3). */
static enum proto_res parse_request_line(struct http_connect *h, const uint8_t *base,
                                         const uint8_t *p, size_t n)
{
	const uint8_t *sp1, *sp2, *target, *version;
	size_t mlen, tlen, vlen;

	if (has_ctl(p, n, false))
		return fail(h, HTTP_ERR_MALFORMED);
	sp1 = memchr(p, ' ', n);
	if (!sp1)
		return fail(h, HTTP_ERR_MALFORMED);
	mlen = (size_t)(sp1 - p);
	target = sp1 + 1;
	sp2 = memchr(target, ' ', n - mlen - 1);
	if (!sp2)
		return fail(h, HTTP_ERR_MALFORMED);
	tlen = (size_t)(sp2 - target);
	version = sp2 + 1;
	vlen = n - mlen - tlen - 2;
	if (mlen == 0 || tlen == 0)
		return fail(h, HTTP_ERR_MALFORMED);
	for (size_t i = 0; i < mlen; i++)
		if (!is_tchar(p[i]))
			return fail(h, HTTP_ERR_MALFORMED);
	if (vlen != 8 || memcmp(version, "HTTP/1.", 7) != 0 || version[7] < '0' || version[7] > '9')
		return fail(h, HTTP_ERR_MALFORMED);
	/* Method names are case-sensitive (RFC 9110 section 9.1). */
	if (mlen == 7 && memcmp(p, "CONNECT", 7) == 0) {
		if (parse_authority(&h->target, target, tlen) < 0)
			return fail(h, HTTP_ERR_MALFORMED);
		return PROTO_REQUEST;
	}
	if (!forwarded_method(p, mlen))
		return fail(h, HTTP_ERR_METHOD);
	if (parse_absolute(h, base, target, tlen) < 0)
		return fail(h, HTTP_ERR_MALFORMED); /* origin-form to a proxy, https://, ... */
	h->forward = true;
	h->fwd.method_off = (size_t)(p - base);
	h->fwd.method_len = mlen;
	h->fwd.minor = (unsigned)(version[7] - '0');
	h->fwd.head = mlen == 4 && memcmp(p, "HEAD", 4) == 0;
	return PROTO_REQUEST;
}

/* Basic credentials (RFC 7617): "Basic" 1*SP base64("user:pass"). */
static enum proto_res parse_basic(struct http_connect *h, const uint8_t *v, size_t n)
{
	uint8_t raw[CRED_RAW_MAX];
	const uint8_t *sp = memchr(v, ' ', n), *colon;
	size_t slen, rlen = 0, ulen, plen;
	enum proto_res res;
	int err;

	if (!sp)
		return fail(h, HTTP_ERR_AUTH_MISSING); /* a bare token68 is no Basic */
	slen = (size_t)(sp - v);
	if (!http_eq_nocase(v, slen, "Basic"))
		return fail(h, HTTP_ERR_AUTH_MISSING);
	while (sp < v + n && *sp == ' ')
		sp++;
	err = base64_decode(raw, sizeof(raw), (const char *)sp, (size_t)(v + n - sp), &rlen);
	colon = err ? NULL : memchr(raw, ':', rlen);
	if (!colon) {
		res = fail(h, HTTP_ERR_MALFORMED);
		goto out;
	}
	ulen = (size_t)(colon - raw);
	plen = rlen - ulen - 1;
	if (ulen > PROTO_CRED_MAX || plen > PROTO_CRED_MAX || memchr(raw, 0, rlen)) {
		res = fail(h, HTTP_ERR_MALFORMED);
		goto out;
	}
	memcpy(h->user, raw, ulen);
	h->user[ulen] = '\0';
	h->user_len = ulen;
	memcpy(h->pass, colon + 1, plen);
	h->pass[plen] = '\0';
	h->pass_len = plen;
	h->state = HTTP_S_AUTH_CHECK;
	res = PROTO_AUTH;
out:
	explicit_bzero(raw, sizeof(raw));
	return res;
}

/* Whether tok is an element of the list v[0, n); *other: some other element is. */
static bool token_in(const uint8_t *v, size_t n, const char *tok, bool *other)
{
	const uint8_t *t;
	size_t pos = 0, len;
	bool found = false;

	while (http_token_next(v, n, &pos, &t, &len)) {
		if (http_eq_nocase(t, len, tok))
			found = true;
		else if (other)
			*other = true;
	}
	return found;
}

/*
 * A field of a request to forward: its framing (Content-Length,
 * Transfer-Encoding), Expect, and Connection's options and the names it
 * lists. -1: refused (a framing that could be read two ways, or one we do
 * not relay).
 */
static int fwd_field(struct http_connect *h, const uint8_t *base, const uint8_t *name, size_t nlen,
                     const uint8_t *v, size_t vlen)
{
	struct http_fwd_req *f = &h->fwd;

	if (http_eq_nocase(name, nlen, "Content-Length")) {
		uint64_t x;

		/* "5, 5" too: one value, once, or it is refused */
		if (!http_digits(v, vlen, &x) || (f->has_length && x != f->length))
			return -1;
		f->has_length = true;
		f->length = x;
	} else if (http_eq_nocase(name, nlen, "Transfer-Encoding")) {
		/* Only "chunked", once: any other coding we could not find the end of. */
		if (f->chunked || !http_eq_nocase(v, vlen, "chunked"))
			return -1;
		f->chunked = true;
	} else if (http_eq_nocase(name, nlen, "Expect")) {
		if (!http_eq_nocase(v, vlen, "100-continue"))
			return -1; /* 417 would be the answer; 400 is as final */
		f->expect_continue = true;
	} else if (http_eq_nocase(name, nlen, "Connection") ||
	           http_eq_nocase(name, nlen, "Proxy-Connection")) {
		bool other = false;

		if (token_in(v, vlen, "close", &other))
			f->client_close = true;
		if (token_in(v, vlen, "keep-alive", NULL))
			f->keep_alive = true;
		if (other && http_eq_nocase(name, nlen, "Connection")) {
			const uint8_t *t;
			size_t pos = 0, len;

			/* the names it lists are hop-by-hop too */
			while (http_token_next(v, vlen, &pos, &t, &len)) {
				if (http_eq_nocase(t, len, "close") ||
				    http_eq_nocase(t, len, "keep-alive"))
					continue;
				if (f->n_hop == HTTP_FWD_HOP_MAX)
					return -1;
				f->hop_off[f->n_hop] = (size_t)(t - base);
				f->hop_len[f->n_hop++] = len;
			}
		}
	}
	return 0;
}

/* The complete head [0, end): request line, then field lines (RFC 9112 section 5). */
static enum proto_res parse_head(struct http_connect *h, const uint8_t *buf, size_t end)
{
	const uint8_t *line, *auth = NULL;
	size_t pos = 0, n, alen = 0;
	enum proto_res res;

	/* head_length() guarantees a request line and a final blank line; the
	 * pos < end checks keep a disagreement from ever reading past `end`. */
	do {
		if (pos >= end)
			return fail(h, HTTP_ERR_MALFORMED);
		n = http_next_line(buf, end, &pos, &line);
	} while (n == 0);
	res = parse_request_line(h, buf, line, n);
	if (res != PROTO_REQUEST)
		return res;

	while (pos < end && (n = http_next_line(buf, end, &pos, &line)) > 0) {
		const uint8_t *colon = memchr(line, ':', n), *v;
		size_t nlen, vlen;

		if (!colon || colon == line || has_ctl(line, n, true))
			return fail(h, HTTP_ERR_MALFORMED);
		nlen = (size_t)(colon - line);
		for (size_t i = 0; i < nlen; i++)
			if (!is_tchar(line[i])) /* also catches obs-fold and "Name :" */
				return fail(h, HTTP_ERR_MALFORMED);
		v = http_field_value(line, n, nlen, &vlen);
		if (http_eq_nocase(line, nlen, "Proxy-Authorization")) {
			if (auth)
				return fail(h, HTTP_ERR_MALFORMED);
			auth = v;
			alen = vlen;
		} else if (h->forward && fwd_field(h, buf, line, nlen, v, vlen) < 0) {
			return fail(h, HTTP_ERR_MALFORMED);
		}
	}
	if (h->forward) {
		/* A request with both framings could be read two ways: smuggling (RFC 9112 6.1). */
		if (h->fwd.chunked && h->fwd.has_length)
			return fail(h, HTTP_ERR_MALFORMED);
		if (h->fwd.minor == 0 && !h->fwd.keep_alive)
			h->fwd.client_close = true;
		h->fwd.head_len = end;
	}

	if (!h->require_auth) {
		h->state = HTTP_S_DONE;
		h->done = true;
		return PROTO_REQUEST;
	}
	if (!auth)
		return fail(h, HTTP_ERR_AUTH_MISSING);
	return parse_basic(h, auth, alen);
}

void http_connect_init(struct http_connect *h, bool require_auth)
{
	memset(h, 0, sizeof(*h));
	h->require_auth = require_auth;
	h->state = HTTP_S_HEAD;
}

enum proto_res http_connect_feed(struct http_connect *h, const uint8_t *buf, size_t len,
                                 size_t *consumed)
{
	enum proto_res res;
	size_t head;

	*consumed = 0;
	switch (h->state) {
	case HTTP_S_HEAD:
		break;
	case HTTP_S_AUTH_CHECK: /* waiting for http_connect_auth_result() */
	case HTTP_S_DONE:       /* later bytes are tunnel payload */
		return PROTO_NEED_MORE;
	default: /* HTTP_S_FAILED: the reply was already handed out once */
		h->reply_len = 0;
		return PROTO_FAIL;
	}
	h->reply_len = 0;
	head = head_length(h, buf, len);
	if (head == 0)
		return len >= HTTP_HEADER_MAX ? fail(h, HTTP_ERR_TOO_LARGE) : PROTO_NEED_MORE;
	res = parse_head(h, buf, head);
	/* A request to forward stays in the buffer for the rewrite (its head_len says how long). */
	*consumed = h->forward && res != PROTO_FAIL ? 0 : head;
	return res;
}

enum proto_res http_connect_auth_result(struct http_connect *h, bool ok)
{
	explicit_bzero(h->pass, sizeof(h->pass));
	h->pass_len = 0;
	if (h->state != HTTP_S_AUTH_CHECK)
		return fail(h, h->error != HTTP_ERR_NONE ? h->error : HTTP_ERR_MALFORMED);
	if (!ok)
		return fail(h, HTTP_ERR_AUTH_FAILED);
	h->state = HTTP_S_DONE;
	h->done = true;
	return PROTO_REQUEST;
}

void http_connect_reply(struct http_connect *h, enum proto_connect_result r)
{
	switch (r) {
	case CONNECT_OK:
		if (h->forward)
			h->reply_len = 0; /* the origin's response is the answer */
		else
			SET_REPLY(h, resp_200);
		return;
	case CONNECT_TIMEOUT:
		SET_REPLY(h, resp_504);
		break;
	case CONNECT_NOT_ALLOWED:
		SET_REPLY(h, resp_403);
		break;
	default: /* general failure, refused, net/host unreachable, an upstream's REP 07/08 */
		SET_REPLY(h, resp_502);
		break;
	}
	h->state = HTTP_S_FAILED;
}
