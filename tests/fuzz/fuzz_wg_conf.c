/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the wg-quick config parser (wgconf_parse_string) and its UAPI conversion. */
#include "fuzz.h"
#include "uapi.h"
#include "wgconf.h"

#include <errno.h>

static void check_prefix(const struct netlink_prefix *p)
{
	CHECK(p->family == AF_INET || p->family == AF_INET6);
	CHECK(p->prefixlen <= (p->family == AF_INET ? 32 : 128));
}

/* Input: the file's text. Endpoints must be numeric here: no DNS query leaves a fuzz run. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1), err[WGCONF_ERR_LEN];
	struct wgconf conf;
	int ret;

	CHECK(text);
	memcpy(text, data, size);
	text[size] = '\0';
	wgconf_numeric_hosts_only = true;
	memset(err, 'x', sizeof(err));
	ret = wgconf_parse_string(&conf, text, "fuzz.conf", err, sizeof(err));
	if (ret == 0) {
		struct wg_uapi_set s;

		for (size_t i = 0; i < conf.n_addresses; i++)
			check_prefix(&conf.addresses[i]);
		for (size_t i = 0; i < conf.n_peers; i++) {
			const struct wgconf_peer *p = &conf.peers[i];

			CHECK(p->line >= 1);
			if (p->has_endpoint)
				CHECK(p->endpoint.sa.sa_family == AF_INET ||
				      p->endpoint.sa.sa_family == AF_INET6);
			for (size_t j = 0; j < p->n_allowed_ips; j++)
				check_prefix(&p->allowed_ips[j]);
		}
		CHECK(strnlen(conf.name, sizeof(conf.name)) < sizeof(conf.name));
		CHECK(conf.workers <= WGCONF_MAX_WORKERS);
		/* what `spliced wg up` does next */
		CHECK(wg_uapi_set_from_conf(&s, &conf) == 0);
		CHECK(s.n_peers == conf.n_peers && s.replace_peers);
		wg_uapi_set_free(&s);
		wgconf_free(&conf);
	} else {
		CHECK(ret < 0);
		/* a "file:line: message" error, terminated */
		CHECK(memchr(err, '\0', sizeof(err)) != NULL);
		CHECK(!strncmp(err, "fuzz.conf", 9));
	}
	free(text);
	return 0;
}
