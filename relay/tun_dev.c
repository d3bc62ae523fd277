/* SPDX-License-Identifier: MIT */
/* A tun inbound's device: created, addressed and routed over netlink at start, its rules and routes removed at exit and after a crash. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"
#include "netlink.h"
#include "tun_dev.h"

/*
 * What a tun inbound sets up (docs/tun.md has the whole picture):
 *
 *  - the device (IFF_TUN_EXCL: never one somebody else made), one queue per
 *    worker (IFF_MULTI_QUEUE), IFF_VNET_HDR with checksum and TSO
 *    offloads unless `offload = off`; its MTU, transmit queue, addresses
 *    and link state over netlink;
 *  - `routes`: each prefix into the TUN (main table);
 *  - `auto-route`: wg-quick's rule pair and a default route in `table`
 *    (tun/routing.c), every socket of spliced marked (config auto_mark),
 *    and net.ipv4.conf.all.src_valid_mark = 1 as wg-quick sets it, so
 *    that rp_filter looks up replies to marked sockets with the mark;
 *  - the NAT, whose fake sources are the rest of each address's prefix.
 *
 * With `netns`, the device moves to that namespace (its queues stay ours),
 * is configured there, and the listeners are opened there; auto-route is
 * then a default route in that namespace's main table: the apps there can
 * reach nothing but the TUN, spliced's own sockets live here, and no rule
 * or mark is needed.
 *
 * Every route and rule carries spliced's protocol tag (83). The device
 * disappears with its last queue, taking its addresses and the routes
 * through it along; rules do not, and neither does a sysctl. So at exit
 * the rules go and the sysctl is restored, and at start everything tagged
 * with this inbound's table or rule priorities is deleted first: what a
 * SIGKILLed run left.
 */

static struct tun_dev *devs[CONFIG_MAX_INBOUNDS];

struct tun_dev *tun_dev_get(unsigned inbound)
{
	return inbound < CONFIG_MAX_INBOUNDS ? devs[inbound] : NULL;
}

struct tun_dev *tun_dev_of(const struct inbound *in)
{
	for (unsigned i = 0; i < CONFIG_MAX_INBOUNDS; i++)
		if (devs[i] && strcmp(devs[i]->in->name, in->name) == 0) /* a reload's copy too */
			return devs[i];
	return NULL;
}

static const char valid_mark_path[] = "/proc/sys/net/ipv4/conf/all/src_valid_mark";

static int sysctl_get(const char *path)
{
	char b[16] = "";
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, b, sizeof(b) - 1);
	close(fd);
	return n > 0 ? atoi(b) : -1;
}

static int sysctl_set(const char *path, int v)
{
	char b[16];
	int fd = open(path, O_WRONLY | O_CLOEXEC), n = snprintf(b, sizeof(b), "%d\n", v), ret = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, b, (size_t)n) != n)
		ret = -errno;
	close(fd);
	return ret;
}

static void to_prefix(const struct cidr *c, struct netlink_prefix *p)
{
	memset(p, 0, sizeof(*p));
	p->family = c->family;
	p->prefixlen = c->prefix;
	memcpy(p->addr.bytes, c->addr, c->family == AF_INET ? 4 : 16);
}

/* a + d (d may be negative) for an address of alen bytes; no overflow checks: callers stay in the prefix */
static void addr_add(uint8_t *out, const uint8_t *a, size_t alen, int64_t d)
{
	int carry = 0;
	uint64_t mag = d < 0 ? (uint64_t)-d : (uint64_t)d;

	memcpy(out, a, alen);
	for (size_t i = alen; i-- > 0 && (mag || carry);) {
		int v = d < 0 ? out[i] - (int)(mag & 0xff) - carry
		              : out[i] + (int)(mag & 0xff) + carry;

		carry = d < 0 ? v < 0 : v > 255;
		out[i] = (uint8_t)(v & 0xff);
		mag >>= 8;
	}
}

/* Host bits of a in a /prefix of alen bytes, as a number (0 if more than 63 of them are set). */
static uint64_t host_part(const uint8_t *a, size_t alen, unsigned prefix)
{
	uint64_t h = 0;
	unsigned bits = (unsigned)alen * 8;

	for (unsigned b = prefix; b < bits; b++) {
		if (bits - b > 63) {
			if (a[b / 8] & (0x80 >> (b % 8)))
				return 0;
			continue;
		}
		h = h << 1 | !!(a[b / 8] & (0x80 >> (b % 8)));
	}
	return h;
}

