/* SPDX-License-Identifier: MIT */
/* wg-quick style configuration files ([Interface], [Peer], [Spliced]) and key encodings. */
#include "wgconf.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base64.h"
#include "ct.h"
#include "log.h"
#include "sockaddr.h"
#include "strset.h"

enum {
	MAX_FILE = 1 << 20, /* a config with thousands of peers is still far below this */
	MAX_LINE = 4096,
};

enum section {
	SEC_NONE,
	SEC_INTERFACE,
	SEC_PEER,
	SEC_SPLICED,
};

/*
 * Keys in constant time: base64 through lib/base64.c's _ct codec, hex with
 * the same branch-free character mapping (lib/ct.h).
 */

int wgconf_key_from_base64(uint8_t key[WGCONF_KEY_LEN], const char *s)
{
	uint8_t out[WGCONF_KEY_LEN];
	size_t len = strlen(s), n = 0;
	int ret;

	/* 44 characters ending in one '=' are 32 bytes; no other length or padding is a key. */
	if (len != WGCONF_KEY_B64_LEN || s[len - 1] != '=')
		return -EINVAL;
	ret = base64_decode_ct(out, sizeof(out), s, len, &n);
	if (ret == 0 && n == sizeof(out))
		memcpy(key, out, sizeof(out));
	explicit_bzero(out, sizeof(out));
	return ret == 0 && n == sizeof(out) ? 0 : -EINVAL;
}

void wgconf_key_to_base64(char out[WGCONF_KEY_B64_LEN + 1], const uint8_t key[WGCONF_KEY_LEN])
{
	size_t n;

	/* cannot fail: the buffer is exactly base64_encoded_len(32) + 1 bytes */
	base64_encode_ct(out, WGCONF_KEY_B64_LEN + 1, key, WGCONF_KEY_LEN, &n);
}

static const struct ct_range hex_digits[] = {{'0', '9', 0}, {'a', 'f', 10}, {'A', 'F', 10}};

static int hex_value(int c)
{
	return ct_lookup(c, hex_digits, sizeof(hex_digits) / sizeof(hex_digits[0]));
}

int wgconf_key_from_hex(uint8_t key[WGCONF_KEY_LEN], const char *s)
{
	uint8_t out[WGCONF_KEY_LEN];
	int bad = 0;

	if (strlen(s) != WGCONF_KEY_HEX_LEN)
		return -EINVAL;
	for (size_t i = 0; i < WGCONF_KEY_LEN; i++) {
		int hi = hex_value((unsigned char)s[2 * i]),
		    lo = hex_value((unsigned char)s[2 * i + 1]);

		bad |= hi | lo;
		out[i] = (uint8_t)(((unsigned int)hi << 4) | ((unsigned int)lo & 15));
	}
	if (bad < 0) {
		explicit_bzero(out, sizeof(out));
		return -EINVAL;
	}
	memcpy(key, out, sizeof(out));
	explicit_bzero(out, sizeof(out));
	return 0;
}

static char hex_char(unsigned int v)
{
	int x = (int)v;

	return (char)('0' + x + (ct_in_range(x, 10, 15) & ('a' - '0' - 10)));
}

void wgconf_key_to_hex(char out[WGCONF_KEY_HEX_LEN + 1], const uint8_t key[WGCONF_KEY_LEN])
{
	for (size_t i = 0; i < WGCONF_KEY_LEN; i++) {
		out[2 * i] = hex_char(key[i] >> 4);
		out[2 * i + 1] = hex_char(key[i] & 15);
	}
	out[WGCONF_KEY_HEX_LEN] = '\0';
}

bool wgconf_key_is_zero(const uint8_t key[WGCONF_KEY_LEN])
{
	volatile uint8_t acc = 0;

	for (size_t i = 0; i < WGCONF_KEY_LEN; i++)
		acc |= key[i];
	return acc == 0;
}

bool wgconf_numeric_hosts_only;

