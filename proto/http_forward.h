/* SPDX-License-Identifier: MIT */
/* HTTP/1.1 proxy forwarding (RFC 9110, RFC 9112): absolute-form requests rewritten for the origin, response heads, chunked bodies. */
#ifndef SPLICED_HTTP_FORWARD_H
#define SPLICED_HTTP_FORWARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto.h"

enum {
	HTTP_FWD_HOP_MAX = 8,       /* header names a Connection header may list */
	HTTP_RESP_HEAD_MAX = 16384, /* an origin's response head, status line to blank line */
	HTTP_CHUNK_LINE_MAX = 4096, /* a chunk-size line with its extensions */
	HTTP_TRAILERS_MAX = 8192,   /* the trailer section of a chunked body */
	HTTP_FWD_EXTRA = 1024, /* what a rewritten head may add: Host, Connection, upstream auth */
};

/*
 * What the request parser (http_connect.c) learns of a request to forward,
 * for the rewrite below and for relaying its body. Offsets are into the
 * head as it was fed: it stays in the caller's buffer until rewritten.
 */
struct http_fwd_req {
	size_t head_len; /* request line through the blank line */
	size_t method_off, method_len;
	size_t path_off, path_len; /* origin-form: "/..." ("/" when the URI had no path) */
	size_t auth_off, auth_len; /* authority as written in the URI (the new Host) */
	bool has_path;
	unsigned minor; /* HTTP/1.minor */
	bool head;      /* HEAD: the response has no body whatever it says */
	bool chunked;   /* Transfer-Encoding: chunked */
	bool has_length;
	uint64_t length;      /* Content-Length */
	bool expect_continue; /* Expect: 100-continue */
	bool client_close;    /* the client will not send another request */
	bool keep_alive;      /* it said keep-alive (what an HTTP/1.0 client must say) */
	size_t n_hop;         /* names the Connection header lists */
	size_t hop_off[HTTP_FWD_HOP_MAX], hop_len[HTTP_FWD_HOP_MAX];
};

/*
 * Where the rewritten head goes: to the origin (via NULL, or proxy false),
 * or to an upstream HTTP proxy (absolute-form kept, and Basic credentials
 * for it when user is set), so it can forward the request itself.
 */
struct http_fwd_via {
	bool proxy;
	const char *user, *pass; /* NUL-terminated, each at most 255 octets; NULL: none */
};

/*
 * The head to send the origin: "METHOD origin-form HTTP/1.x" (the client's
 * version; absolute-form to an upstream proxy), every field
 * but the hop-by-hop ones (Connection and what it lists, Proxy-Connection,
 * Keep-Alive, TE, Upgrade, Proxy-Authorization, Proxy-Authenticate), Host
 * and Expect, then "Host: authority" and "Connection: close". Its length,
 * or 0 when it does not fit in cap (head_len + HTTP_FWD_EXTRA always does).
 */
size_t http_fwd_rewrite(const struct http_fwd_req *r, const uint8_t *head,
                        const struct http_fwd_via *via, uint8_t *out, size_t cap);

/* An origin's response head. */
struct http_resp {
	size_t head_len;
	unsigned status;
	bool interim;  /* 1xx (not 101): another head follows */
	bool bodiless; /* 1xx, 204, 304, or an answer to HEAD */
	bool chunked, has_length;
	bool close; /* Connection: close, or HTTP/1.0 without keep-alive */
	size_t n_hop;
	size_t hop_off[HTTP_FWD_HOP_MAX], hop_len[HTTP_FWD_HOP_MAX];
};

/*
 * Parse the response head at the start of buf[0, len): 1 complete (r
 * filled), 0 not yet (the head has not ended within HTTP_RESP_HEAD_MAX),
 * -1 malformed (or too large: len >= HTTP_RESP_HEAD_MAX without an end).
 * head_req: the request was HEAD.
 */
int http_resp_parse(const uint8_t *buf, size_t len, bool head_req, struct http_resp *r);
/* Whether the body runs to the end of the connection (no length, not chunked, not bodiless). */
bool http_resp_close_delimited(const struct http_resp *r);
/*
 * The head for the client: the status line, every field but the hop-by-hop
 * ones, then "Connection: keep-alive" or "Connection: close". Its length, or
 * 0 when it does not fit in cap (head_len + HTTP_FWD_EXTRA always does).
 */
size_t http_resp_rewrite(const struct http_resp *r, const uint8_t *head, bool keep_alive,
                         uint8_t *out, size_t cap);

/* Shared by the HTTP parsers (http_connect.c, this file). */
/* ASCII case-insensitive: p[0, n) equals the C string lit. */
bool http_eq_nocase(const uint8_t *p, size_t n, const char *lit);
/* The next line in buf[*pos, end) without its CRLF or LF; *pos moves past it. Its length. */
size_t http_next_line(const uint8_t *buf, size_t end, size_t *pos, const uint8_t **line);
/* A decimal number of 1 to 18 digits and nothing else (Content-Length, a status code). */
bool http_digits(const uint8_t *p, size_t n, uint64_t *v);
/* The value of a field line line[0, n) whose name is nlen octets: after the colon, blanks trimmed. */
const uint8_t *http_field_value(const uint8_t *line, size_t n, size_t nlen, size_t *vlen);
/*
 * The next element of a comma-separated field value v[0, n) from *pos
 * (RFC 9110 section 5.6.1: empty elements and blanks around them skipped).
 * false when there is none left.
 */
bool http_token_next(const uint8_t *v, size_t n, size_t *pos, const uint8_t **tok, size_t *len);

/* A chunked body (RFC 9112 section 7.1), followed octet by octet to find its end. */
enum http_chunk_state {
	CH_SIZE = 0, /* hex digits of the chunk size */
	CH_EXT,      /* the rest of the size line: extensions */
	CH_DATA,     /* `left` octets of data */
	CH_DATA_CR,  /* the CRLF after the data */
	CH_DATA_LF,
	CH_TRAILER, /* a trailer line (or the final blank line) */
	CH_DONE,
	CH_ERROR,
};

struct http_chunked {
	enum http_chunk_state st;
	uint64_t left; /* CH_SIZE: the size so far; CH_DATA: octets still to come */
	unsigned digits;
	size_t line;     /* octets of the size line or the trailer line so far */
	size_t trailers; /* octets of trailers so far */
	bool last;       /* the 0-size chunk was seen: trailers follow */
	bool saw_cr;
};

void http_chunked_init(struct http_chunked *c);
/*
 * How many of buf[0, len) belong to the body: all of them while it goes on,
 * fewer when it ends inside buf (then c->st == CH_DONE). CH_ERROR: malformed
 * (the octets up to the error are counted; the caller gives up).
 */
size_t http_chunked_feed(struct http_chunked *c, const uint8_t *buf, size_t len);

#endif
