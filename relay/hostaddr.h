/* SPDX-License-Identifier: MIT */
/* Whether an address belongs to this host: the kernel's route lookup, asked over rtnetlink. */
#ifndef SPLICED_HOSTADDR_H
#define SPLICED_HOSTADDR_H

#include <stdint.h>
#include <sys/socket.h>

/*
 * 1 when a connect(2) to `a` (AF_INET or AF_INET6; the port is ignored)
 * from a socket with SO_MARK `fwmark` would stay on this host: the route
 * the kernel picks is of type local. That is every address of every
 * interface, the whole of 127.0.0.0/8, and prefixes routed as local ("ip
 * route add local 192.0.2.0/24 dev lo"). 0 when it would leave (or has no
 * route at all), -errno when the kernel could not be asked. Exact at the
 * time of the call: nothing is cached. Each thread keeps its own netlink
 * socket, opened on first use (about 1.3 us per call on the development
 * machine, see docs/security.md).
 */
int hostaddr_owned(const struct sockaddr_storage *a, uint32_t fwmark);

#endif
