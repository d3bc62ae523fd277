/* SPDX-License-Identifier: MIT */
/* HTTP/1.1 forwarding: the request head rewritten for the origin, response heads, chunked bodies. */
#include "http_forward.h"

#include <string.h>

#include "base64.h"

/*
 * Choices where RFC 9110/9112 leave room:
 *  - Every request goes to the origin on a connection of its own, asking it
 *    to close after the response ("Connection: close"), so a response ends
 *    where the origin's connection does; its body need not be parsed. The
 *    client's connection stays open between requests when both the client
 *    and the response allow it.
 *  - "Expect: 100-continue" is answered by spliced itself (the caller sends
 *    the 100) and not forwarded, so the body follows the head at once.
 *  - Hop-by-hop fields (RFC 9110 section 7.6.1) are dropped both ways; so
 *    are Proxy-Authorization and Proxy-Authenticate, which are ours. Host is
 *    replaced by the authority of the absolute URI (RFC 9112 section 3.2.2).
 *  - No Via is added.
 */

bool http_eq_nocase(const uint8_t *p, size_t n, const char *lit)
{
	size_t i;

	for (i = 0; i < n && lit[i]; i++) {
		uint8_t a = p[i], b = (uint8_t)lit[i];

		if (a >= 'A' && a <= 'Z')
			a += 'a' - 'A';
		if (b >= 'A' && b <= 'Z')
			b += 'a' - 'A';
		if (a != b)
			return false;
	}
	return i == n && lit[i] == '\0';
}

static bool eq_nocase2(const uint8_t *a, size_t an, const uint8_t *b, size_t bn)
{
	if (an != bn)
		return false;
	for (size_t i = 0; i < an; i++) {
		uint8_t x = a[i], y = b[i];
		if (x >= 'A' && x <= 'Z')
			x += 'a' - 'A';
		if (y >= 'A' && y <= 'Z')
			y += 'a' - 'A';
		if (x != y)
			return false;
	}
	return true;
}

size_t http_next_line(const uint8_t *buf, size_t end, size_t *pos, const uint8_t **line)
{
	const uint8_t *p = buf + *pos;
	const uint8_t *nl = memchr(p, '\n', end - *pos);
	size_t n = nl ? (size_t)(nl - p) : end - *pos;

	*pos += nl ? n + 1 : n;
	if (n > 0 && p[n - 1] == '\r')
		n--;
	*line = p;
	return n;
}

const uint8_t *http_field_value(const uint8_t *line, size_t n, size_t nlen, size_t *vlen)
{
	const uint8_t *v = line + nlen + 1;
	size_t len = n - nlen - 1;

	while (len > 0 && (*v == ' ' || *v == '\t'))
		v++, len--;
	while (len > 0 && (v[len - 1] == ' ' || v[len - 1] == '\t'))
		len--;
	*vlen = len;
	return v;
}

bool http_token_next(const uint8_t *v, size_t n, size_t *pos, const uint8_t **tok, size_t *len)
{
	size_t i = *pos;

	while (i < n) {
		size_t s, e;

		while (i < n && (v[i] == ' ' || v[i] == '\t' || v[i] == ','))
			i++;
		s = i;
		while (i < n && v[i] != ',')
			i++;
		e = i;
		while (e > s && (v[e - 1] == ' ' || v[e - 1] == '\t'))
			e--;
		if (e > s) {
			*pos = i;
			*tok = v + s;
			*len = e - s;
			return true;
		}
	}
	*pos = i;
	return false;
}

static bool hop_by_hop(const uint8_t *name, size_t n, const uint8_t *head, size_t n_hop,
                       const size_t *hop_off, const size_t *hop_len)
{
	static const char *const fixed[] = {
	        "Connection", "Proxy-Connection",    "Keep-Alive",        "TE",
	        "Upgrade",    "Proxy-Authorization", "Proxy-Authenticate"};

	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
		if (http_eq_nocase(name, n, fixed[i]))
			return true;
	for (size_t i = 0; i < n_hop; i++)
		if (eq_nocase2(name, n, head + hop_off[i], hop_len[i]))
			return true;
	return false;
}

