/* SPDX-License-Identifier: MIT */
/* The keys of [main]: limits, timeouts, pipes, resolution, steering, and whom to run as. */
#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_internal.h"
#include "config_value.h"
#include "strset.h"

enum key_limits {
	WORKERS_MAX = 256,
	MAX_CONNECTIONS_MAX = 10000000,
	MAX_PIPES_MAX = 16777216,
	MAX_RESOLVING_MAX = 1000000,
	MAX_AUTH_FAILURES_MAX = 1000000,
	PIPE_SIZE_MIN = 4096,
	PIPE_SIZE_MAX = 1048576,
	DAY_MS = 24 * 3600 * 1000,
	HOUR_MS = 3600 * 1000,
};

/* --- values, reported --- */

int config_get_uint(struct parser *p, const char *v, unsigned min, unsigned max, unsigned *out)
{
	char q[QUOTE_BYTES];
	const char *end;
	uint64_t n;

	if (config_parse_u64(v, &end, &n) < 0 || *end) {
		kerr(p, "\"%s\" is not a whole number", config_quote(q, v));
		return -EINVAL;
	}
	if (n < min || n > max) {
		kerr(p, "\"%s\" is out of range (%u..%u)", config_quote(q, v), min, max);
		return -ERANGE;
	}
	*out = (unsigned)n;
	return 0;
}

/* range: how the allowed range reads in a message, e.g. "1ms..24h". */
void config_get_duration(struct parser *p, const char *v, unsigned min, unsigned max,
                         const char *range, unsigned *out)
{
	char q[QUOTE_BYTES];
	unsigned ms;
	int rc = config_parse_duration(v, &ms);

	if (rc == -EINVAL)
		kerr(p, "\"%s\" is not a duration (e.g. 500ms, 10s, 5m, 1h)", config_quote(q, v));
	else if (rc < 0 || ms < min || ms > max)
		kerr(p, "\"%s\" is out of range (%s)", config_quote(q, v), range);
	else
		*out = ms;
}

/* Remember a use of outbound `name` for resolve_refs() (config.c). */
/* --- [main] --- */

static void set_workers(struct parser *p, const char *v)
{
	unsigned n;

	if (strcmp(v, "auto") == 0)
		p->c->workers = 0;
	else if (config_get_uint(p, v, 1, WORKERS_MAX, &n) == 0)
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
	kerr(p, "\"%s\" is not one of error, warn, info, debug", config_quote(q, v));
}

static void set_max_connections(struct parser *p, const char *v)
{
	config_get_uint(p, v, 1, MAX_CONNECTIONS_MAX, &p->c->max_connections);
}

static void set_handshake_timeout(struct parser *p, const char *v)
{
	config_get_duration(p, v, 1, DAY_MS, "1ms..24h", &p->c->handshake_timeout_ms);
}

static void set_connect_timeout(struct parser *p, const char *v)
{
	config_get_duration(p, v, 1, DAY_MS, "1ms..24h", &p->c->connect_timeout_ms);
}

static void set_idle_timeout(struct parser *p, const char *v)
{
	config_get_duration(p, v, 0, UINT_MAX, "0 or up to 1193h", &p->c->idle_timeout_ms);
}

static void set_udp_timeout(struct parser *p, const char *v)
{
	config_get_duration(p, v, 1000, DAY_MS, "1s..24h", &p->c->udp_timeout_ms);
}

static void set_udp_dns_timeout(struct parser *p, const char *v)
{
	config_get_duration(p, v, 1000, DAY_MS, "1s..24h", &p->c->udp_dns_timeout_ms);
}

static void set_udp_max_sessions(struct parser *p, const char *v)
{
	config_get_uint(p, v, 1, MAX_CONNECTIONS_MAX, &p->c->udp_max_sessions);
}

static void set_drain_timeout(struct parser *p, const char *v)
{
	config_get_duration(p, v, 0, DAY_MS, "0..24h", &p->c->drain_timeout_ms);
}

/* A size (bytes, k, m) in lo..hi, or 0 when zero_ok; `range` says so in the message. */
static void get_size(struct parser *p, const char *v, unsigned lo, unsigned hi, bool zero_ok,
                     const char *range, unsigned *out)
{
	char q[QUOTE_BYTES];
	unsigned n;
	int rc = config_parse_size(v, &n);

	if (rc == -EINVAL)
		kerr(p, "\"%s\" is not a size (bytes, or a number with a k or m suffix)",
		     config_quote(q, v));
	else if (rc < 0 || (n < lo && !(zero_ok && n == 0)) || n > hi)
		kerr(p, "\"%s\" is out of range (%s)", config_quote(q, v), range);
	else
		*out = n;
}

static void set_pipe_size(struct parser *p, const char *v)
{
	get_size(p, v, PIPE_SIZE_MIN, PIPE_SIZE_MAX, false, "4k..1m", &p->c->pipe_size);
}

