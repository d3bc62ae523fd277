/* SPDX-License-Identifier: MIT */
/* SOCKS5 (RFC 1928) with username/password (RFC 1929): server and client sides. */
#ifndef SPLICED_SOCKS5_H
#define SPLICED_SOCKS5_H

#include "proto.h"

enum socks5_wire {
	SOCKS5_VERSION = 0x05,
	SOCKS5_AUTH_VERSION = 0x01, /* RFC 1929 sub-negotiation version */

	SOCKS5_METHOD_NONE = 0x00,
	SOCKS5_METHOD_USERPASS = 0x02,
	SOCKS5_METHOD_NO_ACCEPTABLE = 0xff,

	SOCKS5_CMD_CONNECT = 0x01,
	SOCKS5_CMD_BIND = 0x02,
	SOCKS5_CMD_UDP_ASSOCIATE = 0x03,
	/* hev-socks5 extension: UDP datagrams framed inside this TCP connection (socks5_udp.h). */
	SOCKS5_CMD_FWD_UDP = 0x05,

	SOCKS5_ATYP_IPV4 = 0x01,
	SOCKS5_ATYP_DOMAIN = 0x03,
	SOCKS5_ATYP_IPV6 = 0x04,
};

enum socks5_limits {
	/* Largest message the client sends: the RFC 1929 request VER ULEN UNAME
	 * PLEN PASSWD = 3 + 2 * 255 = 513 octets, one more than PROTO_REPLY_MAX. */
	SOCKS5_CLIENT_OUT_MAX = 3 + 2 * PROTO_CRED_MAX,
};

/* RFC 1928 section 6 reply field. */
enum socks5_rep {
	SOCKS5_REP_SUCCEEDED = 0x00,
	SOCKS5_REP_GENERAL_FAILURE = 0x01,
	SOCKS5_REP_NOT_ALLOWED = 0x02,
	SOCKS5_REP_NET_UNREACHABLE = 0x03,
	SOCKS5_REP_HOST_UNREACHABLE = 0x04,
	SOCKS5_REP_CONN_REFUSED = 0x05,
	SOCKS5_REP_TTL_EXPIRED = 0x06,
	SOCKS5_REP_CMD_NOT_SUPPORTED = 0x07,
	SOCKS5_REP_ATYP_NOT_SUPPORTED = 0x08,
};

/* Why a handshake failed (for counters and debug logs). */
enum socks5_error {
	SOCKS5_ERR_NONE = 0,
	SOCKS5_ERR_VERSION,       /* first octet is not 5 (or 1 in the auth step) */
	SOCKS5_ERR_NO_METHODS,    /* NMETHODS == 0 */
	SOCKS5_ERR_NO_ACCEPTABLE, /* no offered method matches (reply 05 FF sent) */
	SOCKS5_ERR_AUTH_FORMAT,   /* ULEN or PLEN == 0 */
	SOCKS5_ERR_AUTH_FAILED,   /* credentials rejected (reply 01 01 sent) */
	SOCKS5_ERR_COMMAND,       /* BIND / UDP ASSOCIATE / unknown (REP 07 sent) */
	SOCKS5_ERR_ATYP,          /* unknown address type (REP 08 sent) */
	SOCKS5_ERR_DOMAIN,        /* empty domain or one containing a NUL (REP 01 sent) */
	SOCKS5_ERR_RESERVED,      /* RSV octet not zero (REP 01 sent) */
	SOCKS5_ERR_AUTH_NUL,      /* UNAME or PASSWD contains a NUL octet (reply 01 01 sent) */
	SOCKS5_ERR_UPSTREAM_REP,  /* client side: the upstream's reply had REP != 0 */
};

enum socks5_server_state {
	SOCKS5_S_GREETING = 0,
	SOCKS5_S_AUTH,
	SOCKS5_S_AUTH_CHECK, /* waiting for socks5_server_auth_result() */
	SOCKS5_S_REQUEST,
	SOCKS5_S_DONE,
	SOCKS5_S_FAILED,
};

