/* SPDX-License-Identifier: MIT */
/* Types shared by every sans-I/O protocol state machine in proto/. */
#ifndef SPLICED_PROTO_H
#define SPLICED_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/*
 * The calling convention of every inbound parser:
 *
 *   res = xxx_feed(state, buf, len, &consumed);
 *
 * `buf` holds every byte received and not yet consumed (the caller appends new
 * bytes and compacts after a consume). The parser never keeps a pointer into
 * `buf` across calls.
 *   PROTO_NEED_MORE  nothing consumed; call again with more bytes.
 *   PROTO_REPLY      `consumed` bytes used; send state->reply, then feed again.
 *   PROTO_AUTH       `consumed` bytes used; check the credentials in
 *                    state->user / state->pass, then call xxx_auth_result().
 *   PROTO_REQUEST    `consumed` bytes used; state->target is the request.
 *                    Bytes after `consumed` are early payload for the target.
 *   PROTO_FAIL       send state->reply (may be empty: reply_len == 0), then
 *                    close the connection. state->error says why.
 */
enum proto_res {
	PROTO_NEED_MORE = 0,
	PROTO_REPLY,
	PROTO_AUTH,
	PROTO_REQUEST,
	PROTO_FAIL,
};

enum proto_limits {
	PROTO_HOST_MAX = 255,  /* SOCKS5 domain length is one octet */
	PROTO_CRED_MAX = 255,  /* RFC 1929 ULEN/PLEN are one octet */
	PROTO_REPLY_MAX = 512, /* largest reply any parser builds */
};

enum proto_target_kind {
	TARGET_IP = 1,     /* addr holds sockaddr_in / sockaddr_in6 with the port */
	TARGET_DOMAIN = 2, /* host + port; resolution is the caller's job */
};

struct proto_target {
	enum proto_target_kind kind;
	uint16_t port;                 /* host byte order */
	char host[PROTO_HOST_MAX + 1]; /* NUL-terminated when kind == TARGET_DOMAIN; the
	                                  server parsers also fill it (text form) for TARGET_IP */
	struct sockaddr_storage addr;  /* valid when kind == TARGET_IP */
};

/* Outcome of connecting to the target, mapped by each protocol to its reply. */
enum proto_connect_result {
	CONNECT_OK = 0,
	CONNECT_GENERAL_FAILURE,
	CONNECT_NOT_ALLOWED, /* ruleset (block outbound, EACCES) */
	CONNECT_NET_UNREACHABLE,
	CONNECT_HOST_UNREACHABLE, /* also: name did not resolve */
	CONNECT_REFUSED,
	CONNECT_TIMEOUT,
	/* An upstream SOCKS5 server refused with REP 07 / 08: passed on as such. */
	CONNECT_CMD_UNSUPPORTED,
	CONNECT_ATYP_UNSUPPORTED,
};

/* A short name for logs: "ok", "failed", "blocked", "net-unreachable", ... */
const char *proto_connect_result_name(enum proto_connect_result r);
/* Map a connect(2)/getaddrinfo-style negative errno to a connect result. */
enum proto_connect_result proto_connect_result_from_errno(int neg_errno);

/*
 * If `t->host` is an IPv4 address in any spelling the resolver would take as
 * one ("192.0.2.1", and the inet_aton() forms "127.1", "2130706433",
 * "0x7f000001", "017700000001", "0") or an IPv6 literal, bare or in brackets
 * ("2001:db8::1", "[2001:db8::1]"), make `t` a TARGET_IP with `addr` holding
 * that address and `t->port`; `host` is kept for logging. Returns whether it
 * did. The route then sees what the connect would reach, so a cidr rule
 * cannot be walked around by spelling the address differently. Pure:
 * inet_aton()/inet_pton() only, never a resolver. IPv6 zones ("fe80::1%eth0")
 * stay names: the resolver turns them into addresses, checked before connect.
 */
bool proto_target_ip_literal(struct proto_target *t);
/*
 * t = the IPv4 or IPv6 address (with its port) in ss, as a TARGET_IP with
 * the text form in host. false (t zeroed) for another family or port 0.
 */
bool proto_target_from_sa(struct proto_target *t, const struct sockaddr_storage *ss);

#endif
