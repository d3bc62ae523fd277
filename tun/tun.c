/* SPDX-License-Identifier: MIT */
/* A TUN device: /dev/net/tun queues (IFF_TUN|IFF_NO_PI, multi-queue, optional virtio-net header). */
#include "tun.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/if_tun.h>
#include <linux/virtio_net.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

static int open_queue(struct ifreq *ifr)
{
	int fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	if (ioctl(fd, TUNSETIFF, ifr) < 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
}

/* TSO needs checksum offload too; TUN_F_CSUM alone only spares us checksums. */
static int enable_offloads(int fd)
{
	int hdrsz = (int)sizeof(struct virtio_net_hdr);
	unsigned int off = TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6;

	if (ioctl(fd, TUNSETVNETHDRSZ, &hdrsz) < 0)
		return -errno;
	if (ioctl(fd, TUNSETOFFLOAD, off) < 0)
		return -errno;
	return 0;
}

int tun_open(struct tun *t, const char *name, unsigned int nqueues, unsigned int flags)
{
	struct ifreq ifr;
	int ret = 0;

	memset(t, 0, sizeof(*t));
	for (unsigned int i = 0; i < TUN_MAX_QUEUES; i++)
		t->fds[i] = -1;
	if (nqueues == 0 || nqueues > TUN_MAX_QUEUES || strlen(name) >= IFNAMSIZ)
		return -EINVAL;
	if (nqueues > 1)
		flags |= TUN_MULTI_QUEUE;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
	ifr.ifr_flags = IFF_TUN | IFF_NO_PI;
	if (flags & TUN_MULTI_QUEUE)
		ifr.ifr_flags |= IFF_MULTI_QUEUE;
	if (flags & TUN_VNET_HDR)
		ifr.ifr_flags |= IFF_VNET_HDR;

	/*
	 * The first queue must create the device: with IFF_TUN_EXCL the kernel
	 * answers EBUSY when the name exists, so we never attach to a TUN
	 * somebody else made (a persistent one's owner could add queues and
	 * read or write the tunnel's plaintext). The others attach to ours.
	 */
	ifr.ifr_flags |= IFF_TUN_EXCL;
	for (unsigned int i = 0; i < nqueues; i++) {
		int fd;

		if (i == 1)
			ifr.ifr_flags &= (short)~IFF_TUN_EXCL;
		fd = open_queue(&ifr);

		/* The first queue fixes the name the kernel chose; the others attach to it. */
		if (fd == -EINVAL && i == 0 && (ifr.ifr_flags & IFF_VNET_HDR)) {
			ifr.ifr_flags &= (short)~IFF_VNET_HDR;
			fd = open_queue(&ifr);
		}
		if (fd < 0) {
			ret = fd;
			goto fail;
		}
		t->fds[i] = fd;
		t->nqueues = i + 1;
		if (i == 0 && (ifr.ifr_flags & IFF_VNET_HDR)) {
			if (enable_offloads(fd) == 0) {
				t->vnet_hdr = true;
			} else {
				/* Offloads refused: reopen plainly so no header rides on packets. */
				close(fd);
				t->fds[0] = -1;
				ifr.ifr_flags &= (short)~IFF_VNET_HDR;
				fd = open_queue(&ifr);
				if (fd < 0) {
					ret = fd;
					goto fail;
				}
				t->fds[0] = fd;
			}
		} else if (i > 0 && t->vnet_hdr && enable_offloads(fd) < 0) {
			ret = -errno;
			goto fail;
		}
	}
	snprintf(t->name, sizeof(t->name), "%s", ifr.ifr_name);
	t->ifindex = (int)if_nametoindex(t->name);
	if (t->ifindex == 0) {
		ret = -errno;
		goto fail;
	}
	return 0;
fail:
	tun_close(t);
	return ret;
}

void tun_close(struct tun *t)
{
	for (unsigned int i = 0; i < TUN_MAX_QUEUES; i++) {
		if (t->fds[i] >= 0)
			close(t->fds[i]);
		t->fds[i] = -1;
	}
	t->nqueues = 0;
}
