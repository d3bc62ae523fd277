/* SPDX-License-Identifier: MIT */
/* Shared helpers of the proto/ fuzz targets: invariant checks and a chunked-delivery helper. */
#ifndef SPLICED_FUZZ_H
#define SPLICED_FUZZ_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"

/* An invariant that must hold for every input; a violation is a crash for libFuzzer. */
#define CHECK(c)                                                                                  \
	do {                                                                                      \
		if (!(c)) {                                                                       \
			fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, #c); \
			abort();                                                                  \
		}                                                                                 \
	} while (0)

enum { FUZZ_BUF_MAX = 1 << 16 };

/*
 * Chunk size for the second, split delivery: 1..16 octets from the selector,
 * but never more than ~256 feeds per input so each run stays fast (the HTTP
 * parser rescans its head on every feed).
 */
static inline size_t fuzz_chunk(uint8_t selector, size_t len)
{
	size_t chunk = 1 + (selector & 15);

	if (len / chunk > 256)
		chunk = len / 256 + 1;
	return chunk;
}

static inline int fuzz_all_zero(const void *p, size_t n)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		if (b[i])
			return 0;
	return 1;
}

/* A host string is NUL-terminated inside its array and, when a domain, not empty. */
static inline void fuzz_check_target(const struct proto_target *t)
{
	size_t n = strnlen(t->host, sizeof(t->host));

	CHECK(n < sizeof(t->host));
	CHECK(t->kind == TARGET_IP || t->kind == TARGET_DOMAIN);
	if (t->kind == TARGET_DOMAIN)
		CHECK(n >= 1);
	if (t->kind == TARGET_IP) {
		const struct sockaddr_in *sin = (const struct sockaddr_in *)&t->addr;

		CHECK(t->addr.ss_family == AF_INET || t->addr.ss_family == AF_INET6);
		/* sin_port and sin6_port share their offset */
		CHECK(sin->sin_port == htons(t->port));
	}
}

#endif
