/* SPDX-License-Identifier: MIT */
/* The shadowsocks inbound: AEAD and 2022 servers (proto/shadowsocks.c), the salt filter, the probe-resistant failure. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "inbound.h"
#include "log.h"
#include "replay.h"
#include "shadowsocks.h"
#include "worker.h"

struct in_ss {
	struct ss_server srv;
	const struct inbound *in;
	struct worker_stats *stats; /* during a feed */
	struct replay *replay;
	uint64_t mono_s;
};

static enum proto_res start(void *st, const struct inbound *in, int fd)
{
	struct in_ss *s = st;

	(void)fd;
	s->in = in;
	ss_server_init(&s->srv, in->ss);
	return PROTO_NEED_MORE;
}

static void bind_env(void *st, const struct inbound_env *env)
{
	struct in_ss *s = st;

	s->srv.users = env->users ? env->users->ss : NULL;
	s->srv.now = env->unix_s;
	s->stats = env->stats;
	s->replay = env->replay;
	s->mono_s = env->mono_s;
}

/* Each refusal is counted by its reason; none is logged above debug, none answered. */
static void count(struct in_ss *s, enum ss_error e)
{
	switch (e) {
	case SS_ERR_AUTH:
		s->stats->ss_bad_auth++;
		break;
	case SS_ERR_USER:
		s->stats->ss_bad_user++;
		break;
	case SS_ERR_TIME:
		s->stats->ss_bad_time++;
		break;
	default:
		s->stats->ss_bad_format++;
		break;
	}
	log_debug_rl("inbound %s: shadowsocks stream refused (%s)", s->in->name,
	             e == SS_ERR_AUTH   ? "authentication failed"
	             : e == SS_ERR_USER ? "no such user"
	             : e == SS_ERR_TIME ? "timestamp more than 30 s off"
	                                : "malformed");
}

static enum proto_res feed(void *st, uint8_t *buf, size_t len, size_t *used)
{
	struct in_ss *s = st;
	enum proto_res r = ss_server_feed(&s->srv, buf, len, used);

	if (r == PROTO_FAIL)
		count(s, s->srv.error);
	if (r == PROTO_REQUEST && s->replay) {
		/* Authentic: now the salt must be new, on whichever worker it was seen (SIP022 3.1.5). */
		enum replay_res rr =
		        replay_add(s->replay, s->srv.salt, s->srv.in.salt_len, s->mono_s);

		if (rr != REPLAY_NEW) {
			if (rr == REPLAY_SEEN)
				s->stats->ss_replays++;
			else
				s->stats->ss_replay_full++;
			log_debug_rl("inbound %s: shadowsocks salt %s", s->in->name,
			             rr == REPLAY_SEEN ? "replayed"
			                               : "refused: the salt pool is full");
			ss_server_wipe(&s->srv);
			return PROTO_FAIL;
		}
	}
	return r;
}

static void creds(const void *st, const char **user, const char **pass)
{
	const struct ss_user *u = ((const struct in_ss *)st)->srv.user;

	*user = u ? u->name : "";
	*pass = u ? u->pass : "";
}

static enum proto_res auth_result(void *st, bool ok)
{
	struct in_ss *s = st;
	enum proto_res r = ss_server_auth_result(&s->srv, ok);

	if (r == PROTO_FAIL)
		count(s, SS_ERR_USER);
	return r;
}

static const uint8_t *pending(const void *st, size_t *len)
{
	(void)st;
	*len = 0; /* a Shadowsocks server never answers a handshake */
	return NULL;
}

static const struct proto_target *target(const void *st)
{
	return &((const struct in_ss *)st)->srv.target;
}

static const uint8_t *reply(void *st, enum proto_connect_result r, const struct sockaddr *bound,
                            size_t *len)
{
	(void)r, (void)bound;
	return pending(st, len);
}

static size_t want(const void *st)
{
	return ss_server_want(&((const struct in_ss *)st)->srv);
}

static size_t early(const void *st)
{
	return ((const struct in_ss *)st)->srv.early;
}

static struct xform *xform(void *st, const struct inbound_env *env)
{
	struct in_ss *s = st;
	uint8_t rnd[SS_RAND_LEN];
	struct ss_leg *l = malloc(sizeof(*l));

	if (!l)
		return NULL;
	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd) ||
	    ss_server_leg(l, &s->srv, rnd) < 0) {
		explicit_bzero(rnd, sizeof(rnd));
		free(l);
		return NULL;
	}
	explicit_bzero(rnd, sizeof(rnd));
	/*
	 * SIP004 has no direction in its header: remember our own salt too, so
	 * our response stream played back to us is refused (ss-libev does so).
	 */
	if (env->replay && !l->seal.v2022)
		(void)replay_add(env->replay, l->seal.salt, l->seal.salt_len, env->mono_s);
	ss_server_wipe(&s->srv);
	return &l->x;
}

const struct inbound_ops inbound_ss_ops = {
        .name = "shadowsocks",
        .state_size = sizeof(struct in_ss),
        /*
         * A salt, an identity header, a 2022 fixed header and a short first
         * chunk: what a client's first flight usually is. A longer first
         * chunk grows the buffer (want()) once its length chunk is authentic.
         */
        .buf_size = 2048,
        .start = start,
        .feed = feed,
        .creds = creds,
        .auth_result = auth_result,
        .pending = pending,
        .target = target,
        .reply = reply,
        .bind = bind_env,
        .want = want,
        .buf_max = SS22_PAYLOAD_MAX + SS_TAG,
        .early = early,
        .xform = xform,
        .probe_resistant = true,
};

/*
 * Salts a filter remembers: SIP004 has no timestamps, so the last 2^17 to
 * 2^18 salts (ours included) are refused again, about 2 to 8 MiB at most;
 * SIP022 keeps each salt 60 to 120 s, up to 2^20 new streams a minute
 * before refusing new ones. Both tables grow only as streams come.
 */
enum { SS_REPLAY_AEAD = 1 << 17, SS_REPLAY_2022 = 1 << 20 };

int server_ss_init(struct server *srv, const struct config *cfg)
{
	for (size_t i = 0; i < cfg->n_inbounds; i++) {
		const struct inbound *in = &cfg->inbounds[i];
		bool v2022;
		struct replay **r;

		if (in->type != INBOUND_SHADOWSOCKS || !in->ss)
			continue;
		v2022 = ss_method_info(in->ss->method)->v2022;
		r = v2022 ? &srv->ss_replay_2022 : &srv->ss_replay_aead;
		if (!*r && !(*r = replay_new(v2022, v2022 ? SS_REPLAY_2022 : SS_REPLAY_AEAD)))
			return -ENOMEM;
	}
	return 0;
}

struct replay *server_ss_replay(const struct server *srv, const struct inbound *in)
{
	if (in->type != INBOUND_SHADOWSOCKS || !in->ss)
		return NULL;
	return ss_method_info(in->ss->method)->v2022 ? srv->ss_replay_2022 : srv->ss_replay_aead;
}

void server_ss_free(struct server *srv)
{
	replay_free(srv->ss_replay_aead);
	replay_free(srv->ss_replay_2022);
	srv->ss_replay_aead = srv->ss_replay_2022 = NULL;
}
