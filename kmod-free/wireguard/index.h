/* SPDX-License-Identifier: MIT */
/* Receiver-index table: random 32-bit session ids mapped to handshakes and keypairs. */
#ifndef SPLICED_WG_INDEX_H
#define SPLICED_WG_INDEX_H

#include <stdint.h>

struct wg_peer;

enum wg_index_type {
	WG_INDEX_HANDSHAKE = 1u << 0,
	WG_INDEX_KEYPAIR = 1u << 1,
};

enum wg_index_limits {
	WG_INDEX_BUCKETS = 1u << 13,
};

/*
 * Embedded in struct wg_handshake and struct wg_keypair (intrusive chaining,
 * no allocation). index is in host order: messages carry it little endian,
 * read with wg_le32() and written with wg_put_le32().
 */
struct wg_index_entry {
	struct wg_index_entry *next;
	struct wg_peer *peer;
	uint32_t index;
	uint8_t type;   /* enum wg_index_type */
	uint8_t linked; /* in the table */
};

struct wg_index_table {
	struct wg_index_entry *buckets[WG_INDEX_BUCKETS];
	uint64_t key[2]; /* random: bucket choice is not predictable from the index */
	unsigned count;
};

int wg_index_table_init(struct wg_index_table *t);
/* Give e a fresh random index not in use and link it (e->peer/type set by caller). */
int wg_index_insert(struct wg_index_table *t, struct wg_index_entry *e);
/* new takes over old's index (a keypair inheriting its handshake's id). */
void wg_index_replace(struct wg_index_table *t, struct wg_index_entry *old,
                      struct wg_index_entry *new_entry);
void wg_index_remove(struct wg_index_table *t, struct wg_index_entry *e);
/* The entry for index whose type is in type_mask, or NULL. */
struct wg_index_entry *wg_index_lookup(const struct wg_index_table *t, uint32_t index,
                                       unsigned type_mask);

#endif
