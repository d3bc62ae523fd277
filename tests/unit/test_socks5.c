/* SPDX-License-Identifier: MIT */
/* Unit tests for proto/socks5.c: server and client handshakes, every REP path, every cut. */
#include "t.h"
#include "t_target.h"

#include "socks5.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>

T_SUITE("socks5");

#define B(...)  ((const uint8_t[]){__VA_ARGS__})
#define BL(...) B(__VA_ARGS__), sizeof(B(__VA_ARGS__))

enum { BUF_MAX = 4096 };

/* ---- helpers ---- */

static bool all_zero(const void *p, size_t n)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		if (b[i])
			return false;
	return true;
}

/* Every proper prefix of msg gives NEED_MORE without consuming or changing state;
 * the whole message gives `want` with consumed == `want_used`. */
static enum proto_res server_step(struct socks5_server *s, const uint8_t *msg, size_t len,
                                  enum proto_res want, size_t want_used)
{
	size_t used;
	enum proto_res res;

	for (size_t k = 0; k < len; k++) {
		struct socks5_server copy = *s;

		used = 12345;
		res = socks5_server_feed(&copy, msg, k, &used);
		if (res != PROTO_NEED_MORE || used != 0 || copy.state != s->state) {
			T_FAILF("prefix %zu/%zu: res %d used %zu", k, len, res, used);
			return res;
		}
	}
	used = 12345;
	res = socks5_server_feed(s, msg, len, &used);
	T_EQ_INT(res, want);
	T_EQ_INT(used, want_used);
	return res;
}

/* A server conversation as a real caller runs it: a receive buffer that is
 * compacted after every consume, the input arriving `chunk` bytes at a time. */
struct srun {
	struct socks5_server s;
	enum proto_res last;
	uint8_t out[BUF_MAX]; /* every reply, concatenated */
	size_t out_len;
	size_t leftover; /* unconsumed bytes when the handshake ended */
	uint8_t rest[BUF_MAX];
};

static void server_drive(struct srun *r, bool require_auth, bool auth_ok, const uint8_t *in,
                         size_t len, size_t chunk)
{
	uint8_t buf[BUF_MAX];
	size_t have = 0, off = 0;

	memset(r, 0, sizeof(*r));
	socks5_server_init(&r->s, require_auth);
	for (;;) {
		size_t n = len - off < chunk ? len - off : chunk;

		memcpy(buf + have, in + off, n);
		have += n;
		off += n;
		for (;;) {
			size_t used = 12345;
			enum proto_res res = socks5_server_feed(&r->s, buf, have, &used);

			if (res == PROTO_NEED_MORE) {
				T_EQ_INT(used, 0);
				break;
			}
			T_ASSERT(used <= have);
			T_ASSERT(r->s.reply_len <= PROTO_REPLY_MAX);
			memmove(buf, buf + used, have - used);
			have -= used;
			if (res == PROTO_AUTH)
				res = socks5_server_auth_result(&r->s, auth_ok);
			memcpy(r->out + r->out_len, r->s.reply, r->s.reply_len);
			r->out_len += r->s.reply_len;
			if (res == PROTO_REPLY)
				continue;
			/* what the caller holds plus what has not arrived yet */
			memcpy(buf + have, in + off, len - off);
			have += len - off;
			r->last = res;
			r->leftover = have;
			memcpy(r->rest, buf, have);
			return;
		}
		if (off == len) {
			r->last = PROTO_NEED_MORE;
			r->leftover = have;
			return;
		}
	}
}

/* Whole-buffer delivery and every chunk size down to one byte agree. */
static void server_all_cuts(bool require_auth, bool auth_ok, const uint8_t *in, size_t len,
                            struct srun *whole)
{
	static struct srun r;

	server_drive(whole, require_auth, auth_ok, in, len, len);
	for (size_t chunk = 1; chunk < len; chunk++) {
		server_drive(&r, require_auth, auth_ok, in, len, chunk);
		if (r.last != whole->last || r.out_len != whole->out_len ||
		    memcmp(r.out, whole->out, r.out_len) != 0 || r.leftover != whole->leftover ||
		    r.s.error != whole->s.error ||
		    memcmp(&r.s.target, &whole->s.target, sizeof(r.s.target)) != 0) {
			T_FAILF("chunk %zu differs from whole delivery", chunk);
			return;
		}
	}
}

static void expect_reply(const uint8_t *got, size_t got_len, const uint8_t *want, size_t want_len)
{
	T_EQ_INT(got_len, want_len);
	if (got_len == want_len)
		T_EQ_MEM(got, want, want_len);
}

#define EXPECT_REPLY(s, ...) expect_reply((s)->reply, (s)->reply_len, BL(__VA_ARGS__))

/* A server in SOCKS5_S_REQUEST (no auth). */
static void server_at_request(struct socks5_server *s)
{
	size_t used;

	socks5_server_init(s, false);
	socks5_server_feed(s, BL(5, 1, 0), &used);
}

/* ---- server: greeting ---- */

static void test_greeting_no_auth(void)
{
	struct socks5_server s;

	socks5_server_init(&s, false);
	server_step(&s, BL(5, 1, 0), PROTO_REPLY, 3);
	EXPECT_REPLY(&s, 5, 0);
	T_EQ_INT(s.state, SOCKS5_S_REQUEST);

	socks5_server_init(&s, false);
	server_step(&s, BL(5, 3, 0x80, 2, 0), PROTO_REPLY, 5);
	EXPECT_REPLY(&s, 5, 0);
}

static void test_greeting_userpass(void)
{
	struct socks5_server s;

	socks5_server_init(&s, true);
	server_step(&s, BL(5, 2, 0, 2), PROTO_REPLY, 4);
	EXPECT_REPLY(&s, 5, 2);
	T_EQ_INT(s.state, SOCKS5_S_AUTH);
}

static void test_greeting_no_acceptable(void)
{
	struct socks5_server s;

	/* auth required, only "no auth" offered */
	socks5_server_init(&s, true);
	server_step(&s, BL(5, 1, 0), PROTO_FAIL, 3);
	EXPECT_REPLY(&s, 5, 0xff);
	T_EQ_INT(s.error, SOCKS5_ERR_NO_ACCEPTABLE);
	T_EQ_INT(s.state, SOCKS5_S_FAILED);

	/* no auth configured, only user/pass offered */
	socks5_server_init(&s, false);
	server_step(&s, BL(5, 1, 2), PROTO_FAIL, 3);
	EXPECT_REPLY(&s, 5, 0xff);
	T_EQ_INT(s.error, SOCKS5_ERR_NO_ACCEPTABLE);
}