struct socks5_server {
	enum socks5_server_state state;
	enum socks5_error error;
	bool require_auth;
	/* Commands besides CONNECT this server takes (socks5_server_allow()); others get REP 07. */
	bool allow_udp, allow_fwd_udp;
	uint8_t cmd; /* the request's CMD: CONNECT, or an allowed UDP command */
	struct proto_target target;
	char user[PROTO_CRED_MAX + 1];
	char pass[PROTO_CRED_MAX + 1];
	size_t user_len, pass_len; /* lengths of user / pass (neither holds a NUL) */
	uint8_t reply[PROTO_REPLY_MAX];
	size_t reply_len;
};

void socks5_server_init(struct socks5_server *s, bool require_auth);
/*
 * Also take UDP ASSOCIATE (RFC 1928 section 7; target: where the client
 * will send from, often 0.0.0.0:0) and/or hev-socks5's FWD UDP (datagrams
 * framed inside this connection, socks5_udp.h); call it before the request
 * is fed.
 * PROTO_REQUEST then leaves the command in s->cmd for the caller.
 */
void socks5_server_allow(struct socks5_server *s, bool udp, bool fwd_udp);
enum proto_res socks5_server_feed(struct socks5_server *s, const uint8_t *buf, size_t len,
                                  size_t *consumed);
/* After PROTO_AUTH: ok → PROTO_REPLY (01 00), else PROTO_FAIL (01 01). Wipes pass. */
enum proto_res socks5_server_auth_result(struct socks5_server *s, bool ok);
/*
 * Build the final reply to the CONNECT request into s->reply / s->reply_len.
 * `bound` is the outbound socket's local address (may be NULL: 0.0.0.0:0).
 */
void socks5_server_reply(struct socks5_server *s, enum socks5_rep rep,
                         const struct sockaddr *bound);
enum socks5_rep socks5_rep_from_connect(enum proto_connect_result r);
/* An upstream's REP as a connect result; socks5_rep_from_connect() maps it back unchanged. */
enum proto_connect_result socks5_connect_result_from_rep(enum socks5_rep rep);

/*
 * Client side, used by the socks5 outbound (upstream proxy). Usage:
 *   socks5_client_init(&c, target, user, pass);   c.out / c.out_len: greeting
 *   loop: send c.out; res = socks5_client_feed(&c, buf, len, &consumed);
 *     PROTO_NEED_MORE: read more; PROTO_REPLY: send c.out next;
 *     PROTO_REQUEST: tunnel established (bytes after consumed are payload);
 *     PROTO_FAIL: c.rep holds the upstream's REP (or GENERAL_FAILURE).
 */
enum socks5_client_state {
	SOCKS5_C_METHOD = 0,
	SOCKS5_C_AUTH,
	SOCKS5_C_REPLY,
	SOCKS5_C_DONE,
	SOCKS5_C_FAILED,
};

struct socks5_client {
	enum socks5_client_state state;
	enum socks5_rep rep;
	struct proto_target target;
	char user[PROTO_CRED_MAX + 1];
	char pass[PROTO_CRED_MAX + 1];
	bool have_auth;
	uint8_t cmd; /* the request's CMD (CONNECT unless socks5_client_command() said otherwise) */
	enum socks5_error error; /* why PROTO_FAIL was returned */
	uint8_t out[SOCKS5_CLIENT_OUT_MAX];
	size_t out_len;
	struct sockaddr_storage bound; /* BND.ADDR/BND.PORT from the final reply */
};

/*
 * Returns 0 or -EINVAL (user/pass empty or over 255 octets, pass NULL with a
 * user, target host empty or not NUL-terminated within 255, bad kind/family).
 * user == NULL: offer "no authentication" only.
 */
int socks5_client_init(struct socks5_client *c, const struct proto_target *target, const char *user,
                       const char *pass);
enum proto_res socks5_client_feed(struct socks5_client *c, const uint8_t *buf, size_t len,
                                  size_t *consumed);
/*
 * Right after init: request UDP ASSOCIATE (target: the address we will send
 * from, often 0.0.0.0:0) or hev-socks5's FWD UDP (datagrams framed on this
 * connection) instead of CONNECT. The reply's BND is then the relay's
 * address (UDP ASSOCIATE). 0, or -EINVAL for another command or a client
 * already past its greeting.
 */
int socks5_client_command(struct socks5_client *c, uint8_t cmd);

#endif
