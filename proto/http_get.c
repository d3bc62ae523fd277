/* SPDX-License-Identifier: MIT */
/* An HTTP/1.x request head for a small server: the request line parsed, header lines checked for shape only. */
#include <string.h>

#include "http_get.h"

/* RFC 9110 section 5.6.2: tchar = "!" / "#" / "$" / "%" / "&" / "'" / "*" / "+" / "-" / "." / "^" / "_" / "`" / "|" / "~" / DIGIT / ALPHA */
static bool is_tchar(uint8_t c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* A line without its LF and the CR before it; a CR anywhere else is refused (RFC 9112 section 2.2). */
static bool line_len(const uint8_t *s, size_t n, size_t *out)
{
	if (n && s[n - 1] == '\r')
		n--;
	if (memchr(s, '\r', n))
		return false;
	*out = n;
	return true;
}

/* RFC 9112 section 3: method SP request-target SP HTTP-version, origin-form only. */
static bool request_line(struct http_get *r, const uint8_t *s, size_t n)
{
	size_t i = 0, m, t;
	const uint8_t *q;

	if (!line_len(s, n, &n))
		return false;
	while (i < n && is_tchar(s[i]))
		i++;
	if (i == 0 || i > HTTP_GET_METHOD_MAX || i == n || s[i] != ' ')
		return false;
	memcpy(r->method, s, i);
	r->method[i] = '\0';
	m = ++i;
	if (i == n || s[i] != '/')
		return false; /* not origin-form: absolute-form, authority-form or "*" */
	while (i < n && s[i] > 0x20 && s[i] < 0x7f)
		i++;
	q = memchr(s + m, '?', i - m);
	t = q ? (size_t)(q - s) : i;
	if (t - m > HTTP_GET_PATH_MAX)
		return false;
	memcpy(r->path, s + m, t - m);
	r->path[t - m] = '\0';
	r->has_query = t < i;
	if (i == n || s[i] != ' ')
		return false;
	i++;
	/* HTTP/1.0 or HTTP/1.1 (a later 1.x is answered as 1.1, RFC 9110 section 2.5) */
	return n - i == 8 && memcmp(s + i, "HTTP/1.", 7) == 0 && s[i + 7] >= '0' && s[i + 7] <= '9';
}

/* RFC 9112 section 5: field-name ":" OWS field-value OWS; no obs-fold, no NUL or other CTL but HTAB. */
static bool field_line(const uint8_t *s, size_t n)
{
	size_t i = 0;

	while (i < n && is_tchar(s[i]))
		i++;
	if (i == 0 || i == n || s[i] != ':') /* also refuses obs-fold and "Name :" */
		return false;
	for (i++; i < n; i++)
		if ((s[i] < 0x20 && s[i] != '\t') || s[i] == 0x7f)
			return false;
	return true;
}

void http_get_init(struct http_get *r)
{
	memset(r, 0, sizeof(*r));
}

enum http_get_result http_get_parse(struct http_get *r, const uint8_t *buf, size_t len)
{
	const uint8_t *nl = memchr(buf, '\n', len);
	size_t end = 0, i, n;

	if (!r->line_checked && nl) {
		if (!request_line(r, buf, (size_t)(nl - buf)))
			return HTTP_GET_BAD;
		r->line_checked = true;
	}
	/* The blank line: "\n\n" or "\n\r\n", each octet looked at once over all calls. */
	for (i = r->scan_pos; i < len && !end; i++)
		if (buf[i] == '\n' && i >= 1 &&
		    (buf[i - 1] == '\n' || (i >= 2 && buf[i - 1] == '\r' && buf[i - 2] == '\n')))
			end = i + 1;
	r->scan_pos = i;
	if (!end)
		return len >= HTTP_GET_HEAD_MAX ? HTTP_GET_BAD : HTTP_GET_MORE;
	if (end > HTTP_GET_HEAD_MAX || !r->line_checked)
		return HTTP_GET_BAD;
	/* The field lines, from the one after the request line to the blank line. */
	for (i = (size_t)(nl - buf) + 1; i < end;) {
		const uint8_t *e = memchr(buf + i, '\n', end - i);
		size_t next = (size_t)(e - buf) + 1;

		if (!line_len(buf + i, (size_t)(e - (buf + i)), &n))
			return HTTP_GET_BAD;
		if (n == 0)
			break; /* the blank line */
		if (!field_line(buf + i, n))
			return HTTP_GET_BAD;
		i = next;
	}
	r->head_len = end;
	return HTTP_GET_DONE;
}
