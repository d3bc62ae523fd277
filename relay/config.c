/* SPDX-License-Identifier: MIT */
/* INI → struct config: inih splits keys from values, this file gives them meaning. */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ini.h>

#include "config.h"

/*
 * Debian's inih (the one we build against) exposes its compile-time limits as
 * variables; the default 200-byte line cannot hold a `user =` line with a
 * 255-byte name and password, nor a long users path. Referenced weakly so an
 * upstream build, which lacks the variable, still links (long lines are then
 * reported as too long).
 */
extern int ini_max_line;
#pragma weak ini_max_line

enum config_parse_limits {
	LINE_BYTES = 8192, /* inih line buffer: the longest useful line is a 4095-byte path */
	LABEL_BYTES = 2 * 84 + 8, /* "[TYPE NAME]", both parts quoted (QUOTE_BYTES) */
	KEY_NAME_MAX = 32,        /* longer keys are unknown by construction */
	QUOTE_BYTES = 84,         /* values echoed in messages are cut at 80 bytes */
	KEYS_PER_SECTION = 16,
	WORKERS_MAX = 256,
	MAX_CONNECTIONS_MAX = 10000000,
	MAX_PIPES_MAX = 16777216,
	RESOLVER_THREADS_MAX = 64,
	PIPE_SIZE_MIN = 4096,
	PIPE_SIZE_MAX = 1048576,
	DAY_MS = 24 * 3600 * 1000,
	IFNAME_MAX = 15, /* IFNAMSIZ - 1 */
	HOSTNAME_MAX = 253,
	LABEL_MAX = 63,
};

/* Defaults of [main]; README.md and spliced.example.ini list the same values. */
enum config_defaults {
	DEF_MAX_CONNECTIONS = 10000,
	DEF_HANDSHAKE_MS = 10000,
	DEF_CONNECT_MS = 10000,
	DEF_IDLE_MS = 5 * 60 * 1000,
	DEF_DRAIN_MS = 5000,
	DEF_PIPE_SIZE = 1048576,
	DEF_RESOLVER_THREADS = 2,
};

const char config_default_ini[] = "; built-in: SOCKS5 on 127.0.0.1:1080, direct outbound\n"
                                  "[inbound socks]\n"
                                  "type = socks5\n"
                                  "listen = 127.0.0.1:1080\n";

enum section_kind { SEC_NONE = 0, SEC_SKIP, SEC_MAIN, SEC_INBOUND, SEC_OUTBOUND, SEC_ROUTE };

/* A use of an outbound name, resolved once every section has been read. */
enum ref_kind { REF_INBOUND = 1, REF_DEFAULT, REF_RULE };
struct ref {
	enum ref_kind kind;
	size_t idx;
	int line;
	const char *key;
	char label[LABEL_BYTES];
	char name[CONFIG_NAME_MAX + 1];
};

struct parser;

struct key {
	const char *name;
	void (*set)(struct parser *p, const char *v);
	bool repeat;
	unsigned types; /* bit per inbound/outbound type the key applies to; 0 = any */
};

struct parser {
	struct config *c;
	FILE *in, *err;
	const char *file; /* name in messages */
	char *dir;        /* directory relative users paths start from; NULL = cwd */
	char *buf;        /* getline buffer; may hold credentials, wiped */
	size_t cap;
	int line, errors, read_errno, inbound_headers;
	/* the section being read */
	enum section_kind sec;
	const struct key *keys;
	size_t idx;
	int sec_line, main_line, route_line;
	char label[LABEL_BYTES];
	unsigned seen;
	int key_line[KEYS_PER_SECTION];
	const char *key;
	struct ref *refs;
	size_t n_refs, cap_rules;
};

/* --- messages --- */

/* Copies v for a message: at most 80 bytes, non-printable bytes as '?'. */
static const char *quote(char out[QUOTE_BYTES], const char *v)
{
	size_t i;

	for (i = 0; v[i] && i < QUOTE_BYTES - 4; i++)
		out[i] = isprint((unsigned char)v[i]) ? v[i] : '?';
	if (v[i])
		memcpy(out + i - 3, "...", 3);
	out[i] = '\0';
	return out;
}

/* "file:line: [section] key: message"; the label and key parts are optional. */
static void __attribute__((format(printf, 4, 5)))
serr(struct parser *p, int line, const char *key, const char *fmt, ...)
{
	va_list ap;

	p->errors++;
	if (!p->err)
		return;
	fprintf(p->err, "%s:%d: ", p->file, line);
	if (p->label[0])
		fprintf(p->err, key ? "%s " : "%s: ", p->label);
	if (key)
		fprintf(p->err, "%s: ", key);
	va_start(ap, fmt);
	vfprintf(p->err, fmt, ap);
	va_end(ap);
	fputc('\n', p->err);
}

/* An error about the value of the key on the current line. */
#define kerr(p, ...) serr(p, (p)->line, (p)->key, __VA_ARGS__)

/* --- scalar values --- */

/* Decimal digits only (no sign, no blanks); saturates instead of wrapping. */
static int parse_u64(const char *s, const char **end, uint64_t *out)
{
	uint64_t v = 0;
	const char *q = s;

	for (; *q >= '0' && *q <= '9'; q++)
		v = v > UINT64_MAX / 100 ? UINT64_MAX / 10 : v * 10 + (uint64_t)(*q - '0');
	if (q == s)
		return -EINVAL;
	*end = q;
	*out = v;
	return 0;
}

int config_parse_duration(const char *s, unsigned *ms)
{
	static const struct {
		const char *unit;
		uint64_t ms;
	} units[] = {{"", 1000}, {"ms", 1}, {"s", 1000}, {"m", 60000}, {"h", 3600000}};
	const char *end;
	uint64_t v;

	if (parse_u64(s, &end, &v) < 0)
		return -EINVAL;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(end, units[i].unit) != 0)
			continue;
		if (v > UINT_MAX / units[i].ms)
			return -ERANGE;
		*ms = (unsigned)(v * units[i].ms);
		return 0;
	}
	return -EINVAL;
}

