/* SPDX-License-Identifier: MIT */
/* rtnetlink over libmnl: link MTU/up, addresses, routes and policy rules, no `ip` at runtime. */
#include "netlink.h"

#include <arpa/inet.h>
#include <errno.h>
#include <libmnl/libmnl.h>
#include <linux/fib_rules.h>
#include <linux/if_addr.h>
#include <linux/if_link.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

/* One request fits in a page: a header, a fixed struct and a handful of attributes. */
enum { NL_BUF = 8192 };

/*
 * Sends one request and waits for its ACK. Each call opens its own socket:
 * configuration happens a few times per device lifetime, so simplicity wins
 * over reuse, and no state is shared between threads.
 */
static int transact(struct nlmsghdr *nlh)
{
	char buf[NL_BUF];
	struct mnl_socket *nl;
	unsigned int portid, seq;
	int ret;

	nl = mnl_socket_open(NETLINK_ROUTE);
	if (!nl)
		return -errno;
	if (mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0) {
		ret = -errno;
		goto out;
	}
	portid = mnl_socket_get_portid(nl);
	seq = (unsigned int)time(NULL);
	nlh->nlmsg_seq = seq;
	nlh->nlmsg_flags |= NLM_F_ACK;
	if (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0) {
		ret = -errno;
		goto out;
	}
	for (;;) {
		ssize_t n = mnl_socket_recvfrom(nl, buf, sizeof(buf));

		if (n < 0) {
			ret = -errno;
			goto out;
		}
		/* mnl_cb_run turns an NLMSG_ERROR with a non-zero code into errno. */
		ret = mnl_cb_run(buf, (size_t)n, seq, portid, NULL, NULL);
		if (ret < 0) {
			ret = -errno;
			goto out;
		}
		if (ret == MNL_CB_STOP) {
			ret = 0;
			goto out;
		}
	}
out:
	mnl_socket_close(nl);
	return ret;
}

static struct nlmsghdr *start(char *buf, uint16_t type, uint16_t flags)
{
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);

	nlh->nlmsg_type = type;
	nlh->nlmsg_flags = NLM_F_REQUEST | flags;
	return nlh;
}

static int link_change(int ifindex, unsigned int mtu, int up)
{
	char buf[NL_BUF];
	struct nlmsghdr *nlh = start(buf, RTM_NEWLINK, 0);
	struct ifinfomsg *ifi = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifi));

	ifi->ifi_family = AF_UNSPEC;
	ifi->ifi_index = ifindex;
	if (up >= 0) {
		ifi->ifi_change = IFF_UP;
		ifi->ifi_flags = up ? IFF_UP : 0;
	}
	if (mtu)
		mnl_attr_put_u32(nlh, IFLA_MTU, mtu);
	return transact(nlh);
}

int netlink_link_set_mtu(int ifindex, unsigned int mtu)
{
	if (mtu < 576 || mtu > 65535)
		return -EINVAL;
	return link_change(ifindex, mtu, -1);
}

int netlink_link_set_txqlen(int ifindex, unsigned int qlen)
{
	char buf[NL_BUF];
	struct nlmsghdr *nlh = start(buf, RTM_NEWLINK, 0);
	struct ifinfomsg *ifi = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifi));

	ifi->ifi_family = AF_UNSPEC;
	ifi->ifi_index = ifindex;
	mnl_attr_put_u32(nlh, IFLA_TXQLEN, qlen);
	return transact(nlh);
}

int netlink_link_set_netns(int ifindex, int nsfd)
{
	char buf[NL_BUF];
	struct nlmsghdr *nlh = start(buf, RTM_NEWLINK, 0);
	struct ifinfomsg *ifi = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifi));

	ifi->ifi_family = AF_UNSPEC;
	ifi->ifi_index = ifindex;
	mnl_attr_put_u32(nlh, IFLA_NET_NS_FD, (uint32_t)nsfd);
	return transact(nlh);
}

int netlink_link_set_up(int ifindex, bool up)
{
	return link_change(ifindex, 0, up);
}

int netlink_link_del(int ifindex)
{
	char buf[NL_BUF];
	struct nlmsghdr *nlh = start(buf, RTM_DELLINK, 0);
	struct ifinfomsg *ifi = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifi));

	ifi->ifi_family = AF_UNSPEC;
	ifi->ifi_index = ifindex;
	return transact(nlh);
}