static void test_greeting_no_methods(void)
{
	struct socks5_server s;

	socks5_server_init(&s, false);
	server_step(&s, BL(5, 0), PROTO_FAIL, 2);
	EXPECT_REPLY(&s, 5, 0xff);
	T_EQ_INT(s.error, SOCKS5_ERR_NO_METHODS);
}

static void test_greeting_bad_version(void)
{
	struct socks5_server s;
	size_t used;

	socks5_server_init(&s, false);
	T_EQ_INT(socks5_server_feed(&s, BL(4, 1, 0, 80, 127, 0, 0, 1, 0), &used), PROTO_FAIL);
	T_EQ_INT(s.reply_len, 0);
	T_EQ_INT(s.error, SOCKS5_ERR_VERSION);

	socks5_server_init(&s, false);
	T_EQ_INT(socks5_server_feed(&s, (const uint8_t *)"GET / HTTP/1.1\r\n", 16, &used),
	         PROTO_FAIL);
	T_EQ_INT(s.reply_len, 0);

	/* one byte is not enough to judge */
	socks5_server_init(&s, false);
	T_EQ_INT(socks5_server_feed(&s, BL(4), &used), PROTO_NEED_MORE);
}

/* ---- server: RFC 1929 ---- */

static void server_at_auth(struct socks5_server *s)
{
	size_t used;

	socks5_server_init(s, true);
	socks5_server_feed(s, BL(5, 1, 2), &used);
	T_EQ_INT(s->state, SOCKS5_S_AUTH);
}

static void test_auth_success(void)
{
	struct socks5_server s;
	const uint8_t msg[] = {1, 5, 'a', 'l', 'i', 'c', 'e', 6, 's', 'e', 'c', 'r', 'e', 't'};

	server_at_auth(&s);
	server_step(&s, msg, sizeof(msg), PROTO_AUTH, sizeof(msg));
	T_EQ_STR(s.user, "alice");
	T_EQ_STR(s.pass, "secret");
	T_EQ_INT(s.user_len, 5);
	T_EQ_INT(s.pass_len, 6);
	T_EQ_INT(s.state, SOCKS5_S_AUTH_CHECK);
	T_EQ_INT(socks5_server_auth_result(&s, true), PROTO_REPLY);
	EXPECT_REPLY(&s, 1, 0);
	T_ASSERT(all_zero(s.pass, sizeof(s.pass)));
	T_EQ_INT(s.pass_len, 0);
	T_EQ_STR(s.user, "alice");
	T_EQ_INT(s.state, SOCKS5_S_REQUEST);
}

static void test_auth_failure(void)
{
	struct socks5_server s;
	size_t used;

	server_at_auth(&s);
	T_EQ_INT(socks5_server_feed(&s, BL(1, 1, 'u', 1, 'p'), &used), PROTO_AUTH);
	T_EQ_INT(socks5_server_auth_result(&s, false), PROTO_FAIL);
	EXPECT_REPLY(&s, 1, 1);
	T_EQ_INT(s.error, SOCKS5_ERR_AUTH_FAILED);
	T_ASSERT(all_zero(s.pass, sizeof(s.pass)));
	T_EQ_INT(s.state, SOCKS5_S_FAILED);
}

static void test_auth_bad_format(void)
{
	struct socks5_server s;
	size_t used;

	server_at_auth(&s);
	server_step(&s, BL(1, 0, 1, 'p'), PROTO_FAIL, 4); /* ULEN 0 */
	EXPECT_REPLY(&s, 1, 1);
	T_EQ_INT(s.error, SOCKS5_ERR_AUTH_FORMAT);

	server_at_auth(&s);
	server_step(&s, BL(1, 1, 'u', 0), PROTO_FAIL, 4); /* PLEN 0 */
	EXPECT_REPLY(&s, 1, 1);
	T_EQ_INT(s.error, SOCKS5_ERR_AUTH_FORMAT);

	server_at_auth(&s);
	server_step(&s, BL(1, 2, 'u', 0, 1, 'p'), PROTO_FAIL, 6); /* NUL in UNAME */
	EXPECT_REPLY(&s, 1, 1);
	T_EQ_INT(s.error, SOCKS5_ERR_AUTH_NUL);

	server_at_auth(&s);
	server_step(&s, BL(1, 1, 'u', 2, 'p', 0), PROTO_FAIL, 6); /* NUL in PASSWD */
	T_EQ_INT(s.error, SOCKS5_ERR_AUTH_NUL);

	server_at_auth(&s); /* VER 5 instead of 1: not RFC 1929, no reply */
	T_EQ_INT(socks5_server_feed(&s, BL(5, 1, 'u', 1, 'p'), &used), PROTO_FAIL);
	T_EQ_INT(s.reply_len, 0);
	T_EQ_INT(s.error, SOCKS5_ERR_VERSION);
}

static void test_auth_max_lengths(void)
{
	struct socks5_server s;
	uint8_t msg[3 + 2 * PROTO_CRED_MAX];

	msg[0] = 1;
	msg[1] = PROTO_CRED_MAX;
	memset(msg + 2, 'u', PROTO_CRED_MAX);
	msg[2 + PROTO_CRED_MAX] = PROTO_CRED_MAX;
	memset(msg + 3 + PROTO_CRED_MAX, 'p', PROTO_CRED_MAX);
	server_at_auth(&s);
	server_step(&s, msg, sizeof(msg), PROTO_AUTH, sizeof(msg));
	T_EQ_INT(strlen(s.user), PROTO_CRED_MAX);
	T_EQ_INT(strlen(s.pass), PROTO_CRED_MAX);
	T_EQ_INT(s.user_len, PROTO_CRED_MAX);
	T_ASSERT(s.user[0] == 'u' && s.user[PROTO_CRED_MAX - 1] == 'u');
	T_ASSERT(s.pass[0] == 'p' && s.pass[PROTO_CRED_MAX - 1] == 'p');
}

static void test_auth_result_misuse(void)
{
	struct socks5_server s;

	server_at_request(&s);
	T_EQ_INT(socks5_server_auth_result(&s, true), PROTO_FAIL);
	T_EQ_INT(s.reply_len, 0);
	T_EQ_INT(s.state, SOCKS5_S_FAILED);
}