int config_parse_size(const char *s, unsigned *bytes)
{
	const char *end;
	uint64_t v, mult = 1;

	if (parse_u64(s, &end, &v) < 0)
		return -EINVAL;
	if (*end == 'k' || *end == 'K')
		mult = 1024, end++;
	else if (*end == 'm' || *end == 'M')
		mult = 1024 * 1024, end++;
	if (*end != '\0')
		return -EINVAL;
	if (v > UINT_MAX / mult)
		return -ERANGE;
	*bytes = (unsigned)(v * mult);
	return 0;
}

static int get_uint(struct parser *p, const char *v, unsigned min, unsigned max, unsigned *out)
{
	char q[QUOTE_BYTES];
	const char *end;
	uint64_t n;

	if (parse_u64(v, &end, &n) < 0 || *end) {
		kerr(p, "\"%s\" is not a whole number", quote(q, v));
		return -EINVAL;
	}
	if (n < min || n > max) {
		kerr(p, "\"%s\" is out of range (%u..%u)", quote(q, v), min, max);
		return -ERANGE;
	}
	*out = (unsigned)n;
	return 0;
}

/* range: how the allowed range reads in a message, e.g. "1ms..24h". */
static void get_duration(struct parser *p, const char *v, unsigned min, unsigned max,
                         const char *range, unsigned *out)
{
	char q[QUOTE_BYTES];
	unsigned ms;
	int rc = config_parse_duration(v, &ms);

	if (rc == -EINVAL)
		kerr(p, "\"%s\" is not a duration (e.g. 500ms, 10s, 5m, 1h)", quote(q, v));
	else if (rc < 0 || ms < min || ms > max)
		kerr(p, "\"%s\" is out of range (%s)", quote(q, v), range);
	else
		*out = ms;
}

/* --- addresses and names --- */

/* A DNS name: dot-separated labels of letters, digits, '-' and '_'. */
static bool valid_hostname(const char *s)
{
	size_t len = strlen(s), lab = 0;
	bool digits_only = true;

	if (len > 1 && s[len - 1] == '.')
		len--; /* the root label of a fully qualified name */
	if (len == 0 || len > HOSTNAME_MAX)
		return false;
	for (const char *c = s;; c++) {
		if (*c == '.' || c == s + len) {
			if (lab == 0 || lab > LABEL_MAX)
				return false;
			if (c == s + len)
				break;
			lab = 0;
			digits_only = true;
			continue;
		}
		if (!isalnum((unsigned char)*c) && *c != '-' && *c != '_')
			return false;
		if (!isdigit((unsigned char)*c))
			digits_only = false;
		lab++;
	}
	/* "1.2.3" would reach inet_aton() in the resolver as an address. */
	return !digits_only;
}

static int parse_port(const char *s, uint16_t *port)
{
	const char *end;
	uint64_t v;

	if (parse_u64(s, &end, &v) < 0 || *end || v == 0 || v > 65535)
		return -EINVAL;
	*port = (uint16_t)v;
	return 0;
}

/*
 * Splits "host:port" / "[v6]:port" in place. *host points into s (brackets
 * removed), *v6 tells whether it was bracketed. why: the message on failure.
 */
static int split_hostport(char *s, char **host, uint16_t *port, bool *v6, const char **why)
{
	char *colon;

	*v6 = s[0] == '[';
	if (*v6) {
		char *close = strchr(s, ']');
		if (!close) {
			*why = "has no closing ']'";
			return -EINVAL;
		}
		*close = '\0';
		*host = s + 1;
		colon = close + 1;
		if (*colon != ':') {
			*why = *colon ? "has text after ']' that is not \":port\"" : "has no port";
			return -EINVAL;
		}
	} else {
		colon = strrchr(s, ':');
		if (!colon) {
			*why = "has no port";
			return -EINVAL;
		}
		*host = s;
		if (memchr(s, ':', (size_t)(colon - s))) {
			*why = "needs brackets around the IPv6 address: [addr]:port";
			return -EINVAL;
		}
	}
	*colon = '\0';
	if (parse_port(colon + 1, port) < 0) {
		*why = "has a bad port (1..65535)";
		return -EINVAL;
	}
	if (**host == '\0') {
		*why = "has no host";
		return -EINVAL;
	}
	return 0;
}

static int sockaddr_why(const char *str, struct sockaddr_storage *ss, socklen_t *len,
                        const char **why)
{
	char *s = strdup(str), *host;
	uint16_t port;
	bool v6;
	int rc = -ENOMEM;

	if (!s)
		return rc;
	memset(ss, 0, sizeof(*ss));
	rc = split_hostport(s, &host, &port, &v6, why);
	if (rc < 0)
		goto out;
	rc = -EINVAL;
	if (v6) {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;
		if (inet_pton(AF_INET6, host, &a->sin6_addr) != 1) {
			*why = "is not an IPv6 address and port ([addr]:port)";
			goto out;
		}
		a->sin6_family = AF_INET6;
		a->sin6_port = htons(port);
		*len = sizeof(*a);
	} else {
		struct sockaddr_in *a = (struct sockaddr_in *)ss;
		if (inet_pton(AF_INET, host, &a->sin_addr) != 1) {
			*why = "is not an IP address and port (a.b.c.d:port or [v6]:port)";
			goto out;
		}
		a->sin_family = AF_INET;
		a->sin_port = htons(port);
		*len = sizeof(*a);
	}
	rc = 0;
out:
	free(s);
	return rc;
}

int config_parse_sockaddr(const char *s, struct sockaddr_storage *ss, socklen_t *len)
{
	const char *why;

	return sockaddr_why(s, ss, len, &why) < 0 ? -EINVAL : 0;
}

static int hostport_why(const char *str, char **host, uint16_t *port, const char **why)
{
	char *s = strdup(str), *h;
	unsigned char addr[sizeof(struct in6_addr)];
	bool v6;
	int rc = -ENOMEM;

	*host = NULL;
	if (!s)
		return rc;
	rc = split_hostport(s, &h, port, &v6, why);
	if (rc < 0)
		goto out;
	rc = -EINVAL;
	if (v6 && inet_pton(AF_INET6, h, addr) != 1) {
		*why = "is not an IPv6 address in brackets";
		goto out;
	}
	if (!v6 && inet_pton(AF_INET, h, addr) != 1 && !valid_hostname(h)) {
		*why = "is not a host name or IP address and port";
		goto out;
	}
	*host = strdup(h);
	rc = *host ? 0 : -ENOMEM;
out:
	free(s);
	return rc;
}

