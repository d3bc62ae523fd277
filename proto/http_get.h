/* SPDX-License-Identifier: MIT */
/* An HTTP/1.x request head as a small server reads it (the metrics endpoint): method and path checked, the rest skipped. */
#ifndef SPLICED_HTTP_GET_H
#define SPLICED_HTTP_GET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum http_get_limits {
	HTTP_GET_HEAD_MAX = 4096, /* request line to blank line; Prometheus sends ~250 octets */
	HTTP_GET_METHOD_MAX = 15,
	HTTP_GET_PATH_MAX = 255,
};

enum http_get_result {
	HTTP_GET_MORE = 0, /* no blank line yet: read more */
	HTTP_GET_DONE,     /* a well-formed head: method and path are set */
	HTTP_GET_BAD,      /* malformed (RFC 9112 section 2-5), or over HTTP_GET_HEAD_MAX */
};

/*
 * The state of one request. Every call passes the whole buffer read so
 * far (it only grows); each octet is looked at once for the blank line,
 * then the head is checked line by line. A request line that is complete
 * and malformed fails at once, without waiting for the rest.
 */
struct http_get {
	size_t scan_pos;   /* octets already searched for the blank line */
	bool line_checked; /* the request line was complete and good */
	char method[HTTP_GET_METHOD_MAX + 1];
	char path[HTTP_GET_PATH_MAX + 1]; /* the origin-form target up to '?' */
	bool has_query;
	size_t head_len; /* DONE: octets of the head, blank line included */
};

void http_get_init(struct http_get *r);
/* buf[0..len): every octet read so far, the same buffer growing from call to call. */
enum http_get_result http_get_parse(struct http_get *r, const uint8_t *buf, size_t len);

#endif