/*
 * The fake-source pool of one family: the longest run of the prefix's host
 * addresses that holds neither the TUN's own address nor the one after it
 * (kept for DNS), nor the network and broadcast addresses (IPv4), capped at
 * 2^32 addresses.
 */
static int pool_of(const struct cidr *c, uint8_t *first, uint64_t *n)
{
	size_t alen = c->family == AF_INET ? 4 : 16;
	unsigned hbits = (unsigned)alen * 8 - c->prefix;
	uint64_t size = hbits >= 63 ? UINT64_MAX / 2 : (uint64_t)1 << hbits;
	uint64_t me = host_part(c->addr, alen, c->prefix), lo, hi, below, above;

	/* usable host numbers: 1 .. size - 2 (IPv4 broadcast; kept out for IPv6 too) */
	if (size < 8)
		return -EINVAL;
	below = me > 1 ? me - 1 : 0;                              /* 1 .. me - 1 */
	above = size - 2 >= me + 2 ? size - 2 - (me + 2) + 1 : 0; /* me + 2 .. size - 2 */
	if (above >= below) {
		lo = me + 2;
		hi = above;
	} else {
		lo = 1;
		hi = below;
	}
	if (hi == 0)
		return -EINVAL;
	*n = hi > UINT32_MAX ? UINT32_MAX : hi;
	addr_add(first, c->addr, alen, (int64_t)lo - (int64_t)me);
	return 0;
}

/*
 * mapped-dns: the upper half of the prefix, without its first and last
 * addresses (an IPv4 broadcast), capped at 2^32.
 */
static void mapped_range(const struct cidr *c, uint8_t *base, uint64_t *n)
{
	size_t alen = c->family == AF_INET ? 4 : 16;
	unsigned hbits = (unsigned)alen * 8 - c->prefix - 1;

	memcpy(base, c->addr, alen);
	for (unsigned b = c->prefix; b < alen * 8; b++)
		base[b / 8] &= (uint8_t) ~(0x80 >> (b % 8));
	base[c->prefix / 8] |= (uint8_t)(0x80 >> (c->prefix % 8));
	*n = hbits >= 32 ? UINT32_MAX : ((uint64_t)1 << hbits) - 2;
}

enum { MAPPED_NAMES = 65536 };

static int setup_nat(struct tun_dev *d)
{
	const struct inbound_tun *t = &d->in->tun;
	struct nat_cfg nc = {.cap = t->max_flows, .linger_ms = t->linger_ms, .embryo_ms = 10000};
	uint8_t mbase[2][16];
	uint64_t mn[2] = {0, 0};
	int ret;

	for (int f = 0; f < 2; f++) {
		struct cidr c = d->addr[f];

		if (!c.family)
			continue;
		nc.fam[f].on = true;
		memcpy(nc.fam[f].listen, c.addr, f ? 16 : 4);
		nc.fam[f].prefixlen = c.prefix;
		if (t->mapped_dns) {
			mapped_range(&c, mbase[f], &mn[f]);
			nc.fam[f].mapped = true;
			c.prefix++; /* the fake sources from the lower half */
		}
		ret = pool_of(&c, nc.fam[f].pool, &nc.fam[f].n_pool);
		if (ret < 0) {
			log_error(
			        "inbound %s: the prefix of its %s address leaves no room for fake "
			        "sources",
			        d->in->name, f ? "IPv6" : "IPv4");
			return ret;
		}
	}
	ret = nat_init(&d->nat, &nc, clock_coarse_ms());
	if (ret < 0)
		return ret;
	d->nat_ready = true;
	if (t->mapped_dns &&
	    (ret = dnsmap_init(&d->map, mbase[0], mn[0], mbase[1], mn[1], MAPPED_NAMES)) < 0)
		return ret;
	if (d->nat.cfg.cap < t->max_flows)
		log_warn("inbound %s: max-flows lowered to %u: the fake-source pool holds no more",
		         d->in->name, d->nat.cfg.cap);
	return 0;
}

