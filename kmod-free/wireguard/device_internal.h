/* SPDX-License-Identifier: MIT */
/* What the device's files share: the device, its peers and workers, the locking rules, the counters. */
#ifndef SPLICED_WG_DEVICE_INTERNAL_H
#define SPLICED_WG_DEVICE_INTERNAL_H

/*
 * The device is split the way the kernel module is: device.c (create, run,
 * stop, destroy, the worker and control threads), send.c (TUN -> UDP and the
 * per-peer queue), rx.c (UDP -> TUN), socket.c (the UDP sockets) and
 * setconf.c (UAPI set/get, peers, routes).
 */

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>
#include <unistd.h>

#include "clock.h"
#include "device.h"
#include "netlink.h"
#include "offload.h"
#include "peer.h"
#include "routing.h"
#include "rx_split.h"
#include "stats.h"
#include "tun.h"
#include "uapi_server.h"

enum {
	TX_BATCH = OFFLOAD_MAX_SEGS, /* packets read (or cut from a TSO packet) per round */
	GSO_MAX_SEGS = 64,           /* UDP_SEGMENT's limit per sendmsg (before Linux 6.11) */
	RX_MSGS = 8,                 /* recvmmsg entries; each may carry a GRO train of datagrams */
	RX_BUF = 65536 + 64,         /* one GRO train: at most 64 KiB of UDP payload */
	PEER_QUEUE = 256,            /* packets held per peer while a handshake is in progress */
	CTRL_TICK_MS = 20,           /* the control thread's timer granularity */
	UAPI_DEADLINE_MS = 2000,     /* a UAPI client's time in all (wg(8) sends at once) */
	DEFAULT_TABLE = 51820,       /* wg-quick's table and fwmark for a tunnel default route */
	/* datagrams one rx_round holds: RX_MSGS trains of at most WG_RX_SPLIT_MAX_SEGS */
	RX_SEGS = RX_MSGS * WG_RX_SPLIT_MAX_SEGS,
};

/* Device-level drop counters (the core counts protocol drops in id.stats). */
struct dev_stats {
	atomic_ulong tx_no_peer;      /* TUN packet with no AllowedIPs match */
	atomic_ulong tx_no_endpoint;  /* peer has no endpoint yet */
	atomic_ulong tx_queue_full;   /* handshake pending and the queue is full */
	atomic_ulong tx_bad_packet;   /* TUN packet we could not parse or segment */
	atomic_ulong tx_send_errors;  /* sendmsg failed */
	atomic_ulong rx_truncated;    /* datagram larger than our buffer, or its GRO cmsg cut */
	atomic_ulong rx_gro_runts;    /* datagrams of a GRO train cut below any message size */
	atomic_ulong rx_gro_overflow; /* datagrams past what one round holds (rx_split.h) */
	atomic_ulong rx_exclusive;    /* receive batches that took the device lock exclusive */
	atomic_ulong rx_tun_errors;   /* TUN write failed */
	atomic_ulong tx_packets, rx_packets, tx_gso_sends, rx_gro_trains;
};

struct qpkt {
	uint8_t *buf; /* WG_MSG_DATA_HEADER_LEN of headroom, then the packet, then tailroom */
	size_t len;
};

struct dev_peer {
	struct wg_peer core;
	/*
	 * Guards the peer's per-packet state while the device lock is held
	 * shared: nonce reservation, replay windows, timers, byte counters,
	 * endpoint and queue. Under the exclusive device lock it is not needed.
	 */
	pthread_mutex_t lock;
	bool has_endpoint;
	union wgconf_sockaddr endpoint;
	unsigned int qhead, qlen;
	struct qpkt queue[PEER_QUEUE];
	struct dev_peer *next, **pprev; /* device's list, for freeing; unlinked in O(1) */
};

/* One TUN queue and its sockets, served by one thread (device.c: worker_main). */
struct wg_worker {
	struct wg_device *dev;
	pthread_t thread;
	bool started;
	unsigned int index;
	int tun_fd;
	int udp4, udp6; /* numbers fixed for the device's life: a rebind dup3()s new sockets in */
	int wake_fd;    /* eventfd: the control thread asks the worker to poll its sockets anew */
	/* TX: slots hold header + packet + padding + tag, packets read from the TUN */
	size_t slot_size;
	uint8_t *slots;
	uint8_t *tso_buf; /* one TUN read with a virtio-net header (offload mode) */
	/* RX: GRO trains */
	uint8_t *rx_bufs;
	uint8_t *tun_out; /* coalesced TUN writes (offload mode) */
};

