/* SPDX-License-Identifier: MIT */
/* Cryptokey routing: longest-prefix-match tries (IPv4 and IPv6) mapping addresses to peers. */
#ifndef SPLICED_WG_ALLOWEDIPS_H
#define SPLICED_WG_ALLOWEDIPS_H

#include <stddef.h>
#include <stdint.h>

struct wg_peer;
struct wg_aip_node;

/*
 * A path-compressed binary trie per family. Nodes are allocated on insert
 * (configuration path); lookups allocate nothing and walk at most one node
 * per distinct prefix length on the path. Not thread-safe: the device
 * serialises writers against readers (or swaps whole tables).
 * Addresses are in network byte order: 4 bytes (AF_INET) or 16 (AF_INET6).
 */
struct wg_allowedips {
	struct wg_aip_node *root4;
	struct wg_aip_node *root6;
};

void wg_allowedips_init(struct wg_allowedips *t);
void wg_allowedips_free(struct wg_allowedips *t);
/* Insert or replace addr/cidr -> peer; host bits past cidr are ignored. 0, -EINVAL, -ENOMEM. */
int wg_allowedips_insert(struct wg_allowedips *t, int family, const void *addr, uint8_t cidr,
                         struct wg_peer *peer);
/* Remove exactly addr/cidr if it maps to peer (any peer if NULL); 0 or -ENOENT. */
int wg_allowedips_remove(struct wg_allowedips *t, int family, const void *addr, uint8_t cidr,
                         struct wg_peer *peer);
/* Every prefix of peer; costs its own prefixes (times the depth), not the whole trie. */
void wg_allowedips_remove_by_peer(struct wg_allowedips *t, struct wg_peer *peer);
/* Longest-prefix match; NULL when nothing covers addr. */
struct wg_peer *wg_allowedips_lookup(const struct wg_allowedips *t, int family, const void *addr);
/*
 * The same, on an IP packet's header: by destination for outgoing packets
 * (which peer to encrypt to), by source for incoming (the decrypting peer
 * must own the source). NULL for a packet too short or not IPv4/IPv6.
 */
struct wg_peer *wg_allowedips_lookup_dst(const struct wg_allowedips *t, const uint8_t *pkt,
                                         size_t len);
struct wg_peer *wg_allowedips_lookup_src(const struct wg_allowedips *t, const uint8_t *pkt,
                                         size_t len);
/*
 * Call fn for every prefix of peer in the order they were inserted (for
 * `wg show`); stops at and returns fn's first non-zero. peer must be a
 * struct wg_peer (its aip_head list is read), as for every call here that
 * stores a peer.
 */
int wg_allowedips_walk(const struct wg_allowedips *t, const struct wg_peer *peer,
                       int (*fn)(void *ctx, int family, const uint8_t *addr, uint8_t cidr),
                       void *ctx);

#endif