static int setup_link(struct tun_dev *d)
{
	const struct inbound_tun *t = &d->in->tun;
	int idx = d->tun.ifindex, ret;

	if ((ret = netlink_link_set_mtu(idx, t->mtu)) < 0 ||
	    (ret = netlink_link_set_txqlen(idx, t->txqlen)) < 0)
		return ret;
	for (int f = 0; f < 2; f++) {
		struct netlink_prefix p;

		if (!d->addr[f].family)
			continue;
		to_prefix(&d->addr[f], &p);
		ret = netlink_addr_add(idx, &p);
		if (ret < 0)
			return ret;
	}
	return netlink_link_set_up(idx, true);
}

static int setup_routes(struct tun_dev *d)
{
	const struct inbound_tun *t = &d->in->tun;
	int ret;

	routing_init(&d->routes, d->tun.ifindex, NETLINK_PROTO_SPLICED);
	d->routes_ready = true;
	for (size_t i = 0; i < t->n_routes; i++) {
		struct netlink_prefix p;

		to_prefix(&t->routes[i], &p);
		ret = routing_add(&d->routes, &p, 0);
		if (ret < 0)
			return ret;
	}
	if (!t->auto_route)
		return 0;
	for (int f = 0; f < 2; f++) {
		struct netlink_prefix any = {.family = f ? AF_INET6 : AF_INET};

		if (!d->addr[f].family)
			continue;
		if (d->nsfd >= 0) {
			ret = routing_add(&d->routes, &any, 0);
			if (ret < 0)
				return ret;
			continue;
		}
		ret = routing_default_pair(&d->routes, f ? AF_INET6 : AF_INET, t->table, t->fwmark,
		                           t->priority);
		if (ret < 0)
			return ret;
	}
	if (d->addr[0].family && d->nsfd < 0) {
		d->old_valid_mark = sysctl_get(valid_mark_path);
		if (d->old_valid_mark == 0 && sysctl_set(valid_mark_path, 1) < 0) {
			log_warn(
			        "inbound %s: cannot set %s: replies to spliced's marked sockets may "
			        "fail rp_filter",
			        d->in->name, valid_mark_path);
			d->old_valid_mark = -1;
		}
	}
	return 0;
}

/* The calling thread into the device's namespace (in) or back into ours. 0 or -errno. */
static int enter(const struct tun_dev *d, bool in)
{
	if (d->nsfd < 0)
		return 0;
	return setns(in ? d->nsfd : d->hostfd, CLONE_NEWNET) < 0 ? -errno : 0;
}

/* netns: the device into its namespace, and its number there. */
static int move_device(struct tun_dev *d)
{
	const struct inbound *in = d->in;
	int ret;

	d->nsfd = open(in->tun.netns, O_RDONLY | O_CLOEXEC);
	d->hostfd = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	if (d->nsfd < 0 || d->hostfd < 0) {
		ret = -errno;
		log_error("inbound %s: netns %s: %s", in->name, in->tun.netns, strerror(-ret));
		return ret;
	}
	ret = netlink_link_set_netns(d->tun.ifindex, d->nsfd);
	if (ret == 0 && (ret = enter(d, true)) == 0) {
		d->tun.ifindex = (int)if_nametoindex(d->tun.name); /* it may change */
		if (!d->tun.ifindex)
			ret = -errno;
		enter(d, false);
	}
	if (ret < 0)
		log_error("inbound %s: moving %s into %s: %s", in->name, d->tun.name, in->tun.netns,
		          strerror(-ret));
	return ret;
}

static void qstats_read(const struct stats_group *g, uint64_t *out)
{
	const struct tun_dev *d = g->ctx;
	size_t n = sizeof(struct tun_qstats) / sizeof(uint64_t);

	for (int w = 0; w < d->n_workers; w++) {
		const uint64_t *v = (const uint64_t *)&d->qstats[w];

		for (size_t k = 0; k < n && k < g->n - 1; k++)
			out[k] += v[k];
	}
	out[g->n - 1] = d->nat_ready ? nat_count((struct nat *)&d->nat) : 0;
}

static const struct stats_desc qstats_desc[] = {
        TUN_QSTATS(STATS_DESC_){"nat_entries", "TCP flows in the NAT table now (any state)",
                                STATS_GAUGE, NULL},
};

