/* SPDX-License-Identifier: MIT */
/* The cross-platform userspace API (wg(8)'s get=1/set=1 over /var/run/wireguard/<name>.sock). */
#include "uapi.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define UAPI_DIR "/var/run/wireguard"

enum {
	READ_CHUNK = 4096,
};

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
	char hex[WGCONF_KEY_HEX_LEN + 1], ep[80], ip[INET6_ADDRSTRLEN];

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
			wgconf_endpoint_format(&p->endpoint, ep, sizeof(ep));
			sb_printf(&b, "endpoint=%s\n", ep);
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

int wg_uapi_listen(const char *name, char *path, size_t pathlen)
{
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	int fd = -1, probe = -1, ret;
	mode_t old;

	if (snprintf(sun.sun_path, sizeof(sun.sun_path), UAPI_DIR "/%s.sock", name) >=
	    (int)sizeof(sun.sun_path))
		return -ENAMETOOLONG;
	if (mkdir(UAPI_DIR, 0755) < 0 && errno != EEXIST)
		return -errno;
	/* A socket someone still answers on belongs to a running device: do not steal it. */
	probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (probe < 0)
		return -errno;
	if (connect(probe, (struct sockaddr *)&sun, sizeof(sun)) == 0) {
		ret = -EADDRINUSE;
		goto out;
	}
	unlink(sun.sun_path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		ret = -errno;
		goto out;
	}
	old = umask(0077);
	ret = bind(fd, (struct sockaddr *)&sun, sizeof(sun));
	umask(old);
	if (ret < 0 || listen(fd, 16) < 0) {
		ret = -errno;
		goto out;
	}
	snprintf(path, pathlen, "%s", sun.sun_path);
	close(probe);
	return fd;
out:
	if (fd >= 0)
		close(fd);
	close(probe);
	return ret;
}

/* One client connection: its descriptor and when serving it must end (CLOCK_MONOTONIC ms). */
struct client {
	int fd;
	int64_t deadline;
};

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits until fd is ready for events or the client's time is up: 0 or -ETIMEDOUT. */
static int wait_ready(const struct client *c, short events)
{
	for (;;) {
		int64_t left = c->deadline - now_ms();
		struct pollfd pfd = {.fd = c->fd, .events = events};
		int r;

		if (left <= 0)
			return -ETIMEDOUT;
		r = poll(&pfd, 1, (int)left);
		if (r > 0)
			return 0;
		if (r < 0 && errno != EINTR)
			return -errno;
	}
}

static int write_all(const struct client *c, const char *p, size_t len)
{
	while (len) {
		ssize_t n = write(c->fd, p, len);
		int ret;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN) {
			ret = wait_ready(c, POLLOUT);
			if (ret < 0)
				return ret;
			continue;
		}
		if (n <= 0)
			return n < 0 ? -errno : -EPIPE;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static void reply_errno(const struct client *c, int err)
{
	char buf[32];
	int n = snprintf(buf, sizeof(buf), "errno=%d\n\n", err < 0 ? -err : err);

	write_all(c, buf, (size_t)n);
}

static int do_get(const struct client *c, const struct wg_uapi_ops *ops)
{
	struct wg_uapi_info info;
	char *text;
	size_t len = 0;
	int ret;

	memset(&info, 0, sizeof(info));
	ret = ops->get(ops->ctx, &info);
	if (ret < 0) {
		reply_errno(c, ret);
		return 0;
	}
	text = wg_uapi_format_get(&info, &len);
	wg_uapi_info_free(&info);
	if (!text) {
		reply_errno(c, -ENOMEM);
		return 0;
	}
	ret = write_all(c, text, len);
	explicit_bzero(text, len);
	free(text);
	return ret;
}

static void do_set(const struct client *c, const struct wg_uapi_ops *ops, const char *body)
{
	struct wg_uapi_set req;
	int ret = wg_uapi_parse_set(&req, body);

	if (ret == 0) {
		ret = ops->set(ops->ctx, &req);
		wg_uapi_set_free(&req);
	}
	reply_errno(c, ret);
}

/* The end of a request: "get=1\n\n", or a set=1 body closed by an empty line. */
static char *request_end(char *buf, size_t len)
{
	for (size_t i = 1; i < len; i++)
		if (buf[i] == '\n' && buf[i - 1] == '\n')
			return buf + i + 1;
	return NULL;
}

void wg_uapi_serve(int fd, const struct wg_uapi_ops *ops, unsigned int timeout_ms)
{
	struct client c = {.fd = fd, .deadline = now_ms() + timeout_ms};
	char *buf = NULL;
	size_t len = 0, cap = 0;
	int fl = fcntl(fd, F_GETFL);

	/* Non-blocking, so that no read or write can outlast the deadline. */
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return;

	for (;;) {
		char *end;
		ssize_t n;

		while ((end = request_end(buf, len)) != NULL) {
			size_t used = (size_t)(end - buf);

			end[-1] = '\0';
			if (!strncmp(buf, "get=1\n", 6)) {
				if (do_get(&c, ops) < 0)
					goto out;
			} else if (!strncmp(buf, "set=1\n", 6)) {
				do_set(&c, ops, buf + 6);
			} else {
				reply_errno(&c, -EINVAL);
				goto out;
			}
			explicit_bzero(buf, used);
			memmove(buf, buf + used, len - used);
			len -= used;
		}
		if (len == cap) {
			char *nb;

			if (cap >= WG_UAPI_MAX_REQUEST)
				goto out;
			nb = malloc(cap ? cap * 2 : READ_CHUNK);
			if (!nb)
				goto out;
			if (buf) {
				memcpy(nb, buf, len);
				explicit_bzero(buf, cap);
				free(buf);
			}
			buf = nb;
			cap = cap ? cap * 2 : READ_CHUNK;
		}
		if (wait_ready(&c, POLLIN) < 0)
			goto out; /* the client's time is up */
		n = read(fd, buf + len, cap - len);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			goto out;
		len += (size_t)n;
	}
out:
	if (buf) {
		explicit_bzero(buf, cap);
		free(buf);
	}
}
