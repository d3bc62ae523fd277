/* SPDX-License-Identifier: MIT */
/* Inbound protocols as ops tables: the connection drives any of them the same way. */
#ifndef SPLICED_INBOUND_H
#define SPLICED_INBOUND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "config.h"
#include "http_forward.h"
#include "proto.h"

/*
 * An inbound is a thin adapter over a proto/ state machine (proto.h's feed
 * convention). The connection owns the socket, the buffer and the state
 * memory (state_size bytes, zeroed); the inbound only turns bytes into
 * results. Adding an inbound protocol is a file with one of these and an
 * entry in inbound.c's table.
 */
enum inbound_udp { INBOUND_UDP_NONE = 0, INBOUND_UDP_ASSOCIATE, INBOUND_UDP_IN_TCP };

struct replay;
struct worker_stats;
struct xform;

/*
 * What an inbound may need from the process beyond its own bytes, handed
 * to bind() before each feed and to xform(): valid during that call only
 * (a SIGHUP may replace the users table between turns).
 */
struct inbound_env {
	const struct users *users;  /* this inbound's users now (NULL: none) */
	struct replay *replay;      /* the salt filter of the inbound's kind (NULL: none) */
	struct worker_stats *stats; /* the worker's counters */
	uint64_t unix_s;            /* wall clock, seconds */
	uint64_t mono_s;            /* monotonic clock, seconds */
};

struct inbound_ops {
	const char *name;
	size_t state_size;
	/* The handshake buffer: the longest client message plus room for early payload. */
	size_t buf_size;
	/*
	 * A new connection on `in`, accepted as fd: PROTO_NEED_MORE (read the
	 * client), PROTO_REQUEST (the target is known without a handshake:
	 * forward, or the socket says where it was going: redirect, tproxy) or
	 * PROTO_FAIL (it cannot say: close it).
	 */
	enum proto_res (*start)(void *st, const struct inbound *in, int fd);
	/*
	 * The client's unconsumed bytes, as in proto.h; an inbound whose
	 * protocol is encrypted may decrypt them in place (consumed bytes and
	 * early() ones are plaintext afterwards).
	 */
	enum proto_res (*feed)(void *st, uint8_t *buf, size_t len, size_t *used);
	/* After PROTO_AUTH: the credentials (NUL-terminated), then the verdict. */
	void (*creds)(const void *st, const char **user, const char **pass);
	enum proto_res (*auth_result)(void *st, bool ok);
	/* The bytes to send after PROTO_REPLY or PROTO_FAIL (len may be 0). */
	const uint8_t *(*pending)(const void *st, size_t *len);
	/* After PROTO_REQUEST: where the client wants to go. */
	const struct proto_target *(*target)(const void *st);
	/*
	 * Optional, after PROTO_REQUEST: the request is for UDP, not a connect:
	 * a UDP association (SOCKS5 UDP ASSOCIATE; target() is then where the
	 * client will send from), or UDP framed on this connection (FWD UDP).
	 */
	enum inbound_udp (*udp)(const void *st);
	/*
	 * The answer to the request, in the client's protocol: r is CONNECT_OK
	 * (bound: the address the outbound leg is bound to, or NULL) or why not.
	 * len 0: the protocol has no answer (forward).
	 */
	const uint8_t *(*reply)(void *st, enum proto_connect_result r, const struct sockaddr *bound,
	                        size_t *len);
	/*
	 * Optional, after PROTO_REQUEST: an HTTP request to forward (absolute
	 * form), whose head is still at the start of the handshake buffer; NULL
	 * for a tunnel (CONNECT).
	 */
	const struct http_fwd_req *(*http_fwd)(const void *st);
	/*
	 * Optional: something start() took that must live as long as the
	 * connection (the tun inbound's NAT entry): hold() names it (0:
	 * nothing), asked right after start(), and release() gets it back
	 * when the connection is released.
	 */
	uint32_t (*hold)(const void *st);
	void (*release)(const struct inbound *in, uint32_t held);
	/*
	 * Optional, after start(): the client as the inbound knows it, when the
	 * accepted socket's peer is not (the TUN app's own address, not its
	 * fake source): the access log shows it. False: the peer it is.
	 */
	bool (*client)(const void *st, struct sockaddr_storage *out);
	/*
	 * What a reload (app/reload.c) may do with an inbound of this type.
	 * false: its resources are a TCP listener per worker (and, for tproxy
	 * with udp, a UDP socket per worker), which a reload opens, keeps or
	 * stops; everything else it reads from the configuration snapshot its
	 * connections started on. true: it holds something else the reload
	 * cannot reopen (a TUN device, say), so adding, removing or changing
	 * such an inbound is refused as "needs a restart", naming it.
	 */
	bool reload_needs_restart;

	/* --- for inbounds that transform bytes (Shadowsocks); all optional --- */
	/* Before each feed: the users table, the replay filter, the clocks. */
	void (*bind)(void *st, const struct inbound_env *env);
	/*
	 * After PROTO_NEED_MORE: how many bytes the parser needs at the front
	 * of the buffer; the connection grows the buffer up to buf_max for it
	 * (only once the parser has authenticated what asks for it).
	 */
	size_t (*want)(const void *st);
	size_t buf_max;
	/*
	 * After PROTO_REQUEST: how many of the bytes after *used are plaintext
	 * for the target; the rest are still the client's wire bytes (without
	 * it: all are plaintext).
	 */
	size_t (*early)(const void *st);
	/* After PROTO_REQUEST: the client leg's transform (malloc'd; NULL: out of memory). */
	struct xform *(*xform)(void *st, const struct inbound_env *env);
	/*
	 * PROTO_FAIL and a handshake timeout send nothing and close nothing
	 * early: the client's bytes are read and dropped until the handshake
	 * deadline (from accept), then the connection is closed with a FIN. A
	 * prober learns neither where parsing stopped nor why (SIP022 3.1.4).
	 */
	bool probe_resistant;
};

/*
 * For inbounds without a handshake (state: a struct proto_target that
 * start() fills): feed is never called, nothing is sent, no answer.
 */
enum proto_res inbound_nohs_feed(void *st, uint8_t *buf, size_t len, size_t *used);
const struct proto_target *inbound_nohs_target(const void *st);
const uint8_t *inbound_nohs_pending(const void *st, size_t *len);
const uint8_t *inbound_nohs_reply(void *st, enum proto_connect_result r,
                                  const struct sockaddr *bound, size_t *len);

/* The ops of an inbound type (never NULL for a type the config accepts). */
const struct inbound_ops *inbound_ops(enum inbound_type type);

extern const struct inbound_ops inbound_socks5_ops;
extern const struct inbound_ops inbound_http_ops;
extern const struct inbound_ops inbound_mixed_ops;
extern const struct inbound_ops inbound_redirect_ops;
extern const struct inbound_ops inbound_tproxy_ops;
extern const struct inbound_ops inbound_tun_ops;
extern const struct inbound_ops inbound_ss_ops;

#endif