/* udp-buffer = SIZE: SO_RCVBUF of a UDP association's sockets (the kernel caps it at rmem_max). */
static void set_udp_buffer(struct parser *p, const char *v)
{
	get_size(p, v, 4096, 64u << 20, true, "0, or 4k..64m", &p->c->udp_buffer);
}

/* access-log = FILE | stderr | off: a line per finished connection (access_log.c). */
static void set_access_log(struct parser *p, const char *v)
{
	free(p->c->access_log);
	p->c->access_log = NULL;
	if (strcmp(v, "off") == 0)
		return;
	if (!*v) {
		kerr(p, "expected a file, stderr or off");
		return;
	}
	p->c->access_log = strcmp(v, "stderr") == 0 ? strdup(v) : config_path(p, v);
	if (!p->c->access_log)
		kerr(p, "out of memory");
}

static void set_max_pipes(struct parser *p, const char *v)
{
	config_get_uint(p, v, 0, MAX_PIPES_MAX, &p->c->max_pipes);
}

/* Gone with the threads: a clear refusal rather than a silent no-op. */
static void set_resolver_threads(struct parser *p, const char *v)
{
	(void)v;
	kerr(p, "no longer used: names are resolved on each worker's loop (c-ares), without "
	        "threads; remove the line (see resolve-timeout and max-resolving)");
}

static void set_resolve_timeout(struct parser *p, const char *v)
{
	config_get_duration(p, v, 1, HOUR_MS, "1ms..1h", &p->c->resolve_timeout_ms);
}

static void set_max_resolving(struct parser *p, const char *v)
{
	config_get_uint(p, v, 1, MAX_RESOLVING_MAX, &p->c->max_resolving);
}

static void set_keepalive(struct parser *p, const char *v)
{
	config_get_duration(p, v, 0, DAY_MS, "0, or 1s..24h", &p->c->keepalive_ms);
	if (p->c->keepalive_ms && p->c->keepalive_ms < 1000) {
		char q[QUOTE_BYTES];
		kerr(p, "\"%s\" is below 1s, the kernel's unit for keepalive", config_quote(q, v));
	}
}

static void set_pipe_memory(struct parser *p, const char *v)
{
	char q[QUOTE_BYTES];
	uint64_t n;

	if (strcmp(v, "auto") == 0)
		p->c->pipe_memory = 0;
	else if (config_parse_size64(v, &n) < 0)
		kerr(p, "\"%s\" is not auto or a size (bytes, or a number with a k, m or g suffix)",
		     config_quote(q, v));
	else if (n < PIPE_SIZE_MAX)
		kerr(p, "\"%s\" is below 1m, one pipe of the largest size", config_quote(q, v));
	else
		p->c->pipe_memory = n;
}

static void set_max_auth_failures(struct parser *p, const char *v)
{
	config_get_uint(p, v, 0, MAX_AUTH_FAILURES_MAX, &p->c->max_auth_failures);
}

static void set_max_per_source(struct parser *p, const char *v)
{
	config_get_uint(p, v, 0, MAX_CONNECTIONS_MAX, &p->c->max_per_source);
}

static void set_max_per_user(struct parser *p, const char *v)
{
	config_get_uint(p, v, 0, MAX_CONNECTIONS_MAX, &p->c->max_per_user);
}

static void set_accept_steering(struct parser *p, const char *v)
{
	char q[QUOTE_BYTES];

	if (strcmp(v, "hash") == 0)
		p->c->accept_steering = STEER_HASH;
	else if (strcmp(v, "cpu") == 0)
		p->c->accept_steering = STEER_CPU;
	else
		kerr(p, "\"%s\" is not one of hash, cpu", config_quote(q, v));
}

static void set_splice(struct parser *p, const char *v)
{
	char q[QUOTE_BYTES];

	if (strcmp(v, "yes") == 0)
		p->c->splice = true;
	else if (strcmp(v, "no") == 0)
		p->c->splice = false;
	else
		kerr(p, "\"%s\" is not yes or no", config_quote(q, v));
}

static void set_backend(struct parser *p, const char *v)
{
	char q[QUOTE_BYTES];

	if (strcmp(v, "auto") == 0)
		p->c->backend = CONFIG_BACKEND_AUTO;
	else if (strcmp(v, "io_uring") == 0)
		p->c->backend = CONFIG_BACKEND_IO_URING;
	else if (strcmp(v, "epoll") == 0)
		p->c->backend = CONFIG_BACKEND_EPOLL;
	else
		kerr(p, "\"%s\" is not one of auto, io_uring, epoll", config_quote(q, v));
}

/*
 * user / group: looked up now, so --check reports an unknown name and the
 * drop itself (privdrop.c) cannot fail on a lookup. A number is an id; a
 * uid without a passwd entry needs a group. Root (uid or gid 0) is refused:
 * staying root is what leaving `user` out does.
 */
enum { MAIN_USER = 11, MAIN_GROUP = 12, MAIN_SPLICE = 13, PW_BUF = 16384 };

