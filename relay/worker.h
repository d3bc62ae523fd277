/* SPDX-License-Identifier: MIT */
/* Worker threads: one loop each, with its listeners, connections, pools and counters; no shared state. */
#ifndef SPLICED_WORKER_H
#define SPLICED_WORKER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "access.h"
#include "access_log.h"
#include "config.h"
#include "egress.h"
#include "loop.h"
#include "resolve.h"
#include "snapshot.h"
#include "splice.h"
#include "stats.h"
#include "udp_session.h"

struct listener;
struct tun_queue;
struct metrics_listener;

/* Counters, one set per worker (summed by the registry). One per drop reason. */
#define WORKER_STATS(X)                                                                 \
	X(accepted, "connections accepted")                                             \
	X(refused_limit, "connections refused: over max-connections")                   \
	X(refused_allow, "connections refused: client not in the inbound's allow")      \
	X(refused_source, "connections refused: max-connections-per-source")            \
	X(accept_errors, "accept errors (EMFILE, ENFILE, ...)")                         \
	X(hs_bad, "malformed or refused handshakes")                                    \
	X(no_original_dst, "transparent: no original destination")                      \
	X(auth_failed, "authentication failures")                                       \
	X(refused_user, "requests refused: the user is at its max-connections")         \
	X(auth_throttled, "logins refused: the source failed max-auth-failures")        \
	X(hs_timeouts, "handshakes over handshake-timeout")                             \
	X(idle_timeouts, "relays closed after idle-timeout")                            \
	X(connect_failed, "outbound connects or handshakes that failed")                \
	X(blocked, "requests refused by the rules (block outbound)")                    \
	X(resets, "relays ended by an error or a reset")                                \
	X(no_pipe, "relays ended because no pipe or buffer could be had")               \
	X(completed, "relays ended by EOF both ways")                                   \
	X(copy_fallbacks, "directions that copied because no pipe could be had")        \
	X(pipe_budget, "directions that copied because pipe-memory was in pipes")       \
	X(resolve_timeouts, "names not resolved within resolve-timeout")                \
	X(resolve_full, "lookups refused: max-resolving reached")                       \
	X(client_gone, "clients that left while their name was being resolved")         \
	X(bytes_up, "bytes relayed client to target")                                   \
	X(bytes_down, "bytes relayed target to client")                                 \
	X(udp_assocs, "UDP sessions opened")                                            \
	X(udp_up, "datagrams relayed client to target")                                 \
	X(udp_down, "datagrams relayed target to client")                               \
	X(udp_foreign, "datagrams dropped: not from the association's client")          \
	X(udp_frag, "datagrams dropped: FRAG not 0")                                    \
	X(udp_malformed, "datagrams dropped: malformed header")                         \
	X(udp_blocked, "datagrams dropped: the rules say block")                        \
	X(udp_unsupported, "datagrams dropped: the outbound does not carry UDP")        \
	X(udp_send_errors, "datagrams dropped: sending failed")                         \
	X(udp_unresolved, "datagrams dropped: their name did not resolve")              \
	X(udp_queue_full, "datagrams dropped: too many waiting for names")              \
	X(udp_timeouts, "UDP sessions ended by udp-timeout")                            \
	X(udp_upstreams, "UDP associations opened with socks5 upstreams")               \
	X(udp_upstream_failed, "UDP sessions ended: their upstream failed")             \
	X(udp_evicted, "UDP sessions ended for a new one: udp-max-sessions")            \
	X(ss_bad_auth, "shadowsocks streams refused: authentication failed")            \
	X(ss_bad_user, "shadowsocks 2022 streams refused: no such user")                \
	X(ss_bad_time, "shadowsocks 2022 streams refused: timestamp over 30 s off")     \
	X(ss_bad_format, "shadowsocks streams refused: malformed after authentication") \
	X(ss_replays, "shadowsocks streams refused: a salt seen before (replay)")       \
	X(ss_replay_full, "shadowsocks streams refused: the salt pool is full")         \
	X(ss_drained, "shadowsocks clients read and dropped until handshake-timeout")

struct worker_stats {
	STATS_FIELDS(WORKER_STATS)
	uint64_t egress[EGRESS_N]; /* addresses refused, by enum egress_verdict (0 unused) */
};