int config_parse_hostport(const char *s, char **host, uint16_t *port)
{
	const char *why;
	int rc = hostport_why(s, host, port, &why);

	return rc == -ENOMEM ? rc : rc < 0 ? -EINVAL : 0;
}

static bool valid_name(const char *s)
{
	size_t n = strlen(s);

	return n > 0 && n <= CONFIG_NAME_MAX &&
	       strspn(s, "abcdefghijklmnopqrstuvwxyz"
	                 "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	                 "0123456789._-") == n;
}

/* Remember a use of outbound `name` for resolve_refs(). */
static void add_ref(struct parser *p, enum ref_kind kind, size_t idx, const char *name)
{
	char q[QUOTE_BYTES];
	struct ref *r;

	if (!valid_name(name)) {
		kerr(p, "\"%s\" is not an outbound name", quote(q, name));
		return;
	}
	r = realloc(p->refs, (p->n_refs + 1) * sizeof(*r));
	if (!r) {
		kerr(p, "out of memory");
		return;
	}
	p->refs = r;
	r += p->n_refs++;
	*r = (struct ref){.kind = kind, .idx = idx, .line = p->line, .key = p->key};
	snprintf(r->label, sizeof(r->label), "%s", p->label);
	snprintf(r->name, sizeof(r->name), "%s", name);
}

/* --- [main] --- */

static void set_workers(struct parser *p, const char *v)
{
	unsigned n;

	if (strcmp(v, "auto") == 0)
		p->c->workers = 0;
	else if (get_uint(p, v, 1, WORKERS_MAX, &n) == 0)
		p->c->workers = (int)n;
}

static void set_log_level(struct parser *p, const char *v)
{
	static const char *const names[] = {[LOG_ERROR] = "error",
	                                    [LOG_WARN] = "warn",
	                                    [LOG_INFO] = "info",
	                                    [LOG_DEBUG] = "debug"};
	char q[QUOTE_BYTES];

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (strcmp(v, names[i]) == 0) {
			p->c->log_level = (enum log_level)i;
			return;
		}
	}
	kerr(p, "\"%s\" is not one of error, warn, info, debug", quote(q, v));
}

static void set_max_connections(struct parser *p, const char *v)
{
	get_uint(p, v, 1, MAX_CONNECTIONS_MAX, &p->c->max_connections);
}

static void set_handshake_timeout(struct parser *p, const char *v)
{
	get_duration(p, v, 1, DAY_MS, "1ms..24h", &p->c->handshake_timeout_ms);
}

static void set_connect_timeout(struct parser *p, const char *v)
{
	get_duration(p, v, 1, DAY_MS, "1ms..24h", &p->c->connect_timeout_ms);
}

static void set_idle_timeout(struct parser *p, const char *v)
{
	get_duration(p, v, 0, UINT_MAX, "0 or up to 1193h", &p->c->idle_timeout_ms);
}

static void set_drain_timeout(struct parser *p, const char *v)
{
	get_duration(p, v, 0, DAY_MS, "0..24h", &p->c->drain_timeout_ms);
}

static void set_pipe_size(struct parser *p, const char *v)
{
	char q[QUOTE_BYTES];
	unsigned n;
	int rc = config_parse_size(v, &n);

	if (rc == -EINVAL)
		kerr(p, "\"%s\" is not a size (bytes, or a number with a k or m suffix)",
		     quote(q, v));
	else if (rc < 0 || n < PIPE_SIZE_MIN || n > PIPE_SIZE_MAX)
		kerr(p, "\"%s\" is out of range (4k..1m)", quote(q, v));
	else
		p->c->pipe_size = n;
}

static void set_max_pipes(struct parser *p, const char *v)
{
	get_uint(p, v, 0, MAX_PIPES_MAX, &p->c->max_pipes);
}

static void set_resolver_threads(struct parser *p, const char *v)
{
	get_uint(p, v, 1, RESOLVER_THREADS_MAX, &p->c->resolver_threads);
}

static const struct key main_keys[] = {
        {"workers", set_workers, false, 0},
        {"log-level", set_log_level, false, 0},
        {"max-connections", set_max_connections, false, 0},
        {"handshake-timeout", set_handshake_timeout, false, 0},
        {"connect-timeout", set_connect_timeout, false, 0},
        {"idle-timeout", set_idle_timeout, false, 0},
        {"drain-timeout", set_drain_timeout, false, 0},
        {"pipe-size", set_pipe_size, false, 0},
        {"max-pipes", set_max_pipes, false, 0},
        {"resolver-threads", set_resolver_threads, false, 0},
        {NULL, NULL, false, 0},
};

/* --- [inbound NAME] --- */

static const char *const inbound_types[] = {
        [INBOUND_SOCKS5] = "socks5", [INBOUND_HTTP] = "http", [INBOUND_FORWARD] = "forward"};
static const char *const outbound_types[] = {
        [OUTBOUND_DIRECT] = "direct", [OUTBOUND_SOCKS5] = "socks5", [OUTBOUND_BLOCK] = "block"};

static struct inbound *cur_in(struct parser *p)
{
	return &p->c->inbounds[p->idx];
}

static struct outbound *cur_out(struct parser *p)
{
	return &p->c->outbounds[p->idx];
}

static void set_in_type(struct parser *p, const char *v)
{
	char q[QUOTE_BYTES];

	for (int t = INBOUND_SOCKS5; t <= INBOUND_FORWARD; t++) {
		if (strcmp(v, inbound_types[t]) == 0) {
			cur_in(p)->type = (enum inbound_type)t;
			return;
		}
	}
	kerr(p, "\"%s\" is not one of socks5, http, forward", quote(q, v));
}

static void set_listen(struct parser *p, const char *v)
{
	struct inbound *in = cur_in(p);
	char q[QUOTE_BYTES];
	const char *why = "cannot be stored: out of memory";

	if (sockaddr_why(v, &in->listen, &in->listen_len, &why) < 0)
		kerr(p, "\"%s\" %s", quote(q, v), why);
}