struct out {
	uint8_t *p;
	size_t len, cap;
	bool over;
};

static void put(struct out *o, const void *d, size_t n)
{
	if (o->over || n > o->cap - o->len) {
		o->over = true;
		return;
	}
	memcpy(o->p + o->len, d, n);
	o->len += n;
}

static void puts_(struct out *o, const char *s)
{
	put(o, s, strlen(s));
}

/* The field lines of head after its first line, minus the dropped ones, each ending in CRLF. */
static void copy_fields(struct out *o, const uint8_t *head, size_t head_len, size_t n_hop,
                        const size_t *hop_off, const size_t *hop_len, bool request)
{
	const uint8_t *line;
	size_t pos = 0, n;

	do
		n = http_next_line(head, head_len, &pos, &line);
	while (n == 0 && pos < head_len); /* empty lines before the first line */
	while (pos < head_len && (n = http_next_line(head, head_len, &pos, &line)) > 0) {
		const uint8_t *colon = memchr(line, ':', n);
		size_t nlen = colon ? (size_t)(colon - line) : n;

		if (hop_by_hop(line, nlen, head, n_hop, hop_off, hop_len))
			continue;
		if (request &&
		    (http_eq_nocase(line, nlen, "Host") || http_eq_nocase(line, nlen, "Expect")))
			continue;
		put(o, line, n);
		puts_(o, "\r\n");
	}
}

size_t http_fwd_rewrite(const struct http_fwd_req *r, const uint8_t *head,
                        const struct http_fwd_via *via, uint8_t *out, size_t cap)
{
	struct out o = {.p = out, .cap = cap};
	bool proxy = via && via->proxy;

	put(&o, head + r->method_off, r->method_len);
	puts_(&o, " ");
	if (proxy) { /* absolute-form, for the upstream proxy to forward */
		puts_(&o, "http://");
		put(&o, head + r->auth_off, r->auth_len);
	}
	if (!r->has_path || head[r->path_off] == '?')
		puts_(&o, "/"); /* origin-form always starts with one ("http://h?q" is "/?q") */
	if (r->has_path)
		put(&o, head + r->path_off, r->path_len);
	/* The client's version: an HTTP/1.0 client must not get a chunked response. */
	puts_(&o, r->minor == 0 ? " HTTP/1.0\r\n" : " HTTP/1.1\r\n");
	copy_fields(&o, head, r->head_len, r->n_hop, r->hop_off, r->hop_len, true);
	puts_(&o, "Host: ");
	put(&o, head + r->auth_off, r->auth_len);
	if (proxy && via->user) {
		uint8_t cred[2 * 255 + 1];
		char b64[((2 * 255 + 1) + 2) / 3 * 4 + 1];
		size_t ul = strlen(via->user), pl = via->pass ? strlen(via->pass) : 0, bl = 0;

		if (ul > 255 || pl > 255)
			return 0;
		memcpy(cred, via->user, ul);
		cred[ul] = ':';
		memcpy(cred + ul + 1, via->pass ? via->pass : "", pl);
		if (base64_encode(b64, sizeof(b64), cred, ul + 1 + pl, &bl) < 0)
			bl = 0;
		explicit_bzero(cred, sizeof(cred));
		if (!bl)
			return 0;
		puts_(&o, "\r\nProxy-Authorization: Basic ");
		put(&o, b64, bl);
		explicit_bzero(b64, sizeof(b64));
	}
	puts_(&o, "\r\nConnection: close\r\n\r\n");
	return o.over ? 0 : o.len;
}

/* --- responses --- */

bool http_digits(const uint8_t *p, size_t n, uint64_t *v)
{
	uint64_t x = 0;

	if (n == 0 || n > 18)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (p[i] < '0' || p[i] > '9')
			return false;
		x = x * 10 + (uint64_t)(p[i] - '0');
	}
	*v = x;
	return true;
}