/* The host:port split is lib/sockaddr.c's; the host may be a name, resolved here and now. */
int wgconf_endpoint_parse(const char *s, union wgconf_sockaddr *out)
{
	char buf[512], port_str[8], *host;
	struct addrinfo hints = {
	        .ai_family = AF_UNSPEC, .ai_socktype = SOCK_DGRAM, .ai_protocol = IPPROTO_UDP};
	struct addrinfo *res = NULL;
	const char *why;
	uint16_t port;
	bool bracketed;
	int ret;

	if (strlen(s) >= sizeof(buf) || !*s)
		return -EINVAL;
	strcpy(buf, s);
	if (sa_split_hostport(buf, &host, &port, &bracketed, &why) < 0)
		return -EINVAL;
	snprintf(port_str, sizeof(port_str), "%u", port);
	if (wgconf_numeric_hosts_only)
		hints.ai_flags |= AI_NUMERICHOST;
	ret = getaddrinfo(host, port_str, &hints, &res);
	if (ret != 0)
		return ret == EAI_SYSTEM ? -errno : -EHOSTUNREACH;
	memset(out, 0, sizeof(*out));
	if (res->ai_family == AF_INET && res->ai_addrlen == sizeof(out->in4))
		memcpy(&out->in4, res->ai_addr, sizeof(out->in4));
	else if (res->ai_family == AF_INET6 && res->ai_addrlen == sizeof(out->in6))
		memcpy(&out->in6, res->ai_addr, sizeof(out->in6));
	else
		ret = -EAFNOSUPPORT;
	freeaddrinfo(res);
	return ret;
}

struct parser {
	struct wgconf *conf;
	const char *name;
	unsigned int line;
	enum section sec;
	char *err;
	size_t errlen;
};

