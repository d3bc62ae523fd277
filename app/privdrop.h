/* SPDX-License-Identifier: MIT */
/* Least privilege: after start-up, become [main] user/group with only the capabilities still needed. */
#ifndef SPLICED_PRIVDROP_H
#define SPLICED_PRIVDROP_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"

enum { PRIVDROP_CAPS = 64 }; /* capability numbers fit one 64-bit set (capset v3) */

/*
 * The capabilities a configuration needs once it runs, bit (1 << CAP_X)
 * each, with the line of the first section asking for it and why (both for
 * messages). A reload may only ask for what the running process still holds.
 */
struct privdrop_needs {
	uint64_t caps;
	int line[PRIVDROP_CAPS];
	const char *why[PRIVDROP_CAPS];
};

/* Where the process stands after privdrop_apply(). */
struct privdrop {
	bool dropped;               /* runs as [main] user, not root */
	struct privdrop_needs kept; /* its permitted = effective = bounding set */
};

/*
 * What cfg needs after start-up: CAP_NET_BIND_SERVICE for a listen port
 * below net.ipv4.ip_unprivileged_port_start, CAP_NET_ADMIN for an outbound
 * fwmark (SO_MARK per connection) and for every [wireguard] section (routes
 * and rules removed at exit, SO_MARK and SO_RCVBUFFORCE when `wg set`
 * rebinds), CAP_NET_RAW for bind-interface on kernels before 5.7.
 */
void privdrop_needs(const struct config *cfg, struct privdrop_needs *out);
/* Adds one need (e.g. a WireGuard ListenPort, known once its file is read). */
void privdrop_need(struct privdrop_needs *n, int cap, int line, const char *why);
/* True when a port needs CAP_NET_BIND_SERVICE in this network namespace. */
bool privdrop_port_privileged(unsigned port);

/*
 * Becomes cfg->run_uid/run_gid (supplementary groups cleared) keeping exactly
 * n->caps as permitted, effective and bounding set, no ambient or
 * inheritable ones, and sets no-new-privileges. Call it single-threaded
 * (capabilities are per thread: threads started later inherit the result),
 * after every privileged set-up. Without [main] user it does nothing.
 * 0 or -errno, logged.
 */
int privdrop_apply(const struct config *cfg, const struct privdrop_needs *n, struct privdrop *out);

/*
 * Whether a reload to cfg can be done with what pd holds: one log line
 * "file:line: ...: needs a restart" per capability it needs beyond pd->kept
 * and per users file the current credentials cannot open. A listener whose
 * address `running` already has is kept, not bound again: it needs nothing.
 * (Today SIGHUP reloads users only, so cfg is running.) 0 or -EPERM.
 * Always 0 when the process did not drop privileges.
 */
int privdrop_reload_check(const struct privdrop *pd, const struct config *running,
                          const struct config *cfg);
/* At start-up, after the drop: warn about users files a SIGHUP could not re-read. */
void privdrop_warn_unreadable(const struct privdrop *pd, const struct config *cfg);
/* "CAP_NET_ADMIN"; "CAP_37" for one this file has no name for. */
const char *privdrop_cap_name(int cap, char buf[16]);

#endif
