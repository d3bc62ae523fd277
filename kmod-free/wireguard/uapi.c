/* SPDX-License-Identifier: MIT */
/* The cross-platform userspace API as text: parsing set=1, formatting get=1 (sans-I/O). */
#include "uapi.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "sockaddr.h"

static int parse_num(const char *v, unsigned long long max, unsigned long long *out)
{
	char *end;
	unsigned long long x;

	if (!isdigit((unsigned char)v[0]))
		return -EINVAL;
	errno = 0;
	x = strtoull(v, &end, 10);
	if (errno || *end || x > max)
		return -EINVAL;
	*out = x;
	return 0;
}

static int push_peer(struct wg_uapi_set *s)
{
	struct wg_uapi_peer_set *a = realloc(s->peers, (s->n_peers + 1) * sizeof(*a));

	if (!a)
		return -ENOMEM;
	memset(&a[s->n_peers], 0, sizeof(*a));
	s->peers = a;
	s->n_peers++;
	return 0;
}

static int push_prefix(struct netlink_prefix **arr, size_t *n, const struct netlink_prefix *p)
{
	struct netlink_prefix *a = realloc(*arr, (*n + 1) * sizeof(*a));

	if (!a)
		return -ENOMEM;
	a[(*n)++] = *p;
	*arr = a;
	return 0;
}

/* One key=value line of set=1. Device keys are only valid before the first public_key. */
static int set_line(struct wg_uapi_set *s, const char *key, const char *val)
{
	struct wg_uapi_peer_set *peer = s->n_peers ? &s->peers[s->n_peers - 1] : NULL;
	unsigned long long x;
	struct netlink_prefix pfx;
	int ret;

	if (!peer && !strcmp(key, "private_key")) {
		if (wgconf_key_from_hex(s->private_key, val) < 0)
			return -EINVAL;
		s->has_private_key = true;
	} else if (!peer && !strcmp(key, "listen_port")) {
		if (parse_num(val, 65535, &x) < 0)
			return -EINVAL;
		s->listen_port = (uint16_t)x;
		s->has_listen_port = true;
	} else if (!peer && !strcmp(key, "fwmark")) {
		if (parse_num(val, 0xffffffffu, &x) < 0)
			return -EINVAL;
		s->fwmark = (uint32_t)x;
		s->has_fwmark = true;
	} else if (!peer && !strcmp(key, "replace_peers")) {
		if (strcmp(val, "true"))
			return -EINVAL;
		s->replace_peers = true;
	} else if (!strcmp(key, "public_key")) {
		ret = push_peer(s);
		if (ret < 0)
			return ret;
		peer = &s->peers[s->n_peers - 1];
		if (wgconf_key_from_hex(peer->public_key, val) < 0)
			return -EINVAL;
	} else if (peer && !strcmp(key, "remove")) {
		if (strcmp(val, "true"))
			return -EINVAL;
		peer->remove = true;
	} else if (peer && !strcmp(key, "update_only")) {
		if (strcmp(val, "true"))
			return -EINVAL;
		peer->update_only = true;
	} else if (peer && !strcmp(key, "preshared_key")) {
		if (wgconf_key_from_hex(peer->preshared_key, val) < 0)
			return -EINVAL;
		peer->has_preshared_key = true;
	} else if (peer && !strcmp(key, "endpoint")) {
		if (wgconf_endpoint_parse(val, &peer->endpoint) < 0)
			return -EINVAL;
		peer->has_endpoint = true;
	} else if (peer && !strcmp(key, "persistent_keepalive_interval")) {
		if (parse_num(val, 65535, &x) < 0)
			return -EINVAL;
		peer->keepalive = (uint16_t)x;
		peer->has_keepalive = true;
	} else if (peer && !strcmp(key, "replace_allowed_ips")) {
		if (strcmp(val, "true"))
			return -EINVAL;
		peer->replace_allowed_ips = true;
	} else if (peer && !strcmp(key, "allowed_ip")) {
		if (!strchr(val, '/') || netlink_prefix_parse(val, &pfx) < 0)
			return -EINVAL;
		netlink_prefix_mask(&pfx);
		return push_prefix(&peer->allowed_ips, &peer->n_allowed_ips, &pfx);
	} else if (peer && !strcmp(key, "protocol_version")) {
		if (strcmp(val, "1"))
			return -EPROTONOSUPPORT;
	} else {
		return -EINVAL;
	}
	return 0;
}

int wg_uapi_parse_set(struct wg_uapi_set *out, const char *body)
{
	const char *s = body;
	char line[512];
	int ret = 0;

	memset(out, 0, sizeof(*out));
	while (*s) {
		const char *nl = strchr(s, '\n');
		size_t n = nl ? (size_t)(nl - s) : strlen(s);
		char *eq;

		if (n == 0)
			break;
		if (n >= sizeof(line)) {
			ret = -EINVAL;
			goto out;
		}
		memcpy(line, s, n);
		line[n] = '\0';
		eq = strchr(line, '=');
		if (!eq) {
			ret = -EINVAL;
			goto out;
		}
		*eq = '\0';
		ret = set_line(out, line, eq + 1);
		if (ret < 0)
			goto out;
		s += n + (nl ? 1 : 0);
	}
out:
	explicit_bzero(line, sizeof(line));
	if (ret < 0)
		wg_uapi_set_free(out);
	return ret;
}

