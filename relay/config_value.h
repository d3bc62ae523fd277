/* SPDX-License-Identifier: MIT */
/* Internal to relay/config*.c: value parsers that know nothing of the INI walk. */
#ifndef SPLICED_CONFIG_VALUE_H
#define SPLICED_CONFIG_VALUE_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"

/* Decimal digits only (no sign, no blanks), saturating; *end after the digits; 0 or -EINVAL. */
int config_parse_u64(const char *s, const char **end, uint64_t *out);

/*
 * config_parse_hostport() with the reason for a -EINVAL in *why, worded to
 * follow the quoted value in a message (sa_parse() in lib/sockaddr.h does the
 * same for numeric addresses). -ENOMEM leaves *why alone. On success *host is
 * malloc'd; on failure it is NULL.
 */
int config_hostport_why(const char *s, char **host, uint16_t *port, const char **why);

/* A section or outbound name: 1..CONFIG_NAME_MAX of A-Z a-z 0-9 . _ - */
bool config_valid_name(const char *s);
/* An interface name: at most 15 bytes, no '/', ':' or blanks, not "." or "..". */
bool config_valid_ifname(const char *s);
/* An IPv4 or IPv6 literal ("[v6]" too) into ss, port 0 (zeroed on failure); 0 or -EINVAL. */
int config_parse_ip(const char *v, struct sockaddr_storage *ss);
/* Decimal, or hex with 0x, up to 0xffffffff; -EINVAL (syntax), -ERANGE. */
int config_parse_fwmark(const char *s, uint32_t *mark);

/*
 * The argument of a [route] rule into r (family/addr/prefix, port_lo/hi, or
 * a malloc'd lowercase domain the caller frees even on failure). NULL when
 * good, else why not, worded to follow the quoted argument in a message.
 */
const char *config_parse_cidr(const char *arg, struct rule *r);
const char *config_parse_port_range(const char *arg, struct rule *r);
const char *config_parse_domain(const char *arg, struct rule *r);

#endif
