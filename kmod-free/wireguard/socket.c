/* SPDX-License-Identifier: MIT */
/* The device's UDP sockets: binding (one per worker and family), rebinding, sending with GSO. */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "device_internal.h"
#include "sockaddr.h"

static int sock_for(const struct wg_worker *w, const union wgconf_sockaddr *ep)
{
	return ep->sa.sa_family == AF_INET6 ? w->udp6 : w->udp4;
}

void wg_dev_send_one(struct wg_worker *w, const union wgconf_sockaddr *ep, const void *buf,
                     size_t len)
{
	int fd = sock_for(w, ep);

	if (fd < 0 || sendto(fd, buf, len, 0, &ep->sa, sa_len(ep->sa.sa_family)) < 0)
		atomic_fetch_add(&w->dev->stats.tx_send_errors, 1);
}

/*
 * Sends n sealed messages to one endpoint. With UDP GSO, a run of equal
 * sizes (the last may be shorter) goes out as one sendmsg and the kernel
 * cuts it into datagrams; otherwise sendmmsg batches the system calls.
 */
void wg_dev_send_batch(struct wg_worker *w, const union wgconf_sockaddr *ep, struct iovec *iov,
                       unsigned int n)
{
	struct wg_device *d = w->dev;
	int fd = sock_for(w, ep);
	unsigned int i = 0;

	if (fd < 0) {
		atomic_fetch_add(&d->stats.tx_send_errors, n);
		return;
	}
	while (i < n) {
		unsigned int j = i + 1;
		size_t seg = iov[i].iov_len, total = seg;

		if (atomic_load(&d->gso)) {
			while (j < n && j - i < GSO_MAX_SEGS && total + iov[j].iov_len <= 65000 &&
			       iov[j].iov_len <= seg) {
				total += iov[j].iov_len;
				if (iov[j++].iov_len < seg)
					break; /* a shorter datagram ends the train */
			}
		}
		if (j - i > 1) {
			char cbuf[CMSG_SPACE(sizeof(uint16_t))] = {0};
			struct msghdr mh = {.msg_name = (void *)&ep->sa,
			                    .msg_namelen = sa_len(ep->sa.sa_family),
			                    .msg_iov = &iov[i],
			                    .msg_iovlen = j - i,
			                    .msg_control = cbuf,
			                    .msg_controllen = sizeof(cbuf)};
			struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
			uint16_t gso = (uint16_t)seg;

			cm->cmsg_level = SOL_UDP;
			cm->cmsg_type = UDP_SEGMENT;
			cm->cmsg_len = CMSG_LEN(sizeof(gso));
			memcpy(CMSG_DATA(cm), &gso, sizeof(gso));
			if (sendmsg(fd, &mh, 0) >= 0) {
				atomic_fetch_add(&d->stats.tx_gso_sends, 1);
				i = j;
				continue;
			}
			if (errno == EIO || errno == EINVAL || errno == EOPNOTSUPP) {
				atomic_store(&d->gso, false); /* the egress path cannot segment */
				j = i + 1;
			} else {
				atomic_fetch_add(&d->stats.tx_send_errors, j - i);
				i = j;
				continue;
			}
		}
		/* No train: batch the remaining single datagrams with sendmmsg. */
		{
			struct mmsghdr mm[TX_BATCH];
			unsigned int k = 0;

			while (i + k < n && k < TX_BATCH && (!atomic_load(&d->gso) || k == 0)) {
				memset(&mm[k], 0, sizeof(mm[k]));
				mm[k].msg_hdr.msg_name = (void *)&ep->sa;
				mm[k].msg_hdr.msg_namelen = sa_len(ep->sa.sa_family);
				mm[k].msg_hdr.msg_iov = &iov[i + k];
				mm[k].msg_hdr.msg_iovlen = 1;
				k++;
			}
			int sent = sendmmsg(fd, mm, k, 0);

			if (sent < (int)k)
				atomic_fetch_add(&d->stats.tx_send_errors,
				                 k - (unsigned)(sent < 0 ? 0 : sent));
			i += k;
		}
	}
}