static size_t addr_len(int family)
{
	return family == AF_INET ? 4 : 16;
}

int netlink_addr_add(int ifindex, const struct netlink_prefix *p)
{
	char buf[NL_BUF];
	struct nlmsghdr *nlh = start(buf, RTM_NEWADDR, NLM_F_CREATE | NLM_F_REPLACE);
	struct ifaddrmsg *ifa = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifa));

	if (p->family != AF_INET && p->family != AF_INET6)
		return -EAFNOSUPPORT;
	ifa->ifa_family = (uint8_t)p->family;
	ifa->ifa_prefixlen = p->prefixlen;
	ifa->ifa_scope = RT_SCOPE_UNIVERSE;
	ifa->ifa_index = (uint32_t)ifindex;
	/* On a point-to-point TUN the kernel needs IFA_LOCAL; IFA_ADDRESS mirrors it. */
	mnl_attr_put(nlh, IFA_LOCAL, addr_len(p->family), p->addr.bytes);
	mnl_attr_put(nlh, IFA_ADDRESS, addr_len(p->family), p->addr.bytes);
	if (p->family == AF_INET6)
		mnl_attr_put_u32(nlh, IFA_FLAGS, IFA_F_NODAD);
	return transact(nlh);
}

static int route(uint16_t type, uint16_t flags, const struct netlink_route *r)
{
	char buf[NL_BUF];
	struct nlmsghdr *nlh = start(buf, type, flags);
	struct rtmsg *rtm = mnl_nlmsg_put_extra_header(nlh, sizeof(*rtm));
	const struct netlink_prefix *dst = &r->dst;
	uint32_t table = r->table ? r->table : RT_TABLE_MAIN;

	if (dst->family != AF_INET && dst->family != AF_INET6)
		return -EAFNOSUPPORT;
	rtm->rtm_family = (uint8_t)dst->family;
	rtm->rtm_dst_len = dst->prefixlen;
	rtm->rtm_table = table < 256 ? (uint8_t)table : RT_TABLE_UNSPEC;
	rtm->rtm_protocol = r->protocol ? r->protocol : RTPROT_BOOT;
	rtm->rtm_scope = RT_SCOPE_LINK;
	rtm->rtm_type = RTN_UNICAST;
	if (dst->prefixlen)
		mnl_attr_put(nlh, RTA_DST, addr_len(dst->family), dst->addr.bytes);
	mnl_attr_put_u32(nlh, RTA_OIF, (uint32_t)r->ifindex);
	mnl_attr_put_u32(nlh, RTA_TABLE, table);
	return transact(nlh);
}

int netlink_route_add_r(const struct netlink_route *r)
{
	return route(RTM_NEWROUTE, NLM_F_CREATE | NLM_F_REPLACE, r);
}

int netlink_route_del_r(const struct netlink_route *r)
{
	return route(RTM_DELROUTE, 0, r);
}

int netlink_route_add(int ifindex, const struct netlink_prefix *dst, uint32_t table)
{
	struct netlink_route r = {.ifindex = ifindex, .dst = *dst, .table = table};

	return netlink_route_add_r(&r);
}

int netlink_route_del(int ifindex, const struct netlink_prefix *dst, uint32_t table)
{
	struct netlink_route r = {.ifindex = ifindex, .dst = *dst, .table = table};

	return netlink_route_del_r(&r);
}

static int rule(uint16_t type, uint16_t flags, const struct netlink_rule *r)
{
	char buf[NL_BUF];
	struct nlmsghdr *nlh = start(buf, type, flags);
	struct fib_rule_hdr *frh = mnl_nlmsg_put_extra_header(nlh, sizeof(*frh));

	if (r->family != AF_INET && r->family != AF_INET6)
		return -EAFNOSUPPORT;
	frh->family = (uint8_t)r->family;
	frh->action = FR_ACT_TO_TBL;
	frh->table = r->table < 256 ? (uint8_t)r->table : RT_TABLE_UNSPEC;
	if (r->invert)
		frh->flags |= FIB_RULE_INVERT;
	mnl_attr_put_u32(nlh, FRA_TABLE, r->table);
	if (r->fwmark) {
		mnl_attr_put_u32(nlh, FRA_FWMARK, r->fwmark);
		mnl_attr_put_u32(nlh, FRA_FWMASK, 0xffffffffu);
	}
	if (r->suppress_prefixlen >= 0)
		mnl_attr_put_u32(nlh, FRA_SUPPRESS_PREFIXLEN, (uint32_t)r->suppress_prefixlen);
	if (r->priority)
		mnl_attr_put_u32(nlh, FRA_PRIORITY, r->priority);
	if (r->protocol)
		mnl_attr_put_u8(nlh, FRA_PROTOCOL, r->protocol);
	return transact(nlh);
}