static void set_user(struct parser *p, const char *v)
{
	struct users *u = &cur_in(p)->inline_users;
	const char *colon = strchr(v, ':'), *why;
	size_t n;

	if (!colon) {
		kerr(p, "expected name:password");
		return;
	}
	n = (size_t)(colon - v);
	why = users_check_name(v, n);
	if (why) {
		kerr(p, "%s", why);
		return;
	}
	why = users_check_pass(colon + 1, strlen(colon + 1));
	if (why) {
		kerr(p, "user \"%.*s\": %s", (int)n, v, why);
		return;
	}
	for (size_t i = 0; i < u->n; i++) {
		if (strlen(u->v[i].name) == n && memcmp(u->v[i].name, v, n) == 0) {
			kerr(p, "user \"%.*s\" defined twice", (int)n, v);
			return;
		}
	}
	if (users_add(u, v, n, colon + 1, strlen(colon + 1)) < 0)
		kerr(p, "out of memory");
}

static void set_users(struct parser *p, const char *v)
{
	struct inbound *in = cur_in(p);
	bool rel = p->dir && v[0] != '/';
	const char *sep = rel && p->dir[strlen(p->dir) - 1] != '/' ? "/" : "";
	size_t need = strlen(v) + (rel ? strlen(p->dir) + strlen(sep) : 0);

	if (need > CONFIG_PATH_MAX) {
		kerr(p, "path longer than %d bytes", CONFIG_PATH_MAX);
		return;
	}
	in->users_file = malloc(need + 1);
	if (!in->users_file) {
		kerr(p, "out of memory");
		return;
	}
	/* Relative to the config file, so a reload finds it whatever the cwd. */
	if (rel)
		snprintf(in->users_file, need + 1, "%s%s%s", p->dir, sep, v);
	else
		memcpy(in->users_file, v, need + 1);
}

static void set_target(struct parser *p, const char *v)
{
	struct inbound *in = cur_in(p);
	char q[QUOTE_BYTES];
	const char *why = "cannot be stored: out of memory";

	if (hostport_why(v, &in->target_host, &in->target_port, &why) < 0)
		kerr(p, "\"%s\" %s", quote(q, v), why);
}

static void set_in_outbound(struct parser *p, const char *v)
{
	add_ref(p, REF_INBOUND, p->idx, v);
}

enum {
	AUTH_INBOUNDS = 1u << INBOUND_SOCKS5 | 1u << INBOUND_HTTP,
	FORWARD_ONLY = 1u << INBOUND_FORWARD,
	DIRECT_ONLY = 1u << OUTBOUND_DIRECT,
	SOCKS5_ONLY = 1u << OUTBOUND_SOCKS5,
};

/* Order matters: close_inbound() names keys by index (IN_*). */
enum { IN_TYPE, IN_LISTEN, IN_USER, IN_USERS, IN_TARGET, IN_OUTBOUND };
static const struct key inbound_keys[] = {
        [IN_TYPE] = {"type", set_in_type, false, 0},
        [IN_LISTEN] = {"listen", set_listen, false, 0},
        [IN_USER] = {"user", set_user, true, AUTH_INBOUNDS},
        [IN_USERS] = {"users", set_users, false, AUTH_INBOUNDS},
        [IN_TARGET] = {"target", set_target, false, FORWARD_ONLY},
        [IN_OUTBOUND] = {"outbound", set_in_outbound, false, 0},
        {NULL, NULL, false, 0},
};

/* --- [outbound NAME] --- */

static void set_out_type(struct parser *p, const char *v)
{
	char q[QUOTE_BYTES];

	for (int t = OUTBOUND_DIRECT; t <= OUTBOUND_BLOCK; t++) {
		if (strcmp(v, outbound_types[t]) == 0) {
			cur_out(p)->type = (enum outbound_type)t;
			return;
		}
	}
	kerr(p, "\"%s\" is not one of direct, socks5, block", quote(q, v));
}

static void set_bind_address(struct parser *p, const char *v)
{
	struct sockaddr_storage *ss = &cur_out(p)->bind_addr;
	struct sockaddr_in *a4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;
	char q[QUOTE_BYTES], buf[INET6_ADDRSTRLEN + 2];
	size_t n = strlen(v);

	if (inet_pton(AF_INET, v, &a4->sin_addr) == 1) {
		a4->sin_family = AF_INET;
		return;
	}
	/* "[v6]" as well as bare v6: both appear in the wild. */
	if (n > 2 && n < sizeof(buf) && v[0] == '[' && v[n - 1] == ']') {
		memcpy(buf, v + 1, n - 2);
		buf[n - 2] = '\0';
		v = buf;
	}
	if (inet_pton(AF_INET6, v, &a6->sin6_addr) == 1) {
		a6->sin6_family = AF_INET6;
		return;
	}
	memset(ss, 0, sizeof(*ss));
	kerr(p, "\"%s\" is not an IPv4 or IPv6 address", quote(q, v));
}

static void set_bind_interface(struct parser *p, const char *v)
{
	char q[QUOTE_BYTES];
	size_t n = strlen(v);

	if (n > IFNAME_MAX || strpbrk(v, "/: \t") || strcmp(v, ".") == 0 || strcmp(v, "..") == 0) {
		kerr(p, "\"%s\" is not an interface name (at most 15 bytes, no '/', ':' or blanks)",
		     quote(q, v));
		return;
	}
	memcpy(cur_out(p)->bind_interface, v, n + 1);
}

static void set_fwmark(struct parser *p, const char *v)
{
	char q[QUOTE_BYTES], *end;
	unsigned long long n;

	/* strtoull alone would accept blanks, a sign and octal. */
	if (!isdigit((unsigned char)v[0]) || (v[0] == '0' && v[1] && v[1] != 'x') ||
	    (v[0] == '0' && v[1] == 'x' && !isxdigit((unsigned char)v[2]))) {
		kerr(p, "\"%s\" is not a number (decimal, or hex with 0x)", quote(q, v));
		return;
	}
	errno = 0;
	n = strtoull(v, &end, 0);
	if (*end) {
		kerr(p, "\"%s\" is not a number (decimal, or hex with 0x)", quote(q, v));
		return;
	}
	if (errno == ERANGE || n > UINT32_MAX) {
		kerr(p, "\"%s\" is out of range (0..0xffffffff)", quote(q, v));
		return;
	}
	cur_out(p)->fwmark = (uint32_t)n;
}

static void set_server(struct parser *p, const char *v)
{
	struct outbound *o = cur_out(p);
	char q[QUOTE_BYTES];
	const char *why = "cannot be stored: out of memory";

	if (hostport_why(v, &o->server_host, &o->server_port, &why) < 0)
		kerr(p, "\"%s\" %s", quote(q, v), why);
}

