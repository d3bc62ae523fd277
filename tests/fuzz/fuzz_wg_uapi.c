/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the UAPI set=1 parser, get=1 formatting of what it parsed, and the socket server. */
#include "fuzz.h"
#include "uapi_server.h"

#include <errno.h>
#include <sys/socket.h>
#include <unistd.h>

static int fake_get(void *ctx, struct wg_uapi_info *out)
{
	(void)ctx;
	out->listen_port = 1;
	return 0;
}

static int fake_set(void *ctx, const struct wg_uapi_set *req)
{
	(void)ctx;
	return req->n_peers > 3 ? -ENOSPC : 0;
}

static void check_parsed(const struct wg_uapi_set *s)
{
	struct wg_uapi_info info = {0};
	struct wg_uapi_peer_info *pi = calloc(s->n_peers + 1, sizeof(*pi));
	char *text;
	size_t len = 0;

	CHECK(pi);
	for (size_t i = 0; i < s->n_peers; i++) {
		const struct wg_uapi_peer_set *p = &s->peers[i];

		for (size_t j = 0; j < p->n_allowed_ips; j++) {
			const struct netlink_prefix *a = &p->allowed_ips[j];
			size_t bits = a->family == AF_INET ? 32 : 128;

			CHECK(a->family == AF_INET || a->family == AF_INET6);
			CHECK(a->prefixlen <= bits);
			/* host bits are cleared */
			for (size_t b = a->prefixlen; b < bits; b++)
				CHECK(!(a->addr.bytes[b / 8] & (0x80 >> (b % 8))));
		}
		memcpy(pi[i].public_key, p->public_key, sizeof(p->public_key));
		pi[i].has_endpoint = p->has_endpoint;
		pi[i].endpoint = p->endpoint;
		pi[i].n_allowed_ips = p->n_allowed_ips;
		pi[i].allowed_ips = p->allowed_ips;
	}
	/* what a device would answer to get=1 after applying it */
	info.has_private_key = s->has_private_key;
	memcpy(info.private_key, s->private_key, sizeof(s->private_key));
	info.listen_port = s->listen_port;
	info.fwmark = s->fwmark;
	info.n_peers = s->n_peers;
	info.peers = pi;
	text = wg_uapi_format_get(&info, &len);
	CHECK(text && len == strlen(text));
	CHECK(len >= 9 && !strcmp(text + len - 9, "errno=0\n\n"));
	free(text);
	free(pi);
}

/*
 * Input: a selector octet, then text. Selector bit 0 clear: the text is a
 * set=1 body for wg_uapi_parse_set(). Set: the text is what a client writes
 * to the socket, served by wg_uapi_serve() against a fake device.
 */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size > 60000)
		return 0;
	if (!(data[0] & 1)) {
		char *text = malloc(size);
		struct wg_uapi_set s;
		int ret;

		CHECK(text);
		memcpy(text, data + 1, size - 1);
		text[size - 1] = '\0';
		wgconf_numeric_hosts_only = true;
		ret = wg_uapi_parse_set(&s, text);
		CHECK(ret == 0 || ret == -EINVAL || ret == -EPROTONOSUPPORT || ret == -ENOMEM);
		if (ret == 0) {
			check_parsed(&s);
			wg_uapi_set_free(&s);
		} else {
			CHECK(s.n_peers == 0 && s.peers == NULL);
		}
		free(text);
	} else {
		struct wg_uapi_ops ops = {.get = fake_get, .set = fake_set};
		char out[4096];
		int sv[2];

		wgconf_numeric_hosts_only = true;
		CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
		CHECK(write(sv[0], data + 1, size - 1) == (ssize_t)(size - 1));
		shutdown(sv[0], SHUT_WR);
		wg_uapi_serve(sv[1], &ops, 1000);
		close(sv[1]);
		/* every answer is "errno=N\n\n" or a get reply ending so */
		for (;;) {
			ssize_t n = read(sv[0], out, sizeof(out));

			if (n <= 0)
				break;
		}
		close(sv[0]);
	}
	return 0;
}
