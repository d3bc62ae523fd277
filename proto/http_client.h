/* SPDX-License-Identifier: MIT */
/* HTTP/1.1 CONNECT client (RFC 9110 §9.3.6) with Basic proxy credentials (RFC 7617): the http outbound. */
#ifndef SPLICED_HTTP_CLIENT_H
#define SPLICED_HTTP_CLIENT_H

#include "proto.h"

enum http_client_limits {
	/* The response head we accept from an upstream proxy. */
	HTTP_CLIENT_HEAD_MAX = 8192,
	/*
	 * The request: "CONNECT " authority " HTTP/1.1\r\nHost: " authority
	 * "\r\nProxy-Authorization: Basic " base64(user ":" pass) "\r\n\r\n",
	 * with a 255-octet host in brackets and a port (263 octets each way) and
	 * both credentials at their limit (684 base64 characters).
	 */
	HTTP_CLIENT_OUT_MAX = 8 + 263 + 17 + 263 + 2 + 27 + 684 + 4,
};

enum http_client_state {
	HTTP_C_RESPONSE = 0, /* waiting for the proxy's response head */
	HTTP_C_DONE,         /* 2xx: the tunnel is up */
	HTTP_C_FAILED,
};

struct http_client {
	enum http_client_state state;
	int status;                       /* the response's status code (0: none parsed) */
	enum proto_connect_result result; /* after PROTO_FAIL */
	size_t scanned;                   /* head octets already looked at, so feeding is linear */
	size_t status_end;                /* octets of the status line with its end (0: not yet) */
	uint8_t out[HTTP_CLIENT_OUT_MAX];
	size_t out_len;
};

/*
 * The CONNECT request for target t into c->out (send it once the TCP leg is
 * up). user == NULL: no Proxy-Authorization. 0, or -EINVAL (a user with a
 * ':' or a NUL, a part over 255 octets, a bad target).
 */
int http_client_init(struct http_client *c, const struct proto_target *t, const char *user,
                     const char *pass);
/*
 * The proxy's bytes: PROTO_NEED_MORE until the blank line ending the head;
 * then PROTO_REQUEST for a 2xx (octets after *consumed are tunnel payload)
 * or PROTO_FAIL with c->result (a non-2xx status, a malformed or over-long
 * head).
 */
enum proto_res http_client_feed(struct http_client *c, const uint8_t *buf, size_t len,
                                size_t *consumed);
/* What an upstream's status means for the client: 401/403/407 not allowed, 504 timeout, ... */
enum proto_connect_result http_client_result_from_status(int status);

#endif
