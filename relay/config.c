/* SPDX-License-Identifier: MIT */
/* INI → struct config: the walk over lines and sections, file:line messages, load and free. */
#include <ctype.h>
#include <errno.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ini.h>

#include "config_internal.h"
#include "config_value.h"
#include "shadowsocks.h"
#include "strset.h"

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
	KEY_NAME_MAX = 32, /* longer keys are unknown by construction */
};

/* Defaults of [main]; docs/configuration.md and spliced.example.ini list the same values. */
enum config_defaults {
	DEF_MAX_CONNECTIONS = 10000,
	DEF_HANDSHAKE_MS = 10000,
	DEF_CONNECT_MS = 10000,
	DEF_IDLE_MS = 5 * 60 * 1000,
	DEF_UDP_MS = 60 * 1000,
	DEF_UDP_SESSIONS = 4096,
	DEF_UDP_DNS_MS = 30 * 1000,
	DEF_UDP_BUFFER = 512 * 1024,
	DEF_DRAIN_MS = 5000,
	DEF_PIPE_SIZE = 1048576,
	DEF_RESOLVE_MS = 5000,
	DEF_MAX_RESOLVING = 4096,
	DEF_MAX_AUTH_FAILURES = 20,
};

const char config_default_ini[] = "; built-in: SOCKS5 on 127.0.0.1:1080, direct outbound\n"
                                  "[inbound socks]\n"
                                  "type = socks5\n"
                                  "listen = 127.0.0.1:1080\n";

/* --- messages --- */

/* Copies v for a message: at most 80 bytes, non-printable bytes as '?'. */
const char *config_quote(char out[QUOTE_BYTES], const char *v)
{
	size_t i;

	for (i = 0; v[i] && i < QUOTE_BYTES - 4; i++)
		out[i] = isprint((unsigned char)v[i]) ? v[i] : '?';
	if (v[i])
		memcpy(out + i - 3, "...", 3);
	out[i] = '\0';
	return out;
}

/* The one writer of messages: counts every error, even when err is NULL. */
void config_err(struct parser *p, int line, const char *key, const char *fmt, ...)
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

/* --- sections --- */

