/* SPDX-License-Identifier: MIT */
/* Internal to relay/config*.c: the parser state shared by the INI walk and the section keys. */
#ifndef SPLICED_CONFIG_INTERNAL_H
#define SPLICED_CONFIG_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "config.h"

enum config_message_limits {
	QUOTE_BYTES = 84,         /* values echoed in messages are cut at 80 bytes */
	LABEL_BYTES = 2 * 84 + 8, /* "[TYPE NAME]", both parts quoted (QUOTE_BYTES) */
	KEYS_PER_SECTION = 64,    /* one bit each in parser.seen */
};

enum section_kind {
	SEC_NONE = 0,
	SEC_SKIP,
	SEC_MAIN,
	SEC_INBOUND,
	SEC_OUTBOUND,
	SEC_ROUTE,
	SEC_WIREGUARD,
	SEC_USER,
	SEC_STATS,
};

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

/* One key of a section: a table of these, NULL-terminated, per section kind. */
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
	int sec_line, main_line, route_line, stats_line;
	char label[LABEL_BYTES];
	uint64_t seen; /* bit i: keys[i] was given (KEY_BIT) */
	int key_line[KEYS_PER_SECTION];
	const char *key;
	struct ref *refs;
	size_t n_refs, cap_rules;
};

#define KEY_BIT(i) (UINT64_C(1) << (i))

/* Copies v for a message: at most 80 bytes, non-printable bytes as '?'. */
const char *config_quote(char out[QUOTE_BYTES], const char *v);
/* "file:line: [section] key: message"; the label and key parts are optional. */
void __attribute__((format(printf, 4, 5)))
config_err(struct parser *p, int line, const char *key, const char *fmt, ...);
/* An error about the value of the key on the current line. */
#define kerr(p, ...) config_err(p, (p)->line, (p)->key, __VA_ARGS__)

/* The key tables: config_main.c, config_inbound.c, config_outbound.c, config_keys.c (the rest). */
extern const struct key config_main_keys[], config_inbound_keys[], config_outbound_keys[],
        config_route_keys[], config_wireguard_keys[], config_user_keys[], config_stats_keys[];
/* The checks at the end of a [main], [inbound NAME], [outbound NAME] or [wireguard NAME] section. */
void config_close_main(struct parser *p);
/* A whole number in min..max, or a duration in range ("1ms..24h" how it reads); errors reported. */
int config_get_uint(struct parser *p, const char *v, unsigned min, unsigned max, unsigned *out);
void config_get_duration(struct parser *p, const char *v, unsigned min, unsigned max,
                         const char *range, unsigned *out);
void config_close_inbound(struct parser *p);
void config_close_outbound(struct parser *p);
/* Indices into config_inbound_keys and config_outbound_keys: the close checks name keys by them. */
enum inbound_key {
	IN_TYPE,
	IN_LISTEN,
	IN_USER,
	IN_USERS,
	IN_TARGET,
	IN_OUTBOUND,
	IN_ALLOW,
	IN_UDP,
	IN_METHOD,
	IN_PASSWORD
};
enum outbound_key {
	OUT_TYPE,
	OUT_BIND_ADDRESS,
	OUT_BIND_INTERFACE,
	OUT_FWMARK,
	OUT_DENY_PRIVATE,
	OUT_SERVER,
	OUT_USERNAME,
	OUT_PASSWORD,
	OUT_METHOD
};
/* Helpers the section files share (config_keys.c). */
enum { CONFIG_DAY_MS = 24 * 3600 * 1000 };
/* A use of outbound `name` by the current key, resolved after every section is read. */
void config_add_ref(struct parser *p, enum ref_kind kind, size_t idx, const char *name);
/* allow = CIDR[, CIDR...] into a growing list; repeatable: the lists add up. */
void config_parse_allow(struct parser *p, const char *v, struct cidr **list, size_t *n_list);
/* keepalive = DURATION: 0 (off) or 1s..24h. */
void config_get_keepalive(struct parser *p, const char *v, bool *set, unsigned *ms);
/* Errors for keys given that the section's type does not take. */
void config_check_key_types(struct parser *p, unsigned type, const char *type_name);
/* An error at the section's header when keys[key] was not given. */
void config_require(struct parser *p, int key);
/* Shadowsocks (config_ss.c): method = NAME, a section's key, an inbound's end-of-section checks. */
int config_ss_method(struct parser *p, const char *v);
void config_ss_close_inbound(struct parser *p, struct inbound *in);
void config_ss_close_outbound(struct parser *p, struct outbound *o);
void config_close_wireguard(struct parser *p);
/* type = tun (config_tun.c): its keys, then its defaults and checks at the end of the section. */
void config_tun_set_name(struct parser *p, const char *v);
void config_tun_set_mtu(struct parser *p, const char *v);
void config_tun_set_address(struct parser *p, const char *v);
void config_tun_set_routes(struct parser *p, const char *v);
void config_tun_set_auto_route(struct parser *p, const char *v);
void config_tun_set_table(struct parser *p, const char *v);
void config_tun_set_priority(struct parser *p, const char *v);
void config_tun_set_fwmark(struct parser *p, const char *v);
void config_tun_set_queues(struct parser *p, const char *v);
void config_tun_set_offload(struct parser *p, const char *v);
void config_tun_set_max_flows(struct parser *p, const char *v);
void config_tun_set_linger(struct parser *p, const char *v);
void config_tun_set_txqlen(struct parser *p, const char *v);
void config_tun_set_netns(struct parser *p, const char *v);
void config_tun_set_dns_server(struct parser *p, const char *v);
void config_tun_set_dns_hijack(struct parser *p, const char *v);
void config_tun_set_mapped_dns(struct parser *p, const char *v);
void config_tun_defaults(struct inbound *in);
void config_tun_close(struct parser *p);
/* After every section: the tun inbounds against each other, and auto_mark. */
void config_tun_finish(struct parser *p);
void config_close_stats(struct parser *p);
/* v made absolute against the config file's directory; NULL (after kerr) on error. */
char *config_path(struct parser *p, const char *v);

static inline struct inbound *cur_in(struct parser *p)
{
	return &p->c->inbounds[p->idx];
}

static inline struct outbound *cur_out(struct parser *p)
{
	return &p->c->outbounds[p->idx];
}

#endif