/* Process-wide state shared (read-mostly) by all workers. */
struct server {
	/* The configuration in force (main's reference); each worker holds its own (w->snap). */
	struct snapshot *snap;
	atomic_uint n_conns; /* open connections, all workers */
	struct worker *workers;
	int n_workers;
	struct auth_guard *guard;        /* failed logins per source, every worker's */
	struct source_limit *per_source; /* open connections per source, every worker's */
	struct stats_group stats;        /* "relay": every worker's counters summed */
	int alog_fd;              /* access-log, opened by main (-1: off); each worker dups it */
	struct user_accts *accts; /* per-user counters and limits, every worker's */
	/* shadowsocks salt filters, every worker's (NULL without such inbounds): SIP004, SIP022 */
	struct replay *ss_replay_aead, *ss_replay_2022;
};

enum worker_msg {
	WORKER_MSG_STOP = 1u << 0,
	WORKER_MSG_RELOAD = 1u << 1,     /* switch to w->plan */
	WORKER_MSG_REOPEN_LOG = 1u << 2, /* SIGHUP, SIGUSR1: the access log by its name again */
	WORKER_MSG_DROP_FDS = 1u << 3,   /* a reload failed after sending descriptors: close them */
};

/*
 * A reload as one worker applies it: the snapshot to switch to (one
 * reference, the worker's from then on), and for each inbound of it where
 * its sockets come from: one the worker has (the inbound's index in the
 * worker's current configuration: a reload keeps a socket whose address
 * and kind did not change, so no connection waiting in its queue is
 * lost), one main opened (PLAN_NEW), or none. Main opens the new ones
 * (with whatever privileges it kept, and so that a port in use fails the
 * reload before anything changed) and sends them on the worker's
 * socketpair, in this order: listeners, tproxy UDP sockets, the metrics
 * listener, the access log, each in inbound order. The worker frees the
 * plan once applied.
 */
enum { PLAN_NONE = -1, PLAN_NEW = -2, PLAN_KEEP = -3 };
struct worker_plan {
	unsigned gen;    /* the reload it applies */
	unsigned fd_seq; /* the message its descriptors came in (a failed reload sent others) */
	struct snapshot *snap;
	int listener[CONFIG_MAX_INBOUNDS]; /* old index, PLAN_NEW or PLAN_NONE */
	int udp_tp[CONFIG_MAX_INBOUNDS];
	int metrics; /* PLAN_KEEP, PLAN_NEW or PLAN_NONE (worker 0 only) */
	int alog;    /* the same for the access log */
	unsigned n_fds;
};
enum { PLAN_FDS_MAX = 2 * CONFIG_MAX_INBOUNDS + 2 };

struct worker {
	int id;
	pthread_t thread;
	struct server *srv;
	/*
	 * The snapshot new objects start on, and its cfg: the [main] settings
	 * in force. A connection reads its inbound, outbounds and rules from the
	 * snapshot it started on (conn_cfg()), never from w->cfg.
	 */
	struct snapshot *snap;
	const struct config *cfg;
	struct loop loop;
	/* The inbox: messages from main (stop, reload), signalled on an eventfd. */
	struct loop_obj inbox_obj;
	int event_fd;
	uint64_t event_buf;
	atomic_uint msgs;   /* enum worker_msg bits, set by main */
	atomic_int started; /* set once the worker runs on its own descriptor table */
	_Atomic(struct worker_plan *) plan; /* a reload to apply (WORKER_MSG_RELOAD) */
	int plan_rx, plan_tx;               /* the socketpair its descriptors come on */
	atomic_uint applied;                /* the gen of the last plan applied */
	bool private_table;                 /* unshare(CLONE_FILES) worked (see worker_main()) */