static void set_username(struct parser *p, const char *v)
{
	const char *why = users_check_name(v, strlen(v));

	if (why)
		kerr(p, "%s", why);
	else if (!(cur_out(p)->username = strdup(v)))
		kerr(p, "out of memory");
}

/* Never echoed: a bad value may still be most of a real password. */
static void set_password(struct parser *p, const char *v)
{
	const char *why = users_check_pass(v, strlen(v));

	if (why)
		kerr(p, "%s", why);
	else if (!(cur_out(p)->password = strdup(v)))
		kerr(p, "out of memory");
}

enum {
	OUT_TYPE,
	OUT_BIND_ADDRESS,
	OUT_BIND_INTERFACE,
	OUT_FWMARK,
	OUT_SERVER,
	OUT_USERNAME,
	OUT_PASSWORD
};
static const struct key outbound_keys[] = {
        [OUT_TYPE] = {"type", set_out_type, false, 0},
        [OUT_BIND_ADDRESS] = {"bind-address", set_bind_address, false, DIRECT_ONLY},
        [OUT_BIND_INTERFACE] = {"bind-interface", set_bind_interface, false, DIRECT_ONLY},
        [OUT_FWMARK] = {"fwmark", set_fwmark, false, DIRECT_ONLY},
        [OUT_SERVER] = {"server", set_server, false, SOCKS5_ONLY},
        [OUT_USERNAME] = {"username", set_username, false, SOCKS5_ONLY},
        [OUT_PASSWORD] = {"password", set_password, false, SOCKS5_ONLY},
        {NULL, NULL, false, 0},
};

/* --- [route] --- */

static const char *parse_cidr(const char *arg, struct rule *r)
{
	char addr[INET6_ADDRSTRLEN + 1];
	const char *slash = strchr(arg, '/'), *end;
	size_t alen = slash ? (size_t)(slash - arg) : strlen(arg);
	unsigned max;
	uint64_t prefix;

	if (alen >= sizeof(addr))
		return "is not an address/prefix";
	memcpy(addr, arg, alen);
	addr[alen] = '\0';
	r->family = strchr(addr, ':') ? AF_INET6 : AF_INET;
	max = r->family == AF_INET6 ? 128 : 32;
	if (inet_pton(r->family, addr, r->addr) != 1)
		return "is not an address/prefix";
	prefix = max;
	if (slash && (parse_u64(slash + 1, &end, &prefix) < 0 || *end))
		return "has a bad prefix length";
	if (prefix > max)
		return r->family == AF_INET6 ? "has a prefix longer than 128"
		                             : "has a prefix longer than 32";
	r->prefix = (uint8_t)prefix;
	for (unsigned bit = r->prefix; bit < max; bit++) {
		if (r->addr[bit / 8] & (0x80 >> (bit % 8)))
			return "has bits set beyond its prefix length";
	}
	return NULL;
}

static const char *parse_port_range(const char *arg, struct rule *r)
{
	char lo[8];
	const char *dash = strchr(arg, '-');
	size_t n = dash ? (size_t)(dash - arg) : strlen(arg);

	if (n >= sizeof(lo))
		return "is not a port (1..65535) or range (lo-hi)";
	memcpy(lo, arg, n);
	lo[n] = '\0';
	if (parse_port(lo, &r->port_lo) < 0)
		return "is not a port (1..65535) or range (lo-hi)";
	r->port_hi = r->port_lo;
	if (dash && parse_port(dash + 1, &r->port_hi) < 0)
		return "is not a port (1..65535) or range (lo-hi)";
	if (r->port_hi < r->port_lo)
		return "is an empty range (lo > hi)";
	return NULL;
}

static const char *parse_domain(const char *arg, struct rule *r)
{
	size_t n;

	if (strncmp(arg, "*.", 2) == 0)
		return "has a wildcard: a domain rule already matches every name below it";
	if (arg[0] == '.')
		arg++;
	r->domain = strdup(arg);
	if (!r->domain)
		return "cannot be stored: out of memory";
	n = strlen(r->domain);
	if (n > 1 && r->domain[n - 1] == '.')
		r->domain[n - 1] = '\0'; /* the root label */
	for (char *c = r->domain; *c; c++)
		*c = (char)tolower((unsigned char)*c);
	return valid_hostname(r->domain) ? NULL : "is not a domain name";
}

static void set_rule(struct parser *p, const char *v)
{
	char q[QUOTE_BYTES], kind[16], *arg = NULL, *target = NULL;
	const char *arrow = strstr(v, "->"), *why;
	struct rule r = {.outbound = -1, .line = p->line};
	size_t n;

	if (!arrow || arrow == v) {
		kerr(p, "\"%s\" is not \"KIND VALUE -> OUTBOUND\"", quote(q, v));
		return;
	}
	n = strcspn(v, " \t");
	if (n >= sizeof(kind) || v + n >= arrow) {
		kerr(p, "\"%s\" is not \"KIND VALUE -> OUTBOUND\"", quote(q, v));
		return;
	}
	memcpy(kind, v, n);
	kind[n] = '\0';
	v += n + strspn(v + n, " \t");
	for (n = (size_t)(arrow - v); n > 0 && (v[n - 1] == ' ' || v[n - 1] == '\t');)
		n--;
	arg = strndup(v, n);
	target = strdup(arrow + 2 + strspn(arrow + 2, " \t"));
	if (!arg || !target) {
		kerr(p, "out of memory");
		goto out;
	}
	if (!*arg || strpbrk(arg, " \t")) {
		kerr(p, "%s: expected one value before \"->\"", quote(q, kind));
		goto out;
	}
	if (!*target) {
		kerr(p, "no outbound after \"->\"");
		goto out;
	}
	if (strcmp(kind, "cidr") == 0)
		r.kind = RULE_CIDR, why = parse_cidr(arg, &r);
	else if (strcmp(kind, "port") == 0)
		r.kind = RULE_PORT, why = parse_port_range(arg, &r);
	else if (strcmp(kind, "domain") == 0)
		r.kind = RULE_DOMAIN, why = parse_domain(arg, &r);
	else {
		kerr(p, "unknown rule kind \"%s\" (cidr, port or domain)", quote(q, kind));
		goto out;
	}
	if (why) {
		kerr(p, "%s \"%s\" %s", kind, quote(q, arg), why);
		goto out;
	}
	if (p->c->n_rules == CONFIG_MAX_RULES) {
		kerr(p, "more than %d rules", CONFIG_MAX_RULES);
		goto out;
	}
	if (p->c->n_rules == p->cap_rules) {
		size_t cap = p->cap_rules ? 2 * p->cap_rules : 16;
		struct rule *nr = realloc(p->c->rules, cap * sizeof(*nr));
		if (!nr) {
			kerr(p, "out of memory");
			goto out;
		}
		p->c->rules = nr;
		p->cap_rules = cap;
	}
	add_ref(p, REF_RULE, p->c->n_rules, target);
	p->c->rules[p->c->n_rules++] = r;
	r.domain = NULL; /* owned by the config now */
out:
	free(r.domain);
	free(arg);
	free(target);
}

