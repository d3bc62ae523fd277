/* SPDX-License-Identifier: MIT */
/* Allowed-IPs tries: path-compressed binary tries with longest-prefix match (whitepaper 3.3). */
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "allowedips.h"
#include "peer.h"

/*
 * A node holds a prefix (bits [0, cidr) of key are meaningful, the rest are
 * zero) and maybe a peer. Children extend the prefix: child[b] holds prefixes
 * whose bit number cidr is b. Nodes without a peer exist only where two
 * branches diverge, so a trie has fewer than 2 * (number of prefixes) nodes.
 * Addresses are held as two 64-bit words in host order, most significant
 * (first on the wire) bit first, so masking and comparing are word operations.
 *
 * Every node with a peer is also on that peer's list (peer->aip_head, in
 * insertion order), so what concerns one peer (`wg show`, removing it,
 * replacing its prefixes) costs its own prefixes times the depth, not a
 * walk of the whole trie: with 20,000 peers the per-peer trie walks held
 * the device lock for 13.6 s per `wg show` (review L13).
 */
struct wg_aip_node {
	struct wg_aip_node *child[2];
	struct wg_peer *peer;
	struct wg_aip_node *peer_next, **peer_pprev; /* the peer's list, when peer is set */
	uint64_t key[2];
	uint8_t cidr;
	bool v6;
};

static void link_peer(struct wg_aip_node *n, struct wg_peer *peer)
{
	if (!peer->aip_tail)
		peer->aip_tail = &peer->aip_head;
	n->peer = peer;
	n->peer_next = NULL;
	n->peer_pprev = peer->aip_tail;
	*peer->aip_tail = n;
	peer->aip_tail = &n->peer_next;
}

static void unlink_peer(struct wg_aip_node *n)
{
	struct wg_peer *peer = n->peer;

	*n->peer_pprev = n->peer_next;
	if (n->peer_next)
		n->peer_next->peer_pprev = n->peer_pprev;
	else
		peer->aip_tail = n->peer_pprev;
	n->peer = NULL;
	n->peer_next = NULL;
	n->peer_pprev = NULL;
}

static void load_key(uint64_t key[2], int family, const void *addr)
{
	const uint8_t *a = addr;
	int i, n = family == AF_INET ? 4 : 16;

	key[0] = key[1] = 0;
	for (i = 0; i < n; i++)
		key[i / 8] |= (uint64_t)a[i] << (56 - 8 * (i % 8));
}

static void store_key(uint8_t *out, int family, const uint64_t key[2])
{
	int i, n = family == AF_INET ? 4 : 16;

	for (i = 0; i < n; i++)
		out[i] = (uint8_t)(key[i / 8] >> (56 - 8 * (i % 8)));
}

static uint64_t word_mask(unsigned bits)
{
	return bits == 0 ? 0 : bits >= 64 ? ~0ULL : ~0ULL << (64 - bits);
}

static void mask_key(uint64_t key[2], unsigned cidr)
{
	key[0] &= word_mask(cidr);
	key[1] &= cidr > 64 ? word_mask(cidr - 64) : 0;
}

static unsigned bit_at(const uint64_t key[2], unsigned i)
{
	return (unsigned)(key[i / 64] >> (63 - i % 64)) & 1;
}

/* Length of the common prefix of a and b, capped at limit. */
static unsigned common_bits(const uint64_t a[2], const uint64_t b[2], unsigned limit)
{
	uint64_t x = a[0] ^ b[0];
	unsigned n;

	if (x)
		n = (unsigned)__builtin_clzll(x);
	else if ((x = a[1] ^ b[1]))
		n = 64 + (unsigned)__builtin_clzll(x);
	else
		n = 128;
	return n < limit ? n : limit;
}

/* Does node's prefix cover key? */
static int prefix_matches(const struct wg_aip_node *n, const uint64_t key[2])
{
	return ((n->key[0] ^ key[0]) & word_mask(n->cidr)) == 0 &&
	       (n->cidr <= 64 || ((n->key[1] ^ key[1]) & word_mask(n->cidr - 64u)) == 0);
}

