/* SPDX-License-Identifier: MIT */
/* wg-quick style configuration files ([Interface], [Peer], [Spliced]) and key encodings. */
#ifndef SPLICED_WG_WGCONF_H
#define SPLICED_WG_WGCONF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <netinet/in.h>

#include "netlink.h"

enum {
	WGCONF_KEY_LEN = 32,
	WGCONF_KEY_B64_LEN = 44, /* 4 * ceil(32 / 3), one '=' of padding */
	WGCONF_KEY_HEX_LEN = 64,
	WGCONF_DEFAULT_MTU =
	        1420, /* 1500 - 20 (IPv4) - 8 (UDP) - 32 (WireGuard) - 20 spare for IPv6 */
	WGCONF_ERR_LEN = 512,
	WGCONF_MAX_WORKERS = 16,
};

/* What routes `spliced wg up` installs: wg-quick's Table= key. */
enum wgconf_table {
	WGCONF_TABLE_AUTO = 0, /* main table; a /0 prefix goes through fwmark rules like wg-quick */
	WGCONF_TABLE_OFF,      /* no routes at all */
	WGCONF_TABLE_ID,       /* routes in table_id */
};

union wgconf_sockaddr {
	struct sockaddr sa;
	struct sockaddr_in in4;
	struct sockaddr_in6 in6;
};

struct wgconf_peer {
	uint8_t public_key[WGCONF_KEY_LEN];
	uint8_t preshared_key[WGCONF_KEY_LEN];
	bool has_preshared_key;
	bool has_endpoint;
	union wgconf_sockaddr endpoint;
	uint16_t persistent_keepalive; /* seconds; 0 = off */
	size_t n_allowed_ips;
	struct netlink_prefix *allowed_ips;
	unsigned int line; /* where its [Peer] section starts, for later error messages */
};

struct wgconf {
	/* [Interface] */
	uint8_t private_key[WGCONF_KEY_LEN];
	bool has_private_key;
	uint16_t listen_port; /* 0 = random */
	uint32_t fwmark;
	unsigned int mtu;
	enum wgconf_table table;
	uint32_t table_id;
	size_t n_addresses;
	struct netlink_prefix *addresses;
	/* [Spliced]: our own settings */
	char name[16];        /* interface name; "" = derive from the file name */
	unsigned int workers; /* 0 = one per core */
	bool offload;         /* TUN virtio-net header + UDP GSO/GRO */
	/* [Peer] sections */
	size_t n_peers;
	struct wgconf_peer *peers;
};

/*
 * Parses a wg-quick file. On failure returns -errno and writes
 * "path:line: message" into err (WGCONF_ERR_LEN bytes). Warnings (keys
 * accepted but ignored, like DNS) are logged (lib/log.h).
 */
int wgconf_parse_file(struct wgconf *conf, const char *path, char *err, size_t errlen);
/* The same over a string; name is what error messages call the file. */
int wgconf_parse_string(struct wgconf *conf, const char *text, const char *name, char *err,
                        size_t errlen);
/* Frees the arrays and wipes the keys. */
void wgconf_free(struct wgconf *conf);

/* Interface name from a path: "/etc/wireguard/wg0.conf" -> "wg0". -EINVAL if not a valid name. */
int wgconf_name_from_path(const char *path, char name[16]);

/* Parses "host:port", "[v6]:port" (brackets allowed around any host); a name is resolved now. */
int wgconf_endpoint_parse(const char *s, union wgconf_sockaddr *out);
/*
 * Set by fuzz targets: endpoint hosts must be numeric addresses (a name is
 * -EHOSTUNREACH), so arbitrary input never sends a DNS query.
 */
extern bool wgconf_numeric_hosts_only;
/* An endpoint prints with lib/sockaddr.h's sa_str(): "a.b.c.d:port" or "[v6]:port". */

/* Constant-time key encodings, as wg(8) writes them. from_* return 0 or -EINVAL. */
int wgconf_key_from_base64(uint8_t key[WGCONF_KEY_LEN], const char *s);
void wgconf_key_to_base64(char out[WGCONF_KEY_B64_LEN + 1], const uint8_t key[WGCONF_KEY_LEN]);
int wgconf_key_from_hex(uint8_t key[WGCONF_KEY_LEN], const char *s);
void wgconf_key_to_hex(char out[WGCONF_KEY_HEX_LEN + 1], const uint8_t key[WGCONF_KEY_LEN]);
bool wgconf_key_is_zero(const uint8_t key[WGCONF_KEY_LEN]);

#endif
