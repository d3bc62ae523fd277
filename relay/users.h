/* SPDX-License-Identifier: MIT */
/* Users tables: from INI keys and users files, immutable once built, checked in constant time. */
#ifndef SPLICED_USERS_H
#define SPLICED_USERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

struct inbound;
struct ss_users;

/* One user: name and password, both at most 255 bytes (RFC 1929). */
struct user {
	char *name;
	char *pass;
};

/*
 * A users table. Built from `user = name:password` keys and `users = FILE`
 * files; immutable once built; rebuilt whole on SIGHUP, with the rest of
 * the configuration snapshot (snapshot.c, app/reload.c).
 */
struct users {
	struct user *v;
	size_t n;
	struct ss_users *ss; /* a 2022 shadowsocks inbound's: users by identity header, else NULL */
};

/*
 * Read a users file: one "name password" (or "name:password") per line, '#'
 * comments and blank lines ignored. Errors are "file:line: message" to err.
 */
int users_load_file(const char *path, struct users *out, FILE *err);
/*
 * The same from an open stream, `path` naming it in messages. Names already
 * in in->inline_users (sorted, as config_load leaves them; in may be NULL)
 * are errors. *out is sorted. 0, -EINVAL (messages written) or -errno.
 */
int users_load_stream(FILE *f, const char *path, struct users *out, FILE *err,
                      const struct inbound *in);
/*
 * Warnings ("path: warning: ...") when a users file is readable or writable
 * by every user, writable by its group, or owned by someone other than root,
 * the running user or `owner` ((uid_t)-1: nobody else). Returns how many.
 */
int users_file_audit(const char *path, uid_t owner, FILE *err);
/* Frees the entries (passwords wiped), not *u itself; see users_destroy(). */
void users_free(struct users *u);
/* users_free() and free(u): for the table inbound_users_build() returns. */
void users_destroy(struct users *u);
/* Constant-time lookup (users.c says what that covers); true when both match an entry. */
bool users_check(const struct users *u, const char *name, const char *pass);
/* The same for wire fields that carry lengths (RFC 1929 ULEN/PLEN). */
bool users_check_len(const struct users *u, const char *name, size_t name_len, const char *pass,
                     size_t pass_len);
/* Append a copy (each field 1..255 bytes); 0, -EINVAL or -ENOMEM. */
int users_add(struct users *u, const char *name, size_t name_len, const char *pass,
              size_t pass_len);
/* Sort by name: users_check() needs it (the loaders and config_load do it). */
void users_sort(struct users *u);

/*
 * A Shadowsocks 2022 inbound's users (users_ss.c; users_ss_none.c in a
 * build without Shadowsocks, where no such inbound gets this far): the key
 * length a password fails to decode to as a PSK, 0 when it is one or in
 * is no 2022 inbound; the identity-header table built into u->ss (0 or
 * -errno, -EEXIST when two users share a key, said on err); and freed.
 */
size_t users_ss_psk_bad(const struct inbound *in, const char *pass);
int users_ss_build(struct users *u, const struct inbound *in, FILE *err);
void users_ss_free(struct users *u);
/* NULL when acceptable, else why not (for messages). */
const char *users_check_name(const char *name, size_t len);
const char *users_check_pass(const char *pass, size_t len);

#endif
