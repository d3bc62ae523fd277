/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the spliced.ini parser (config_load_string) and the object it builds. */
#include "config.h"
#include "fuzz.h"

#include <errno.h>
#include <sys/socket.h>

static bool valid_name(const char *s)
{
	size_t n = strnlen(s, CONFIG_NAME_MAX + 1);

	return n >= 1 && n <= CONFIG_NAME_MAX;
}

static void check_inbound(const struct config *c, size_t i)
{
	const struct inbound *in = &c->inbounds[i];
	const struct users *u = &in->inline_users;

	CHECK(valid_name(in->name));
	CHECK(in->line >= 1);
	CHECK(in->type == INBOUND_SOCKS5 || in->type == INBOUND_HTTP ||
	      in->type == INBOUND_FORWARD || in->type == INBOUND_MIXED ||
	      in->type == INBOUND_REDIRECT || in->type == INBOUND_TPROXY);
	/* every inbound has somewhere to listen, port 0 refused */
	if (in->listen.ss_family == AF_INET) {
		CHECK(in->listen_len == sizeof(struct sockaddr_in));
		CHECK(((const struct sockaddr_in *)&in->listen)->sin_port != 0);
	} else {
		CHECK(in->listen.ss_family == AF_INET6);
		CHECK(in->listen_len == sizeof(struct sockaddr_in6));
		CHECK(((const struct sockaddr_in6 *)&in->listen)->sin6_port != 0);
	}
	CHECK(in->outbound >= -1 && in->outbound < (int)c->n_outbounds);
	if (in->type == INBOUND_FORWARD) {
		CHECK(in->target_host && *in->target_host && in->target_port != 0);
		CHECK(u->n == 0 && !in->users_file);
	} else if (in->type == INBOUND_REDIRECT || in->type == INBOUND_TPROXY) {
		/* no handshake: nothing to authenticate, the target comes from the socket */
		CHECK(!in->target_host && u->n == 0 && !in->users_file);
		CHECK(!in->udp || in->type == INBOUND_TPROXY);
	} else {
		CHECK(!in->target_host);
	}
	/* inline users: sorted, unique, RFC 1929 lengths, and found by users_check() */
	for (size_t k = 0; k < u->n; k++) {
		size_t nl = strlen(u->v[k].name), pl = strlen(u->v[k].pass);

		CHECK(nl >= 1 && nl <= USERS_FIELD_MAX && pl >= 1 && pl <= USERS_FIELD_MAX);
		CHECK(k == 0 || strcmp(u->v[k - 1].name, u->v[k].name) < 0);
		CHECK(users_check(u, u->v[k].name, u->v[k].pass));
	}
	for (size_t j = 0; j < i; j++) {
		CHECK(strcmp(c->inbounds[j].name, in->name) != 0);
		CHECK(in->listen_len != c->inbounds[j].listen_len ||
		      memcmp(&in->listen, &c->inbounds[j].listen, in->listen_len) != 0);
	}
}

static void check_outbound(const struct config *c, size_t i)
{
	const struct outbound *o = &c->outbounds[i];

	CHECK(valid_name(o->name));
	CHECK(config_outbound_index(c, o->name) == (int)i); /* names are unique */
	CHECK(o->type == OUTBOUND_DIRECT || o->type == OUTBOUND_SOCKS5 ||
	      o->type == OUTBOUND_BLOCK || o->type == OUTBOUND_HTTP);
	CHECK(strnlen(o->bind_interface, sizeof(o->bind_interface)) < sizeof(o->bind_interface));
	if (o->type == OUTBOUND_BLOCK) /* connects nowhere: no socket options */
		CHECK(o->bind_addr.ss_family == AF_UNSPEC && !o->bind_interface[0] && !o->fwmark);
	else
		CHECK(o->bind_addr.ss_family == AF_UNSPEC || o->bind_addr.ss_family == AF_INET ||
		      o->bind_addr.ss_family == AF_INET6);
	if (o->type == OUTBOUND_SOCKS5 || o->type == OUTBOUND_HTTP) {
		CHECK(o->server_host && *o->server_host && o->server_port != 0);
		CHECK(!o->username == !o->password);
		CHECK(o->type != OUTBOUND_HTTP || !o->username || !strchr(o->username, ':'));
	} else {
		CHECK(!o->server_host && !o->username && !o->password);
	}
}

static void check_rule(const struct config *c, const struct rule *r)
{
	CHECK(r->outbound >= 0 && r->outbound < (int)c->n_outbounds);
	CHECK(r->line >= 1);
	switch (r->kind) {
	case RULE_CIDR: {
		unsigned max = r->family == AF_INET6 ? 128 : 32;

		CHECK(r->family == AF_INET || r->family == AF_INET6);
		CHECK(r->prefix <= max && !r->domain);
		for (unsigned bit = r->prefix; bit < max; bit++) /* host bits are zero */
			CHECK(!(r->addr[bit / 8] & (0x80 >> (bit % 8))));
		break;
	}
	case RULE_PORT:
		CHECK(r->port_lo >= 1 && r->port_lo <= r->port_hi && !r->domain);
		break;
	case RULE_DOMAIN:
		CHECK(r->domain && *r->domain && r->domain[0] != '.');
		for (const char *s = r->domain; *s; s++)
			CHECK(!(*s >= 'A' && *s <= 'Z'));
		break;
	case RULE_USER: /* at least one name, each a valid user name */
		CHECK(r->users && *r->users && !r->domain);
		for (const char *n = r->users; *n; n += strlen(n) + 1)
			CHECK(!users_check_name(n, strlen(n)));
		break;
	default:
		CHECK(!"rule kind");
	}
}

