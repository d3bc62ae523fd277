/* SPDX-License-Identifier: MIT */
/* The cross-platform userspace API as text: parsing set=1, formatting get=1 (sans-I/O). */
#ifndef SPLICED_WG_UAPI_H
#define SPLICED_WG_UAPI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "wgconf.h"

enum {
	WG_UAPI_MAX_REQUEST = 1 << 20, /* a set=1 with thousands of allowed IPs fits */
};

/* One peer of a set=1 request, in the order wg(8) sends it. */
struct wg_uapi_peer_set {
	uint8_t public_key[WGCONF_KEY_LEN];
	bool remove;
	bool update_only;
	bool replace_allowed_ips;
	bool has_preshared_key; /* an all-zero key means "remove the PSK" */
	uint8_t preshared_key[WGCONF_KEY_LEN];
	bool has_endpoint;
	union wgconf_sockaddr endpoint;
	bool has_keepalive;
	uint16_t keepalive;
	size_t n_allowed_ips;
	struct netlink_prefix *allowed_ips;
};

struct wg_uapi_set {
	bool has_private_key; /* an all-zero key means "remove the private key" */
	uint8_t private_key[WGCONF_KEY_LEN];
	bool has_listen_port;
	uint16_t listen_port;
	bool has_fwmark;
	uint32_t fwmark;
	bool replace_peers;
	size_t n_peers;
	struct wg_uapi_peer_set *peers;
};

/* A snapshot of one peer for get=1. */
struct wg_uapi_peer_info {
	uint8_t public_key[WGCONF_KEY_LEN];
	bool has_preshared_key;
	uint8_t preshared_key[WGCONF_KEY_LEN];
	bool has_endpoint;
	union wgconf_sockaddr endpoint;
	struct timespec last_handshake; /* CLOCK_REALTIME; zero = never */
	uint64_t rx_bytes, tx_bytes;
	uint16_t keepalive;
	size_t n_allowed_ips;
	struct netlink_prefix *allowed_ips;
};

struct wg_uapi_info {
	bool has_private_key;
	uint8_t private_key[WGCONF_KEY_LEN];
	uint16_t listen_port;
	uint32_t fwmark;
	size_t n_peers;
	struct wg_uapi_peer_info *peers;
};

/* Parses the body of a set=1 request (the lines after "set=1", up to the blank line). */
int wg_uapi_parse_set(struct wg_uapi_set *out, const char *body);
void wg_uapi_set_free(struct wg_uapi_set *s);
/* The same change a config file describes: replace_peers plus every peer in full. */
int wg_uapi_set_from_conf(struct wg_uapi_set *out, const struct wgconf *conf);

/* Formats a get=1 reply, "errno=0\n\n" included. Returns a malloc'd string or NULL. */
char *wg_uapi_format_get(const struct wg_uapi_info *info, size_t *len);
void wg_uapi_info_free(struct wg_uapi_info *info);

#endif