static void set_default(struct parser *p, const char *v)
{
	add_ref(p, REF_DEFAULT, 0, v);
}

static const struct key route_keys[] = {
        {"default", set_default, false, 0},
        {"rule", set_rule, true, 0},
        {NULL, NULL, false, 0},
};

/* --- sections --- */

/* Keys given that the section's type does not take. */
static void check_key_types(struct parser *p, unsigned type, const char *type_name)
{
	for (int i = 0; p->keys[i].name; i++) {
		if ((p->seen & 1u << i) && p->keys[i].types && !(p->keys[i].types & 1u << type))
			serr(p, p->key_line[i], p->keys[i].name, "not valid with type = %s",
			     type_name);
	}
}

static void require(struct parser *p, int key)
{
	if (!(p->seen & 1u << key))
		serr(p, p->sec_line, p->keys[key].name, "required key is missing");
}

static bool same_sockaddr(const struct inbound *a, const struct inbound *b)
{
	return a->listen_len == b->listen_len && a->listen_len &&
	       memcmp(&a->listen, &b->listen, a->listen_len) == 0;
}

static void close_inbound(struct parser *p)
{
	struct inbound *in = cur_in(p);

	require(p, IN_TYPE);
	require(p, IN_LISTEN);
	if (in->type)
		check_key_types(p, in->type, inbound_types[in->type]);
	if (in->type == INBOUND_FORWARD)
		require(p, IN_TARGET);
	for (size_t i = 0; i < p->idx; i++) {
		if (same_sockaddr(&p->c->inbounds[i], in))
			serr(p, p->key_line[IN_LISTEN], "listen",
			     "address already used by [inbound %s]", p->c->inbounds[i].name);
	}
	users_sort(&in->inline_users);
	/* Read the users file now, so a bad one stops the start, not the first login. */
	if (in->users_file && in->type != INBOUND_FORWARD) {
		FILE *f = fopen(in->users_file, "re");
		char q[QUOTE_BYTES];
		struct users *u;
		int rc;

		if (!f) {
			serr(p, p->key_line[IN_USERS], "users", "cannot open \"%s\": %s",
			     quote(q, in->users_file), strerror(errno));
			return;
		}
		fclose(f);
		u = inbound_users_build(in, p->err, &rc);
		if (rc < 0)
			p->errors++;
		users_destroy(u);
	}
}

static void close_outbound(struct parser *p)
{
	struct outbound *o = cur_out(p);

	require(p, OUT_TYPE);
	if (o->type)
		check_key_types(p, o->type, outbound_types[o->type]);
	if (o->type != OUTBOUND_SOCKS5)
		return;
	require(p, OUT_SERVER);
	if ((p->seen & 1u << OUT_USERNAME) && !(p->seen & 1u << OUT_PASSWORD))
		serr(p, p->key_line[OUT_USERNAME], "username", "set without password");
	if (!(p->seen & 1u << OUT_USERNAME) && (p->seen & 1u << OUT_PASSWORD))
		serr(p, p->key_line[OUT_PASSWORD], "password", "set without username");
}

static void close_section(struct parser *p)
{
	if (p->sec == SEC_INBOUND)
		close_inbound(p);
	else if (p->sec == SEC_OUTBOUND)
		close_outbound(p);
	p->sec = SEC_NONE;
	p->keys = NULL;
	p->seen = 0;
	p->label[0] = '\0';
}

/* Returns the line of an earlier section with this name, or 0. */
static int find_named(struct parser *p, enum section_kind kind, const char *name)
{
	if (kind == SEC_INBOUND) {
		for (size_t i = 0; i < p->c->n_inbounds; i++)
			if (strcmp(p->c->inbounds[i].name, name) == 0)
				return p->c->inbounds[i].line;
	} else {
		for (size_t i = 0; i < p->c->n_outbounds; i++)
			if (strcmp(p->c->outbounds[i].name, name) == 0)
				return p->c->outbounds[i].line;
	}
	return 0;
}

static void open_named(struct parser *p, enum section_kind kind, const char *name)
{
	size_t *n = kind == SEC_INBOUND ? &p->c->n_inbounds : &p->c->n_outbounds;
	char q[QUOTE_BYTES];
	int first;

	if (kind == SEC_INBOUND)
		p->inbound_headers++;
	if (!valid_name(name)) {
		serr(p, p->line, NULL, "bad name \"%s\" (1..63 of A-Z a-z 0-9 . _ -)",
		     quote(q, name));
		return;
	}
	first = find_named(p, kind, name);
	if (first) {
		serr(p, p->line, NULL, "duplicate section (first on line %d)", first);
		return;
	}
	if (*n == (kind == SEC_INBOUND ? CONFIG_MAX_INBOUNDS : CONFIG_MAX_OUTBOUNDS)) {
		serr(p, p->line, NULL, "too many %s sections (at most %d)",
		     kind == SEC_INBOUND ? "inbound" : "outbound",
		     kind == SEC_INBOUND ? CONFIG_MAX_INBOUNDS : CONFIG_MAX_OUTBOUNDS);
		return;
	}
	p->idx = (*n)++;
	if (kind == SEC_INBOUND) {
		struct inbound *in = cur_in(p);
		snprintf(in->name, sizeof(in->name), "%s", name);
		in->outbound = -1;
		in->line = p->line;
		p->keys = inbound_keys;
	} else {
		struct outbound *o = cur_out(p);
		snprintf(o->name, sizeof(o->name), "%s", name);
		o->line = p->line;
		p->keys = outbound_keys;
	}
	p->sec = kind;
}