	struct listener *listeners[CONFIG_MAX_INBOUNDS]; /* NULL once released */
	struct udp_tp *udp_tps[CONFIG_MAX_INBOUNDS];     /* tproxy inbounds' UDP sockets, or NULL */
	struct tun_queue *tun_queues[CONFIG_MAX_INBOUNDS]; /* tun inbounds' queues, or NULL */
	unsigned n_conns;
	struct resolver res;
	struct loop_tq hs_tq;      /* handshake-timeout */
	struct loop_tq resolve_tq; /* resolve-timeout */
	struct loop_tq stagger_tq; /* the next connect attempt (RFC 8305) */
	struct loop_tq idle_tq;    /* idle-timeout */
	struct loop_tq linger_tq;  /* the other direction's last bytes after an error */
	struct loop_tq flush_tq;   /* then: is everything acknowledged before the reset? */
	struct loop_tq udp_tq;     /* udp-timeout */
	struct loop_tq
	        udp_dns_tq;       /* udp-dns-timeout: associations that only ever sent to port 53 */
	struct loop_tq udp_up_tq; /* an upstream leg's connect and handshake */
	struct loop_tq metrics_tq;        /* a metrics client's whole exchange */
	struct metrics_listener *metrics; /* [stats] listen: worker 0's, or NULL */
	unsigned n_metrics_clients;
	struct list_node udp_doomed; /* associations to close at the end of the turn */
	uint8_t *udp_buf;            /* recvmmsg scratch for the UDP associations, on first use */
	uint8_t *udp_tcp_buf;        /* UDP-in-TCP streams read into this, on first use */
	struct udp_tx udp_tx;        /* datagrams waiting for one sendmmsg */
	struct alog alog;            /* access-log lines waiting for their write */
	unsigned n_udp;              /* UDP associations open */
	struct pipe_pool pipes;
	struct buf_pool bufs;
	struct buf_pool xbufs;   /* the transform pump's (struct xbuf) */
	struct loop_tq ff_tq;    /* a shadowsocks request header waiting for its first payload */
	unsigned long trim_gets; /* pipes.gets + bufs.gets when it last changed ... */
	uint64_t trim_ms;        /* ... and when: idle pipes and buffers go PIPE_IDLE_MS later */
	bool draining;
	uint64_t drain_deadline_ms;
	struct worker_stats stats;
	struct stats_group group; /* "worker N": its gauges and ring counters (metrics) */
	char group_labels[24];
};

int worker_init(struct worker *w, int id, struct server *srv);
/* Listening socket for inbound i; logs and returns -errno on failure. */
int worker_listen(struct worker *w, unsigned i);
int worker_start(struct worker *w);
void worker_post(struct worker *w, unsigned msg);
/*
 * Main thread, a reload in two steps: first the descriptors to every
 * worker in message seq (never used twice; closed here whatever happens;
 * -errno when they cannot be sent, and then nothing was posted anywhere
 * yet), then the plans (the worker owns p then; cannot fail). A worker
 * drops the descriptors of a message no plan names.
 */
int worker_send_fds(struct worker *w, unsigned seq, int *fds, unsigned n);
void worker_post_plan(struct worker *w, struct worker_plan *p);
/*
 * worker_plan.c, on the worker's thread: the descriptors of message seq, in
 * order (want of them, else 0; those of other messages are closed), and the
 * plan main posted switched to (nothing when none waits).
 */
unsigned worker_take_fds(struct worker *w, unsigned seq, int *fds, unsigned want);
void worker_apply_plan(struct worker *w);
/* worker.c: this worker's share of pipe-memory, after the start and each reload. */
void worker_set_memory_budget(struct worker *w);
/* Main thread: drop its copies of the worker's listeners once the worker runs. */
void worker_release_listeners(struct worker *w);
void worker_destroy(struct worker *w);

/*
 * The salt filters cfg's Shadowsocks inbounds need (one for AEAD, one for
 * 2022, shared by every worker and every inbound of that kind, kept across
 * reloads); at start and by a reload before its snapshot is in force.
 */
int server_ss_init(struct server *srv, const struct config *cfg);
/* in's filter (NULL: not a Shadowsocks inbound). */
struct replay *server_ss_replay(const struct server *srv, const struct inbound *in);
void server_ss_free(struct server *srv);

/* The "relay" counter group over every worker (registered by the caller). */
void worker_stats_group(struct server *srv);

/* An object of w starts on its current snapshot: counted there until worker_snap_drop(). */
static inline struct snapshot *worker_snap_hold(struct worker *w)
{
	w->snap->holds[w->id].n++;
	return w->snap;
}
/* The same for a snapshot other than the current one, which the caller holds already. */
static inline struct snapshot *worker_snap_hold_this(struct worker *w, struct snapshot *s)
{
	s->holds[w->id].n++;
	return s;
}
/* One of w's objects on s is gone; s goes once w has moved on and none is left. */
void worker_snap_drop(struct worker *w, struct snapshot *s);

#endif