/* ---- server: request ---- */

static void test_request_ipv4(void)
{
	struct socks5_server s;
	const struct sockaddr_in *sin = (const struct sockaddr_in *)&s.target.addr;

	server_at_request(&s);
	server_step(&s, BL(5, 1, 0, 1, 127, 0, 0, 1, 0x1f, 0x90), PROTO_REQUEST, 10);
	T_EQ_INT(s.target.kind, TARGET_IP);
	T_EQ_INT(s.target.port, 8080);
	T_EQ_INT(sin->sin_family, AF_INET);
	T_EQ_INT(ntohs(sin->sin_port), 8080);
	T_EQ_INT(ntohl(sin->sin_addr.s_addr), 0x7f000001);
	T_EQ_STR(s.target.host, "127.0.0.1");
	T_EQ_INT(s.cmd, SOCKS5_CMD_CONNECT);
	T_EQ_INT(s.state, SOCKS5_S_DONE);
	T_EQ_INT(s.reply_len, 0);
}

static void test_request_ipv6(void)
{
	struct socks5_server s;
	const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)&s.target.addr;
	struct in6_addr want;

	inet_pton(AF_INET6, "2001:db8::1", &want);
	server_at_request(&s);
	server_step(
	        &s,
	        BL(5, 1, 0, 4, 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0xbb),
	        PROTO_REQUEST, 22);
	T_EQ_INT(s.target.kind, TARGET_IP);
	T_EQ_INT(s.target.port, 443);
	T_EQ_INT(sin6->sin6_family, AF_INET6);
	T_EQ_INT(ntohs(sin6->sin6_port), 443);
	T_EQ_MEM(&sin6->sin6_addr, &want, 16);
	T_EQ_STR(s.target.host, "2001:db8::1");
}

static void test_request_domain(void)
{
	struct socks5_server s;

	server_at_request(&s);
	server_step(
	        &s,
	        BL(5, 1, 0, 3, 11, 'e', 'x', 'a', 'm', 'p', 'l', 'e', '.', 'c', 'o', 'm', 0, 80),
	        PROTO_REQUEST, 18);
	T_EQ_INT(s.target.kind, TARGET_DOMAIN);
	T_EQ_STR(s.target.host, "example.com");
	T_EQ_INT(s.target.port, 80);
}

static void test_request_domain_255(void)
{
	struct socks5_server s;
	uint8_t msg[5 + PROTO_HOST_MAX + 2];

	memcpy(msg, B(5, 1, 0, 3, PROTO_HOST_MAX), 5);
	memset(msg + 5, 'a', PROTO_HOST_MAX);
	msg[5 + PROTO_HOST_MAX] = 0x01;
	msg[6 + PROTO_HOST_MAX] = 0xbb;
	server_at_request(&s);
	server_step(&s, msg, sizeof(msg), PROTO_REQUEST, sizeof(msg));
	T_EQ_INT(s.target.kind, TARGET_DOMAIN);
	T_EQ_INT(strlen(s.target.host), PROTO_HOST_MAX);
	T_EQ_INT(s.target.port, 443);
}

static void test_request_domain_literals(void)
{
	struct socks5_server s;
	const struct sockaddr_in *sin = (const struct sockaddr_in *)&s.target.addr;
	const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)&s.target.addr;

	server_at_request(&s);
	server_step(&s, BL(5, 1, 0, 3, 8, '1', '0', '.', '1', '.', '2', '.', '3', 0, 22),
	            PROTO_REQUEST, 15);
	T_EQ_INT(s.target.kind, TARGET_IP);
	T_EQ_INT(sin->sin_family, AF_INET);
	T_EQ_INT(ntohl(sin->sin_addr.s_addr), 0x0a010203);
	T_EQ_INT(ntohs(sin->sin_port), 22);
	T_EQ_STR(s.target.host, "10.1.2.3");

	server_at_request(&s);
	server_step(&s, BL(5, 1, 0, 3, 3, ':', ':', '1', 0, 22), PROTO_REQUEST, 10);
	T_EQ_INT(s.target.kind, TARGET_IP);
	T_EQ_INT(sin6->sin6_family, AF_INET6);
	T_ASSERT(IN6_IS_ADDR_LOOPBACK(&sin6->sin6_addr));
	T_EQ_INT(ntohs(sin6->sin6_port), 22);

	server_at_request(&s);
	server_step(&s, BL(5, 1, 0, 3, 5, '[', ':', ':', '1', ']', 0, 22), PROTO_REQUEST, 12);
	T_EQ_INT(s.target.kind, TARGET_IP);
	T_EQ_INT(sin6->sin6_family, AF_INET6);

	/* what the resolver would read as an address is one (inet_aton: 1.2.3 is 1.2.0.3) */
	server_at_request(&s);
	server_step(&s, BL(5, 1, 0, 3, 5, '1', '.', '2', '.', '3', 0, 22), PROTO_REQUEST, 12);
	T_EQ_INT(s.target.kind, TARGET_IP);
	T_EQ_INT(ntohl(sin->sin_addr.s_addr), 0x01020003);
	T_EQ_STR(s.target.host, "1.2.3");

	/* not a literal: stays a domain */
	server_at_request(&s);
	server_step(&s, BL(5, 1, 0, 3, 5, '1', '.', '2', '.', 'x', 0, 22), PROTO_REQUEST, 12);
	T_EQ_INT(s.target.kind, TARGET_DOMAIN);
	T_EQ_STR(s.target.host, "1.2.x");
}

static void test_request_bad_domain(void)
{
	struct socks5_server s;

	server_at_request(&s);
	server_step(&s, BL(5, 1, 0, 3, 0, 0, 80), PROTO_FAIL, 7);
	EXPECT_REPLY(&s, 5, 1, 0, 1, 0, 0, 0, 0, 0, 0);
	T_EQ_INT(s.error, SOCKS5_ERR_DOMAIN);

	server_at_request(&s);
	server_step(&s, BL(5, 1, 0, 3, 3, 'a', 0, 'b', 0, 80), PROTO_FAIL, 10);
	EXPECT_REPLY(&s, 5, 1, 0, 1, 0, 0, 0, 0, 0, 0);
	T_EQ_INT(s.error, SOCKS5_ERR_DOMAIN);
}