/* fn(element) for each element of a comma-separated field value. */
static void each_token(const uint8_t *v, size_t n, void (*fn)(void *, const uint8_t *, size_t),
                       void *ctx)
{
	const uint8_t *t;
	size_t pos = 0, len;

	while (http_token_next(v, n, &pos, &t, &len))
		fn(ctx, t, len);
}

struct conn_tokens {
	const uint8_t *head;
	size_t *n_hop, *hop_off, *hop_len;
	bool close, keep_alive, overflow;
};

static void conn_token(void *ctx, const uint8_t *t, size_t n)
{
	struct conn_tokens *c = ctx;

	if (http_eq_nocase(t, n, "close"))
		c->close = true;
	else if (http_eq_nocase(t, n, "keep-alive"))
		c->keep_alive = true;
	else if (*c->n_hop < HTTP_FWD_HOP_MAX) {
		c->hop_off[*c->n_hop] = (size_t)(t - c->head);
		c->hop_len[(*c->n_hop)++] = n;
	} else {
		c->overflow = true;
	}
}

int http_resp_parse(const uint8_t *buf, size_t len, bool head_req, struct http_resp *r)
{
	const uint8_t *line;
	size_t pos = 0, n, end = 0, lim = len < HTTP_RESP_HEAD_MAX ? len : HTTP_RESP_HEAD_MAX;
	uint64_t status, cl = 0;
	bool ka = false, seen_cl = false;
	unsigned minor;

	/* The end of the head: the first empty line after the status line. */
	for (size_t i = 0, start = 0; i < lim; i++) {
		if (buf[i] != '\n')
			continue;
		n = i - start - (i > start && buf[i - 1] == '\r');
		if (n == 0 && start > 0) {
			end = i + 1;
			break;
		}
		if (n == 0)
			return -1; /* an empty line before the status line */
		start = i + 1;
	}
	if (!end)
		return len >= HTTP_RESP_HEAD_MAX ? -1 : 0;
	memset(r, 0, sizeof(*r));
	r->head_len = end;
	n = http_next_line(buf, end, &pos, &line);
	/* HTTP/1.x SP 3DIGIT [SP reason] */
	if (n < 12 || memcmp(line, "HTTP/1.", 7) != 0 || line[7] < '0' || line[7] > '9' ||
	    line[8] != ' ' || !http_digits(line + 9, 3, &status) || (n > 12 && line[12] != ' '))
		return -1;
	minor = (unsigned)(line[7] - '0');
	for (size_t i = 0; i < n; i++)
		if ((line[i] < 0x20 && line[i] != '\t') || line[i] == 0x7f)
			return -1;
	r->status = (unsigned)status;
	if (status < 100)
		return -1;
	r->interim = status < 200 && status != 101;
	r->bodiless = status < 200 || status == 204 || status == 304 || head_req;
	while (pos < end && (n = http_next_line(buf, end, &pos, &line)) > 0) {
		const uint8_t *colon = memchr(line, ':', n), *v;
		size_t nlen, vlen;

		if (!colon || colon == line)
			return -1;
		for (size_t i = 0; i < n; i++)
			if ((line[i] < 0x20 && line[i] != '\t') || line[i] == 0x7f)
				return -1;
		nlen = (size_t)(colon - line);
		if (line[0] == ' ' || line[0] == '\t' || line[nlen - 1] == ' ' ||
		    line[nlen - 1] == '\t')
			return -1; /* obs-fold, or whitespace before the colon */
		v = http_field_value(line, n, nlen, &vlen);
		if (http_eq_nocase(line, nlen, "Content-Length")) {
			uint64_t x;
			if (!http_digits(v, vlen, &x) || (seen_cl && x != cl))
				return -1;
			seen_cl = true;
			cl = x;
		} else if (http_eq_nocase(line, nlen, "Transfer-Encoding")) {
			/* chunked must be last; anything else runs to the close */
			r->chunked = vlen >= 7 && http_eq_nocase(v + vlen - 7, 7, "chunked") &&
			             (vlen == 7 || v[vlen - 8] == ' ' || v[vlen - 8] == ',');
			if (!r->chunked)
				r->close = true;
		} else if (http_eq_nocase(line, nlen, "Connection")) {
			struct conn_tokens t = {.head = buf,
			                        .n_hop = &r->n_hop,
			                        .hop_off = r->hop_off,
			                        .hop_len = r->hop_len};
			each_token(v, vlen, conn_token, &t);
			r->close |= t.close;
			ka |= t.keep_alive;
		}
	}
	r->has_length = seen_cl && !r->chunked;
	if (minor == 0 && !ka)
		r->close = true;
	return 1;
}