void wg_uapi_set_free(struct wg_uapi_set *s)
{
	for (size_t i = 0; i < s->n_peers; i++)
		free(s->peers[i].allowed_ips);
	free(s->peers);
	explicit_bzero(s, sizeof(*s));
}

int wg_uapi_set_from_conf(struct wg_uapi_set *out, const struct wgconf *conf)
{
	memset(out, 0, sizeof(*out));
	out->has_private_key = conf->has_private_key;
	memcpy(out->private_key, conf->private_key, WGCONF_KEY_LEN);
	out->has_listen_port = true;
	out->listen_port = conf->listen_port;
	out->has_fwmark = true;
	out->fwmark = conf->fwmark;
	out->replace_peers = true;
	for (size_t i = 0; i < conf->n_peers; i++) {
		const struct wgconf_peer *cp = &conf->peers[i];
		struct wg_uapi_peer_set *p;

		if (push_peer(out) < 0)
			goto nomem;
		p = &out->peers[out->n_peers - 1];
		memcpy(p->public_key, cp->public_key, WGCONF_KEY_LEN);
		p->has_preshared_key = cp->has_preshared_key;
		memcpy(p->preshared_key, cp->preshared_key, WGCONF_KEY_LEN);
		p->has_endpoint = cp->has_endpoint;
		p->endpoint = cp->endpoint;
		p->has_keepalive = true;
		p->keepalive = cp->persistent_keepalive;
		p->replace_allowed_ips = true;
		if (cp->n_allowed_ips) {
			p->allowed_ips = malloc(cp->n_allowed_ips * sizeof(*p->allowed_ips));
			if (!p->allowed_ips)
				goto nomem;
			memcpy(p->allowed_ips, cp->allowed_ips,
			       cp->n_allowed_ips * sizeof(*p->allowed_ips));
			p->n_allowed_ips = cp->n_allowed_ips;
		}
	}
	return 0;
nomem:
	wg_uapi_set_free(out);
	return -ENOMEM;
}

/* A growable string for the get=1 reply. */
struct sbuf {
	char *p;
	size_t len, cap;
	bool oom;
};

__attribute__((format(printf, 2, 3))) static void sb_printf(struct sbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (b->oom)
		return;
	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(b->p ? b->p + b->len : NULL, b->p ? b->cap - b->len : 0, fmt, ap);
		va_end(ap);
		if (n < 0) {
			b->oom = true;
			return;
		}
		if (b->p && b->len + (size_t)n < b->cap) {
			b->len += (size_t)n;
			return;
		}
		size_t cap = (b->cap ? b->cap * 2 : 1024) + (size_t)n;
		char *np = realloc(b->p, cap);

		if (!np) {
			b->oom = true;
			return;
		}
		b->p = np;
		b->cap = cap;
	}
}

char *wg_uapi_format_get(const struct wg_uapi_info *info, size_t *len)
{
	struct sbuf b = {0};
	char hex[WGCONF_KEY_HEX_LEN + 1], ep[SA_STR_MAX], ip[INET6_ADDRSTRLEN];

	if (info->has_private_key) {
		wgconf_key_to_hex(hex, info->private_key);
		sb_printf(&b, "private_key=%s\n", hex);
	}
	sb_printf(&b, "listen_port=%u\n", info->listen_port);
	if (info->fwmark)
		sb_printf(&b, "fwmark=%u\n", info->fwmark);
	for (size_t i = 0; i < info->n_peers; i++) {
		const struct wg_uapi_peer_info *p = &info->peers[i];

		wgconf_key_to_hex(hex, p->public_key);
		sb_printf(&b, "public_key=%s\n", hex);
		if (p->has_preshared_key) {
			wgconf_key_to_hex(hex, p->preshared_key);
			sb_printf(&b, "preshared_key=%s\n", hex);
		}
		sb_printf(&b, "protocol_version=1\n");
		if (p->has_endpoint) {
			sb_printf(&b, "endpoint=%s\n", sa_str(&p->endpoint, ep));
		}
		sb_printf(&b, "last_handshake_time_sec=%lld\nlast_handshake_time_nsec=%ld\n",
		          (long long)p->last_handshake.tv_sec, p->last_handshake.tv_nsec);
		sb_printf(&b, "tx_bytes=%llu\nrx_bytes=%llu\n", (unsigned long long)p->tx_bytes,
		          (unsigned long long)p->rx_bytes);
		sb_printf(&b, "persistent_keepalive_interval=%u\n", p->keepalive);
		for (size_t j = 0; j < p->n_allowed_ips; j++) {
			const struct netlink_prefix *a = &p->allowed_ips[j];

			inet_ntop(a->family, a->addr.bytes, ip, sizeof(ip));
			sb_printf(&b, "allowed_ip=%s/%u\n", ip, a->prefixlen);
		}
	}
	sb_printf(&b, "errno=0\n\n");
	explicit_bzero(hex, sizeof(hex));
	if (b.oom) {
		if (b.p)
			explicit_bzero(b.p, b.cap);
		free(b.p);
		return NULL;
	}
	*len = b.len;
	return b.p;
}

void wg_uapi_info_free(struct wg_uapi_info *info)
{
	for (size_t i = 0; i < info->n_peers; i++)
		free(info->peers[i].allowed_ips);
	free(info->peers);
	explicit_bzero(info, sizeof(*info));
}