static void test_request_commands(void)
{
	struct socks5_server s;
	static const uint8_t cmds[] = {SOCKS5_CMD_BIND, SOCKS5_CMD_UDP_ASSOCIATE, 0, 4, 0xff};

	for (size_t i = 0; i < sizeof(cmds); i++) {
		server_at_request(&s);
		/* the whole request is read before the REP 07 */
		server_step(&s, BL(5, cmds[i], 0, 1, 10, 0, 0, 1, 0, 53), PROTO_FAIL, 10);
		EXPECT_REPLY(&s, 5, 7, 0, 1, 0, 0, 0, 0, 0, 0);
		T_EQ_INT(s.error, SOCKS5_ERR_COMMAND);
		T_EQ_INT(s.cmd, cmds[i]);
		T_EQ_INT(s.state, SOCKS5_S_FAILED);
	}
	server_at_request(&s);
	server_step(&s, BL(5, 3, 0, 3, 1, 'x', 0, 53), PROTO_FAIL, 8);
	EXPECT_REPLY(&s, 5, 7, 0, 1, 0, 0, 0, 0, 0, 0);
}

/* UDP ASSOCIATE and FWD UDP only when allowed; each allowance covers its own command only. */
static void test_request_udp_allowed(void)
{
	struct socks5_server s;
	const struct sockaddr_in *sin = (const struct sockaddr_in *)&s.target.addr;

	server_at_request(&s);
	socks5_server_allow(&s, true, false);
	/* The client's own address for the association: 0.0.0.0:0 is the common case. */
	server_step(&s, BL(5, 3, 0, 1, 0, 0, 0, 0, 0, 0), PROTO_REQUEST, 10);
	T_EQ_INT(s.cmd, SOCKS5_CMD_UDP_ASSOCIATE);
	T_EQ_INT(s.target.kind, TARGET_IP);
	T_EQ_INT(s.target.port, 0);
	T_EQ_INT(sin->sin_addr.s_addr, 0);
	T_EQ_INT(s.reply_len, 0);
	/* The reply carries the relay's address, as a CONNECT's carries the bound one. */
	{
		struct sockaddr_in relay = {.sin_family = AF_INET, .sin_port = htons(40000)};
		relay.sin_addr.s_addr = htonl(0xc0000201);
		socks5_server_reply(&s, SOCKS5_REP_SUCCEEDED, (const struct sockaddr *)&relay);
		EXPECT_REPLY(&s, 5, 0, 0, 1, 192, 0, 2, 1, 0x9c, 0x40);
	}
	server_at_request(&s);
	socks5_server_allow(&s, true, false);
	server_step(&s, BL(5, 5, 0, 1, 0, 0, 0, 0, 0, 0), PROTO_FAIL, 10);
	EXPECT_REPLY(&s, 5, 7, 0, 1, 0, 0, 0, 0, 0, 0);
	server_at_request(&s);
	socks5_server_allow(&s, false, true);
	server_step(&s, BL(5, 5, 0, 1, 0, 0, 0, 0, 0, 0), PROTO_REQUEST, 10);
	T_EQ_INT(s.cmd, SOCKS5_CMD_FWD_UDP);
	server_at_request(&s);
	socks5_server_allow(&s, false, true);
	server_step(&s, BL(5, 3, 0, 1, 0, 0, 0, 0, 0, 0), PROTO_FAIL, 10);
	EXPECT_REPLY(&s, 5, 7, 0, 1, 0, 0, 0, 0, 0, 0);
	/* BIND stays refused whatever is allowed. */
	server_at_request(&s);
	socks5_server_allow(&s, true, true);
	server_step(&s, BL(5, 2, 0, 1, 0, 0, 0, 0, 0, 0), PROTO_FAIL, 10);
	EXPECT_REPLY(&s, 5, 7, 0, 1, 0, 0, 0, 0, 0, 0);
}

static void test_request_bad_atyp(void)
{
	struct socks5_server s;
	size_t used;
	static const uint8_t atyps[] = {0, 2, 5, 0xff};

	for (size_t i = 0; i < sizeof(atyps); i++) {
		server_at_request(&s);
		T_EQ_INT(socks5_server_feed(&s, BL(5, 1, 0, atyps[i]), &used), PROTO_FAIL);
		EXPECT_REPLY(&s, 5, 8, 0, 1, 0, 0, 0, 0, 0, 0);
		T_EQ_INT(s.error, SOCKS5_ERR_ATYP);
	}
	/* ATYP is judged before CMD */
	server_at_request(&s);
	T_EQ_INT(socks5_server_feed(&s, BL(5, 2, 0, 9), &used), PROTO_FAIL);
	EXPECT_REPLY(&s, 5, 8, 0, 1, 0, 0, 0, 0, 0, 0);
}

static void test_request_bad_version_rsv(void)
{
	struct socks5_server s;
	size_t used;

	server_at_request(&s);
	T_EQ_INT(socks5_server_feed(&s, BL(4, 1, 0, 1), &used), PROTO_FAIL);
	EXPECT_REPLY(&s, 5, 1, 0, 1, 0, 0, 0, 0, 0, 0);
	T_EQ_INT(s.error, SOCKS5_ERR_VERSION);

	server_at_request(&s);
	T_EQ_INT(socks5_server_feed(&s, BL(5, 1, 1, 1), &used), PROTO_FAIL);
	EXPECT_REPLY(&s, 5, 1, 0, 1, 0, 0, 0, 0, 0, 0);
	T_EQ_INT(s.error, SOCKS5_ERR_RESERVED);
}

static void test_early_payload(void)
{
	struct socks5_server s;
	size_t used;
	const uint8_t msg[] = {5, 1, 0, 1, 127, 0, 0, 1, 0, 80, 'G', 'E', 'T', ' '};

	server_at_request(&s);
	T_EQ_INT(socks5_server_feed(&s, msg, sizeof(msg), &used), PROTO_REQUEST);
	T_EQ_INT(used, 10);
	/* once done, the parser leaves everything to the caller */
	T_EQ_INT(socks5_server_feed(&s, msg + used, sizeof(msg) - used, &used), PROTO_NEED_MORE);
	T_EQ_INT(used, 0);
}

