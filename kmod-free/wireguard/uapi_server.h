/* SPDX-License-Identifier: MIT */
/* The UAPI socket server: wg(8)'s get=1/set=1 over /var/run/wireguard/<name>.sock. */
#ifndef SPLICED_WG_UAPI_SERVER_H
#define SPLICED_WG_UAPI_SERVER_H

#include <stddef.h>

#include "uapi.h"

/* What the socket server calls; both return 0 or -errno (sent back as errno=N). */
struct wg_uapi_ops {
	int (*get)(void *ctx, struct wg_uapi_info *out); /* out is freed by wg_uapi_info_free */
	int (*set)(void *ctx, const struct wg_uapi_set *req);
	void *ctx;
};

/*
 * Creates /var/run/wireguard/<name>.sock (mode 0600, directory 0755),
 * replacing a stale socket but refusing one a live process still serves.
 * Returns the listening fd (non-blocking) or -errno.
 */
int wg_uapi_listen(const char *name, char *path, size_t pathlen);
/*
 * Serves one client on a connected fd until it closes, sends garbage or
 * timeout_ms have passed in all: reads requests, answers each. The caller
 * (the device's control thread, which also runs the timers) waits at most
 * that long however slowly the client sends or reads (review L10); fd is
 * made non-blocking.
 */
void wg_uapi_serve(int fd, const struct wg_uapi_ops *ops, unsigned int timeout_ms);

#endif