int netlink_rule_add(const struct netlink_rule *r)
{
	return rule(RTM_NEWRULE, NLM_F_CREATE | NLM_F_EXCL, r);
}

int netlink_rule_del(const struct netlink_rule *r)
{
	return rule(RTM_DELRULE, 0, r);
}

int netlink_prefix_parse(const char *s, struct netlink_prefix *out)
{
	char host[INET6_ADDRSTRLEN + 1];
	const char *slash = strchr(s, '/');
	size_t n = slash ? (size_t)(slash - s) : strlen(s);
	unsigned int max;

	memset(out, 0, sizeof(*out));
	if (n == 0 || n >= sizeof(host))
		return -EINVAL;
	memcpy(host, s, n);
	host[n] = '\0';
	if (inet_pton(AF_INET, host, &out->addr.v4) == 1)
		out->family = AF_INET;
	else if (inet_pton(AF_INET6, host, &out->addr.v6) == 1)
		out->family = AF_INET6;
	else
		return -EINVAL;
	max = out->family == AF_INET ? 32 : 128;
	out->prefixlen = (uint8_t)max;
	if (slash) {
		char *end;
		unsigned long v;

		if (!slash[1] || slash[1] < '0' || slash[1] > '9')
			return -EINVAL;
		errno = 0;
		v = strtoul(slash + 1, &end, 10);
		if (errno || *end || v > max)
			return -EINVAL;
		out->prefixlen = (uint8_t)v;
	}
	return 0;
}

void netlink_prefix_mask(struct netlink_prefix *p)
{
	unsigned int bits = p->prefixlen, len = (unsigned int)addr_len(p->family);

	for (unsigned int i = 0; i < len; i++) {
		if (bits >= 8) {
			bits -= 8;
			continue;
		}
		p->addr.bytes[i] &= (uint8_t)(0xff00u >> bits);
		bits = 0;
	}
}

/* --- dump and delete what a killed process left ------------------------ */

struct flush {
	uint8_t protocol;
	uint32_t table, prio_lo, prio_hi;
	/* the messages to send back as deletions, concatenated */
	char *del;
	size_t len, cap;
};

static int keep_for_delete(struct flush *f, const struct nlmsghdr *nlh)
{
	size_t need = f->len + NLMSG_ALIGN(nlh->nlmsg_len);

	if (need > f->cap) {
		size_t cap = f->cap ? 2 * f->cap : 8192;
		char *p;

		while (cap < need)
			cap *= 2;
		p = realloc(f->del, cap);
		if (!p)
			return MNL_CB_ERROR;
		f->del = p;
		f->cap = cap;
	}
	memcpy(f->del + f->len, nlh, nlh->nlmsg_len);
	f->len = need;
	return MNL_CB_OK;
}

static int attr_u32(const struct nlattr *a, uint32_t *out)
{
	if (mnl_attr_validate(a, MNL_TYPE_U32) < 0)
		return -1;
	*out = mnl_attr_get_u32(a);
	return 0;
}

static int rule_cb(const struct nlmsghdr *nlh, void *data)
{
	struct flush *f = data;
	const struct fib_rule_hdr *frh = mnl_nlmsg_get_payload(nlh);
	const struct nlattr *a;
	uint32_t table = frh->table, prio = 0;
	int proto = -1;

	if (nlh->nlmsg_type != RTM_NEWRULE || nlh->nlmsg_len < NLMSG_LENGTH(sizeof(*frh)))
		return MNL_CB_OK;
	mnl_attr_for_each(a, nlh, sizeof(*frh))
	{
		switch (mnl_attr_get_type(a)) {
		case FRA_TABLE:
			attr_u32(a, &table);
			break;
		case FRA_PRIORITY:
			attr_u32(a, &prio);
			break;
		case FRA_PROTOCOL:
			if (mnl_attr_validate(a, MNL_TYPE_U8) == 0)
				proto = mnl_attr_get_u8(a);
			break;
		default:
			break;
		}
	}
	if (proto != f->protocol)
		return MNL_CB_OK;
	if ((f->table && table == f->table) || (prio >= f->prio_lo && prio <= f->prio_hi))
		return keep_for_delete(f, nlh);
	return MNL_CB_OK;
}

