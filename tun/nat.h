/* SPDX-License-Identifier: MIT */
/* The TUN's TCP NAT: a flow's packets rewritten (whole super-packets) to a local listener and back; shared by every queue. */
#ifndef SPLICED_TUN_NAT_H
#define SPLICED_TUN_NAT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "packet.h"

/*
 * How a TCP flow from an app crosses the TUN (research-tun2socks.md §2.4):
 *
 *   app S:s → D:d     read from the TUN, rewritten to   F:f → L:l, written back
 *   listener L:l → F:f  read from the TUN, rewritten to D:d → S:s, written back
 *
 * L:l is the listener (the TUN's own address, one port for every worker);
 * F:f, the fake source, is drawn from the TUN's prefix, so the kernel
 * routes the listener's answers back into the TUN, and never is an
 * address of this host (a source that is would be a martian). The kernel's
 * TCP stack terminates the flow on L:l; accept() shows F:f, which
 * nat_accept() maps back to S:s → D:d.
 *
 * Entries live in one array shared by every queue. The fake tuple encodes
 * the entry: f = gen * cap + index over the pool's addresses x ports,
 * so the listener's packets find their entry by arithmetic, and each
 * reuse of an index (gen + 1) takes another fake tuple, which keeps a new
 * flow clear of an old one's TIME_WAIT. App packets find it through a hash
 * of S:s, D:d keyed with a random key (an app chooses what it hashes).
 *
 * Life of an entry:
 *   SYN from the app     → EMBRYO (until accept; embryo_ms at most)
 *   nat_accept()         → OPEN (held by the connection: no timeout at all,
 *                          an idle flow lives as long as its connection)
 *   nat_release()        → LINGER (linger_ms: the FIN/ACK exchange after
 *                          close, and the listener's TIME_WAIT, still pass);
 *                          an embryo the app resets lingers too
 *   then                 → free
 * A SYN for a tuple whose entry lingers starts a new entry (a new fake
 * tuple); the old one only serves the listener's late packets.
 *
 * Locking: one mutex around the table. A lookup holds it for a hash probe
 * and a copy of 40 bytes; the rewrite itself (and the checksums) run
 * outside. Per super-packet (up to 64 KiB) that is far below the kernel's
 * own work for the same packet (perf in docs/tun.md).
 */

enum nat_state { NAT_FREE = 0, NAT_EMBRYO, NAT_OPEN, NAT_LINGER };

enum nat_verdict {
	NAT_PASS = 0,  /* rewritten in place: write it back */
	NAT_FULL,      /* a SYN with no room left: answer with a RST (packet_build_rst) */
	NAT_NO_FLOW,   /* not a SYN, and no entry: drop */
	NAT_BAD_DST,   /* to an address of the fake pool or the listener's: drop */
	NAT_NO_FAMILY, /* the TUN has no address of this family: drop */
};

enum {
	NAT_PORT_LO = 1024, /* fake ports: 1024..65535 */
	NAT_PORTS = 65536 - NAT_PORT_LO,
	NAT_MAX_LISTENERS = 256, /* [main] workers' maximum */
};

struct nat_cfg {
	unsigned cap;       /* entries (tcp-max-flows) */
	unsigned linger_ms; /* after the connection closed */
	unsigned embryo_ms; /* from SYN to accept */
	/* Per family (0: IPv4, 1: IPv6): the listener's address, the pool of fake sources. */
	struct {
		bool on;
		uint8_t listen[16];
		uint8_t prefixlen; /* the TUN's prefix: no flow may go to an address in it ... */
		bool mapped;       /* ... but to its upper half, mapped DNS's (tun/dnsmap.h) */
		uint8_t pool[16];  /* first fake address */
		uint64_t n_pool;   /* addresses in the pool */
	} fam[2];
	/*
	 * The listeners' ports, network order, one per worker (nat_set_port()):
	 * a new flow goes to the listener of the worker whose queue read its SYN,
	 * so that worker also accepts and relays it (no hand-over between
	 * threads for its packets).
	 */
	uint16_t ports[NAT_MAX_LISTENERS];
	unsigned n_ports;
};

