/* SPDX-License-Identifier: MIT */
/* Outbound sockets: direct (bind address, interface, fwmark) and the upstream's socket. */
#ifndef SPLICED_OUTBOUND_H
#define SPLICED_OUTBOUND_H

#include "config.h"

/*
 * A non-blocking TCP socket for connecting to an address of `family`, with
 * the outbound's bind-address / bind-interface / fwmark applied (direct only).
 * Returns the fd or -errno; -EAFNOSUPPORT when bind-address has another family.
 */
int outbound_socket(const struct outbound *ob, int family);

#endif
