/* SPDX-License-Identifier: MIT */
/* The access log: one line per finished connection, gathered per worker and written a second later. */
#ifndef SPLICED_ACCESS_LOG_H
#define SPLICED_ACCESS_LOG_H

#include <netinet/in.h>
#include <stdint.h>
#include <sys/socket.h>

#include "proto.h"

struct conn;
struct worker;

/* What a connection carries for its line while the log is on (NULL otherwise). */
struct conn_log {
	uint64_t start_ms; /* the loop's monotonic clock at the accept */
	union {
		struct sockaddr sa;
		struct sockaddr_in6 in6;
	} client, remote;   /* remote: the address the outbound leg connected to (family 0: none) */
	const char *result; /* why it ended, when something said so (a static string) */
	char user[PROTO_CRED_MAX + 1];
	char target[PROTO_HOST_MAX + 8]; /* host:port as the client asked */
};

/* A worker's buffer of lines, and its own descriptor for the file. */
struct alog {
	int fd; /* -1: the log is off */
	char *buf;
	size_t len;
	uint64_t flushed_ms, warned_ms;
	const char *path; /* for reopening; NULL for stderr */
};

/*
 * Main, before the workers start: open `path` ("stderr": standard error),
 * O_APPEND, mode 0640. A descriptor or -errno.
 */
int alog_open(const char *path);
/* The connection was accepted: its line starts (no-op while the log is off). */
void alog_begin(struct conn *c);
void alog_user(struct conn *c, const char *user);
void alog_target(struct conn *c, const struct proto_target *t);
/* The client is not the accepted socket's peer but sa (an inbound's client() said so). */
void alog_client(struct conn *c, const struct sockaddr_storage *sa);
void alog_remote(struct conn *c, int fd);
/* The first reason given wins. */
void alog_result(struct conn *c, const char *why);
/* The connection is released: its line, with its bytes and duration. */
void alog_end(struct conn *c);
/* In the worker's loop: write what waits once a second or once 32 KiB wait; at exit, all. */
void alog_tick(struct worker *w, int force);
/* Milliseconds until the lines waiting are due (the loop waits no longer). */
uint64_t alog_due_ms(const struct worker *w);
/* SIGHUP or SIGUSR1: the file again by its name (logrotate's postrotate). */
void alog_reopen(struct worker *w);

#endif