static void open_unnamed(struct parser *p, enum section_kind kind, int *line_seen)
{
	if (*line_seen) {
		serr(p, p->line, NULL, "duplicate section (first on line %d)", *line_seen);
		return;
	}
	*line_seen = p->line;
	p->keys = kind == SEC_MAIN ? main_keys : route_keys;
	p->sec = kind;
}

/* s: a line starting with '['. Keys up to the next header go to this section. */
static void open_section(struct parser *p, char *s)
{
	char q[QUOTE_BYTES], qn[QUOTE_BYTES], *end = strchr(s, ']'), *type, *name, *extra, *save;

	close_section(p);
	p->sec = SEC_SKIP; /* until proven good: keys of a bad section are ignored */
	p->sec_line = p->line;
	if (!end) {
		serr(p, p->line, NULL, "section header \"%s\" has no closing ']'", quote(q, s));
		return;
	}
	*end++ = '\0';
	end += strspn(end, " \t");
	if (*end && *end != ';' && *end != '#') {
		serr(p, p->line, NULL, "text after the section header: \"%s\"", quote(q, end));
		return;
	}
	type = strtok_r(s + 1, " \t", &save);
	name = type ? strtok_r(NULL, " \t", &save) : NULL;
	extra = name ? strtok_r(NULL, " \t", &save) : NULL;
	snprintf(p->label, sizeof(p->label), "[%s%s%s]", type ? quote(q, type) : "",
	         name ? " " : "", name ? quote(qn, name) : "");
	if (!type) {
		serr(p, p->line, NULL, "empty section name");
	} else if (extra) {
		serr(p, p->line, NULL, "unexpected \"%s\" after the name", quote(q, extra));
	} else if (!strcmp(type, "main") || !strcmp(type, "route")) {
		if (name)
			serr(p, p->line, NULL, "[%s] takes no name", type);
		else if (!strcmp(type, "main"))
			open_unnamed(p, SEC_MAIN, &p->main_line);
		else
			open_unnamed(p, SEC_ROUTE, &p->route_line);
	} else if (!strcmp(type, "inbound") || !strcmp(type, "outbound")) {
		enum section_kind kind = type[0] == 'i' ? SEC_INBOUND : SEC_OUTBOUND;
		if (!name) {
			serr(p, p->line, NULL, "needs a name: [%s NAME]", type);
			if (kind == SEC_INBOUND)
				p->inbound_headers++;
		} else {
			open_named(p, kind, name);
		}
	} else {
		serr(p, p->line, NULL,
		     "unknown section (expected [main], [inbound NAME], [outbound NAME] or [route])");
	}
}

/* --- reading lines --- */

/*
 * Where inih would end the key: at '=' or ':', or at an inline ';' comment
 * (one that follows a blank), as inih's own scan does.
 */
static const char *key_end(const char *s)
{
	bool was_space = false;

	for (; *s; s++) {
		if (*s == '=' || *s == ':' || (was_space && *s == ';'))
			return s;
		was_space = isspace((unsigned char)*s);
	}
	return s;
}

/*
 * inih's reader. Counts lines, so the handler inih calls right after a line
 * is returned knows its number. It handles what inih would get wrong or not
 * report per line: section headers (inih truncates long ones and never
 * reports an empty section), lines without '=', over-long lines, leading
 * blanks (inih would take an indented line as a continuation of the previous
 * value). Only well-formed "key = value" lines reach inih.
 */
static char *read_line(char *str, int num, void *stream)
{
	struct parser *p = stream;
	char q[QUOTE_BYTES];
	ssize_t n;

	while ((n = getline(&p->buf, &p->cap, p->in)) >= 0) {
		char *s = p->buf;
		const char *end;
		size_t klen;

		p->line++;
		if ((size_t)n != strlen(s)) {
			serr(p, p->line, NULL, "line contains a NUL byte");
			continue;
		}
		while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == '\r'))
			s[--n] = '\0';
		if (p->line == 1 && strncmp(s, "\xef\xbb\xbf", 3) == 0)
			s += 3; /* UTF-8 byte order mark */
		s += strspn(s, " \t\f\v");
		if (*s == '\0' || *s == ';' || *s == '#')
			continue;
		if (*s == '[') {
			open_section(p, s);
			continue;
		}
		end = key_end(s);
		for (klen = (size_t)(end - s); klen > 0 && isspace((unsigned char)s[klen - 1]);)
			klen--;
		if (*end != '=' && *end != ':') {
			serr(p, p->line, NULL, "\"%s\" is not \"key = value\"", quote(q, s));
			continue;
		}
		if (klen == 0) {
			serr(p, p->line, NULL, "missing key before '%c'", *end);
			continue;
		}
		if (klen > KEY_NAME_MAX) {
			s[klen] = '\0';
			serr(p, p->line, quote(q, s), "unknown key");
			continue;
		}
		if (strlen(s) + 2 > (size_t)num) {
			s[klen] = '\0';
			serr(p, p->line, quote(q, s), "line longer than %d bytes", num - 3);
			continue;
		}
		snprintf(str, (size_t)num, "%s\n", s);
		return str;
	}
	if (ferror(p->in))
		p->read_errno = errno ? errno : EIO;
	return NULL;
}

static int on_key(void *user, const char *section, const char *name, const char *value)
{
	struct parser *p = user;
	char q[QUOTE_BYTES];
	int i;

	(void)section; /* sections are tracked by read_line() */
	if (p->sec == SEC_SKIP)
		return 1;
	if (p->sec == SEC_NONE) {
		serr(p, p->line, quote(q, name), "key before any [section]");
		return 1;
	}
	for (i = 0; p->keys[i].name && strcmp(p->keys[i].name, name) != 0;)
		i++;
	if (!p->keys[i].name) {
		serr(p, p->line, quote(q, name), "unknown key");
		return 1;
	}
	if ((p->seen & 1u << i) && !p->keys[i].repeat) {
		serr(p, p->line, name, "duplicate key (first set on line %d)", p->key_line[i]);
		return 1;
	}
	if (!(p->seen & 1u << i))
		p->key_line[i] = p->line;
	p->seen |= 1u << i;
	p->key = p->keys[i].name;
	if (!*value)
		kerr(p, "needs a value");
	else
		p->keys[i].set(p, value);
	return 1;
}