static struct wg_aip_node *node_new(const uint64_t key[2], unsigned cidr, bool v6,
                                    struct wg_peer *peer)
{
	struct wg_aip_node *n = calloc(1, sizeof(*n));

	if (!n)
		return NULL;
	n->key[0] = key[0];
	n->key[1] = key[1];
	mask_key(n->key, cidr);
	n->cidr = (uint8_t)cidr;
	n->v6 = v6;
	if (peer)
		link_peer(n, peer);
	return n;
}

static struct wg_aip_node **root_of(struct wg_allowedips *t, int family)
{
	return family == AF_INET ? &t->root4 : family == AF_INET6 ? &t->root6 : NULL;
}

void wg_allowedips_init(struct wg_allowedips *t)
{
	t->root4 = t->root6 = NULL;
}

static void free_tree(struct wg_aip_node *n)
{
	if (!n)
		return;
	free_tree(n->child[0]);
	free_tree(n->child[1]);
	if (n->peer) {
		/* every node goes: the peer's list empties with it */
		n->peer->aip_head = NULL;
		n->peer->aip_tail = NULL;
	}
	free(n);
}

void wg_allowedips_free(struct wg_allowedips *t)
{
	free_tree(t->root4);
	free_tree(t->root6);
	wg_allowedips_init(t);
}

int wg_allowedips_insert(struct wg_allowedips *t, int family, const void *addr, uint8_t cidr,
                         struct wg_peer *peer)
{
	struct wg_aip_node **slot = root_of(t, family), *n, *fresh, *mid;
	unsigned maxbits = family == AF_INET ? 32 : 128, common;
	bool v6 = family == AF_INET6;
	uint64_t key[2];

	if (!slot || cidr > maxbits || !peer)
		return -EINVAL;
	load_key(key, family, addr);
	mask_key(key, cidr);
	while ((n = *slot)) {
		common = common_bits(n->key, key, n->cidr < cidr ? n->cidr : cidr);
		if (common == n->cidr && n->cidr == cidr) {
			/* same prefix: replace its owner */
			if (n->peer != peer) {
				if (n->peer)
					unlink_peer(n);
				link_peer(n, peer);
			}
			return 0;
		}
		if (common == n->cidr) {
			/* n is a strict prefix of the new one: descend. */
			slot = &n->child[bit_at(key, n->cidr)];
			continue;
		}
		fresh = node_new(key, cidr, v6, peer);
		if (!fresh)
			return -ENOMEM;
		if (common == cidr) {
			/* The new prefix covers n: it goes above n. */
			fresh->child[bit_at(n->key, cidr)] = n;
			*slot = fresh;
			return 0;
		}
		/* They diverge at bit `common`: join them under a peerless node. */
		mid = node_new(key, common, v6, NULL);
		if (!mid) {
			unlink_peer(fresh);
			free(fresh);
			return -ENOMEM;
		}
		mid->child[bit_at(key, common)] = fresh;
		mid->child[bit_at(n->key, common)] = n;
		*slot = mid;
		return 0;
	}
	fresh = node_new(key, cidr, v6, peer);
	if (!fresh)
		return -ENOMEM;
	*slot = fresh;
	return 0;
}

/* Remove a peerless node with at most one child, keeping the trie compressed. */
static void compact(struct wg_aip_node **slot)
{
	struct wg_aip_node *n = *slot;

	if (n->peer || (n->child[0] && n->child[1]))
		return;
	*slot = n->child[0] ? n->child[0] : n->child[1];
	free(n);
}

static int remove_exact(struct wg_aip_node **slot, const uint64_t key[2], unsigned cidr,
                        struct wg_peer *peer)
{
	struct wg_aip_node *n = *slot;
	int ret;

