/* SPDX-License-Identifier: MIT */
/* The outbound table, the direct and block outbounds, and the outbound socket every one connects with. */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "outbound.h"

/* direct: connect to what the client asked for. */
static enum proto_connect_result direct_start(void *st, const struct outbound *ob,
                                              const struct proto_target *t,
                                              struct proto_target *dest)
{
	(void)st, (void)ob;
	*dest = *t;
	return CONNECT_OK;
}

static const uint8_t *no_greeting(void *st, size_t *len)
{
	(void)st;
	*len = 0;
	return NULL;
}

static const struct outbound_ops direct_ops = {
        .name = "direct",
        .start = direct_start,
        .greeting = no_greeting,
};

/* block: refuse with the protocol's "not allowed" (SOCKS5 REP 02, HTTP 403). */
static enum proto_connect_result block_start(void *st, const struct outbound *ob,
                                             const struct proto_target *t,
                                             struct proto_target *dest)
{
	(void)st, (void)ob, (void)t, (void)dest;
	return CONNECT_NOT_ALLOWED;
}

static const struct outbound_ops block_ops = {
        .name = "block",
        .start = block_start,
        .greeting = no_greeting,
};

static const struct outbound_ops *const table[] = {
        [OUTBOUND_DIRECT] = &direct_ops,
        [OUTBOUND_SOCKS5] = &outbound_socks5_ops,
        [OUTBOUND_BLOCK] = &block_ops,
        [OUTBOUND_HTTP] = &outbound_http_ops,
        [OUTBOUND_SHADOWSOCKS] = &outbound_ss_ops,
};

const struct outbound_ops *outbound_ops(enum outbound_type type)
{
	return table[type];
}

void tcp_user_timeout(int fd, unsigned ms)
{
	if (ms)
		setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &ms, sizeof(ms));
}

void tcp_keepalive(int fd, unsigned secs)
{
	int on = 1, idle = (int)secs, intvl = secs / 3 ? (int)(secs / 3) : 1, cnt = 3;

	setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof(on));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
}

/* The outbound's mark, interface and source address on fd; 0 or -errno. */
static int apply_source(int fd, const struct outbound *ob, int family)
{
	if (ob->fwmark && setsockopt(fd, SOL_SOCKET, SO_MARK, &ob->fwmark, sizeof(ob->fwmark)) < 0)
		return -errno;
	if (ob->bind_interface[0] && setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, ob->bind_interface,
	                                        (socklen_t)strlen(ob->bind_interface)) < 0)
		return -errno;
	const struct sockaddr_storage *src = outbound_source(ob, family);

	if (src) {
		socklen_t len = family == AF_INET ? sizeof(struct sockaddr_in)
		                                  : sizeof(struct sockaddr_in6);
		if (bind(fd, (const struct sockaddr *)src, len) < 0)
			return -errno;
	}
	return 0;
}

int outbound_socket(const struct outbound *ob, int family, unsigned keepalive_s)
{
	int fd, ret;

	if (ob->bind_addr.ss_family != AF_UNSPEC && ob->bind_addr.ss_family != family)
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
	if (ob->keepalive_set)
		keepalive_s = ob->keepalive_ms / 1000; /* the outbound's own, over [main]'s */
	if (keepalive_s)
		tcp_keepalive(fd, keepalive_s);
	tcp_user_timeout(fd, ob->user_timeout_ms);
	/* Port 0 at connect time: let the kernel pick the port with the 4-tuple known. */
	if (outbound_source(ob, family))
		setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof(one));
	ret = apply_source(fd, ob, family);
	if (ret < 0) {
		close(fd);
		return ret;
	}
	return fd;
}

int outbound_udp_socket(const struct outbound *ob, int family)
{
	static const int one = 1;
	int fd, ret;

	if (ob->bind_addr.ss_family != AF_UNSPEC && ob->bind_addr.ss_family != family)
		return -EAFNOSUPPORT;
	fd = socket(family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* One socket per family: an IPv6 one must not take IPv4 through mapped addresses. */
	if (family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	ret = apply_source(fd, ob, family);
	if (ret < 0) {
		close(fd);
		return ret;
	}
	return fd;
}
