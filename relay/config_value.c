/* SPDX-License-Identifier: MIT */
/* Config values without parser state: numbers, durations, addresses, host:port, rule arguments. */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "config_value.h"
#include "sockaddr.h"
#include "strset.h"

enum value_limits {
	IFNAME_MAX = 15, /* IFNAMSIZ - 1 */
	HOSTNAME_MAX = 253,
	LABEL_MAX = 63,
};

/* --- addresses --- */

int config_parse_ip(const char *v, struct sockaddr_storage *ss)
{
	struct sockaddr_in *a4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;
	char buf[INET6_ADDRSTRLEN + 2];
	size_t n = strlen(v);

	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, v, &a4->sin_addr) == 1) {
		a4->sin_family = AF_INET;
		return 0;
	}
	/* "[v6]" as well as bare v6: both appear in the wild. */
	if (n > 2 && n < sizeof(buf) && v[0] == '[' && v[n - 1] == ']') {
		memcpy(buf, v + 1, n - 2);
		buf[n - 2] = '\0';
		v = buf;
	}
	if (inet_pton(AF_INET6, v, &a6->sin6_addr) == 1) {
		a6->sin6_family = AF_INET6;
		return 0;
	}
	memset(ss, 0, sizeof(*ss));
	return -EINVAL;
}

/* --- numbers --- */

/* Decimal digits only (no sign, no blanks); saturates instead of wrapping. */
int config_parse_u64(const char *s, const char **end, uint64_t *out)
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

	if (config_parse_u64(s, &end, &v) < 0)
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

/* Bytes with an optional k or m (or, when `giga`, g) suffix, 1024-based. */
static int parse_size(const char *s, uint64_t *bytes, bool giga)
{
	const char *end;
	uint64_t v, mult = 1;

	if (config_parse_u64(s, &end, &v) < 0)
		return -EINVAL;
	if (*end == 'k' || *end == 'K')
		mult = 1024, end++;
	else if (*end == 'm' || *end == 'M')
		mult = 1024 * 1024, end++;
	else if (giga && (*end == 'g' || *end == 'G'))
		mult = 1024 * 1024 * 1024, end++;
	if (*end != '\0')
		return -EINVAL;
	if (v > UINT64_MAX / mult)
		return -ERANGE;
	*bytes = v * mult;
	return 0;
}

int config_parse_size64(const char *s, uint64_t *bytes)
{
	return parse_size(s, bytes, true);
}

int config_parse_size(const char *s, unsigned *bytes)
{
	uint64_t v;
	int rc = parse_size(s, &v, false);

	if (rc == 0 && v > UINT_MAX)
		rc = -ERANGE;
	if (rc == 0)
		*bytes = (unsigned)v;
	return rc;
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

int config_parse_sockaddr(const char *s, struct sockaddr_storage *ss, socklen_t *len)
{
	const char *why;

	return sa_parse(s, ss, len, &why) < 0 ? -EINVAL : 0;
}

int config_hostport_why(const char *str, char **host, uint16_t *port, const char **why)
{
	char *s = strdup(str), *h;
	unsigned char addr[sizeof(struct in6_addr)];
	bool v6;
	int rc = -ENOMEM;

	*host = NULL;
	if (!s)
		return rc;
	rc = sa_split_hostport(s, &h, port, &v6, why);
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
	int rc = config_hostport_why(s, host, port, &why);

	return rc == -ENOMEM ? rc : rc < 0 ? -EINVAL : 0;
}

bool config_valid_name(const char *s)
{
	size_t n = strlen(s);

	return n > 0 && n <= CONFIG_NAME_MAX &&
	       strset_span(s, "abcdefghijklmnopqrstuvwxyz"
	                      "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	                      "0123456789._-") == n;
}

bool config_valid_ifname(const char *v)
{
	size_t n = strlen(v);

	return !(n > IFNAME_MAX || strpbrk(v, "/: \t") || strcmp(v, ".") == 0 ||
	         strcmp(v, "..") == 0);
}

int config_parse_fwmark(const char *v, uint32_t *mark)
{
	char *end;
	unsigned long long n;

	/* strtoull alone would accept blanks, a sign and octal. */
	if (!isdigit((unsigned char)v[0]) || (v[0] == '0' && v[1] && v[1] != 'x') ||
	    (v[0] == '0' && v[1] == 'x' && !isxdigit((unsigned char)v[2])))
		return -EINVAL;
	errno = 0;
	n = strtoull(v, &end, 0);
	if (*end)
		return -EINVAL;
	if (errno == ERANGE || n > UINT32_MAX)
		return -ERANGE;
	*mark = (uint32_t)n;
	return 0;
}

/* --- [route] rule arguments: NULL, or why the argument is bad --- */

const char *config_parse_cidr(const char *arg, struct rule *r)
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
	if (slash && (config_parse_u64(slash + 1, &end, &prefix) < 0 || *end))
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

const char *config_parse_port_range(const char *arg, struct rule *r)
{
	char lo[8];
	const char *dash = strchr(arg, '-');
	size_t n = dash ? (size_t)(dash - arg) : strlen(arg);

	if (n >= sizeof(lo))
		return "is not a port (1..65535) or range (lo-hi)";
	memcpy(lo, arg, n);
	lo[n] = '\0';
	if (sa_parse_port(lo, &r->port_lo) < 0)
		return "is not a port (1..65535) or range (lo-hi)";
	r->port_hi = r->port_lo;
	if (dash && sa_parse_port(dash + 1, &r->port_hi) < 0)
		return "is not a port (1..65535) or range (lo-hi)";
	if (r->port_hi < r->port_lo)
		return "is an empty range (lo > hi)";
	return NULL;
}

const char *config_parse_domain(const char *arg, struct rule *r)
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