static int create_one(const struct config *cfg, unsigned i, int n_workers)
{
	const struct inbound *in = &cfg->inbounds[i];
	const struct inbound_tun *t = &in->tun;
	unsigned nq = t->queues && (int)t->queues < n_workers ? t->queues : (unsigned)n_workers;
	struct tun_dev *d = calloc(1, sizeof(*d));
	int ret, gone;

	if (!d)
		return -ENOMEM;
	devs[i] = d;
	d->in = in;
	d->inbound = i;
	d->old_valid_mark = -1;
	d->nsfd = d->hostfd = -1;
	d->n_workers = n_workers;
	memcpy(d->addr, t->addr, sizeof(d->addr));
	for (unsigned k = 0; k < TUN_MAX_QUEUES; k++)
		d->tun.fds[k] = -1;
	d->qstats = aligned_alloc(64, (size_t)n_workers * sizeof(*d->qstats));
	if (!d->qstats)
		return -ENOMEM;
	memset(d->qstats, 0, (size_t)n_workers * sizeof(*d->qstats));
	if (nq > TUN_MAX_QUEUES)
		nq = TUN_MAX_QUEUES;
	/* What a killed run left: its rules (and routes in its table) outlive it. */
	gone = t->netns ? 0
	                : netlink_flush_tagged(NETLINK_PROTO_SPLICED, t->auto_route ? t->table : 0,
	                                       t->priority, t->priority + 1);
	if (gone > 0)
		log_info("inbound %s: removed %d rules and routes an earlier run left", in->name,
		         gone);
	ret = tun_open(&d->tun, t->ifname, nq, t->offload ? TUN_VNET_HDR : 0);
	if (ret == -EBUSY) {
		log_error("inbound %s: a device named %s exists already (another program's, or "
		          "another spliced's): choose another name",
		          in->name, t->ifname);
		return ret;
	}
	if (ret < 0) {
		log_error("inbound %s: cannot create TUN %s: %s%s", in->name, t->ifname,
		          strerror(-ret), ret == -EPERM ? " (needs CAP_NET_ADMIN)" : "");
		return ret;
	}
	if (t->offload && !d->tun.vnet_hdr)
		log_warn("inbound %s: the kernel refused TUN offloads: every packet is handled on "
		         "its own (slower)",
		         in->name);
	for (unsigned k = 0; k < d->tun.nqueues; k++)
		fcntl(d->tun.fds[k], F_SETFL, fcntl(d->tun.fds[k], F_GETFL) | O_NONBLOCK);
	if (t->netns && (ret = move_device(d)) < 0)
		return ret;
	if ((ret = enter(d, true)) < 0)
		return ret;
	ret = setup_link(d);
	if (ret < 0) {
		enter(d, false);
		log_error("inbound %s: configuring %s: %s", in->name, t->ifname, strerror(-ret));
		return ret;
	}
	ret = setup_routes(d);
	enter(d, false);
	if (ret < 0) {
		log_error("inbound %s: routes and rules of %s: %s", in->name, t->ifname,
		          strerror(-ret));
		return ret;
	}
	ret = setup_nat(d);
	if (ret < 0)
		return ret;
	snprintf(d->stats_name, sizeof(d->stats_name), "tun %s", in->name);
	snprintf(d->stats_labels, sizeof(d->stats_labels), "inbound=\"%s\"", in->name);
	d->stats = (struct stats_group){
	        .name = d->stats_name,
	        .family = "tun", /* spliced_tun_NAME{inbound="..."} on /metrics */
	        .labels = d->stats_labels,
	        .desc = qstats_desc,
	        .n = sizeof(qstats_desc) / sizeof(qstats_desc[0]),
	        .read = qstats_read,
	        .ctx = d,
	};
	stats_register(&d->stats);
	log_info("inbound %s: TUN %s up%s%s, mtu %u, %u queue%s, offloads %s%s", in->name,
	         d->tun.name, t->netns ? " in " : "", t->netns ? t->netns : "", t->mtu,
	         d->tun.nqueues, d->tun.nqueues == 1 ? "" : "s", d->tun.vnet_hdr ? "on" : "off",
	         t->auto_route ? ", auto-route" : "");
	return 0;
}

