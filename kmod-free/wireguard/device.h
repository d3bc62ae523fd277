/* SPDX-License-Identifier: MIT */
/* A userspace WireGuard interface: TUN queues, UDP sockets and worker threads around the core. */
#ifndef SPLICED_WG_DEVICE_H
#define SPLICED_WG_DEVICE_H

#include <stdbool.h>
#include <stdint.h>

#include "wgconf.h"

struct wg_device;

struct wg_device_opts {
	const char *name;     /* interface name (required) */
	unsigned int workers; /* 0: one per online CPU */
	bool offload;         /* TUN virtio-net header (TSO/GRO) and UDP GSO/GRO */
	bool routes;          /* install address, routes (and rules) from the config */
	unsigned int
	        time_scale; /* test-only: protocol clock runs this many times faster; 1 = real */
	int ready_fd;       /* if >= 0, one byte is written there once the device is up */
};

/*
 * Creates the TUN interface, applies the configuration (keys, peers, MTU,
 * addresses, routes), binds the UDP sockets and opens the UAPI socket.
 * Returns 0 or -errno, having logged why (lib/log.h).
 */
int wg_device_create(struct wg_device **out, const struct wgconf *conf,
                     const struct wg_device_opts *opts);
/* Runs the workers and the control loop until wg_device_stop() or the interface disappears. */
int wg_device_run(struct wg_device *d);
/* Async-signal-safe: asks wg_device_run() to return. */
void wg_device_stop(struct wg_device *d);
/* Async-signal-safe: logs the drop and traffic counters at the next control tick. */
void wg_device_dump_stats(struct wg_device *d);
/* Removes routes and rules it installed, the UAPI socket and the interface; wipes keys. */
void wg_device_destroy(struct wg_device *d);

/* What wg_device_sync() changed, for the log. */
struct wg_sync_report {
	unsigned added, removed, updated, kept; /* peers */
	unsigned routes_added, routes_removed;
	bool key_changed, port_changed;
};

/*
 * `wg syncconf`: bring a running device in line with conf without touching
 * what did not change. Peers the file no longer has are removed, new ones
 * added, the others updated in place (endpoint, keepalive, preshared key,
 * allowed IPs) and keep their sessions: no new handshake. The private key
 * is set only when it differs (a new key ends every session), the listen
 * port only when the file names one that differs (a port already in use
 * fails before anything changed), the fwmark likewise. With routes, the
 * routes of added and removed AllowedIPs prefixes follow (a /0 is left as
 * it was installed). Any thread; 0 or -errno (logged).
 */
int wg_device_sync(struct wg_device *d, const struct wgconf *conf, bool routes,
                   struct wg_sync_report *rep);
/* Can port be bound (both families) now? 0 or -errno. 0 (random) always can. */
int wg_device_port_free(uint16_t port);
/* The port the device listens on. */
uint16_t wg_device_port(const struct wg_device *d);

#endif
