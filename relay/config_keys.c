/* SPDX-License-Identifier: MIT */
/* The keys of [route], [wireguard NAME] and [user NAME], and helpers all sections share. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config_internal.h"
#include "config_value.h"
#include "sockaddr.h"
#include "strset.h"

void config_add_ref(struct parser *p, enum ref_kind kind, size_t idx, const char *name)
{
	char q[QUOTE_BYTES];
	struct ref *r;

	if (!config_valid_name(name)) {
		kerr(p, "\"%s\" is not an outbound name", config_quote(q, name));
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

char *config_path(struct parser *p, const char *v)
{
	bool rel = p->dir && v[0] != '/';
	const char *sep = rel && p->dir[strlen(p->dir) - 1] != '/' ? "/" : "";
	size_t need = strlen(v) + (rel ? strlen(p->dir) + strlen(sep) : 0);
	char *out;

	if (need > CONFIG_PATH_MAX) {
		kerr(p, "path longer than %d bytes", CONFIG_PATH_MAX);
		return NULL;
	}
	out = malloc(need + 1);
	if (!out) {
		kerr(p, "out of memory");
		return NULL;
	}
	/* Relative to the config file, so a reload finds it whatever the cwd. */
	if (rel)
		snprintf(out, need + 1, "%s%s%s", p->dir, sep, v);
	else
		memcpy(out, v, need + 1);
	return out;
}

/* allow = CIDR[, CIDR...]; repeatable: the lists add up. */
void config_parse_allow(struct parser *p, const char *v, struct cidr **list, size_t *n_list)
{
	char q[QUOTE_BYTES], item[64];
	const char *s = v;

	while (*s) {
		size_t n = strset_cspan(s, ",");
		const char *why;
		struct rule r = {0};
		struct cidr *grown;

		while (n && (*s == ' ' || *s == '\t'))
			s++, n--;
		while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
			n--;
		if (n == 0 || n >= sizeof(item)) {
			kerr(p,
			     "\"%s\" is not a list of address/prefix (e.g. 192.0.2.0/24, 2001:db8::/32)",
			     config_quote(q, v));
			return;
		}
		memcpy(item, s, n);
		item[n] = '\0';
		why = config_parse_cidr(item, &r);
		if (why) {
			kerr(p, "\"%s\" %s", config_quote(q, item), why);
			return;
		}
		grown = realloc(*list, (*n_list + 1) * sizeof(**list));
		if (!grown) {
			kerr(p, "out of memory");
			return;
		}
		*list = grown;
		grown[*n_list].family = r.family;
		memcpy(grown[*n_list].addr, r.addr, sizeof(r.addr));
		grown[(*n_list)++].prefix = r.prefix;
		s += strset_cspan(s, ",");
		if (*s == ',')
			s++;
	}
}

/*
 * keepalive = DURATION (0: off; else at least 1s, the kernel's unit) and
 * user-timeout = DURATION (TCP_USER_TIMEOUT; 0: the kernel's default), for an
 * inbound's accepted sockets or an outbound's connections.
 */
void config_get_keepalive(struct parser *p, const char *v, bool *set, unsigned *ms)
{
	char q[QUOTE_BYTES];

	config_get_duration(p, v, 0, CONFIG_DAY_MS, "0, or 1s..24h", ms);
	if (*ms && *ms < 1000)
		kerr(p, "\"%s\" is below 1s, the kernel's unit for keepalive", config_quote(q, v));
	*set = true;
}

/* --- [route] --- */

/*
 * "alice bob": user names (as a users file spells them, so no blanks)
 * separated by blanks, stored NUL-separated with an empty name at the end.
 */
static const char *parse_user_list(const char *arg, struct rule *r)
{
	size_t n = strlen(arg), off = 0;
	const char *s = arg;

	r->users = malloc(n + 2);
	if (!r->users)
		return "cannot be stored: out of memory";
	while (*s) {
		size_t len = strset_cspan(s, " \t");

		if (users_check_name(s, len))
			return len > USERS_FIELD_MAX
			               ? "names a user longer than 255 bytes"
			               : "names a user with ':' or a control character";
		memcpy(r->users + off, s, len);
		off += len;
		r->users[off++] = '\0';
		s += len;
		s += strset_span(s, " \t");
	}
	r->users[off] = '\0';
	return NULL;
}

