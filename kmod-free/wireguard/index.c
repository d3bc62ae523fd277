/* SPDX-License-Identifier: MIT */
/* Receiver-index table: random, collision-checked 32-bit session ids in a keyed hash table. */
#include <errno.h>
#include <string.h>

#include "crypto.h"
#include "index.h"

enum { BUCKET_BITS = 13 };
_Static_assert(WG_INDEX_BUCKETS == 1u << BUCKET_BITS, "bucket count");

/*
 * Our indices are uniformly random, so entries spread evenly by themselves;
 * the random multiplier only keeps a peer who learns some of our indices
 * from predicting which bucket they share. Cheap enough for every data packet.
 */
static unsigned bucket(const struct wg_index_table *t, uint32_t index)
{
	uint64_t h = ((uint64_t)index ^ t->key[0]) * (t->key[1] | 1);

	return (unsigned)(h >> (64 - BUCKET_BITS));
}

int wg_index_table_init(struct wg_index_table *t)
{
	memset(t, 0, sizeof(*t));
	return wg_random(t->key, sizeof(t->key));
}

struct wg_index_entry *wg_index_lookup(const struct wg_index_table *t, uint32_t index,
                                       unsigned type_mask)
{
	struct wg_index_entry *e;

	for (e = t->buckets[bucket(t, index)]; e; e = e->next)
		if (e->index == index)
			return (e->type & type_mask) ? e : NULL;
	return NULL;
}

static void link_entry(struct wg_index_table *t, struct wg_index_entry *e)
{
	struct wg_index_entry **head = &t->buckets[bucket(t, e->index)];

	e->next = *head;
	*head = e;
	e->linked = 1;
	t->count++;
}

int wg_index_insert(struct wg_index_table *t, struct wg_index_entry *e)
{
	uint32_t r;
	int ret;

	if (e->linked)
		wg_index_remove(t, e);
	/* With at most a few thousand live ids out of 2^32 this loops once in practice. */
	do {
		ret = wg_random(&r, sizeof(r));
		if (ret)
			return ret;
	} while (wg_index_lookup(t, r, ~0u));
	e->index = r;
	link_entry(t, e);
	return 0;
}

void wg_index_remove(struct wg_index_table *t, struct wg_index_entry *e)
{
	struct wg_index_entry **pp;

	if (!e->linked)
		return;
	for (pp = &t->buckets[bucket(t, e->index)]; *pp; pp = &(*pp)->next) {
		if (*pp == e) {
			*pp = e->next;
			t->count--;
			break;
		}
	}
	e->next = NULL;
	e->linked = 0;
}

void wg_index_replace(struct wg_index_table *t, struct wg_index_entry *old,
                      struct wg_index_entry *new_entry)
{
	uint32_t index = old->index;

	if (new_entry->linked)
		wg_index_remove(t, new_entry);
	wg_index_remove(t, old);
	new_entry->index = index;
	link_entry(t, new_entry);
}
