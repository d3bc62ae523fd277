/* SPDX-License-Identifier: MIT */
/* The Shadowsocks salt filter: every worker's, exact (no false positives), bounded by count or by time. */
#ifndef SPLICED_REPLAY_H
#define SPLICED_REPLAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * A replayed first flight (the salt an eavesdropper recorded) may land on
 * any worker (SO_REUSEPORT hashes the new 4-tuple), so the filter is one
 * per process, sharded with a lock per shard; a connection touches it once
 * or twice, never per byte. Salts are remembered by their first 16 bytes
 * (a random 128-bit value) in open-addressed tables keyed with SipHash and
 * a random key, in two generations:
 *
 *   counted (SIP004: no timestamp, so time cannot bound it): the current
 *     generation is retired once it holds `cap` salts, so at least the last
 *     `cap` and at most 2 x cap salts are refused again;
 *   timed (SIP022 section 3.1.5: keep every salt 60 s): the current
 *     generation is retired every 60 s, so a salt is kept 60 to 120 s; past
 *     `cap` salts in a generation new ones are refused (REPLAY_FULL) rather
 *     than a replay let through.
 *
 * Tables grow as salts come (from 64 slots a shard), so an idle server
 * holds little.
 */
enum replay_res { REPLAY_NEW = 0, REPLAY_SEEN, REPLAY_FULL };

enum { REPLAY_KEEP_S = 60 };

struct replay;

/* NULL when out of memory. */
struct replay *replay_new(bool timed, size_t cap);
void replay_free(struct replay *r);
/* Check and remember salt (len >= 16); now_s is monotonic seconds (used when timed). */
enum replay_res replay_add(struct replay *r, const uint8_t *salt, size_t len, uint64_t now_s);
/* Salts remembered now (both generations), for tests and the exit log. */
size_t replay_count(struct replay *r);

#endif
