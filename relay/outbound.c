/* SPDX-License-Identifier: MIT */
/* Outbound socket set-up: source address, interface and fwmark for direct legs. */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "outbound.h"

int outbound_socket(const struct outbound *ob, int family)
{
	int fd, ret;

	if (ob->type == OUTBOUND_DIRECT && ob->bind_addr.ss_family != AF_UNSPEC &&
	    ob->bind_addr.ss_family != family)
		return -EAFNOSUPPORT;
	fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_TCP);
	if (fd < 0)
		return -errno;
	/*
	 * TCP_NODELAY on both legs (the inbound one inherits it from its
	 * listener): splice forwards what arrived when it arrived; with Nagle
	 * a client that disabled it would get its small writes held back
	 * behind the proxy's unacknowledged data (the 40 ms delayed-ACK
	 * stall). Bulk transfers are unaffected: splice writes whole
	 * pipe-fuls.
	 */
	static const int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (ob->type != OUTBOUND_DIRECT)
		return fd;
	if (ob->fwmark && setsockopt(fd, SOL_SOCKET, SO_MARK, &ob->fwmark, sizeof(ob->fwmark)) < 0)
		goto fail;
	if (ob->bind_interface[0] && setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, ob->bind_interface,
	                                        (socklen_t)strlen(ob->bind_interface)) < 0)
		goto fail;
	if (ob->bind_addr.ss_family != AF_UNSPEC) {
		/* Port 0 at connect time: let the kernel pick the port with the 4-tuple known. */
		setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof(one));
		socklen_t len = family == AF_INET ? sizeof(struct sockaddr_in)
		                                  : sizeof(struct sockaddr_in6);
		if (bind(fd, (const struct sockaddr *)&ob->bind_addr, len) < 0)
			goto fail;
	}
	return fd;
fail:
	ret = -errno;
	close(fd);
	return ret;
}