	if (!n || n->cidr > cidr || !prefix_matches(n, key))
		return -ENOENT;
	if (n->cidr == cidr) {
		if (!n->peer || (peer && n->peer != peer))
			return -ENOENT;
		unlink_peer(n);
		compact(slot);
		return 0;
	}
	ret = remove_exact(&n->child[bit_at(key, n->cidr)], key, cidr, peer);
	if (ret == 0)
		compact(slot);
	return ret;
}

int wg_allowedips_remove(struct wg_allowedips *t, int family, const void *addr, uint8_t cidr,
                         struct wg_peer *peer)
{
	struct wg_aip_node **slot = root_of(t, family);
	uint64_t key[2];

	if (!slot || cidr > (family == AF_INET ? 32 : 128))
		return -EINVAL;
	load_key(key, family, addr);
	mask_key(key, cidr);
	return remove_exact(slot, key, cidr, peer);
}

void wg_allowedips_remove_by_peer(struct wg_allowedips *t, struct wg_peer *peer)
{
	/* Each removal descends from the root to compact the path behind it. */
	while (peer->aip_head) {
		struct wg_aip_node *n = peer->aip_head;
		uint64_t key[2] = {n->key[0], n->key[1]};

		if (remove_exact(n->v6 ? &t->root6 : &t->root4, key, n->cidr, peer) != 0)
			unlink_peer(n); /* not in t: cannot happen, but never loop */
	}
}

static struct wg_peer *lookup(const struct wg_aip_node *n, const uint64_t key[2], unsigned maxbits)
{
	struct wg_peer *best = NULL;

	while (n && prefix_matches(n, key)) {
		if (n->peer)
			best = n->peer;
		if (n->cidr == maxbits)
			break;
		n = n->child[bit_at(key, n->cidr)];
	}
	return best;
}

struct wg_peer *wg_allowedips_lookup(const struct wg_allowedips *t, int family, const void *addr)
{
	uint64_t key[2];

	if (family != AF_INET && family != AF_INET6)
		return NULL;
	load_key(key, family, addr);
	return lookup(family == AF_INET ? t->root4 : t->root6, key, family == AF_INET ? 32 : 128);
}

enum {
	IPV4_HDR_MIN = 20,
	IPV4_SRC_OFF = 12,
	IPV4_DST_OFF = 16,
	IPV6_HDR_LEN = 40,
	IPV6_SRC_OFF = 8,
	IPV6_DST_OFF = 24,
};

static struct wg_peer *lookup_pkt(const struct wg_allowedips *t, const uint8_t *pkt, size_t len,
                                  int dst)
{
	if (len >= IPV4_HDR_MIN && pkt[0] >> 4 == 4)
		return wg_allowedips_lookup(t, AF_INET, pkt + (dst ? IPV4_DST_OFF : IPV4_SRC_OFF));
	if (len >= IPV6_HDR_LEN && pkt[0] >> 4 == 6)
		return wg_allowedips_lookup(t, AF_INET6, pkt + (dst ? IPV6_DST_OFF : IPV6_SRC_OFF));
	return NULL;
}

struct wg_peer *wg_allowedips_lookup_dst(const struct wg_allowedips *t, const uint8_t *pkt,
                                         size_t len)
{
	return lookup_pkt(t, pkt, len, 1);
}

struct wg_peer *wg_allowedips_lookup_src(const struct wg_allowedips *t, const uint8_t *pkt,
                                         size_t len)
{
	return lookup_pkt(t, pkt, len, 0);
}

int wg_allowedips_walk(const struct wg_allowedips *t, const struct wg_peer *peer,
                       int (*fn)(void *ctx, int family, const uint8_t *addr, uint8_t cidr),
                       void *ctx)
{
	(void)t;
	for (const struct wg_aip_node *n = peer->aip_head; n; n = n->peer_next) {
		int family = n->v6 ? AF_INET6 : AF_INET, ret;
		uint8_t addr[16];

		store_key(addr, family, n->key);
		ret = fn(ctx, family, addr, n->cidr);
		if (ret)
			return ret;
	}
	return 0;
}
