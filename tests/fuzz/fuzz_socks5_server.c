/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the SOCKS5 server handshake (RFC 1928/1929) over arbitrary client bytes. */
#include "fuzz.h"
#include "socks5.h"

/*
 * Input: one selector octet (bit 7 require_auth, bit 6 accept the credentials,
 * bit 5 allow UDP ASSOCIATE, bit 4 allow FWD UDP, bits 0-3 chunk size), then
 * the client's byte stream. The stream is run once
 * in one piece and once in chunks; both runs must agree exactly.
 */
struct outcome {
	enum proto_res last;
	struct socks5_server s;
	uint8_t out[FUZZ_BUF_MAX]; /* every reply, concatenated */
	size_t out_len;
	size_t left; /* stream octets not consumed by the handshake */
};

static void check_step(const struct socks5_server *s, enum proto_res res, size_t used, size_t have)
{
	CHECK(used <= have);
	CHECK(s->reply_len <= PROTO_REPLY_MAX);
	CHECK(s->user_len <= PROTO_CRED_MAX && s->pass_len <= PROTO_CRED_MAX);
	switch (res) {
	case PROTO_NEED_MORE:
		CHECK(used == 0);
		CHECK(s->reply_len == 0);
		break;
	case PROTO_REPLY:
		CHECK(used > 0); /* progress, or the caller would spin */
		CHECK(s->reply_len == 2);
		break;
	case PROTO_AUTH:
		CHECK(used >= 5);
		CHECK(s->state == SOCKS5_S_AUTH_CHECK);
		CHECK(s->user_len >= 1 && strlen(s->user) == s->user_len);
		CHECK(s->pass_len >= 1 && strlen(s->pass) == s->pass_len);
		break;
	case PROTO_REQUEST:
		CHECK(used >= 8); /* shortest: a one-octet domain */
		CHECK(s->state == SOCKS5_S_DONE);
		CHECK(s->cmd == SOCKS5_CMD_CONNECT ||
		      (s->cmd == SOCKS5_CMD_UDP_ASSOCIATE && s->allow_udp) ||
		      (s->cmd == SOCKS5_CMD_FWD_UDP && s->allow_fwd_udp));
		CHECK(s->reply_len == 0);
		fuzz_check_target(&s->target);
		break;
	case PROTO_FAIL:
		CHECK(s->state == SOCKS5_S_FAILED);
		CHECK(s->error != SOCKS5_ERR_NONE);
		/* empty, a method or RFC 1929 answer, or a full REP with IPv4 0.0.0.0:0 */
		CHECK(s->reply_len == 0 || s->reply_len == 2 || s->reply_len == 10);
		break;
	}
}

static void run(struct outcome *o, uint8_t sel, const uint8_t *in, size_t len, size_t chunk)
{
	static uint8_t buf[FUZZ_BUF_MAX];
	size_t have = 0, off = 0;

	bool auth_ok = sel & 0x40;

	memset(o, 0, sizeof(*o));
	socks5_server_init(&o->s, sel & 0x80);
	socks5_server_allow(&o->s, sel & 0x20, sel & 0x10);
	o->last = PROTO_NEED_MORE;
	while (off < len) {
		size_t n = len - off < chunk ? len - off : chunk;
		enum proto_res res;

		memcpy(buf + have, in + off, n);
		have += n;
		off += n;
		for (;;) {
			size_t used = 0xdead;

			res = socks5_server_feed(&o->s, buf, have, &used);
			check_step(&o->s, res, used, have);
			if (res == PROTO_NEED_MORE)
				break;
			memmove(buf, buf + used, have - used);
			have -= used;
			if (res == PROTO_AUTH) {
				res = socks5_server_auth_result(&o->s, auth_ok);
				CHECK(fuzz_all_zero(o->s.pass, sizeof(o->s.pass)));
				CHECK(o->s.reply_len == 2 && o->s.reply[0] == 1);
				CHECK(res == (auth_ok ? PROTO_REPLY : PROTO_FAIL));
			}
			CHECK(o->out_len + o->s.reply_len <= sizeof(o->out));
			memcpy(o->out + o->out_len, o->s.reply, o->s.reply_len);
			o->out_len += o->s.reply_len;
			if (res != PROTO_REPLY) {
				o->last = res;
				o->left = have + (len - off);
				/* terminal states stay terminal */
				CHECK(socks5_server_feed(&o->s, buf, have, &used) ==
				      (res == PROTO_FAIL ? PROTO_FAIL : PROTO_NEED_MORE));
				CHECK(used == 0 && o->s.reply_len == 0);
				return;
			}
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
	CHECK(whole.s.error == split.s.error);
	if (whole.last == PROTO_REQUEST) {
		CHECK(!memcmp(&whole.s.target, &split.s.target, sizeof(whole.s.target)));
		/* the final reply builder, for any REP, fits and is well-formed */
		socks5_server_reply(&whole.s, (enum socks5_rep)(data[0] % 9),
		                    (const struct sockaddr *)&whole.s.target.addr);
		CHECK(whole.s.reply_len == 10 || whole.s.reply_len == 22);
		CHECK(whole.s.reply[0] == SOCKS5_VERSION);
	}
	return 0;
}