static void test_states_after_end(void)
{
	struct socks5_server s;
	size_t used = 7;

	socks5_server_init(&s, false);
	socks5_server_feed(&s, BL(4, 1, 0), &used);
	T_EQ_INT(socks5_server_feed(&s, BL(5, 1, 0), &used), PROTO_FAIL);
	T_EQ_INT(s.reply_len, 0);
	T_EQ_INT(used, 0);

	server_at_auth(&s);
	socks5_server_feed(&s, BL(1, 1, 'u', 1, 'p'), &used);
	T_EQ_INT(s.state, SOCKS5_S_AUTH_CHECK);
	T_EQ_INT(socks5_server_feed(&s, BL(5, 1, 0, 1, 1, 2, 3, 4, 0, 80), &used), PROTO_NEED_MORE);
	T_EQ_INT(used, 0);
}

/* ---- server: whole conversations, every cut ---- */

static void test_conversation_cuts_no_auth(void)
{
	static struct srun whole;
	const uint8_t in[] = {5,   2,   0,   2,   5,   1,    0,    3,   9,   'l', 'o', 'c', 'a',
	                      'l', 'h', 'o', 's', 't', 0x1f, 0x90, 'h', 'e', 'l', 'l', 'o'};

	server_all_cuts(false, true, in, sizeof(in), &whole);
	T_EQ_INT(whole.last, PROTO_REQUEST);
	expect_reply(whole.out, whole.out_len, BL(5, 0));
	T_EQ_STR(whole.s.target.host, "localhost");
	T_EQ_INT(whole.s.target.port, 8080);
	T_EQ_INT(whole.leftover, 5);
	T_EQ_MEM(whole.rest, "hello", 5);
}

static void test_conversation_cuts_auth(void)
{
	static struct srun whole;
	const uint8_t in[] = {5, 1, 2, 1, 3, 'b', 'o', 'b', 2, 'p', 'w', 5, 1, 0, 4, 0, 0,
	                      0, 0, 0, 0, 0, 0,   0,   0,   0, 0,   0,   0, 0, 1, 0, 22};

	server_all_cuts(true, true, in, sizeof(in), &whole);
	T_EQ_INT(whole.last, PROTO_REQUEST);
	expect_reply(whole.out, whole.out_len, BL(5, 2, 1, 0));
	T_EQ_INT(whole.s.target.kind, TARGET_IP);
	T_EQ_STR(whole.s.user, "bob");
	T_EQ_INT(whole.leftover, 0);

	server_all_cuts(true, false, in, sizeof(in), &whole);
	T_EQ_INT(whole.last, PROTO_FAIL);
	expect_reply(whole.out, whole.out_len, BL(5, 2, 1, 1));
	T_EQ_INT(whole.s.error, SOCKS5_ERR_AUTH_FAILED);
}

static void test_conversation_cuts_failures(void)
{
	static struct srun whole;
	const uint8_t bind[] = {5, 1, 0, 5, 2, 0, 1, 1, 2, 3, 4, 0, 21};
	const uint8_t atyp[] = {5, 1, 0, 5, 1, 0, 7, 1, 2, 3, 4, 0, 21};

	server_all_cuts(false, true, bind, sizeof(bind), &whole);
	T_EQ_INT(whole.last, PROTO_FAIL);
	expect_reply(whole.out, whole.out_len, BL(5, 0, 5, 7, 0, 1, 0, 0, 0, 0, 0, 0));
	server_all_cuts(false, true, atyp, sizeof(atyp), &whole);
	T_EQ_INT(whole.last, PROTO_FAIL);
	expect_reply(whole.out, whole.out_len, BL(5, 0, 5, 8, 0, 1, 0, 0, 0, 0, 0, 0));
}

/* ---- server: reply builder ---- */

static void test_server_reply_bytes(void)
{
	struct socks5_server s;
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(1080)};
	struct sockaddr_in6 sin6 = {.sin6_family = AF_INET6, .sin6_port = htons(0xabcd)};
	struct sockaddr sa_unix = {.sa_family = AF_UNIX};
	size_t used;

	inet_pton(AF_INET, "192.0.2.1", &sin.sin_addr);
	server_at_request(&s);
	socks5_server_feed(&s, BL(5, 1, 0, 1, 1, 1, 1, 1, 0, 1), &used);
	T_EQ_INT(s.state, SOCKS5_S_DONE);
	socks5_server_reply(&s, SOCKS5_REP_SUCCEEDED, (struct sockaddr *)&sin);
	EXPECT_REPLY(&s, 5, 0, 0, 1, 192, 0, 2, 1, 0x04, 0x38);

	inet_pton(AF_INET6, "2001:db8::7", &sin6.sin6_addr);
	socks5_server_reply(&s, SOCKS5_REP_SUCCEEDED, (struct sockaddr *)&sin6);
	EXPECT_REPLY(&s, 5, 0, 0, 4, 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7,
	             0xab, 0xcd);

	/* a dual-stack socket's v4-mapped address is reported as IPv4 */
	inet_pton(AF_INET6, "::ffff:198.51.100.9", &sin6.sin6_addr);
	socks5_server_reply(&s, SOCKS5_REP_SUCCEEDED, (struct sockaddr *)&sin6);
	EXPECT_REPLY(&s, 5, 0, 0, 1, 198, 51, 100, 9, 0xab, 0xcd);

	socks5_server_reply(&s, SOCKS5_REP_SUCCEEDED, NULL);
	EXPECT_REPLY(&s, 5, 0, 0, 1, 0, 0, 0, 0, 0, 0);
	socks5_server_reply(&s, SOCKS5_REP_SUCCEEDED, &sa_unix);
	EXPECT_REPLY(&s, 5, 0, 0, 1, 0, 0, 0, 0, 0, 0);
	T_EQ_INT(s.state, SOCKS5_S_DONE);

	socks5_server_reply(&s, SOCKS5_REP_CONN_REFUSED, NULL);
	EXPECT_REPLY(&s, 5, 5, 0, 1, 0, 0, 0, 0, 0, 0);
	T_EQ_INT(s.state, SOCKS5_S_FAILED);
}