struct nat_entry {
	uint8_t src[16], dst[16]; /* the app's S and D (IPv4: the first 4 bytes) */
	uint16_t sport, dport;    /* network order */
	uint32_t hnext;           /* hash chain, or the free list: index + 1, 0 = end */
	uint32_t tprev, tnext;    /* the embryo or linger list: index + 1 */
	uint32_t gen;             /* which fake tuple this index has now */
	uint64_t due;             /* ms since nat_init() when an embryo or linger ends */
	uint8_t family;           /* 4 or 6 */
	uint8_t state;            /* enum nat_state */
	bool hashed;              /* in the hash (the tuple's current entry) */
	uint8_t listener;         /* which listener (cfg.ports) its SYN went to */
};

/* The original flow behind an accepted connection. */
struct nat_flow {
	struct sockaddr_storage src, dst; /* S:s and D:d */
};

struct nat_list {
	uint32_t head, tail; /* index + 1 */
};

/* Counters (atomic: the drops are counted outside the lock). */
struct nat_stats {
	_Atomic uint64_t created, accepted, released, expired_embryo, expired_linger;
	_Atomic uint64_t full, no_flow, bad_dst, no_family, accept_miss;
};

struct nat {
	pthread_mutex_t lock;
	struct nat_cfg cfg;
	struct nat_entry *e;
	uint32_t *buckets;  /* index + 1 */
	uint32_t mask;      /* buckets - 1 */
	uint32_t free_head; /* freed entries (index + 1, through hnext) */
	uint32_t fresh;     /* entries from here on were never used */
	uint32_t n_used;
	uint64_t gens[2]; /* per family: fake tuples per index (pool x ports / cap) */
	struct nat_list embryo, linger;
	uint64_t t0_ms;
	uint8_t key[16];
	_Atomic uint64_t next_due; /* earliest deadline (ms since t0), UINT64_MAX: none */
	struct nat_stats st;
};

/*
 * 0, or -EINVAL (no family, a pool smaller than one address) / -ENOMEM.
 * cap is lowered to what the smallest pool holds (pool x ports).
 */
int nat_init(struct nat *n, const struct nat_cfg *cfg, uint64_t now_ms);
void nat_destroy(struct nat *n);
/* Listener i's port (network order); main thread, before any queue runs. */
void nat_set_port(struct nat *n, unsigned i, uint16_t port_be);

/*
 * Whether the TCP packet in v was sent by the listener (to a fake source),
 * i.e. goes nat_from_listener(), rather than by an app.
 */
bool nat_is_listener(const struct nat *n, const struct packet_view *v);
/*
 * An app's TCP packet (v->proto == IPPROTO_TCP): rewrite it towards the
 * listener. partial: its checksum is a NEEDS_CSUM pseudo-header sum.
 * listener: which listener (cfg.ports) a new flow goes to, the reading
 * worker's; an existing flow keeps the one its first SYN got.
 */
enum nat_verdict nat_from_app(struct nat *n, struct packet_view *v, bool partial, uint64_t now_ms,
                              unsigned listener);
/* The listener's TCP packet: rewrite it back towards the app. NAT_PASS or NAT_NO_FLOW. */
enum nat_verdict nat_from_listener(struct nat *n, struct packet_view *v, bool partial);

/*
 * An accepted connection whose peer is `peer` (F:f): its entry becomes
 * OPEN and *ref names it for nat_release(). 0, or -ENOENT (no embryo there:
 * expired, or not ours).
 */
int nat_accept(struct nat *n, const struct sockaddr *peer, struct nat_flow *out, uint32_t *ref,
               uint64_t now_ms);
/* The connection that held ref is gone: the entry lingers, then is freed. */
void nat_release(struct nat *n, uint32_t ref, uint64_t now_ms);
/* Frees embryos and lingering entries whose time is up. Cheap when none is due. */
void nat_expire(struct nat *n, uint64_t now_ms);
/* Entries in use (any state but free). */
unsigned nat_count(struct nat *n);

#endif