/* All digits: an id below (uid_t)-1, which setresuid() reads as "unchanged". */
static int numeric_id(struct parser *p, const char *v, uint32_t *id)
{
	char q[QUOTE_BYTES];
	const char *end;
	uint64_t n;

	if (strset_span(v, "0123456789") != strlen(v))
		return 0;
	if (config_parse_u64(v, &end, &n) < 0 || *end || n >= UINT32_MAX) {
		kerr(p, "\"%s\" is out of range (0..4294967294)", config_quote(q, v));
		return -ERANGE;
	}
	*id = (uint32_t)n;
	return 1;
}

static void set_run_user(struct parser *p, const char *v)
{
	struct config *c = p->c;
	struct passwd pw, *res = NULL;
	char buf[PW_BUF], q[QUOTE_BYTES];
	uint32_t id = 0;
	int num = numeric_id(p, v, &id), rc;

	if (num < 0)
		return;
	if (num)
		rc = getpwuid_r(id, &pw, buf, sizeof(buf), &res);
	else
		rc = strlen(v) > CONFIG_NAME_MAX ? 0 : getpwnam_r(v, &pw, buf, sizeof(buf), &res);
	if (!res && !num) {
		if (rc)
			kerr(p, "cannot look up user \"%s\": %s", config_quote(q, v), strerror(rc));
		else
			kerr(p, "unknown user \"%s\"", config_quote(q, v));
		return;
	}
	if ((res ? res->pw_uid : id) == 0) {
		kerr(p, "\"%s\" is root: name an unprivileged user (or leave user out)",
		     config_quote(q, v));
		return;
	}
	c->run_as = true;
	c->run_uid = res ? res->pw_uid : id;
	snprintf(c->run_user, sizeof(c->run_user), "%s", res ? res->pw_name : v);
	c->user_line = p->line;
	if (!(p->seen & KEY_BIT(MAIN_GROUP)))
		c->run_gid = res ? res->pw_gid : (gid_t)-1;
}

static void set_run_group(struct parser *p, const char *v)
{
	struct group gr, *res = NULL;
	char buf[PW_BUF], q[QUOTE_BYTES];
	uint32_t id = 0;
	int num = numeric_id(p, v, &id), rc;

	if (num < 0)
		return;
	if (!num) {
		rc = strlen(v) > CONFIG_NAME_MAX ? 0 : getgrnam_r(v, &gr, buf, sizeof(buf), &res);
		if (!res) {
			if (rc)
				kerr(p, "cannot look up group \"%s\": %s", config_quote(q, v),
				     strerror(rc));
			else
				kerr(p, "unknown group \"%s\"", config_quote(q, v));
			return;
		}
		id = res->gr_gid;
	}
	if (id == 0) {
		kerr(p, "\"%s\" is root's group: name an unprivileged group", config_quote(q, v));
		return;
	}
	p->c->run_gid = id;
}

void config_close_main(struct parser *p)
{
	const struct config *c = p->c;

	if ((p->seen & KEY_BIT(MAIN_GROUP)) && !(p->seen & KEY_BIT(MAIN_USER)))
		config_err(p, p->key_line[MAIN_GROUP], "group", "set without user");
	else if (c->run_as && !(p->seen & KEY_BIT(MAIN_GROUP)) && c->run_gid == (gid_t)-1)
		config_err(p, c->user_line, "user", "uid %u has no passwd entry: set group",
		           (unsigned)c->run_uid);
	else if (c->run_as && c->run_gid == 0)
		config_err(p, c->user_line, "user",
		           "%s's primary group is root's: set group to an unprivileged one",
		           c->run_user);
}

/* Order matters: MAIN_USER and MAIN_GROUP index it. */
const struct key config_main_keys[] = {
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
        {"accept-steering", set_accept_steering, false, 0},
        [MAIN_USER] = {"user", set_run_user, false, 0},
        [MAIN_GROUP] = {"group", set_run_group, false, 0},
        [MAIN_SPLICE] = {"splice", set_splice, false, 0},
        {"resolve-timeout", set_resolve_timeout, false, 0},
        {"max-resolving", set_max_resolving, false, 0},
        {"max-auth-failures", set_max_auth_failures, false, 0},
        {"max-connections-per-source", set_max_per_source, false, 0},
        {"max-connections-per-user", set_max_per_user, false, 0},
        {"keepalive", set_keepalive, false, 0},
        {"pipe-memory", set_pipe_memory, false, 0},
        {"udp-timeout", set_udp_timeout, false, 0},
        {"udp-max-sessions", set_udp_max_sessions, false, 0},
        {"udp-buffer", set_udp_buffer, false, 0},
        {"udp-dns-timeout", set_udp_dns_timeout, false, 0},
        {"access-log", set_access_log, false, 0},
        {"backend", set_backend, false, 0},
        {NULL, NULL, false, 0},
};