static void test_rep_from_connect(void)
{
	T_EQ_INT(socks5_rep_from_connect(CONNECT_OK), SOCKS5_REP_SUCCEEDED);
	T_EQ_INT(socks5_rep_from_connect(CONNECT_GENERAL_FAILURE), SOCKS5_REP_GENERAL_FAILURE);
	T_EQ_INT(socks5_rep_from_connect(CONNECT_NOT_ALLOWED), SOCKS5_REP_NOT_ALLOWED);
	T_EQ_INT(socks5_rep_from_connect(CONNECT_NET_UNREACHABLE), SOCKS5_REP_NET_UNREACHABLE);
	T_EQ_INT(socks5_rep_from_connect(CONNECT_HOST_UNREACHABLE), SOCKS5_REP_HOST_UNREACHABLE);
	T_EQ_INT(socks5_rep_from_connect(CONNECT_REFUSED), SOCKS5_REP_CONN_REFUSED);
	T_EQ_INT(socks5_rep_from_connect(CONNECT_TIMEOUT), SOCKS5_REP_TTL_EXPIRED);
	T_EQ_INT(socks5_rep_from_connect((enum proto_connect_result)99),
	         SOCKS5_REP_GENERAL_FAILURE);
	/* end to end with the errno mapping */
	T_EQ_INT(socks5_rep_from_connect(proto_connect_result_from_errno(-ECONNREFUSED)), 5);
	T_EQ_INT(socks5_rep_from_connect(proto_connect_result_from_errno(-ETIMEDOUT)), 6);
	T_EQ_INT(socks5_rep_from_connect(proto_connect_result_from_errno(-ENETUNREACH)), 3);
}

/* ---- client ---- */

#define EXPECT_OUT(c, ...) expect_reply((c)->out, (c)->out_len, BL(__VA_ARGS__))

static enum proto_res client_step(struct socks5_client *c, const uint8_t *msg, size_t len,
                                  enum proto_res want, size_t want_used)
{
	size_t used;
	enum proto_res res;

	for (size_t k = 0; k < len; k++) {
		struct socks5_client copy = *c;

		used = 12345;
		res = socks5_client_feed(&copy, msg, k, &used);
		if (res != PROTO_NEED_MORE || used != 0 || copy.state != c->state) {
			T_FAILF("prefix %zu/%zu: res %d used %zu", k, len, res, used);
			return res;
		}
	}
	res = socks5_client_feed(c, msg, len, &used);
	T_EQ_INT(res, want);
	T_EQ_INT(used, want_used);
	return res;
}

static void test_client_no_auth_domain(void)
{
	struct socks5_client c;
	struct proto_target t = t_name("example.com", 80);
	const struct sockaddr_in *b = (const struct sockaddr_in *)&c.bound;

	T_EQ_INT(socks5_client_init(&c, &t, NULL, NULL), 0);
	EXPECT_OUT(&c, 5, 1, 0);
	client_step(&c, BL(5, 0), PROTO_REPLY, 2);
	EXPECT_OUT(&c, 5, 1, 0, 3, 11, 'e', 'x', 'a', 'm', 'p', 'l', 'e', '.', 'c', 'o', 'm', 0,
	           80);
	client_step(&c, BL(5, 0, 0, 1, 10, 0, 0, 1, 0x30, 0x39), PROTO_REQUEST, 10);
	T_EQ_INT(c.rep, SOCKS5_REP_SUCCEEDED);
	T_EQ_INT(c.state, SOCKS5_C_DONE);
	T_EQ_INT(b->sin_family, AF_INET);
	T_EQ_INT(ntohl(b->sin_addr.s_addr), 0x0a000001);
	T_EQ_INT(ntohs(b->sin_port), 12345);
	T_EQ_INT(c.out_len, 0);
}

static void test_client_auth_ipv6(void)
{
	struct socks5_client c;
	struct proto_target t = t_ip("2001:db8::2", 443);
	const struct sockaddr_in6 *b = (const struct sockaddr_in6 *)&c.bound;

	T_EQ_INT(socks5_client_init(&c, &t, "alice", "secret"), 0);
	EXPECT_OUT(&c, 5, 2, 0, 2);
	client_step(&c, BL(5, 2), PROTO_REPLY, 2);
	EXPECT_OUT(&c, 1, 5, 'a', 'l', 'i', 'c', 'e', 6, 's', 'e', 'c', 'r', 'e', 't');
	T_ASSERT(all_zero(c.pass, sizeof(c.pass)));
	client_step(&c, BL(1, 0), PROTO_REPLY, 2);
	EXPECT_OUT(&c, 5, 1, 0, 4, 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 1,
	           0xbb);
	client_step(&c, BL(5, 0, 0, 4, 0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9, 0, 7),
	            PROTO_REQUEST, 22);
	T_EQ_INT(b->sin6_family, AF_INET6);
	T_EQ_INT(b->sin6_addr.s6_addr[0], 0xfe);
	T_EQ_INT(b->sin6_addr.s6_addr[15], 9);
	T_EQ_INT(ntohs(b->sin6_port), 7);
}

/* UDP ASSOCIATE and FWD UDP: the same conversation, another CMD; BND is the relay. */
static void test_client_udp_commands(void)
{
	struct socks5_client c;
	struct proto_target t = t_ip("0.0.0.0", 0);
	const struct sockaddr_in *b = (const struct sockaddr_in *)&c.bound;
	size_t used;

	T_EQ_INT(socks5_client_init(&c, &t, "alice", "secret"), 0);
	T_EQ_INT(socks5_client_command(&c, SOCKS5_CMD_UDP_ASSOCIATE), 0);
	client_step(&c, BL(5, 2), PROTO_REPLY, 2);
	client_step(&c, BL(1, 0), PROTO_REPLY, 2);
	EXPECT_OUT(&c, 5, 3, 0, 1, 0, 0, 0, 0, 0, 0);
	client_step(&c, BL(5, 0, 0, 1, 127, 0, 0, 1, 0x9c, 0x41), PROTO_REQUEST, 10);
	T_EQ_INT(ntohl(b->sin_addr.s_addr), 0x7f000001);
	T_EQ_INT(ntohs(b->sin_port), 40001);

	T_EQ_INT(socks5_client_init(&c, &t, NULL, NULL), 0);
	T_EQ_INT(socks5_client_command(&c, SOCKS5_CMD_FWD_UDP), 0);
	client_step(&c, BL(5, 0), PROTO_REPLY, 2);
	EXPECT_OUT(&c, 5, 5, 0, 1, 0, 0, 0, 0, 0, 0);
	/* A refusal is the upstream's REP, as for CONNECT. */
	client_step(&c, BL(5, 7), PROTO_FAIL, 2);
	T_EQ_INT(c.rep, SOCKS5_REP_CMD_NOT_SUPPORTED);

	/* BIND, or any command once the greeting is answered: refused. */
	T_EQ_INT(socks5_client_init(&c, &t, NULL, NULL), 0);
	T_EQ_INT(socks5_client_command(&c, SOCKS5_CMD_BIND), -EINVAL);
	T_EQ_INT(socks5_client_command(&c, 0x42), -EINVAL);
	T_EQ_INT(socks5_client_feed(&c, BL(5, 0), &used), PROTO_REPLY);
	T_EQ_INT(socks5_client_command(&c, SOCKS5_CMD_UDP_ASSOCIATE), -EINVAL);
	EXPECT_OUT(&c, 5, 1, 0, 1, 0, 0, 0, 0, 0, 0);
}

