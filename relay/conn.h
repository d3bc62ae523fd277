/* SPDX-License-Identifier: MIT */
/* A connection: two legs and the state machine between them (loop module LOOP_KIND_CONN). */
#ifndef SPLICED_CONN_H
#define SPLICED_CONN_H

#include <stdbool.h>
#include <stdint.h>

#include "loop.h"
#include "pump.h"

struct user_acct;
struct conn_fwd;
struct snapshot;
struct sec_row;

struct worker;
struct conn_hs;
struct udp_assoc;

enum conn_state {
	CONN_HANDSHAKE = 1, /* reading the client's protocol handshake */
	CONN_RESOLVING,     /* waiting for the resolver */
	CONN_CONNECTING,    /* outbound connect in flight */
	CONN_OUT_HANDSHAKE, /* the outbound's handshake on the outbound leg (an upstream proxy) */
	CONN_RELAY,         /* both legs open, a pump running in each direction */
	CONN_DRAIN, /* a refused probe-resistant handshake: read and dropped until its deadline */
};

enum conn_leg { LEG_IN = 0, LEG_OUT = 1 };

/*
 * In-flight op slots: exactly one op per relay direction, one for the
 * handshake, and a reply sent through the ring (its tag stays set until the
 * poll linked behind it completes, which proves the send is finished).
 */
enum conn_op_slot { OPS_DIR0 = 0, OPS_DIR1 = 1, OPS_HS = 2, OPS_TX = 3, OPS_N = 4 };

/* The longest reply sent through the ring: a SOCKS5 reply with an IPv6 BND. */
enum { CONN_TX_MAX = 4 + 16 + 2 };

/*
 * After an error in one direction the other may still deliver what it holds
 * (a server's 413 before it reset an upload): for this long at most.
 */
enum { CONN_LINGER_MS = 2000, CONN_FLUSH_MS = 20 };

/*
 * Connect attempts to a name's addresses in flight at once, and the delay
 * before the next one starts (RFC 8305 §5 recommends 250 ms).
 */
enum { CONN_ATTEMPTS = 4, CONN_STAGGER_MS = 250 };

/*
 * A request header an outbound owes its server (Shadowsocks) waits this long
 * for the client's first payload, so both go in one write as ss-local sends
 * them; then it goes alone (a server-first protocol: the target speaks first).
 * v2ray's outbounds wait 100 ms for a first payload too.
 */
enum { CONN_FIRST_FLIGHT_MS = 100 };

struct conn {
	struct loop_obj obj; /* first: the loop hands it back */
	struct worker *w;
	struct snapshot *snap; /* the configuration it started on (worker_snap_hold()) */
	struct sec_row *irow;  /* its inbound's counters, this worker's row */
	struct sec_row *orow;  /* its outbound's, once routed (NULL before) */
	enum conn_state state;
	uint16_t inbound;
	uint32_t src_slot; /* its source's max-connections-per-source slot (SOURCE_UNCOUNTED) */
	int16_t outbound;
	bool spliced;              /* relayed by the splice pump (both legs spliceable) */
	struct leg leg[2];         /* LEG_IN, LEG_OUT */
	uint64_t ops[OPS_N];       /* tags of in-flight ops (0 = none), cancelled on close */
	struct loop_timer timer;   /* the handshake or the idle deadline */
	struct conn_hs *hs;        /* NULL while relaying */
	struct pump_dir dir[2];    /* 0: in → out, 1: out → in */
	bool rst;                  /* close abortively (SO_LINGER 0) once released */
	uint64_t linger_due_ms;    /* after an error: when the reset is passed on at the latest */
	int att_fd[CONN_ATTEMPTS]; /* connect attempts' sockets (-1: none), until their CQE */
	uint8_t tx[CONN_TX_MAX];   /* the reply in flight while ops[OPS_TX] is set */
	bool handed_over;          /* a UDP association took the client's connection (udp.c) */
	struct conn_log *log;      /* its access-log line while the log is on (access_log.c) */
	struct user_acct *user;    /* who logged in (NULL: nobody), and whether it counts there */
	bool user_open;
	struct conn_fwd *fwd; /* a request being forwarded (conn_forward.c), else NULL */
	uint32_t held;        /* what the inbound holds for it (inbound_ops.hold), 0: nothing */
};

extern const struct loop_module conn_module;

/* A new client connection `fd` accepted on inbound `inbound`. Takes ownership of fd. */
void conn_accept(struct worker *w, unsigned inbound, int fd, uint32_t src_slot);
/* The resolver's answer for connection o (a resolver_answer_fn), if it still waits for one. */
void conn_resolved(struct worker *w, struct loop_obj *o, int err,
                   const struct sockaddr_storage *addrs, int n);
/* Deadline queues (the worker sets them up): handshake and idle. */
void conn_hs_timeout(struct loop *l, struct loop_timer *t);
void conn_idle_timeout(struct loop *l, struct loop_timer *t);
void conn_linger_timeout(struct loop *l, struct loop_timer *t); /* linger and flush queues */
void conn_resolve_timeout(struct loop *l, struct loop_timer *t);
void conn_stagger_timeout(struct loop *l, struct loop_timer *t);
void conn_first_flight_timeout(struct loop *l, struct loop_timer *t);
/* Close both legs (rst: abortive), cancel in-flight ops; freed once they are done. */
void conn_close(struct conn *c, bool rst);

#endif