int tun_devs_create(const struct config *cfg, int n_workers)
{
	for (unsigned i = 0; i < cfg->n_inbounds; i++) {
		int ret;

		if (cfg->inbounds[i].type != INBOUND_TUN)
			continue;
		ret = create_one(cfg, i, n_workers);
		if (ret < 0)
			return ret;
	}
	return 0;
}

void tun_devs_log_stats(void)
{
	for (unsigned i = 0; i < CONFIG_MAX_INBOUNDS; i++)
		if (devs[i] && devs[i]->stats.name)
			stats_log_group(LOG_INFO, &devs[i]->stats);
}

void tun_devs_destroy(void)
{
	for (unsigned i = 0; i < CONFIG_MAX_INBOUNDS; i++) {
		struct tun_dev *d = devs[i];

		if (!d)
			continue;
		if (d->stats.name)
			stats_unregister(&d->stats);
		/*
		 * Rules first: they would send the host's traffic to a device about
		 * to go. In another namespace there are none, and the device's
		 * routes go with it.
		 */
		if (d->routes_ready)
			routing_undo(&d->routes, d->nsfd >= 0);
		if (d->old_valid_mark == 0)
			sysctl_set(valid_mark_path, 0);
		tun_close(&d->tun); /* the queues main still holds (a worker's are its own) */
		if (d->nat_ready)
			nat_destroy(&d->nat);
		dnsmap_destroy(&d->map);
		if (d->nsfd >= 0)
			close(d->nsfd);
		if (d->hostfd >= 0)
			close(d->hostfd);
		free(d->qstats);
		free(d);
		devs[i] = NULL;
	}
}

int tun_dev_listen_socket(struct tun_dev *d, int w_id)
{
	const char *ifname = d->tun.name;
	int zero = 0, fd, ret;
	struct sockaddr_storage ss;
	socklen_t len;

	memset(&ss, 0, sizeof(ss));
	/* netns: the listener lives where the device is (a socket keeps its namespace) */
	if ((ret = enter(d, true)) < 0)
		return ret;
	fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, IPPROTO_TCP);
	if (fd >= 0) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;

		/* dual stack: IPv4 flows arrive as ::ffff:a.b.c.d */
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
		s6->sin6_family = AF_INET6;
		len = sizeof(*s6);
		d->listen_family = AF_INET6;
	} else if (!d->addr[1].family) {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;

		fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, IPPROTO_TCP); /* no IPv6 here */
		if (fd < 0) {
			ret = -errno;
			enter(d, false);
			return ret;
		}
		s4->sin_family = AF_INET;
		len = sizeof(*s4);
		d->listen_family = AF_INET;
	} else {
		ret = -errno;
		enter(d, false);
		return ret;
	}
	enter(d, false);
	/*
	 * Cubic for the accepted sockets (they inherit it), whatever the
	 * system's default: their peers are the apps behind the TUN, on this
	 * host (or a LAN it routes), and a pacing one such as BBR, without an
	 * fq qdisc on the TUN, paces each socket with an hrtimer: a timer
	 * softirq per burst, smaller bursts to read off the TUN, more wake-ups
	 * (bench/tun, 4 streams down: -25% CPU per GB, docs/benchmarks.md).
	 * Where cubic is not available or not allowed, the default stays.
	 */
	setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, "cubic", 5);
	/*
	 * Bound to the device: only SYNs that came through the TUN (rewritten
	 * by the NAT) reach it; a local process cannot connect to it, nor bind
	 * the fake pool to impersonate a flow. A port of its own per worker
	 * (not one SO_REUSEPORT group, whose hash would pick any worker): the
	 * worker whose queue reads a flow's SYN accepts and relays it too, so
	 * a flow's TUN packets and its splices run in one thread, with no
	 * wake-up of another for each 64 KiB (bench/tun: see tun.md).
	 */
	if (setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, ifname, (socklen_t)strlen(ifname)) < 0 ||
	    bind(fd, (struct sockaddr *)&ss, len) < 0)
		goto fail;
	len = sizeof(ss);
	if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
		goto fail;
	/* same offset in sockaddr_in */
	nat_set_port(&d->nat, (unsigned)w_id, ((struct sockaddr_in6 *)&ss)->sin6_port);
	return fd;
fail:
	ret = -errno;
	close(fd);
	return ret;
}