/*
 * Locking. The data path (both workers, both directions) holds d->lock
 * shared for a whole batch: it routes, reserves nonces, decrypts and
 * encrypts in parallel, taking a peer's mutex only for the short per-packet
 * bookkeeping (the replay window is the one truly serial step). Whatever
 * frees keypairs or peers or changes the tables (handshake messages, timer
 * ticks, the first packet on a new responder session, UAPI, configuration)
 * takes d->lock exclusive. The rwlock prefers writers so a steady data
 * stream cannot starve the control thread's 20 ms tick.
 */
struct wg_device {
	pthread_rwlock_t lock;
	struct wg_identity id;
	struct dev_peer *peers;
	struct tun tun;
	char name[IFNAMSIZ];
	unsigned int mtu;
	uint16_t port;
	uint32_t fwmark;
	bool offload, gro;
	atomic_bool gso; /* cleared by the first worker whose GSO send fails */
	unsigned int time_scale;
	int stop_fd;
	int kick_fd;        /* the data path asks the control thread to tick (pending actions) */
	atomic_bool kicked; /* a kick is already on its way */
	int uapi_fd;
	char uapi_path[108];
	atomic_bool stopping;
	atomic_bool dump_stats;
	int ready_fd;
	struct dev_stats stats;
	struct stats_group stats_group; /* "wireguard NAME" (device.c) */
	struct stats_group peer_group;  /* its peers, a row each (metrics only) */
	char stats_name[IFNAMSIZ + 16];
	char stats_labels[IFNAMSIZ + 16]; /* interface="NAME" */
	/* routes and rules installed at start, removed at exit (tun/route.c) */
	struct routing_set routes;
	unsigned int nworkers;
	struct wg_worker workers[];
};

/* The core's `now`: CLOCK_MONOTONIC in ns, sped up only by the test-only switch of `spliced wg up`. */
static inline uint64_t wg_dev_now(const struct wg_device *d)
{
	return clock_ns() * d->time_scale;
}

static inline void wg_dev_lock_shared(struct wg_device *d)
{
	pthread_rwlock_rdlock(&d->lock);
}

static inline void wg_dev_lock_exclusive(struct wg_device *d)
{
	pthread_rwlock_wrlock(&d->lock);
}

static inline void wg_dev_unlock(struct wg_device *d)
{
	pthread_rwlock_unlock(&d->lock);
}

/* Wakes the control thread to carry out pending peer actions (one eventfd write per tick). */
static inline void wg_dev_kick(struct wg_device *d)
{
	uint64_t one = 1;

	if (!atomic_exchange(&d->kicked, true) && write(d->kick_fd, &one, sizeof(one)) < 0)
		atomic_store(&d->kicked, false);
}

/* socket.c: the UDP sockets. */
int wg_dev_udp_socket(int family, uint16_t *port, uint32_t fwmark, bool gro);
int wg_dev_rebind(struct wg_device *d, uint16_t want, uint32_t fwmark);
void wg_dev_set_fwmark(struct wg_device *d, uint32_t fwmark);
void wg_dev_send_one(struct wg_worker *w, const union wgconf_sockaddr *ep, const void *buf,
                     size_t len);
void wg_dev_send_batch(struct wg_worker *w, const union wgconf_sockaddr *ep, struct iovec *iov,
                       unsigned int n);

/* send.c: TUN -> UDP, the per-peer queue, carrying out the core's actions. */
int wg_dev_tx_round(struct wg_worker *w);
void wg_dev_peer_actions(struct wg_worker *w, struct dev_peer *p, unsigned int act, uint64_t now);
void wg_dev_tick_peer(struct wg_worker *w, struct dev_peer *p, uint64_t now);
void wg_dev_queue_free(struct dev_peer *p);

/* rx.c: UDP -> TUN. */
int wg_dev_rx_round(struct wg_worker *w, int fd);

/* setconf.c: applying set=1 requests and the config, answering get=1, routes. */
int wg_dev_apply_set(struct wg_device *d, const struct wg_uapi_set *s);
void wg_dev_remove_peer(struct dev_peer *p);
int wg_dev_uapi_get(void *ctx, struct wg_uapi_info *out);
int wg_dev_uapi_set(void *ctx, const struct wg_uapi_set *req);
bool wg_dev_conf_has_default_route(const struct wgconf *conf);
int wg_dev_setup_routes(struct wg_device *d, const struct wgconf *conf);
void wg_dev_remove_routes(struct wg_device *d);

#endif