static void set_rule(struct parser *p, const char *v)
{
	char q[QUOTE_BYTES], kind[16], *arg = NULL, *target = NULL;
	const char *arrow = strstr(v, "->"), *why;
	struct rule r = {.outbound = -1, .line = p->line};
	size_t n;

	if (!arrow || arrow == v) {
		kerr(p, "\"%s\" is not \"KIND VALUE -> OUTBOUND\"", config_quote(q, v));
		return;
	}
	n = strset_cspan(v, " \t");
	if (n >= sizeof(kind) || v + n >= arrow) {
		kerr(p, "\"%s\" is not \"KIND VALUE -> OUTBOUND\"", config_quote(q, v));
		return;
	}
	memcpy(kind, v, n);
	kind[n] = '\0';
	v += n + strset_span(v + n, " \t");
	for (n = (size_t)(arrow - v); n > 0 && (v[n - 1] == ' ' || v[n - 1] == '\t');)
		n--;
	arg = strndup(v, n);
	target = strdup(arrow + 2 + strset_span(arrow + 2, " \t"));
	if (!arg || !target) {
		kerr(p, "out of memory");
		goto out;
	}
	if (!*arg || (strpbrk(arg, " \t") && strcmp(kind, "user") != 0)) {
		kerr(p, "%s: expected one value before \"->\"", config_quote(q, kind));
		goto out;
	}
	if (!*target) {
		kerr(p, "no outbound after \"->\"");
		goto out;
	}
	if (strcmp(kind, "cidr") == 0)
		r.kind = RULE_CIDR, why = config_parse_cidr(arg, &r);
	else if (strcmp(kind, "port") == 0)
		r.kind = RULE_PORT, why = config_parse_port_range(arg, &r);
	else if (strcmp(kind, "domain") == 0)
		r.kind = RULE_DOMAIN, why = config_parse_domain(arg, &r);
	else if (strcmp(kind, "user") == 0)
		r.kind = RULE_USER, why = parse_user_list(arg, &r);
	else {
		kerr(p, "unknown rule kind \"%s\" (cidr, port, domain or user)",
		     config_quote(q, kind));
		goto out;
	}
	if (why) {
		kerr(p, "%s \"%s\" %s", kind, config_quote(q, arg), why);
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
	config_add_ref(p, REF_RULE, p->c->n_rules, target);
	p->c->rules[p->c->n_rules++] = r;
	r.domain = r.users = NULL; /* owned by the config now */
out:
	free(r.domain);
	free(r.users);
	free(arg);
	free(target);
}

static void set_default(struct parser *p, const char *v)
{
	config_add_ref(p, REF_DEFAULT, 0, v);
}

const struct key config_route_keys[] = {
        {"default", set_default, false, 0},
        {"rule", set_rule, true, 0},
        {NULL, NULL, false, 0},
};

/* --- sections --- */

/* Keys given that the section's type does not take. */
void config_check_key_types(struct parser *p, unsigned type, const char *type_name)
{
	for (int i = 0; p->keys[i].name; i++) {
		if ((p->seen & KEY_BIT(i)) && p->keys[i].types && !(p->keys[i].types & 1u << type))
			config_err(p, p->key_line[i], p->keys[i].name, "not valid with type = %s",
			           type_name);
	}
}

void config_require(struct parser *p, int key)
{
	if (!(p->seen & KEY_BIT(key)))
		config_err(p, p->sec_line, p->keys[key].name, "required key is missing");
}

/* --- [wireguard NAME] --- */

static void set_wg_config(struct parser *p, const char *v)
{
	p->c->wireguards[p->idx].conf = config_path(p, v);
}

/* --- [user NAME] --- */

static void set_user_max_conns(struct parser *p, const char *v)
{
	config_get_uint(p, v, 1, 10000000, &p->c->users[p->idx].max_conns); /* as max-connections */
}

const struct key config_user_keys[] = {
        {"max-connections", set_user_max_conns, false, 0},
        {NULL, NULL, false, 0},
};

const struct key config_wireguard_keys[] = {
        {"config", set_wg_config, false, 0},
        {NULL, NULL, false, 0},
};

void config_close_wireguard(struct parser *p)
{
	const struct wireguard_sec *wg = &p->c->wireguards[p->idx];

	if (!wg->conf)
		config_err(p, wg->line, NULL, "missing key: config (the wg-quick file)");
}
