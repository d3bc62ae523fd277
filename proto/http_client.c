/* SPDX-License-Identifier: MIT */
/* HTTP/1.1 CONNECT client: the request to an upstream proxy, and its response head. */
#include "http_client.h"

#include "base64.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

/*
 * Choices where RFC 9110/9112 leave room:
 *  - The request names the target in authority form, with the same text in
 *    Host (RFC 9110 §7.2); IPv6 literals go in brackets. Credentials are
 *    Basic only (RFC 7617): the user may not contain ':'.
 *  - Any 2xx opens the tunnel (RFC 9110 §9.3.6); octets after the head are
 *    already tunnel payload. The head must end within HTTP_CLIENT_HEAD_MAX
 *    octets; lines may end in CRLF or a bare LF. The status line must be
 *    "HTTP/1.<digit> <3 digits>" followed by a space or the line end; the
 *    header fields are not interpreted.
 *  - Everything else fails, with the result a client understands:
 *    http_client_result_from_status().
 */

static int append(struct http_client *c, const char *s, size_t n)
{
	if (c->out_len + n > sizeof(c->out))
		return -EINVAL;
	memcpy(c->out + c->out_len, s, n);
	c->out_len += n;
	return 0;
}

static int append_str(struct http_client *c, const char *s)
{
	return append(c, s, strlen(s));
}

/* host:port, bracketing an IPv6 literal. */
static int authority(const struct proto_target *t, char *out, size_t cap)
{
	char host[PROTO_HOST_MAX + 3];
	int n;

	if (t->kind == TARGET_IP) {
		char ip[64];
		const void *a =
		        t->addr.ss_family == AF_INET6
		                ? (const void *)&((const struct sockaddr_in6 *)&t->addr)->sin6_addr
		                : (const void *)&((const struct sockaddr_in *)&t->addr)->sin_addr;
		if (t->addr.ss_family != AF_INET && t->addr.ss_family != AF_INET6)
			return -EINVAL;
		if (!inet_ntop(t->addr.ss_family, a, ip, sizeof(ip)))
			return -EINVAL;
		snprintf(host, sizeof(host), t->addr.ss_family == AF_INET6 ? "[%s]" : "%s", ip);
	} else {
		size_t len = strnlen(t->host, sizeof(t->host));
		if (len == 0 || len == sizeof(t->host))
			return -EINVAL;
		for (size_t i = 0; i < len; i++) {
			unsigned char ch = (unsigned char)t->host[i];
			if (ch <= ' ' || ch >= 0x7f) /* nothing that could end the request line */
				return -EINVAL;
		}
		snprintf(host, sizeof(host), strchr(t->host, ':') ? "[%s]" : "%s", t->host);
	}
	n = snprintf(out, cap, "%s:%u", host, t->port);
	return n > 0 && (size_t)n < cap ? 0 : -EINVAL;
}

int http_client_init(struct http_client *c, const struct proto_target *t, const char *user,
                     const char *pass)
{
	char auth[PROTO_HOST_MAX + 10];
	uint8_t cred[2 * PROTO_CRED_MAX + 1];
	char b64[2 * ((2 * PROTO_CRED_MAX + 1 + 2) / 3 * 4) + 1];
	size_t ulen, plen, b64_len;
	int ret = -EINVAL;

	memset(c, 0, sizeof(*c));
	if (authority(t, auth, sizeof(auth)) < 0)
		return -EINVAL;
	if (append_str(c, "CONNECT ") || append_str(c, auth) ||
	    append_str(c, " HTTP/1.1\r\nHost: ") || append_str(c, auth) || append_str(c, "\r\n"))
		return -EINVAL;
	if (user) {
		ulen = strnlen(user, PROTO_CRED_MAX + 1);
		plen = pass ? strnlen(pass, PROTO_CRED_MAX + 1) : 0;
		if (ulen == 0 || ulen > PROTO_CRED_MAX || plen > PROTO_CRED_MAX ||
		    memchr(user, ':', ulen))
			goto out;
		memcpy(cred, user, ulen);
		cred[ulen] = ':';
		if (plen)
			memcpy(cred + ulen + 1, pass, plen);
		if (base64_encode(b64, sizeof(b64), cred, ulen + 1 + plen, &b64_len) < 0)
			goto out;
		if (append_str(c, "Proxy-Authorization: Basic ") || append(c, b64, b64_len) ||
		    append_str(c, "\r\n"))
			goto out;
	}
	ret = append_str(c, "\r\n");
out:
	explicit_bzero(cred, sizeof(cred));
	explicit_bzero(b64, sizeof(b64));
	if (ret < 0)
		explicit_bzero(c->out, sizeof(c->out));
	return ret;
}

enum proto_connect_result http_client_result_from_status(int status)
{
	switch (status) {
	case 401: /* what some proxies (tinyproxy 1.11) answer to wrong credentials */
	case 403: /* the proxy's rules */
	case 407: /* our credentials, rejected or missing */
		return CONNECT_NOT_ALLOWED;
	case 502: /* the proxy could not reach the target */
		return CONNECT_HOST_UNREACHABLE;
	case 504:
		return CONNECT_TIMEOUT;
	default:
		return CONNECT_GENERAL_FAILURE;
	}
}

static enum proto_res client_fail(struct http_client *c, enum proto_connect_result r)
{
	c->state = HTTP_C_FAILED;
	c->result = r;
	return PROTO_FAIL;
}

/* "HTTP/1.x NNN" then a space or the end of the line; the code, or -1. */
static int status_code(const uint8_t *line, size_t n)
{
	if (n < 12 || memcmp(line, "HTTP/1.", 7) != 0 || line[7] < '0' || line[7] > '9' ||
	    line[8] != ' ')
		return -1;
	for (int i = 9; i < 12; i++)
		if (line[i] < '0' || line[i] > '9')
			return -1;
	if (n > 12 && line[12] != ' ')
		return -1;
	return (line[9] - '0') * 100 + (line[10] - '0') * 10 + (line[11] - '0');
}

enum proto_res http_client_feed(struct http_client *c, const uint8_t *buf, size_t len,
                                size_t *consumed)
{
	size_t lim = len < HTTP_CLIENT_HEAD_MAX ? len : HTTP_CLIENT_HEAD_MAX;
	size_t i;

	*consumed = 0;
	if (c->state != HTTP_C_RESPONSE)
		return client_fail(c, c->result ? c->result : CONNECT_GENERAL_FAILURE);
	/* Each octet is looked at once, however the head is cut into feeds. */
	for (i = c->scanned; i < lim; i++) {
		if (buf[i] != '\n')
			continue;
		if (!c->status_end) {
			size_t sl = i && buf[i - 1] == '\r' ? i - 1 : i;
			c->status = status_code(buf, sl);
			if (c->status < 0)
				return client_fail(c, CONNECT_GENERAL_FAILURE);
			c->status_end = i + 1;
			continue;
		}
		/* An empty line ("\n" or "\r\n" right after the previous line) ends the head. */
		if (buf[i - 1] == '\n' || (buf[i - 1] == '\r' && buf[i - 2] == '\n')) {
			*consumed = i + 1;
			if (c->status < 200 || c->status > 299)
				return client_fail(c, http_client_result_from_status(c->status));
			c->state = HTTP_C_DONE;
			return PROTO_REQUEST;
		}
	}
	c->scanned = i;
	if (len >= HTTP_CLIENT_HEAD_MAX)
		return client_fail(c, CONNECT_GENERAL_FAILURE); /* no end of head in the limit */
	return PROTO_NEED_MORE;
}