static void test_client_server_skips_auth(void)
{
	struct socks5_client c;
	struct proto_target t = t_ip("192.0.2.5", 25);

	T_EQ_INT(socks5_client_init(&c, &t, "alice", "secret"), 0);
	client_step(&c, BL(5, 0), PROTO_REPLY, 2);
	EXPECT_OUT(&c, 5, 1, 0, 1, 192, 0, 2, 5, 0, 25);
}

static void test_client_auth_version5_tolerated(void)
{
	struct socks5_client c;
	struct proto_target t = t_name("h", 1);
	size_t used;

	socks5_client_init(&c, &t, "u", "p");
	socks5_client_feed(&c, BL(5, 2), &used);
	T_EQ_INT(socks5_client_feed(&c, BL(5, 0), &used), PROTO_REPLY);
	EXPECT_OUT(&c, 5, 1, 0, 3, 1, 'h', 0, 1);
}

static void test_client_failures(void)
{
	struct socks5_client c;
	struct proto_target t = t_name("example.org", 443);
	size_t used;

	socks5_client_init(&c, &t, "u", "p");
	client_step(&c, BL(5, 0xff), PROTO_FAIL, 2);
	T_EQ_INT(c.error, SOCKS5_ERR_NO_ACCEPTABLE);
	T_EQ_INT(c.rep, SOCKS5_REP_GENERAL_FAILURE);
	T_EQ_INT(c.out_len, 0);

	socks5_client_init(&c, &t, NULL, NULL); /* 02 chosen but we have nothing */
	client_step(&c, BL(5, 2), PROTO_FAIL, 2);
	T_EQ_INT(c.error, SOCKS5_ERR_NO_ACCEPTABLE);

	socks5_client_init(&c, &t, "u", "p");
	socks5_client_feed(&c, BL(5, 2), &used);
	client_step(&c, BL(1, 1), PROTO_FAIL, 2);
	T_EQ_INT(c.error, SOCKS5_ERR_AUTH_FAILED);
	T_ASSERT(all_zero(c.out, sizeof(c.out)));

	socks5_client_init(&c, &t, NULL, NULL);
	client_step(&c, BL(4, 0), PROTO_FAIL, 0);
	T_EQ_INT(c.error, SOCKS5_ERR_VERSION);
	T_EQ_INT(socks5_client_feed(&c, BL(5, 0), &used), PROTO_FAIL);
}

static void test_client_rep_codes(void)
{
	struct socks5_client c;
	struct proto_target t = t_name("example.org", 443);
	size_t used;

	for (unsigned rep = 1; rep <= 0xff; rep++) {
		socks5_client_init(&c, &t, NULL, NULL);
		socks5_client_feed(&c, BL(5, 0), &used);
		/* a failure is final as soon as REP is there; the BND part may never come */
		T_EQ_INT(socks5_client_feed(&c, BL(5, (uint8_t)rep), &used), PROTO_FAIL);
		T_EQ_INT(used, 2);
		T_EQ_INT(c.rep, rep <= 8 ? rep : SOCKS5_REP_GENERAL_FAILURE);
		T_EQ_INT(c.error, SOCKS5_ERR_UPSTREAM_REP);
	}
}

static void test_client_reply_variants(void)
{
	struct socks5_client c;
	struct proto_target t = t_name("example.org", 443);
	size_t used;

	/* BND as a domain: parsed and skipped, bound stays AF_UNSPEC */
	socks5_client_init(&c, &t, NULL, NULL);
	socks5_client_feed(&c, BL(5, 0), &used);
	client_step(&c, BL(5, 0, 0, 3, 4, 'h', 'o', 's', 't', 0, 80), PROTO_REQUEST, 11);
	T_EQ_INT(c.bound.ss_family, AF_UNSPEC);

	/* early payload after the reply is left for the caller */
	socks5_client_init(&c, &t, NULL, NULL);
	socks5_client_feed(&c, BL(5, 0), &used);
	T_EQ_INT(
	        socks5_client_feed(&c, BL(5, 0, 0, 1, 0, 0, 0, 0, 0, 0, 'H', 'T', 'T', 'P'), &used),
	        PROTO_REQUEST);
	T_EQ_INT(used, 10);
	T_EQ_INT(socks5_client_feed(&c, BL('H', 'T', 'T', 'P'), &used), PROTO_NEED_MORE);
	T_EQ_INT(used, 0);

	/* unknown ATYP in a success reply */
	socks5_client_init(&c, &t, NULL, NULL);
	socks5_client_feed(&c, BL(5, 0), &used);
	client_step(&c, BL(5, 0, 0, 2), PROTO_FAIL, 0);
	T_EQ_INT(c.error, SOCKS5_ERR_ATYP);
	T_EQ_INT(c.rep, SOCKS5_REP_GENERAL_FAILURE);
}