int wg_dev_udp_socket(int family, uint16_t *port, uint32_t fwmark, bool gro)
{
	union wgconf_sockaddr a;
	int fd, one = 1, ret;
	socklen_t alen;

	fd = socket(family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_UDP);
	if (fd < 0)
		return -errno;
	memset(&a, 0, sizeof(a));
	if (family == AF_INET6) {
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
		a.in6.sin6_family = AF_INET6;
		a.in6.sin6_port = htons(*port);
		alen = sizeof(a.in6);
	} else {
		a.in4.sin_family = AF_INET;
		a.in4.sin_port = htons(*port);
		alen = sizeof(a.in4);
	}
	/* Every worker binds its own socket to the port; the kernel spreads flows by hash. */
	setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
	if (fwmark)
		setsockopt(fd, SOL_SOCKET, SO_MARK, &fwmark, sizeof(fwmark));
	if (gro)
		setsockopt(fd, SOL_UDP, UDP_GRO, &one, sizeof(one));
	{
		int sz = 4 << 20;

		setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &sz, sizeof(sz));
		setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &sz, sizeof(sz));
	}
	if (bind(fd, &a.sa, alen) < 0) {
		ret = -errno;
		close(fd);
		return ret;
	}
	if (getsockname(fd, &a.sa, &alen) == 0)
		*port = ntohs(family == AF_INET6 ? a.in6.sin6_port : a.in4.sin_port);
	return fd;
}

/*
 * `wg set listen-port`: binds a full new set of sockets (one per worker and
 * family, SO_REUSEPORT, port 0 = pick one) and only when all of them bound
 * swaps them in with dup3() onto the old descriptor numbers, so a worker
 * never sees a closed or reused number; a call already running on the old
 * socket finishes there. Then each worker is woken to poll the new ones.
 * On failure nothing changed. Device lock exclusive.
 */
int wg_dev_rebind(struct wg_device *d, uint16_t want, uint32_t fwmark)
{
	int fresh[2 * TUN_MAX_QUEUES];
	uint16_t port = want;
	unsigned int n = 0;
	int ret = 0;

	for (unsigned int i = 0; i < d->nworkers && ret == 0; i++) {
		const struct wg_worker *w = &d->workers[i];

		fresh[n] = wg_dev_udp_socket(AF_INET, &port, fwmark, d->gro);
		ret = fresh[n] < 0 ? fresh[n] : 0;
		n++;
		if (ret == 0 && w->udp6 >= 0) {
			fresh[n] = wg_dev_udp_socket(AF_INET6, &port, fwmark, d->gro);
			ret = fresh[n] < 0 ? fresh[n] : 0;
			n++;
		}
	}
	if (ret == 0) {
		n = 0;
		for (unsigned int i = 0; i < d->nworkers; i++) {
			struct wg_worker *w = &d->workers[i];
			uint64_t one = 1;

			if (dup3(fresh[n++], w->udp4, O_CLOEXEC) < 0)
				ret = -errno;
			if (w->udp6 >= 0 && dup3(fresh[n++], w->udp6, O_CLOEXEC) < 0)
				ret = -errno;
			if (write(w->wake_fd, &one, sizeof(one)) < 0)
				ret = ret ? ret : -errno;
		}
		d->port = port;
	}
	for (unsigned int i = 0; i < n; i++)
		if (fresh[i] >= 0)
			close(fresh[i]);
	return ret;
}

/* `wg set fwmark`: marks every socket of every worker. Device lock exclusive. */
void wg_dev_set_fwmark(struct wg_device *d, uint32_t fwmark)
{
	for (unsigned int i = 0; i < d->nworkers; i++) {
		struct wg_worker *w = &d->workers[i];

		if (w->udp4 >= 0)
			setsockopt(w->udp4, SOL_SOCKET, SO_MARK, &fwmark, sizeof(fwmark));
		if (w->udp6 >= 0)
			setsockopt(w->udp6, SOL_SOCKET, SO_MARK, &fwmark, sizeof(fwmark));
	}
	d->fwmark = fwmark;
}
