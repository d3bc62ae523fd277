/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the HTTP CONNECT client (http outbound) over arbitrary proxy responses. */
#include "fuzz.h"
#include "http_client.h"

/*
 * Input: one selector octet (bit 7 offer credentials, bit 6 an IPv6 target,
 * bits 0-3 chunk size), then the upstream proxy's byte stream. Run whole and
 * in chunks (the caller keeps unconsumed bytes, as the relay does); both
 * runs must agree exactly.
 */
struct outcome {
	enum proto_res last;
	struct http_client c;
	size_t left; /* octets not consumed when the head ended (tunnel payload) */
};

static void check_step(const struct http_client *c, enum proto_res res, size_t used, size_t have)
{
	CHECK(used <= have);
	switch (res) {
	case PROTO_NEED_MORE:
		CHECK(used == 0 && c->state == HTTP_C_RESPONSE);
		CHECK(have < HTTP_CLIENT_HEAD_MAX);
		CHECK(c->scanned <= have);
		break;
	case PROTO_REQUEST:
		CHECK(c->state == HTTP_C_DONE && c->status >= 200 && c->status <= 299);
		CHECK(used >= 14 && used <= HTTP_CLIENT_HEAD_MAX); /* "HTTP/1.1 200\n\n" */
		break;
	case PROTO_FAIL:
		CHECK(c->state == HTTP_C_FAILED && c->result != CONNECT_OK);
		CHECK(c->result == http_client_result_from_status(c->status) || c->status <= 0 ||
		      c->result == CONNECT_GENERAL_FAILURE);
		break;
	default:
		CHECK(!"the client never asks for credentials or replies");
	}
}

static void run(struct outcome *o, uint8_t sel, const uint8_t *in, size_t len, size_t chunk)
{
	static uint8_t buf[FUZZ_BUF_MAX];
	struct proto_target t = {.kind = TARGET_DOMAIN, .port = 443};
	size_t have = 0, off = 0;
	bool auth = sel & 0x80;

	memset(o, 0, sizeof(*o));
	strcpy(t.host, sel & 0x40 ? "2001:db8::1" : "example.com");
	if (sel & 0x40)
		CHECK(proto_target_ip_literal(&t));
	CHECK(http_client_init(&o->c, &t, auth ? "user" : NULL, auth ? "pass word" : NULL) == 0);
	CHECK(o->c.out_len > 4 && !memcmp(o->c.out, "CONNECT ", 8));
	CHECK(!memcmp(o->c.out + o->c.out_len - 4, "\r\n\r\n", 4));
	o->last = PROTO_NEED_MORE;
	while (off < len) {
		size_t n = len - off < chunk ? len - off : chunk, used = 0xdead;
		enum proto_res res;

		memcpy(buf + have, in + off, n);
		have += n;
		off += n;
		res = http_client_feed(&o->c, buf, have, &used);
		check_step(&o->c, res, used, have);
		if (res != PROTO_NEED_MORE) {
			o->last = res;
			o->left = have - used + (len - off);
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
	CHECK(whole.left == split.left);
	CHECK(whole.c.status == split.c.status && whole.c.result == split.c.result);
	return 0;
}
