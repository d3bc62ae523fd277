/* SPDX-License-Identifier: MIT */
/* The sd_notify(3) protocol without libsystemd: one datagram per state change to $NOTIFY_SOCKET. */
#ifndef SPLICED_SDNOTIFY_H
#define SPLICED_SDNOTIFY_H

/*
 * Open and connect the socket $NOTIFY_SOCKET names (a path, or "@name" in
 * the abstract namespace), before the privilege drop: the descriptor
 * keeps working whoever spliced becomes. -1 when the variable is unset
 * (not run by systemd), or the socket cannot be reached (logged once).
 * The variable is removed, so processes spliced starts do not see it.
 */
int sdnotify_open(void);
/* Send "READY=1", "RELOADING=1\nMONOTONIC_USEC=...", "STOPPING=1", ... (no-op when fd < 0). */
void sdnotify(int fd, const char *state);
/* RELOADING=1 with the CLOCK_MONOTONIC time systemd 253+ wants beside it. */
void sdnotify_reloading(int fd);

#endif