/* --- whole file --- */

int config_outbound_index(const struct config *c, const char *name)
{
	for (size_t i = 0; i < c->n_outbounds; i++)
		if (strcmp(c->outbounds[i].name, name) == 0)
			return (int)i;
	return -1;
}

/* "direct" and "block" exist unless the file defines them; they come last. */
static void add_implicit(struct parser *p, const char *name, enum outbound_type type)
{
	struct outbound *o;

	if (config_outbound_index(p->c, name) >= 0)
		return;
	if (p->c->n_outbounds == CONFIG_MAX_OUTBOUNDS) {
		int line = 0;
		for (size_t i = 0; i < p->c->n_outbounds; i++) /* the last one the file defines */
			line = p->c->outbounds[i].line > line ? p->c->outbounds[i].line : line;
		serr(p, line, NULL,
		     "no room left for the implicit [outbound %s] (at most %d outbounds)", name,
		     CONFIG_MAX_OUTBOUNDS);
		return;
	}
	o = &p->c->outbounds[p->c->n_outbounds++];
	snprintf(o->name, sizeof(o->name), "%s", name);
	o->type = type;
}

static void resolve_refs(struct parser *p)
{
	for (size_t i = 0; i < p->n_refs; i++) {
		struct ref *r = &p->refs[i];
		int idx = config_outbound_index(p->c, r->name);

		if (idx < 0) {
			char label[LABEL_BYTES];
			memcpy(label, p->label, sizeof(label));
			memcpy(p->label, r->label, sizeof(label));
			serr(p, r->line, r->key, "unknown outbound \"%s\"", r->name);
			memcpy(p->label, label, sizeof(label));
			continue;
		}
		if (r->kind == REF_INBOUND)
			p->c->inbounds[r->idx].outbound = idx;
		else if (r->kind == REF_DEFAULT)
			p->c->route_default = idx;
		else
			p->c->rules[r->idx].outbound = idx;
	}
}

static struct config *config_new(const char *file)
{
	struct config *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->file = strdup(file);
	if (!c->file) {
		free(c);
		return NULL;
	}
	c->workers = 0;
	c->log_level = LOG_INFO;
	c->max_connections = DEF_MAX_CONNECTIONS;
	c->handshake_timeout_ms = DEF_HANDSHAKE_MS;
	c->connect_timeout_ms = DEF_CONNECT_MS;
	c->idle_timeout_ms = DEF_IDLE_MS;
	c->drain_timeout_ms = DEF_DRAIN_MS;
	c->pipe_size = DEF_PIPE_SIZE;
	c->max_pipes = 0;
	c->resolver_threads = DEF_RESOLVER_THREADS;
	c->route_default = -1;
	return c;
}

/* Parses p->in into p->c; every problem is reported and counted in p->errors. */
static int parse(struct parser *p)
{
	int saved = &ini_max_line ? ini_max_line : 0, rc;

	if (&ini_max_line)
		ini_max_line = LINE_BYTES;
	rc = ini_parse_stream(read_line, p, on_key, p);
	if (&ini_max_line)
		ini_max_line = saved;
	if (rc == -2)
		return -ENOMEM;
	if (p->read_errno)
		return -p->read_errno;
	if (rc > 0 && !p->errors) /* read_line() lets nothing malformed through */
		serr(p, p->line, NULL, "syntax error");
	close_section(p);
	if (p->inbound_headers == 0)
		serr(p, 1, NULL, "no [inbound NAME] section: nothing to listen on");
	add_implicit(p, "direct", OUTBOUND_DIRECT);
	add_implicit(p, "block", OUTBOUND_BLOCK);
	resolve_refs(p);
	if (p->c->route_default < 0)
		p->c->route_default = config_outbound_index(p->c, "direct");
	return p->errors ? -EINVAL : 0;
}

static int load(const char *name, FILE *in, const char *dir, struct config **out, void *err)
{
	struct parser p = {.in = in, .err = err, .file = name};
	int rc = -ENOMEM;

	*out = NULL;
	p.c = config_new(name);
	if (!p.c)
		goto out;
	if (dir) {
		p.dir = strdup(dir);
		if (!p.dir)
			goto out;
	}
	rc = parse(&p);
out:
	if (p.buf) {
		explicit_bzero(p.buf, p.cap);
		free(p.buf);
	}
	free(p.refs);
	free(p.dir);
	if (rc < 0)
		config_free(p.c);
	else
		*out = p.c;
	return rc;
}

int config_load_string(const char *name, const char *text, struct config **out, void *err)
{
	/* fmemopen() refuses a zero size on some libcs; an empty text is one newline. */
	FILE *in = *text ? fmemopen((void *)text, strlen(text), "r") : fmemopen("\n", 1, "r");
	int rc;

	*out = NULL;
	if (!in)
		return -errno;
	rc = load(name, in, NULL, out, err);
	fclose(in);
	return rc;
}

int config_load(const char *path, struct config **out, void *err)
{
	char *copy;
	FILE *in;
	int rc;

	*out = NULL;
	if (!path)
		return config_load_string("(built-in)", config_default_ini, out, err);
	in = fopen(path, "re");
	if (!in)
		return -errno; /* the caller words it: it knows the path */
	copy = strdup(path);
	if (!copy) {
		fclose(in);
		return -ENOMEM;
	}
	rc = load(path, in, strchr(path, '/') ? dirname(copy) : NULL, out, err);
	free(copy);
	fclose(in);
	return rc;
}

void config_free(struct config *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n_inbounds; i++) {
		struct inbound *in = &c->inbounds[i];
		users_free(&in->inline_users);
		free(in->users_file);
		free(in->target_host);
	}
	for (size_t i = 0; i < c->n_outbounds; i++) {
		struct outbound *o = &c->outbounds[i];
		free(o->server_host);
		free(o->username);
		if (o->password) {
			explicit_bzero(o->password, strlen(o->password));
			free(o->password);
		}
	}
	for (size_t i = 0; i < c->n_rules; i++)
		free(c->rules[i].domain);
	free(c->rules);
	free(c->file);
	free(c);
}
