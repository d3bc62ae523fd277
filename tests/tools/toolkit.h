/* SPDX-License-Identifier: MIT */
/* toolkit: address parsing, blocking I/O and SOCKS5 message helpers shared by the test tools (xfer, connhold, cps, probe). */
#ifndef SPLICED_TESTS_TOOLKIT_H
#define SPLICED_TESTS_TOOLKIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

enum {
	TK_SOCKS5_REQ_MAX = 22,   /* CONNECT request to an IPv6 literal */
	TK_SOCKS5_REPLY_HEAD = 5, /* VER REP RSV ATYP + first address byte */
};

struct tk_endpoint {
	struct sockaddr_storage ss;
	socklen_t len;
};

/* Splits "host:port" or "[v6]:port" in place; brackets are removed from host. */
int tk_split_hostport(char *s, char **host, char **port);

/* Fills ep from a numeric IPv4 or IPv6 literal (no brackets) and a port. */
int tk_numeric_endpoint(const char *host, int port, struct tk_endpoint *ep);

/* Parses "a.b.c.d:port" or "[v6]:port"; any_port skips the 1..65535 check. */
int tk_parse_endpoint(const char *s, struct tk_endpoint *ep, bool any_port);

/* Reads exactly n bytes: 0, -EPIPE on EOF, -EAGAIN on SO_RCVTIMEO, else -errno. */
int tk_read_full(int fd, void *buf, size_t n);

/* Writes all n bytes (any fd, not only sockets): 0 or -errno. */
int tk_write_full(int fd, const void *buf, size_t n);

/* SO_RCVTIMEO and SO_SNDTIMEO in whole seconds; 0 means no timeout. */
void tk_set_timeouts(int fd, int secs);

/* Writes a SOCKS5 CONNECT request (RFC 1928 §4) for the numeric address of
 * ss into req[TK_SOCKS5_REQ_MAX]; returns its length. */
size_t tk_socks5_request(unsigned char *req, const struct sockaddr_storage *ss);

/* Whole length of a SOCKS5 reply given its first TK_SOCKS5_REPLY_HEAD bytes,
 * or 0 for an unknown ATYP. */
size_t tk_socks5_reply_len(const unsigned char *head);

/* Value of one hex digit, -1 if c is not one. */
int tk_hexval(int c);

/* CLOCK_MONOTONIC in milliseconds. */
int64_t tk_now_ms(void);

#endif
