/* SPDX-License-Identifier: MIT */
/* Mapped DNS: names given addresses of a private range (one IPv4 and one IPv6 each), and back; bounded, least recently used first out; shared by every queue. */
#ifndef SPLICED_TUN_DNSMAP_H
#define SPLICED_TUN_DNSMAP_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

/*
 * Entry i stands for one name and owns two addresses: base4 + i and
 * base6 + i. A name asked again gets its entry back (and is used most
 * recently); a new name takes a never-used entry, then the one used least
 * recently (its old name is forgotten: an app that cached it past its TTL
 * reaches the new name instead; mapped answers carry a TTL of 1 s and the
 * range is large, so that takes a long-lived cache and many names).
 * Names are looked up by a SipHash with a random key; addresses by
 * arithmetic. One mutex: a lookup per DNS query and per new flow.
 */
struct dnsmap_entry {
	char *name;          /* malloc'd, NULL: never used */
	uint32_t hnext;      /* hash chain, index + 1 */
	uint32_t prev, next; /* LRU list, index + 1 (head: least recent) */
};

struct dnsmap {
	pthread_mutex_t lock;
	uint8_t key[16];
	uint8_t base[2][16]; /* [0]: IPv4 (4 octets), [1]: IPv6 */
	bool on[2];
	uint32_t cap, fresh;
	struct dnsmap_entry *e;
	uint32_t *buckets, mask;
	uint32_t head, tail;
	uint64_t evicted;
};

/*
 * Up to cap names (lowered to what a family's range holds, n4 or n6
 * addresses from base4 / base6; a family whose n is 0 has none). 0 or -errno.
 */
int dnsmap_init(struct dnsmap *m, const uint8_t *base4, uint64_t n4, const uint8_t *base6,
                uint64_t n6, unsigned cap);
void dnsmap_destroy(struct dnsmap *m);
/*
 * The address (family 4 or 6) of name, made if need be, into addr. false:
 * that family has no range, or no memory.
 */
bool dnsmap_lookup(struct dnsmap *m, const char *name, int family, uint8_t *addr);
/* Whether addr lies in the range of its family (no lock). */
bool dnsmap_contains(const struct dnsmap *m, int family, const uint8_t *addr);
/* The name an address of the range stands for, into name (254 octets). false: none (any more). */
bool dnsmap_name(struct dnsmap *m, int family, const uint8_t *addr, char *name);

#endif