bool http_resp_close_delimited(const struct http_resp *r)
{
	return !r->bodiless && !r->chunked && !r->has_length;
}

size_t http_resp_rewrite(const struct http_resp *r, const uint8_t *head, bool keep_alive,
                         uint8_t *out, size_t cap)
{
	struct out o = {.p = out, .cap = cap};
	const uint8_t *line;
	size_t pos = 0, n = http_next_line(head, r->head_len, &pos, &line);

	/* We speak HTTP/1.1 to the client whatever the origin spoke. */
	puts_(&o, "HTTP/1.1");
	put(&o, line + 8, n - 8);
	puts_(&o, "\r\n");
	copy_fields(&o, head, r->head_len, r->n_hop, r->hop_off, r->hop_len, false);
	puts_(&o, keep_alive ? "Connection: keep-alive\r\n\r\n" : "Connection: close\r\n\r\n");
	return o.over ? 0 : o.len;
}

/* --- chunked bodies --- */

void http_chunked_init(struct http_chunked *c)
{
	memset(c, 0, sizeof(*c));
}

static int hexval(uint8_t ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

size_t http_chunked_feed(struct http_chunked *c, const uint8_t *buf, size_t len)
{
	size_t i = 0;

	while (i < len && c->st != CH_DONE && c->st != CH_ERROR) {
		uint8_t ch = buf[i];

		switch (c->st) {
		case CH_SIZE: {
			int h = hexval(ch);
			if (h >= 0) {
				if (++c->digits > 15) { /* 2^60: more than anyone sends */
					c->st = CH_ERROR;
					break;
				}
				c->left = c->left * 16 + (uint64_t)h;
				i++;
				break;
			}
			if (!c->digits) {
				c->st = CH_ERROR;
				break;
			}
			c->st = CH_EXT;
			c->line = c->digits;
			c->saw_cr = false;
			continue; /* this octet starts the extensions (or ends the line) */
		}
		case CH_EXT:
			i++;
			if (++c->line > HTTP_CHUNK_LINE_MAX) {
				c->st = CH_ERROR;
				break;
			}
			if (ch == '\n') {
				c->digits = 0;
				c->line = 0;
				if (c->left == 0) {
					c->last = true;
					c->st = CH_TRAILER;
				} else {
					c->st = CH_DATA;
				}
			} else if (c->saw_cr || (ch < 0x20 && ch != '\t' && ch != '\r') ||
			           ch == 0x7f) {
				c->st = CH_ERROR; /* a bare CR, or a control octet */
			} else {
				c->saw_cr = ch == '\r';
			}
			break;
		case CH_DATA: {
			size_t n = len - i;
			if (n > c->left)
				n = (size_t)c->left;
			i += n;
			c->left -= n;
			if (!c->left)
				c->st = CH_DATA_CR;
			break;
		}
		case CH_DATA_CR:
			i++;
			c->st = ch == '\r' ? CH_DATA_LF : ch == '\n' ? CH_SIZE : CH_ERROR;
			break;
		case CH_DATA_LF:
			i++;
			c->st = ch == '\n' ? CH_SIZE : CH_ERROR;
			break;
		case CH_TRAILER:
			i++;
			if (++c->trailers > HTTP_TRAILERS_MAX) {
				c->st = CH_ERROR;
				break;
			}
			if (ch == '\n') {
				c->st = c->line == 0 ? CH_DONE : CH_TRAILER;
				c->line = 0;
			} else if (ch != '\r') {
				c->line++;
			}
			break;
		default:
			break;
		}
	}
	return i;
}