static void check_config(const struct config *c)
{
	for (size_t i = 0; i < c->n_users; i++) {
		CHECK(c->users[i].name &&
		      !users_check_name(c->users[i].name, strlen(c->users[i].name)));
		CHECK(c->users[i].line >= 1 && c->users[i].max_conns <= 10000000);
		for (size_t j = 0; j < i; j++)
			CHECK(strcmp(c->users[i].name, c->users[j].name) != 0);
	}
	/* Something to run: an inbound, or a [wireguard NAME] interface alone. */
	CHECK((c->n_inbounds >= 1 || c->n_wireguards >= 1) && c->n_inbounds <= CONFIG_MAX_INBOUNDS);
	/* "direct" and "block" always exist, defined or implicit */
	CHECK(c->n_outbounds >= 2 && c->n_outbounds <= CONFIG_MAX_OUTBOUNDS);
	CHECK(config_outbound_index(c, "direct") >= 0 && config_outbound_index(c, "block") >= 0);
	CHECK(c->route_default >= 0 && c->route_default < (int)c->n_outbounds);
	CHECK(c->n_rules <= CONFIG_MAX_RULES && (c->n_rules == 0 || c->rules));
	CHECK(c->workers >= 0 && c->workers <= 256);
	CHECK(c->log_level >= LOG_ERROR && c->log_level <= LOG_DEBUG);
	CHECK(c->max_connections >= 1 && c->max_resolving >= 1 && c->resolve_timeout_ms >= 1);
	CHECK(c->handshake_timeout_ms >= 1 && c->connect_timeout_ms >= 1);
	CHECK(c->pipe_size >= 4096 && c->pipe_size <= 1048576);
	for (size_t i = 0; i < c->n_inbounds; i++)
		check_inbound(c, i);
	for (size_t i = 0; i < c->n_outbounds; i++)
		check_outbound(c, i);
	for (size_t i = 0; i < c->n_rules; i++)
		check_rule(c, &c->rules[i]);
}

enum { REPAIR_ROUNDS = 4 };

/*
 * Checks the messages of a failed load: one "fuzz.ini:N: ..." line per problem
 * with N a line of the text, no control bytes (values are echoed quoted).
 * Blanks each named line in text (line numbers stay) so the next round can
 * load what is left. A users file's own messages name that file: skipped.
 * Returns how many lines were blanked.
 */
static size_t blank_error_lines(char *text, const char *msgs)
{
	bool users = strstr(text, "users"); /* before any line is blanked */
	size_t lines = 1, blanked = 0;

	for (const char *s = text; *s; s++)
		lines += *s == '\n';
	for (const char *m = msgs; *m;) {
		const char *eol = strchr(m, '\n');
		char *end, *l = text, *le;
		unsigned long n;

		CHECK(eol); /* every message ends its line */
		for (const char *c = m; c < eol; c++)
			CHECK((unsigned char)*c >= ' ' && *c != 0x7f);
		if (strncmp(m, "fuzz.ini:", 9) != 0) {
			CHECK(users);
			m = eol + 1;
			continue;
		}
		n = strtoul(m + 9, &end, 10);
		CHECK(n >= 1 && n <= lines && end[0] == ':' && end[1] == ' ');
		/* blank line n: keep its '\n', drop the rest */
		for (unsigned long k = 1; k < n; k++)
			l = strchr(l, '\n') + 1;
		le = strchrnul(l, '\n');
		if (le > l) {
			memmove(l, le, strlen(le) + 1);
			blanked++;
		}
		m = eol + 1;
	}
	return blanked;
}

/*
 * Input: the file's text. A `users = PATH` key makes the parser read PATH now;
 * so that no input reaches /dev/zero, a FIFO or /proc, an input holding a '/'
 * has every "users" turned into the unknown key "userZ" ('/' still reaches
 * cidr rules). A PATH without '/' is relative to the cwd: a plain file or
 * directory there is harmless. A failed load is repaired and loaded again
 * (blank_error_lines()), so the invariants of a good config see odd content.
 */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static FILE *devnull;
	struct config *c = (struct config *)1, *quiet = (struct config *)1;
	char *text = malloc(size + 1), *s;
	int rc, rc_quiet;

	if (!devnull)
		devnull = fopen("/dev/null", "we");
	CHECK(text && devnull);
	memcpy(text, data, size);
	text[size] = '\0';
	if (strchr(text, '/'))
		for (s = text; (s = strstr(s, "users")); s += 5)
			s[4] = 'Z';
	rc = config_load_string("fuzz.ini", text, &c, devnull);
	CHECK(rc == 0 || rc == -EINVAL || rc == -ENOMEM);
	CHECK((rc == 0) == (c != NULL));
	if (c)
		check_config(c);
	config_free(c);
	/* Errors are counted whether or not they are written anywhere. */
	rc_quiet = config_load_string("fuzz.ini", text, &quiet, NULL);
	CHECK(rc_quiet == rc);
	config_free(quiet);
	/* Most inputs fail somewhere: drop the lines named in messages, load the rest. */
	for (int round = 0; rc == -EINVAL && round < REPAIR_ROUNDS; round++) {
		char *msgs = NULL;
		size_t len;
		FILE *f = open_memstream(&msgs, &len);

		CHECK(f);
		rc = config_load_string("fuzz.ini", text, &c, f);
		fclose(f);
		CHECK((rc == 0) == (c != NULL));
		CHECK((rc == 0) == (len == 0)); /* an error always says something */
		if (c)
			check_config(c);
		config_free(c);
		if (rc == -EINVAL && blank_error_lines(text, msgs) == 0)
			rc = 0; /* nothing left to drop */
		free(msgs);
	}
	free(text);
	return 0;
}