__attribute__((format(printf, 2, 3))) static int fail(struct parser *p, const char *fmt, ...)
{
	va_list ap;
	int n;

	n = snprintf(p->err, p->errlen, "%s:%u: ", p->name, p->line);
	if (n < 0 || (size_t)n >= p->errlen)
		return -EINVAL;
	va_start(ap, fmt);
	vsnprintf(p->err + n, p->errlen - (size_t)n, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static char *trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

static int parse_uint(const char *v, unsigned long max, unsigned long *out)
{
	char *end;
	unsigned long x;

	if (!isdigit((unsigned char)*v))
		return -EINVAL;
	errno = 0;
	x = strtoul(v, &end, 0); /* 0x... accepted, as wg(8) does for fwmark */
	if (errno || *end || x > max)
		return -EINVAL;
	*out = x;
	return 0;
}

static int parse_bool(const char *v, bool *out)
{
	if (!strcasecmp(v, "on") || !strcasecmp(v, "true") || !strcasecmp(v, "yes") ||
	    !strcmp(v, "1")) {
		*out = true;
		return 0;
	}
	if (!strcasecmp(v, "off") || !strcasecmp(v, "false") || !strcasecmp(v, "no") ||
	    !strcmp(v, "0")) {
		*out = false;
		return 0;
	}
	return -EINVAL;
}

static int push_prefix(struct netlink_prefix **arr, size_t *n, const struct netlink_prefix *pfx)
{
	struct netlink_prefix *a = realloc(*arr, (*n + 1) * sizeof(**arr));

	if (!a)
		return -ENOMEM;
	a[(*n)++] = *pfx;
	*arr = a;
	return 0;
}

/* Comma-separated prefixes, each "addr[/len]"; empty items are allowed (wg-quick does). */
static int parse_prefix_list(struct parser *p, const char *key, char *v,
                             struct netlink_prefix **arr, size_t *n, bool mask)
{
	char *cur = v;

	for (char *tok = strset_tok(&cur, ","); tok; tok = strset_tok(&cur, ",")) {
		struct netlink_prefix pfx;
		char *t = trim(tok);

		if (!*t)
			continue;
		if (netlink_prefix_parse(t, &pfx) < 0)
			return fail(p, "%s: '%s' is not an IP address or prefix", key, t);
		if (mask)
			netlink_prefix_mask(&pfx);
		if (push_prefix(arr, n, &pfx) < 0)
			return fail(p, "out of memory");
	}
	return 0;
}

static int parse_key(struct parser *p, const char *key, const char *v, uint8_t out[32])
{
	if (wgconf_key_from_base64(out, v) < 0)
		return fail(p, "%s: not a valid key (expected 32 bytes of base64, 44 characters)",
		            key);
	return 0;
}

static int interface_key(struct parser *p, const char *key, char *v)
{
	struct wgconf *c = p->conf;
	unsigned long x;

	if (!strcasecmp(key, "PrivateKey")) {
		if (parse_key(p, "PrivateKey", v, c->private_key) < 0)
			return -EINVAL;
		c->has_private_key = true;
	} else if (!strcasecmp(key, "ListenPort")) {
		if (parse_uint(v, 65535, &x) < 0)
			return fail(p, "ListenPort: '%s' is not a port number (0-65535)", v);
		c->listen_port = (uint16_t)x;
	} else if (!strcasecmp(key, "FwMark")) {
		if (!strcasecmp(v, "off"))
			x = 0;
		else if (parse_uint(v, 0xffffffffu, &x) < 0)
			return fail(p, "FwMark: '%s' is not a number or 'off'", v);
		c->fwmark = (uint32_t)x;
	} else if (!strcasecmp(key, "MTU")) {
		if (parse_uint(v, 65535, &x) < 0 || x < 576)
			return fail(p, "MTU: '%s' is not a number between 576 and 65535", v);
		c->mtu = (unsigned int)x;
	} else if (!strcasecmp(key, "Address")) {
		return parse_prefix_list(p, "Address", v, &c->addresses, &c->n_addresses, false);
	} else if (!strcasecmp(key, "Table")) {
		if (!strcasecmp(v, "off")) {
			c->table = WGCONF_TABLE_OFF;
		} else if (!strcasecmp(v, "auto")) {
			c->table = WGCONF_TABLE_AUTO;
		} else if (parse_uint(v, 0xffffffffu, &x) == 0 && x > 0) {
			c->table = WGCONF_TABLE_ID;
			c->table_id = (uint32_t)x;
		} else {
			return fail(p, "Table: '%s' is not 'off', 'auto' or a table number", v);
		}
	} else if (!strcasecmp(key, "DNS") || !strcasecmp(key, "SaveConfig")) {
		log_warn("%s:%u: %s is ignored by spliced", p->name, p->line, key);
	} else if (!strcasecmp(key, "PreUp") || !strcasecmp(key, "PostUp") ||
	           !strcasecmp(key, "PreDown") || !strcasecmp(key, "PostDown")) {
		return fail(p, "%s: shell hooks are not supported by spliced", key);
	} else {
		return fail(p, "unknown key '%s' in [Interface]", key);
	}
	return 0;
}

static int peer_key(struct parser *p, const char *key, char *v)
{
	struct wgconf_peer *peer = &p->conf->peers[p->conf->n_peers - 1];
	unsigned long x;
	int ret;

	if (!strcasecmp(key, "PublicKey")) {
		return parse_key(p, "PublicKey", v, peer->public_key);
	} else if (!strcasecmp(key, "PresharedKey")) {
		if (parse_key(p, "PresharedKey", v, peer->preshared_key) < 0)
			return -EINVAL;
		peer->has_preshared_key = !wgconf_key_is_zero(peer->preshared_key);
	} else if (!strcasecmp(key, "AllowedIPs")) {
		return parse_prefix_list(p, "AllowedIPs", v, &peer->allowed_ips,
		                         &peer->n_allowed_ips, true);
	} else if (!strcasecmp(key, "Endpoint")) {
		ret = wgconf_endpoint_parse(v, &peer->endpoint);
		if (ret < 0)
			return fail(p,
			            "Endpoint: cannot use '%s' (expected host:port or [v6]:port)",
			            v);
		peer->has_endpoint = true;
	} else if (!strcasecmp(key, "PersistentKeepalive")) {
		if (!strcasecmp(v, "off"))
			x = 0;
		else if (parse_uint(v, 65535, &x) < 0)
			return fail(p, "PersistentKeepalive: '%s' is not 'off' or 0-65535 seconds",
			            v);
		peer->persistent_keepalive = (uint16_t)x;
	} else {
		return fail(p, "unknown key '%s' in [Peer]", key);
	}
	return 0;
}

static int spliced_key(struct parser *p, const char *key, char *v)
{
	struct wgconf *c = p->conf;
	unsigned long x;

	if (!strcasecmp(key, "name")) {
		if (!*v || strlen(v) >= sizeof(c->name) || strchr(v, '/') || strchr(v, ' '))
			return fail(p, "name: '%s' is not a valid interface name (1-15 characters)",
			            v);
		strcpy(c->name, v);
	} else if (!strcasecmp(key, "workers")) {
		if (!strcasecmp(v, "auto"))
			x = 0;
		else if (parse_uint(v, WGCONF_MAX_WORKERS, &x) < 0 || x == 0)
			return fail(p, "workers: '%s' is not 'auto' or 1-%d", v,
			            WGCONF_MAX_WORKERS);
		c->workers = (unsigned int)x;
	} else if (!strcasecmp(key, "offload")) {
		if (parse_bool(v, &c->offload) < 0)
			return fail(p, "offload: '%s' is not on or off", v);
	} else {
		return fail(p, "unknown key '%s' in [Spliced]", key);
	}
	return 0;
}

static int section(struct parser *p, char *s)
{
	struct wgconf *c = p->conf;

	if (!strcasecmp(s, "Interface")) {
		p->sec = SEC_INTERFACE;
	} else if (!strcasecmp(s, "Spliced")) {
		p->sec = SEC_SPLICED;
	} else if (!strcasecmp(s, "Peer")) {
		struct wgconf_peer *a = realloc(c->peers, (c->n_peers + 1) * sizeof(*a));

		if (!a)
			return fail(p, "out of memory");
		c->peers = a;
		memset(&a[c->n_peers], 0, sizeof(*a));
		a[c->n_peers].line = p->line;
		c->n_peers++;
		p->sec = SEC_PEER;
	} else {
		return fail(p, "unknown section [%s]", s);
	}
	return 0;
}

static int line(struct parser *p, char *raw)
{
	char *s, *eq, *key, *val, *hash = strchr(raw, '#');

	if (hash)
		*hash = '\0';
	s = trim(raw);
	if (!*s)
		return 0;
	if (*s == '[') {
		size_t n = strlen(s);

		if (s[n - 1] != ']')
			return fail(p, "section header is missing ']'");
		s[n - 1] = '\0';
		return section(p, trim(s + 1));
	}
	eq = strchr(s, '=');
	if (!eq)
		return fail(p, "expected 'Key = Value'");
	*eq = '\0';
	key = trim(s);
	val = trim(eq + 1);
	if (!*key)
		return fail(p, "missing key before '='");
	switch (p->sec) {
	case SEC_INTERFACE:
		return interface_key(p, key, val);
	case SEC_PEER:
		return peer_key(p, key, val);
	case SEC_SPLICED:
		return spliced_key(p, key, val);
	case SEC_NONE:
		break;
	}
	return fail(p, "'%s' outside of a section", key);
}

static int finish(struct parser *p)
{
	struct wgconf *c = p->conf;

	for (size_t i = 0; i < c->n_peers; i++) {
		struct wgconf_peer *peer = &c->peers[i];

		p->line = peer->line;
		if (wgconf_key_is_zero(peer->public_key))
			return fail(p, "[Peer] has no PublicKey");
		for (size_t j = 0; j < i; j++)
			if (!memcmp(c->peers[j].public_key, peer->public_key, WGCONF_KEY_LEN))
				return fail(p, "PublicKey: the same peer appears twice (line %u)",
				            c->peers[j].line);
	}
	return 0;
}

int wgconf_parse_string(struct wgconf *conf, const char *text, const char *name, char *err,
                        size_t errlen)
{
	struct parser p = {.conf = conf,
	                   .name = name,
	                   .line = 0,
	                   .sec = SEC_NONE,
	                   .err = err,
	                   .errlen = errlen};
	char buf[MAX_LINE];
	const char *s = text;
	int ret = 0;

	memset(conf, 0, sizeof(*conf));
	conf->mtu = WGCONF_DEFAULT_MTU;
	conf->offload = true;
	if (errlen)
		err[0] = '\0';
	while (*s) {
		const char *nl = strchr(s, '\n');
		size_t n = nl ? (size_t)(nl - s) : strlen(s);

		p.line++;
		if (n >= sizeof(buf)) {
			ret = fail(&p, "line longer than %d bytes", MAX_LINE - 1);
			goto out;
		}
		memcpy(buf, s, n);
		buf[n] = '\0';
		if (memchr(buf, '\0', n)) {
			ret = fail(&p, "NUL byte in line");
			goto out;
		}
		ret = line(&p, buf);
		if (ret < 0)
			goto out;
		s += n + (nl ? 1 : 0);
	}
	ret = finish(&p);
out:
	explicit_bzero(buf, sizeof(buf));
	if (ret < 0)
		wgconf_free(conf);
	return ret;
}

int wgconf_parse_file(struct wgconf *conf, const char *path, char *err, size_t errlen)
{
	struct stat st;
	char *text = NULL;
	size_t len = 0;
	int fd, ret;

	memset(conf, 0, sizeof(*conf));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return ret;
	}
	if (fstat(fd, &st) < 0 || st.st_size > MAX_FILE) {
		ret = fstat(fd, &st) < 0 ? -errno : -EFBIG;
		snprintf(err, errlen, "%s: %s", path, strerror(-ret));
		goto out;
	}
	/* wg-quick warns about world-readable private keys; so do we. */
	if (st.st_mode & 0007)
		log_warn("%s: file is world accessible", path);
	text = malloc((size_t)st.st_size + 1);
	if (!text) {
		ret = -ENOMEM;
		snprintf(err, errlen, "%s: out of memory", path);
		goto out;
	}
	while (len < (size_t)st.st_size) {
		ssize_t n = read(fd, text + len, (size_t)st.st_size - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	text[len] = '\0';
	if (strlen(text) != len) {
		snprintf(err, errlen, "%s: contains a NUL byte", path);
		ret = -EINVAL;
		goto out;
	}
	ret = wgconf_parse_string(conf, text, path, err, errlen);
out:
	if (text) {
		explicit_bzero(text, len);
		free(text);
	}
	close(fd);
	return ret;
}

void wgconf_free(struct wgconf *conf)
{
	for (size_t i = 0; i < conf->n_peers; i++) {
		free(conf->peers[i].allowed_ips);
		explicit_bzero(conf->peers[i].preshared_key, WGCONF_KEY_LEN);
	}
	free(conf->peers);
	free(conf->addresses);
	explicit_bzero(conf, sizeof(*conf));
}

int wgconf_name_from_path(const char *path, char name[16])
{
	const char *base = strrchr(path, '/');
	size_t n;

	base = base ? base + 1 : path;
	n = strlen(base);
	if (n > 5 && !strcmp(base + n - 5, ".conf"))
		n -= 5;
	if (n == 0 || n >= 16)
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)base[i]) && !strchr("_=+.-", base[i]))
			return -EINVAL;
	memcpy(name, base, n);
	name[n] = '\0';
	return 0;
}