static void close_section(struct parser *p)
{
	if (p->sec == SEC_MAIN)
		config_close_main(p);
	else if (p->sec == SEC_INBOUND)
		config_close_inbound(p);
	else if (p->sec == SEC_OUTBOUND)
		config_close_outbound(p);
	else if (p->sec == SEC_WIREGUARD)
		config_close_wireguard(p);
	else if (p->sec == SEC_STATS)
		config_close_stats(p);
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

/* Room for one more zeroed inbound or outbound; false (after the error) when out of memory. */
static bool grow_section(struct parser *p, enum section_kind kind)
{
	struct config *c = p->c;
	bool in = kind == SEC_INBOUND;
	size_t n = in ? c->n_inbounds : c->n_outbounds;
	size_t size = in ? sizeof(*c->inbounds) : sizeof(*c->outbounds);
	char *a = realloc(in ? (void *)c->inbounds : (void *)c->outbounds, (n + 1) * size);

	if (!a) {
		config_err(p, p->line, NULL, "out of memory");
		return false;
	}
	memset(a + n * size, 0, size);
	if (in)
		c->inbounds = (struct inbound *)a;
	else
		c->outbounds = (struct outbound *)a;
	return true;
}

static void open_named(struct parser *p, enum section_kind kind, const char *name)
{
	size_t *n = kind == SEC_INBOUND ? &p->c->n_inbounds : &p->c->n_outbounds;
	char q[QUOTE_BYTES];
	int first;

	if (kind == SEC_INBOUND)
		p->inbound_headers++;
	if (!config_valid_name(name)) {
		config_err(p, p->line, NULL, "bad name \"%s\" (1..63 of A-Z a-z 0-9 . _ -)",
		           config_quote(q, name));
		return;
	}
	first = find_named(p, kind, name);
	if (first) {
		config_err(p, p->line, NULL, "duplicate section (first on line %d)", first);
		return;
	}
	if (*n == (kind == SEC_INBOUND ? CONFIG_MAX_INBOUNDS : CONFIG_MAX_OUTBOUNDS)) {
		config_err(p, p->line, NULL, "too many %s sections (at most %d)",
		           kind == SEC_INBOUND ? "inbound" : "outbound",
		           kind == SEC_INBOUND ? CONFIG_MAX_INBOUNDS : CONFIG_MAX_OUTBOUNDS);
		return;
	}
	if (!grow_section(p, kind))
		return;
	p->idx = (*n)++;
	if (kind == SEC_INBOUND) {
		struct inbound *in = cur_in(p);
		snprintf(in->name, sizeof(in->name), "%s", name);
		in->outbound = -1;
		in->line = p->line;
		config_tun_defaults(in);
		p->keys = config_inbound_keys;
	} else {
		struct outbound *o = cur_out(p);
		snprintf(o->name, sizeof(o->name), "%s", name);
		o->line = p->line;
		p->keys = config_outbound_keys;
	}
	p->sec = kind;
}

/* [wireguard NAME]: NAME is the interface name, so it follows IFNAMSIZ rules. */
static void open_wireguard(struct parser *p, const char *name)
{
	struct config *c = p->c;
	char q[QUOTE_BYTES];

	if (!config_valid_name(name) || strlen(name) > CONFIG_IFNAME_MAX) {
		config_err(p, p->line, NULL,
		           "bad interface name \"%s\" (1..15 of A-Z a-z 0-9 . _ -)",
		           config_quote(q, name));
		return;
	}
	for (size_t i = 0; i < c->n_wireguards; i++) {
		if (strcmp(c->wireguards[i].name, name) == 0) {
			config_err(p, p->line, NULL, "duplicate section (first on line %d)",
			           c->wireguards[i].line);
			return;
		}
	}
	if (c->n_wireguards == CONFIG_MAX_WIREGUARD) {
		config_err(p, p->line, NULL, "too many wireguard sections (at most %d)",
		           CONFIG_MAX_WIREGUARD);
		return;
	}
	p->idx = c->n_wireguards++;
	snprintf(c->wireguards[p->idx].name, sizeof(c->wireguards[p->idx].name), "%s", name);
	c->wireguards[p->idx].line = p->line;
	p->keys = config_wireguard_keys;
	p->sec = SEC_WIREGUARD;
}

/* [user NAME]: NAME follows the users file's rules for names. */
static void open_user(struct parser *p, const char *name)
{
	struct config *c = p->c;
	const char *why = users_check_name(name, strlen(name));
	struct user_sec *u;

	if (why) {
		config_err(p, p->line, NULL, "%s", why);
		return;
	}
	for (size_t i = 0; i < c->n_users; i++) {
		if (strcmp(c->users[i].name, name) == 0) {
			config_err(p, p->line, NULL, "duplicate section (first on line %d)",
			           c->users[i].line);
			return;
		}
	}
	u = realloc(c->users, (c->n_users + 1) * sizeof(*u));
	if (!u) {
		config_err(p, p->line, NULL, "out of memory");
		return;
	}
	c->users = u;
	u += c->n_users;
	*u = (struct user_sec){.name = strdup(name), .line = p->line};
	if (!u->name) {
		config_err(p, p->line, NULL, "out of memory");
		return;
	}
	p->idx = c->n_users++;
	p->keys = config_user_keys;
	p->sec = SEC_USER;
}

static void open_unnamed(struct parser *p, enum section_kind kind, int *line_seen)
{
	if (*line_seen) {
		config_err(p, p->line, NULL, "duplicate section (first on line %d)", *line_seen);
		return;
	}
	*line_seen = p->line;
	p->keys = kind == SEC_MAIN    ? config_main_keys
	          : kind == SEC_STATS ? config_stats_keys
	                              : config_route_keys;
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
		config_err(p, p->line, NULL, "section header \"%s\" has no closing ']'",
		           config_quote(q, s));
		return;
	}
	*end++ = '\0';
	end += strset_span(end, " \t");
	if (*end && *end != ';' && *end != '#') {
		config_err(p, p->line, NULL, "text after the section header: \"%s\"",
		           config_quote(q, end));
		return;
	}
	save = s + 1;
	type = strset_tok(&save, " \t");
	name = type ? strset_tok(&save, " \t") : NULL;
	extra = name ? strset_tok(&save, " \t") : NULL;
	snprintf(p->label, sizeof(p->label), "[%s%s%s]", type ? config_quote(q, type) : "",
	         name ? " " : "", name ? config_quote(qn, name) : "");
	if (!type) {
		config_err(p, p->line, NULL, "empty section name");
	} else if (extra) {
		config_err(p, p->line, NULL, "unexpected \"%s\" after the name",
		           config_quote(q, extra));
	} else if (!strcmp(type, "main") || !strcmp(type, "route") || !strcmp(type, "stats")) {
		if (name)
			config_err(p, p->line, NULL, "[%s] takes no name", type);
		else if (!strcmp(type, "main"))
			open_unnamed(p, SEC_MAIN, &p->main_line);
		else if (!strcmp(type, "stats"))
			open_unnamed(p, SEC_STATS, &p->stats_line);
		else
			open_unnamed(p, SEC_ROUTE, &p->route_line);
	} else if (!strcmp(type, "inbound") || !strcmp(type, "outbound")) {
		enum section_kind kind = type[0] == 'i' ? SEC_INBOUND : SEC_OUTBOUND;
		if (!name) {
			config_err(p, p->line, NULL, "needs a name: [%s NAME]", type);
			if (kind == SEC_INBOUND)
				p->inbound_headers++;
		} else {
			open_named(p, kind, name);
		}
	} else if (!strcmp(type, "user")) {
		if (!name)
			config_err(p, p->line, NULL, "needs a name: [user NAME]");
		else
			open_user(p, name);
	} else if (!strcmp(type, "wireguard")) {
		if (!name)
			config_err(p, p->line, NULL, "needs a name: [wireguard NAME]");
		else
			open_wireguard(p, name);
	} else {
		config_err(p, p->line, NULL,
		           "unknown section (expected [main], [inbound NAME], [outbound NAME], "
		           "[route], [user NAME], [wireguard NAME] or [stats])");
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
 * A line without '=': its text is not echoed, since it may be a password
 * pasted on a line of its own. Only a first word that is a key of the
 * section is named; key names are no secret.
 */
static void no_equals(struct parser *p, const char *s)
{
	size_t n = strset_cspan(s, " \t");

	for (int i = 0; p->keys && p->keys[i].name; i++) {
		if (strlen(p->keys[i].name) == n && strncmp(p->keys[i].name, s, n) == 0) {
			config_err(p, p->line, p->keys[i].name,
			           "no '=' after the key (expected \"%s = value\")",
			           p->keys[i].name);
			return;
		}
	}
	config_err(p, p->line, NULL,
	           "line is not \"key = value\" (not shown: it may hold a secret)");
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
			config_err(p, p->line, NULL, "line contains a NUL byte");
			continue;
		}
		while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == '\r'))
			s[--n] = '\0';
		if (p->line == 1 && strncmp(s, "\xef\xbb\xbf", 3) == 0)
			s += 3; /* UTF-8 byte order mark */
		s += strset_span(s, " \t\f\v");
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
			no_equals(p, s);
			continue;
		}
		if (klen == 0) {
			config_err(p, p->line, NULL, "missing key before '%c'", *end);
			continue;
		}
		if (klen > KEY_NAME_MAX) {
			s[klen] = '\0';
			config_err(p, p->line, config_quote(q, s), "unknown key");
			continue;
		}
		if (strlen(s) + 2 > (size_t)num) {
			s[klen] = '\0';
			config_err(p, p->line, config_quote(q, s), "line longer than %d bytes",
			           num - 3);
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
		config_err(p, p->line, config_quote(q, name), "key before any [section]");
		return 1;
	}
	for (i = 0; p->keys[i].name && strcmp(p->keys[i].name, name) != 0;)
		i++;
	if (!p->keys[i].name) {
		config_err(p, p->line, config_quote(q, name), "unknown key");
		return 1;
	}
	if ((p->seen & KEY_BIT(i)) && !p->keys[i].repeat) {
		config_err(p, p->line, name, "duplicate key (first set on line %d)",
		           p->key_line[i]);
		return 1;
	}
	if (!(p->seen & KEY_BIT(i)))
		p->key_line[i] = p->line;
	p->seen |= KEY_BIT(i);
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
		config_err(p, line, NULL,
		           "no room left for the implicit [outbound %s] (at most %d outbounds)",
		           name, CONFIG_MAX_OUTBOUNDS);
		return;
	}
	if (!grow_section(p, SEC_OUTBOUND))
		return;
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
			config_err(p, r->line, r->key, "unknown outbound \"%s\"", r->name);
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
	c->udp_timeout_ms = DEF_UDP_MS;
	c->udp_max_sessions = DEF_UDP_SESSIONS;
	c->udp_dns_timeout_ms = DEF_UDP_DNS_MS;
	c->udp_buffer = DEF_UDP_BUFFER;
	c->drain_timeout_ms = DEF_DRAIN_MS;
	c->pipe_size = DEF_PIPE_SIZE;
	c->max_pipes = 0;
	c->splice = true;
	c->resolve_timeout_ms = DEF_RESOLVE_MS;
	c->max_resolving = DEF_MAX_RESOLVING;
	c->max_auth_failures = DEF_MAX_AUTH_FAILURES;
	c->accept_steering = STEER_HASH;
	c->run_gid = (gid_t)-1;
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
		config_err(p, p->line, NULL, "syntax error");
	close_section(p);
	p->c->main_line = p->main_line;
	if (p->inbound_headers == 0 && p->c->n_wireguards == 0)
		config_err(p, 1, NULL, "no [inbound NAME] section: nothing to listen on");
	add_implicit(p, "direct", OUTBOUND_DIRECT);
	add_implicit(p, "block", OUTBOUND_BLOCK);
	resolve_refs(p);
	config_tun_finish(p);
	if (p->c->route_default < 0)
		p->c->route_default = config_outbound_index(p->c, "direct");
	return p->errors ? -EINVAL : 0;
}

