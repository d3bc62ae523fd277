/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the SOCKS5 client (upstream outbound) over arbitrary server bytes. */
#include "fuzz.h"
#include "socks5.h"

#include <arpa/inet.h>

/*
 * Input: one selector octet (bit 7 offer credentials, bits 4-5 target kind,
 * bits 0-3 chunk size), then the upstream server's byte stream. Run whole and
 * in chunks; both runs must agree exactly.
 */
struct outcome {
	enum proto_res last;
	struct socks5_client c;
	uint8_t out[FUZZ_BUF_MAX]; /* everything the client sent, concatenated */
	size_t out_len;
	size_t left;
};

static void make_target(struct proto_target *t, uint8_t sel)
{
	memset(t, 0, sizeof(*t));
	t->port = 443;
	switch ((sel >> 4) & 3) {
	case 0:
		t->kind = TARGET_DOMAIN;
		strcpy(t->host, "example.com");
		break;
	case 1:
		t->kind = TARGET_DOMAIN;
		memset(t->host, 'h', PROTO_HOST_MAX); /* longest domain */
		break;
	case 2:
		strcpy(t->host, "192.0.2.1");
		CHECK(proto_target_ip_literal(t));
		break;
	default:
		strcpy(t->host, "2001:db8::1");
		CHECK(proto_target_ip_literal(t));
		break;
	}
}

static void check_step(const struct socks5_client *c, enum proto_res res, size_t used, size_t have)
{
	CHECK(used <= have);
	CHECK(c->out_len <= SOCKS5_CLIENT_OUT_MAX);
	switch (res) {
	case PROTO_NEED_MORE:
		CHECK(used == 0);
		break;
	case PROTO_REPLY:
		CHECK(used == 2);
		CHECK(c->out_len >= 3);
		CHECK(c->state == SOCKS5_C_AUTH || c->state == SOCKS5_C_REPLY);
		if (c->state == SOCKS5_C_AUTH)
			CHECK(fuzz_all_zero(c->pass, sizeof(c->pass)));
		break;
	case PROTO_REQUEST:
		CHECK(used >= 7);
		CHECK(c->state == SOCKS5_C_DONE && c->rep == SOCKS5_REP_SUCCEEDED);
		CHECK(c->out_len == 0 && fuzz_all_zero(c->out, sizeof(c->out)));
		CHECK(c->bound.ss_family == AF_UNSPEC || c->bound.ss_family == AF_INET ||
		      c->bound.ss_family == AF_INET6);
		break;
	case PROTO_FAIL:
		CHECK(c->state == SOCKS5_C_FAILED && c->error != SOCKS5_ERR_NONE);
		CHECK(c->rep >= SOCKS5_REP_GENERAL_FAILURE &&
		      c->rep <= SOCKS5_REP_ATYP_NOT_SUPPORTED);
		CHECK(c->out_len == 0 && fuzz_all_zero(c->out, sizeof(c->out)));
		CHECK(fuzz_all_zero(c->pass, sizeof(c->pass)));
		break;
	default:
		CHECK(!"the client never asks for credentials");
	}
}

static void run(struct outcome *o, uint8_t sel, const uint8_t *in, size_t len, size_t chunk)
{
	static uint8_t buf[FUZZ_BUF_MAX];
	struct proto_target t;
	size_t have = 0, off = 0;
	bool auth = sel & 0x80;

	memset(o, 0, sizeof(*o));
	make_target(&t, sel);
	CHECK(socks5_client_init(&o->c, &t, auth ? "user" : NULL, auth ? "password" : NULL) == 0);
	memcpy(o->out, o->c.out, o->c.out_len);
	o->out_len = o->c.out_len;
	o->last = PROTO_NEED_MORE;
	while (off < len) {
		size_t n = len - off < chunk ? len - off : chunk;

		memcpy(buf + have, in + off, n);
		have += n;
		off += n;
		for (;;) {
			size_t used = 0xdead;
			enum proto_res res = socks5_client_feed(&o->c, buf, have, &used);

			check_step(&o->c, res, used, have);
			if (res == PROTO_NEED_MORE)
				break;
			memmove(buf, buf + used, have - used);
			have -= used;
			if (res == PROTO_REPLY) {
				CHECK(o->out_len + o->c.out_len <= sizeof(o->out));
				memcpy(o->out + o->out_len, o->c.out, o->c.out_len);
				o->out_len += o->c.out_len;
				continue;
			}
			o->last = res;
			o->left = have + (len - off);
			return;
		}
	}
	o->left = have;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct outcome whole, split;

	if (size < 1 || size - 1 > FUZZ_BUF_MAX / 2)
		return 0;
	run(&whole, data[0], data + 1, size - 1, size - 1);
	run(&split, data[0], data + 1, size - 1, fuzz_chunk(data[0], size - 1));
	CHECK(whole.last == split.last);
	CHECK(whole.out_len == split.out_len && !memcmp(whole.out, split.out, whole.out_len));
	CHECK(whole.left == split.left);
	CHECK(whole.c.rep == split.c.rep && whole.c.error == split.c.error);
	if (whole.last == PROTO_REQUEST)
		CHECK(!memcmp(&whole.c.bound, &split.c.bound, sizeof(whole.c.bound)));
	return 0;
}
