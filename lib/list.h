/* SPDX-License-Identifier: MIT */
/* Intrusive circular doubly linked list (deadline queues of a worker). */
#ifndef SPLICED_LIST_H
#define SPLICED_LIST_H

#include <stdbool.h>
#include <stddef.h>

struct list_node {
	struct list_node *prev, *next;
};

static inline void list_init(struct list_node *h)
{
	h->prev = h->next = h;
}

static inline bool list_empty(const struct list_node *h)
{
	return h->next == h;
}

/* A node not on any list points at itself, so list_del is idempotent. */
static inline void list_del(struct list_node *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	n->prev = n->next = n;
}

static inline void list_add_tail(struct list_node *h, struct list_node *n)
{
	n->prev = h->prev;
	n->next = h;
	h->prev->next = n;
	h->prev = n;
}

#define list_entry(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))

#endif