static int route_cb(const struct nlmsghdr *nlh, void *data)
{
	struct flush *f = data;
	const struct rtmsg *rtm = mnl_nlmsg_get_payload(nlh);
	const struct nlattr *a;
	uint32_t table;

	if (nlh->nlmsg_type != RTM_NEWROUTE || nlh->nlmsg_len < NLMSG_LENGTH(sizeof(*rtm)))
		return MNL_CB_OK;
	table = rtm->rtm_table;
	mnl_attr_for_each(a, nlh, sizeof(*rtm))
	{
		if (mnl_attr_get_type(a) == RTA_TABLE)
			attr_u32(a, &table);
	}
	if (rtm->rtm_protocol == f->protocol && f->table && table == f->table)
		return keep_for_delete(f, nlh);
	return MNL_CB_OK;
}

/* One dump (type, family AF_UNSPEC: every family), each message given to cb. */
static int dump(uint16_t type, size_t hdrlen, mnl_cb_t cb, struct flush *f)
{
	char buf[MNL_SOCKET_BUFFER_SIZE > NL_BUF ? MNL_SOCKET_BUFFER_SIZE : NL_BUF];
	struct nlmsghdr *nlh = start(buf, type, NLM_F_DUMP);
	struct mnl_socket *nl;
	unsigned int portid, seq = (unsigned int)time(NULL);
	int ret;

	mnl_nlmsg_put_extra_header(nlh, hdrlen); /* zeroed: family AF_UNSPEC */
	nlh->nlmsg_seq = seq;
	nl = mnl_socket_open(NETLINK_ROUTE);
	if (!nl)
		return -errno;
	if (mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0) {
		ret = -errno;
		goto out;
	}
	portid = mnl_socket_get_portid(nl);
	if (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0) {
		ret = -errno;
		goto out;
	}
	for (;;) {
		ssize_t n = mnl_socket_recvfrom(nl, buf, sizeof(buf));

		if (n < 0) {
			ret = -errno;
			goto out;
		}
		ret = mnl_cb_run(buf, (size_t)n, seq, portid, cb, f);
		if (ret < 0) {
			ret = -errno;
			goto out;
		}
		if (ret == MNL_CB_STOP) {
			ret = 0;
			goto out;
		}
	}
out:
	mnl_socket_close(nl);
	return ret;
}

/* Sends each kept message back as a deletion; the count deleted. */
static int delete_kept(struct flush *f, uint16_t del_type)
{
	int n = 0;

	for (size_t off = 0; off < f->len;) {
		struct nlmsghdr *nlh = (struct nlmsghdr *)(f->del + off);

		off += NLMSG_ALIGN(nlh->nlmsg_len);
		nlh->nlmsg_type = del_type;
		nlh->nlmsg_flags = NLM_F_REQUEST;
		nlh->nlmsg_pid = 0;
		if (transact(nlh) == 0)
			n++;
	}
	f->len = 0;
	return n;
}

int netlink_flush_tagged(uint8_t protocol, uint32_t table, uint32_t prio_lo, uint32_t prio_hi)
{
	struct flush f = {
	        .protocol = protocol, .table = table, .prio_lo = prio_lo, .prio_hi = prio_hi};
	int ret, n = 0;

	ret = dump(RTM_GETRULE, sizeof(struct fib_rule_hdr), rule_cb, &f);
	if (ret == 0)
		n += delete_kept(&f, RTM_DELRULE);
	if (ret == 0 && table)
		ret = dump(RTM_GETROUTE, sizeof(struct rtmsg), route_cb, &f);
	if (ret == 0)
		n += delete_kept(&f, RTM_DELROUTE);
	free(f.del);
	return ret < 0 ? ret : n;
}