/* The client fed a real server's byte stream in every chunk size. */
static void test_client_cuts(void)
{
	const uint8_t srv[] = {5,   2,   1,   0,   5,   0,    0,    3,   7,   'p', 'r',
	                       'o', 'x', 'y', '.', 'x', 0x04, 0x38, 'd', 'a', 't', 'a'};
	uint8_t want_out[BUF_MAX], got_out[BUF_MAX];
	size_t want_len = 0;

	for (size_t chunk = sizeof(srv); chunk >= 1; chunk--) {
		struct socks5_client c;
		struct proto_target t = t_name("example.net", 8443);
		uint8_t buf[BUF_MAX];
		size_t have = 0, off = 0, got_len = 0;
		enum proto_res res = PROTO_NEED_MORE;

		socks5_client_init(&c, &t, "user", "pass");
		memcpy(got_out, c.out, c.out_len);
		got_len = c.out_len;
		while (off < sizeof(srv) && res != PROTO_REQUEST && res != PROTO_FAIL) {
			size_t n = sizeof(srv) - off < chunk ? sizeof(srv) - off : chunk, used;

			memcpy(buf + have, srv + off, n);
			have += n;
			off += n;
			while ((res = socks5_client_feed(&c, buf, have, &used)) == PROTO_REPLY) {
				memmove(buf, buf + used, have - used);
				have -= used;
				memcpy(got_out + got_len, c.out, c.out_len);
				got_len += c.out_len;
			}
			if (res == PROTO_REQUEST) {
				have -= used;
				memmove(buf, buf + used, have);
			}
		}
		T_EQ_INT(res, PROTO_REQUEST);
		/* the rest of the stream is payload */
		T_EQ_INT(have + (sizeof(srv) - off), 4);
		if (chunk == sizeof(srv)) {
			memcpy(want_out, got_out, got_len);
			want_len = got_len;
			expect_reply(got_out, got_len,
			             BL(5, 2, 0, 2, 1, 4, 'u', 's', 'e', 'r', 4, 'p', 'a', 's', 's',
			                5, 1, 0, 3, 11, 'e', 'x', 'a', 'm', 'p', 'l', 'e', '.', 'n',
			                'e', 't', 0x20, 0xfb));
		} else {
			expect_reply(got_out, got_len, want_out, want_len);
		}
	}
}

static void test_client_ip_targets(void)
{
	struct socks5_client c;
	struct proto_target t = t_ip("::ffff:10.9.8.7", 53);
	size_t used;

	socks5_client_init(&c, &t, NULL, NULL);
	socks5_client_feed(&c, BL(5, 0), &used);
	EXPECT_OUT(&c, 5, 1, 0, 1, 10, 9, 8, 7, 0, 53);

	/* port 0 in the sockaddr: target.port is used */
	t = t_ip("10.0.0.9", 0);
	t.port = 8000;
	socks5_client_init(&c, &t, NULL, NULL);
	socks5_client_feed(&c, BL(5, 0), &used);
	EXPECT_OUT(&c, 5, 1, 0, 1, 10, 0, 0, 9, 0x1f, 0x40);
}

static void test_client_init_limits(void)
{
	struct socks5_client c;
	struct proto_target t = t_name("x", 1);
	char cred[PROTO_CRED_MAX + 2];
	size_t used;

	memset(cred, 'c', sizeof(cred));
	cred[PROTO_CRED_MAX] = '\0';
	T_EQ_INT(socks5_client_init(&c, &t, cred, cred), 0); /* 255 + 255 */
	socks5_client_feed(&c, BL(5, 2), &used);
	T_EQ_INT(c.out_len, SOCKS5_CLIENT_OUT_MAX);
	T_EQ_INT(c.out[1], PROTO_CRED_MAX);
	T_EQ_INT(c.out[2 + PROTO_CRED_MAX], PROTO_CRED_MAX);

	cred[PROTO_CRED_MAX] = 'c';
	cred[PROTO_CRED_MAX + 1] = '\0';
	T_EQ_INT(socks5_client_init(&c, &t, cred, "p"), -EINVAL);
	T_EQ_INT(socks5_client_init(&c, &t, "u", cred), -EINVAL);
	T_EQ_INT(socks5_client_init(&c, &t, "", "p"), -EINVAL);
	T_EQ_INT(socks5_client_init(&c, &t, "u", ""), -EINVAL);
	T_EQ_INT(socks5_client_init(&c, &t, "u", NULL), -EINVAL);
	T_EQ_INT(socks5_client_init(&c, NULL, NULL, NULL), -EINVAL);

	t.host[0] = '\0';
	T_EQ_INT(socks5_client_init(&c, &t, NULL, NULL), -EINVAL);
	memset(t.host, 'h', sizeof(t.host)); /* 256 octets, no NUL */
	T_EQ_INT(socks5_client_init(&c, &t, NULL, NULL), -EINVAL);
	t.host[PROTO_HOST_MAX] = '\0'; /* 255: fine */
	T_EQ_INT(socks5_client_init(&c, &t, NULL, NULL), 0);
	socks5_client_feed(&c, BL(5, 0), &used);
	T_EQ_INT(c.out_len, 4 + 1 + PROTO_HOST_MAX + 2);

	t.kind = TARGET_IP;
	t.addr.ss_family = AF_UNIX;
	T_EQ_INT(socks5_client_init(&c, &t, NULL, NULL), -EINVAL);
	t.kind = (enum proto_target_kind)0;
	T_EQ_INT(socks5_client_init(&c, &t, NULL, NULL), -EINVAL);
}

int main(void)
{
	T_RUN(test_greeting_no_auth);
	T_RUN(test_greeting_userpass);
	T_RUN(test_greeting_no_acceptable);
	T_RUN(test_greeting_no_methods);
	T_RUN(test_greeting_bad_version);
	T_RUN(test_auth_success);
	T_RUN(test_auth_failure);
	T_RUN(test_auth_bad_format);
	T_RUN(test_auth_max_lengths);
	T_RUN(test_auth_result_misuse);
	T_RUN(test_request_ipv4);
	T_RUN(test_request_ipv6);
	T_RUN(test_request_domain);
	T_RUN(test_request_domain_255);
	T_RUN(test_request_domain_literals);
	T_RUN(test_request_bad_domain);
	T_RUN(test_request_commands);
	T_RUN(test_request_udp_allowed);
	T_RUN(test_request_bad_atyp);
	T_RUN(test_request_bad_version_rsv);
	T_RUN(test_early_payload);
	T_RUN(test_states_after_end);
	T_RUN(test_conversation_cuts_no_auth);
	T_RUN(test_conversation_cuts_auth);
	T_RUN(test_conversation_cuts_failures);
	T_RUN(test_server_reply_bytes);
	T_RUN(test_rep_from_connect);
	T_RUN(test_client_no_auth_domain);
	T_RUN(test_client_auth_ipv6);
	T_RUN(test_client_udp_commands);
	T_RUN(test_client_server_skips_auth);
	T_RUN(test_client_auth_version5_tolerated);
	T_RUN(test_client_failures);
	T_RUN(test_client_rep_codes);
	T_RUN(test_client_reply_variants);
	T_RUN(test_client_cuts);
	T_RUN(test_client_ip_targets);
	T_RUN(test_client_init_limits);
	return t_finish();
}
