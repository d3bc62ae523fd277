/* SPDX-License-Identifier: MIT */
/* HTTP/1.1 CONNECT proxy requests (RFC 9110 section 9.3.6) with Basic auth (RFC 7617). */
#ifndef SPLICED_HTTP_CONNECT_H
#define SPLICED_HTTP_CONNECT_H

#include "http_forward.h"
#include "proto.h"

enum http_limits {
	HTTP_HEADER_MAX = 8192, /* whole request head, request line to blank line */
};

enum http_error {
	HTTP_ERR_NONE = 0,
	HTTP_ERR_MALFORMED,    /* 400: bad request line, header, or target */
	HTTP_ERR_METHOD,       /* 405: neither CONNECT nor a method that is forwarded */
	HTTP_ERR_TOO_LARGE,    /* 431: head over HTTP_HEADER_MAX */
	HTTP_ERR_AUTH_MISSING, /* 407: no or non-Basic Proxy-Authorization */
	HTTP_ERR_AUTH_FAILED,  /* 407: credentials rejected */
};

enum http_state {
	HTTP_S_HEAD = 0,   /* reading the request head */
	HTTP_S_AUTH_CHECK, /* waiting for http_connect_auth_result() */
	HTTP_S_DONE,       /* target valid; later bytes are tunnel payload */
	HTTP_S_FAILED,
};

struct http_connect {
	bool require_auth;
	bool done; /* the request was accepted: target is valid */
	enum http_state state;
	enum http_error error;
	/*
	 * Where the search for the blank line ending the head stands, so each
	 * octet is looked at once however the head arrives (review L3: a
	 * rescan from octet 0 per feed made a one-octet-per-segment client
	 * cost 33 M octet checks per 8 KiB head). Valid because nothing is
	 * consumed before the head is complete: every feed's buffer extends
	 * the previous one.
	 */
	size_t scan_pos;   /* octets of the buffer already searched */
	size_t line_start; /* where the line being searched starts */
	bool have_line;    /* a non-empty line (the request line) was seen */
	size_t examined;   /* octets the search has looked at, all feeds: <= scan_pos */
	struct proto_target target;
	/*
	 * An absolute-form request to forward (GET http://host/..., and the
	 * other methods of RFC 9110 section 9.3 but TRACE and CONNECT): the
	 * head is not consumed, so the caller can rewrite it (http_fwd_rewrite()).
	 */
	bool forward;
	struct http_fwd_req fwd;
	char user[PROTO_CRED_MAX + 1];
	char pass[PROTO_CRED_MAX + 1];
	size_t user_len, pass_len; /* neither holds a NUL; pass may be empty (RFC 7617) */
	uint8_t reply[PROTO_REPLY_MAX];
	size_t reply_len;
};

void http_connect_init(struct http_connect *h, bool require_auth);
/*
 * PROTO_NEED_MORE until the blank line ending the head; then PROTO_AUTH (when
 * require_auth and a Basic header is present), PROTO_REQUEST, or PROTO_FAIL
 * with a complete error response in h->reply. A CONNECT's head is consumed;
 * a request to forward (h->forward) is not: it is h->fwd.head_len octets.
 */
enum proto_res http_connect_feed(struct http_connect *h, const uint8_t *buf, size_t len,
                                 size_t *consumed);
/* After PROTO_AUTH: ok → PROTO_REQUEST, else PROTO_FAIL with a 407 reply. Wipes pass. */
enum proto_res http_connect_auth_result(struct http_connect *h, bool ok);
/* Response to the CONNECT: 200 (nothing for a request to forward), or 502 / 504 / 403 by result. */
void http_connect_reply(struct http_connect *h, enum proto_connect_result r);

#endif
