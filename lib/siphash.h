/* SPDX-License-Identifier: MIT */
/* SipHash-2-4 (Aumasson, Bernstein 2012): a keyed hash for tables indexed by what an attacker chooses. */
#ifndef SPLICED_SIPHASH_H
#define SPLICED_SIPHASH_H

#include <stddef.h>
#include <stdint.h>

enum { SIPHASH_KEY_LEN = 16 };

uint64_t siphash24(const uint8_t key[SIPHASH_KEY_LEN], const void *data, size_t len);

#endif
