/* SPDX-License-Identifier: MIT */
/* A connection: inbound leg + outbound leg + the state machine between them. */
#ifndef SPLICED_CONN_H
#define SPLICED_CONN_H

#include <stdint.h>
#include <sys/socket.h>

#include <linux/time_types.h>

#include "http_connect.h"
#include "list.h"
#include "socks5.h"
#include "splice.h"

struct worker;

enum conn_state {
	CONN_HANDSHAKE = 1, /* reading the client's protocol handshake */
	CONN_RESOLVING,     /* waiting for the resolver */
	CONN_CONNECTING,    /* outbound connect in flight */
	CONN_UPSTREAM,      /* SOCKS5 handshake with the upstream proxy */
	CONN_RELAY,         /* both legs open, splice pump running */
};

enum conn_leg { LEG_IN = 0, LEG_OUT = 1 };

enum conn_limits {
	/* Handshake buffer for HTTP: the head limit plus one byte so the parser can tell "over". */
	CONN_HS_BUF_HTTP = HTTP_HEADER_MAX + 1,
	/*
	 * For SOCKS5 the largest message is the RFC 1929 request (513 bytes);
	 * the rest is room for early payload, which otherwise simply waits in
	 * the socket for the splice pump. Small, so idle handshakes cost little.
	 */
	CONN_HS_BUF_SOCKS5 = 1536,
	CONN_UP_BUF = 1024, /* upstream SOCKS5 replies are at most 262 bytes */
	CONN_MAX_ADDRS = 8, /* addresses tried per resolved name */
};

/*
 * In-flight op slots: exactly one op per relay direction, one for the
 * handshake, and a reply sent through the ring (its tag stays set until the
 * poll linked behind it completes, which proves the send is finished).
 */
enum conn_op_slot { OPS_DIR0 = 0, OPS_DIR1 = 1, OPS_HS = 2, OPS_TX = 3, OPS_N = 4 };

/* The longest reply sent through the ring: a SOCKS5 reply with an IPv6 BND. */
enum { CONN_TX_MAX = 4 + 16 + 2 };

/* Handshake-time state: allocated at accept, freed once relaying starts. */
struct conn_hs {
	union {
		struct socks5_server s5;
		struct http_connect http;
	} in;
	struct socks5_client up;
	struct proto_target target;
	struct sockaddr_storage addrs[CONN_MAX_ADDRS];
	int n_addrs, next_addr;
	int last_err; /* last connect error (negative errno) */
	struct __kernel_timespec connect_ts;
	struct sockaddr_storage connect_addr;
	size_t len;    /* bytes in buf not yet consumed */
	size_t cap;    /* size of buf */
	size_t up_len; /* bytes in up_buf */
	uint8_t up_buf[CONN_UP_BUF];
	uint8_t buf[]; /* cap bytes */
};

struct conn {
	uint32_t slot;
	enum conn_state state;
	uint16_t inbound;
	int16_t outbound;
	int fd[2];                /* LEG_IN, LEG_OUT; -1 when closed */
	uint64_t ops[OPS_N];      /* tags of in-flight ops (0 = none), cancelled on close */
	struct list_node link;    /* worker's handshake or idle deadline queue */
	uint64_t deadline_ms;     /* handshake queue: when it expires */
	uint32_t active_s;        /* idle queue: second of last activity */
	struct conn_hs *hs;       /* NULL while relaying */
	struct splice_dir dir[2]; /* 0: in → out, 1: out → in */
	uint8_t tx[CONN_TX_MAX];  /* the reply in flight while ops[OPS_TX] is set */
};

/* A new client connection `fd` accepted on inbound `inbound`. Takes ownership of fd. */
void conn_accept(struct worker *w, unsigned inbound, int fd);
/* A completion for a connection op (the worker resolved and checked the tag). */
void conn_complete(struct worker *w, struct conn *c, int op, int res);
/* Resolver result for a connection in CONN_RESOLVING. */
void conn_resolved(struct worker *w, struct conn *c, int err, const struct sockaddr_storage *addrs,
                   int n);
/* Deadline passed (handshake or idle). */
void conn_timeout(struct worker *w, struct conn *c);
/* Close both legs (rst: abortive, SO_LINGER 0), cancel in-flight ops, free. */
void conn_close(struct worker *w, struct conn *c, bool rst);

#endif