static int load(const char *name, FILE *in, const char *dir, struct config **out, FILE *err)
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

int config_load_string(const char *name, const char *text, struct config **out, FILE *err)
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

int config_load(const char *path, struct config **out, FILE *err)
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
		ss_key_free(in->ss);
		if (in->ss_password) {
			explicit_bzero(in->ss_password, strlen(in->ss_password));
			free(in->ss_password);
		}
		free(in->target_host);
		free(in->allow);
		free(in->tun.routes);
		free(in->tun.netns);
	}
	for (size_t i = 0; i < c->n_wireguards; i++)
		free(c->wireguards[i].conf);
	for (size_t i = 0; i < c->n_outbounds; i++) {
		struct outbound *o = &c->outbounds[i];
		free(o->server_host);
		free(o->username);
		ss_key_free(o->ss);
		if (o->password) {
			explicit_bzero(o->password, strlen(o->password));
			free(o->password);
		}
	}
	for (size_t i = 0; i < c->n_rules; i++) {
		free(c->rules[i].domain);
		free(c->rules[i].users);
	}
	for (size_t i = 0; i < c->n_users; i++)
		free(c->users[i].name);
	free(c->users);
	free(c->inbounds);
	free(c->outbounds);
	free(c->stats_allow);
	free(c->rules);
	free(c->file);
	free(c->access_log);
	free(c);
}
