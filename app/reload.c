/* SPDX-License-Identifier: MIT */
/* Whole-config reload: read, check, prepare every resource, then switch the workers and WireGuard. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "access_log.h"
#include "inbound.h"
#include "listener.h"
#include "log.h"
#include "metrics.h"
#include "reload.h"
#include "sockaddr.h"
#include "strset.h"
#include "udp_tproxy.h"
#include "user_acct.h"

enum { RELOAD_WAIT_MS = 5000 };

void reload_raise_nofile(const struct config *cfg, int n_workers)
{
	struct rlimit rl;
	/*
	 * Enough descriptors for two legs per connection, plus headroom for the
	 * pipes, which are held only while bytes are in flight (splice.c).
	 * Workers run on private descriptor tables (worker.c), and the limit
	 * applies to each table, so the need per table is divided by the
	 * worker count.
	 */
	rlim_t want = (rlim_t)cfg->max_connections * 2 / (rlim_t)n_workers + 1024;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return;
	if (rl.rlim_max < want) {
		struct rlimit more = {want, want};
		if (setrlimit(RLIMIT_NOFILE, &more) == 0)
			return;
	}
	if (rl.rlim_cur < want && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max < want ? rl.rlim_max : want;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < want)
		log_warn(
		        "RLIMIT_NOFILE is %llu; %u connections over %d workers may need up to %llu "
		        "descriptors per worker",
		        (unsigned long long)rl.rlim_cur, cfg->max_connections, n_workers,
		        (unsigned long long)want);
}

/* Each line of what a parser wrote to a memory stream, as an error in the log. */
static void log_lines(char *text)
{
	for (char *cur = text, *l = strset_tok(&cur, "\n"); l; l = strset_tok(&cur, "\n"))
		log_error("%s", l);
}

/* --- what needs a restart --- */

static const char *dur(unsigned ms, char *buf, size_t n)
{
	snprintf(buf, n, "%ums", ms);
	return buf;
}

/* One line per [main] key whose new value the running process cannot take. */
static int main_restart_needed(const struct config *run, const struct config *cfg)
{
	char a[32], b[32];
	int bad = 0;

#define RESTART(cond, key, from, to)                                                             \
	do {                                                                                     \
		if (cond) {                                                                      \
			log_error("%s:%d: [main] %s: changed (%s -> %s), which needs a restart", \
			          cfg->file, cfg->main_line, key, from, to);                     \
			bad++;                                                                   \
		}                                                                                \
	} while (0)
	snprintf(a, sizeof(a), "%d", run->workers);
	snprintf(b, sizeof(b), "%d", cfg->workers);
	RESTART(run->workers != cfg->workers, "workers", a, b);
	RESTART(run->run_as != cfg->run_as || (run->run_as && (run->run_uid != cfg->run_uid ||
	                                                       run->run_gid != cfg->run_gid)),
	        "user/group", run->run_as ? run->run_user : "root",
	        cfg->run_as ? cfg->run_user : "root");
	snprintf(a, sizeof(a), "%u", run->pipe_size);
	snprintf(b, sizeof(b), "%u", cfg->pipe_size);
	RESTART(run->pipe_size != cfg->pipe_size, "pipe-size", a, b);
	snprintf(a, sizeof(a), "%u", run->max_pipes);
	snprintf(b, sizeof(b), "%u", cfg->max_pipes);
	RESTART(run->max_pipes != cfg->max_pipes, "max-pipes", a, b);
	RESTART(run->resolve_timeout_ms != cfg->resolve_timeout_ms, "resolve-timeout",
	        dur(run->resolve_timeout_ms, a, sizeof(a)),
	        dur(cfg->resolve_timeout_ms, b, sizeof(b)));
	snprintf(a, sizeof(a), "%u", run->max_resolving);
	snprintf(b, sizeof(b), "%u", cfg->max_resolving);
	RESTART(run->max_resolving != cfg->max_resolving, "max-resolving", a, b);
	snprintf(a, sizeof(a), "%u", run->max_auth_failures);
	snprintf(b, sizeof(b), "%u", cfg->max_auth_failures);
	RESTART(run->max_auth_failures != cfg->max_auth_failures, "max-auth-failures", a, b);
	snprintf(a, sizeof(a), "%u", run->max_per_source);
	snprintf(b, sizeof(b), "%u", cfg->max_per_source);
	RESTART(run->max_per_source != cfg->max_per_source, "max-connections-per-source", a, b);
	/* The per-source table was sized at start for twice max-connections. */
	snprintf(a, sizeof(a), "%u", run->max_connections);
	snprintf(b, sizeof(b), "%u", cfg->max_connections);
	RESTART(run->max_per_source && cfg->max_connections > run->max_connections,
	        "max-connections (raised, with max-connections-per-source set)", a, b);
#undef RESTART
	return bad;
}

/* Everything a connection or a listener of the inbound depends on: is it the same? */
static bool same_cidrs(const struct cidr *a, const struct cidr *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (a[i].family != b[i].family || a[i].prefix != b[i].prefix ||
		    memcmp(a[i].addr, b[i].addr, sizeof(a[i].addr)))
			return false;
	return true;
}

/* type = tun: every key, since a reload cannot redo the device (reload_needs_restart). */
static bool same_tun(const struct inbound_tun *a, const struct inbound_tun *b)
{
	return strcmp(a->ifname, b->ifname) == 0 && a->mtu == b->mtu &&
	       same_cidrs(a->addr, b->addr, 2) && a->n_routes == b->n_routes &&
	       same_cidrs(a->routes, b->routes, a->n_routes) && a->auto_route == b->auto_route &&
	       a->table == b->table && a->priority == b->priority && a->fwmark == b->fwmark &&
	       a->queues == b->queues && a->offload == b->offload && a->max_flows == b->max_flows &&
	       a->linger_ms == b->linger_ms && a->txqlen == b->txqlen && !a->netns == !b->netns &&
	       (!a->netns || strcmp(a->netns, b->netns) == 0) &&
	       !memcmp(&a->dns_server, &b->dns_server, sizeof(a->dns_server)) &&
	       a->dns_hijack == b->dns_hijack && a->mapped_dns == b->mapped_dns;
}

static bool same_inbound(const struct inbound *a, const struct inbound *b)
{
	bool same_users = a->inline_users.n == b->inline_users.n &&
	                  !a->users_file == !b->users_file &&
	                  (!a->users_file || strcmp(a->users_file, b->users_file) == 0);
	bool same_target = !a->target_host == !b->target_host &&
	                   (!a->target_host || strcmp(a->target_host, b->target_host) == 0) &&
	                   a->target_port == b->target_port;

	for (size_t i = 0; same_users && i < a->inline_users.n; i++)
		same_users = strcmp(a->inline_users.v[i].name, b->inline_users.v[i].name) == 0 &&
		             strcmp(a->inline_users.v[i].pass, b->inline_users.v[i].pass) == 0;
	return a->type == b->type && a->listen_len == b->listen_len &&
	       !memcmp(&a->listen, &b->listen, a->listen_len) && same_users && same_target &&
	       a->n_allow == b->n_allow &&
	       (!a->n_allow || !memcmp(a->allow, b->allow, a->n_allow * sizeof(*a->allow))) &&
	       a->udp == b->udp &&
	       !memcmp(&a->udp_advertise, &b->udp_advertise, sizeof(a->udp_advertise)) &&
	       a->udp_port_lo == b->udp_port_lo && a->udp_port_hi == b->udp_port_hi &&
	       a->keepalive_set == b->keepalive_set && a->keepalive_ms == b->keepalive_ms &&
	       a->user_timeout_ms == b->user_timeout_ms &&
	       (a->type != INBOUND_TUN || same_tun(&a->tun, &b->tun));
}

/* The same listening socket serves both: address and kind (IP_TRANSPARENT or not). */
static bool same_socket(const struct inbound *a, const struct inbound *b)
{
	return a->listen_len == b->listen_len && !memcmp(&a->listen, &b->listen, a->listen_len) &&
	       (a->type == INBOUND_TPROXY) == (b->type == INBOUND_TPROXY);
}

static bool has_udp_socket(const struct inbound *in)
{
	return in->type == INBOUND_TPROXY && in->udp;
}

static int find_inbound(const struct config *c, const char *name)
{
	for (size_t i = 0; i < c->n_inbounds; i++)
		if (strcmp(c->inbounds[i].name, name) == 0)
			return (int)i;
	return -1;
}

/*
 * Inbound types whose resources the reload cannot reopen (their ops say
 * so): added, removed or changed, they need a restart.
 */
static int inbounds_restart_needed(const struct config *run, const struct config *cfg)
{
	int bad = 0;

	for (size_t i = 0; i < cfg->n_inbounds; i++) {
		const struct inbound *in = &cfg->inbounds[i];
		int j = find_inbound(run, in->name);
		bool fixed = inbound_ops(in->type)->reload_needs_restart ||
		             (j >= 0 && inbound_ops(run->inbounds[j].type)->reload_needs_restart);

		if (fixed && j >= 0 && (size_t)j != i && same_inbound(&run->inbounds[j], in)) {
			/* its device and queues are found by the inbound's index */
			log_error("%s:%d: [inbound %s]: moves a %s inbound to another place in "
			          "the file, which needs a restart",
			          cfg->file, in->line, in->name, inbound_ops(in->type)->name);
			bad++;
			continue;
		}
		if (fixed && (j < 0 || !same_inbound(&run->inbounds[j], in))) {
			log_error("%s:%d: [inbound %s]: %s a %s inbound, which needs a restart",
			          cfg->file, in->line, in->name, j < 0 ? "adds" : "changes",
			          inbound_ops(j < 0 || inbound_ops(in->type)->reload_needs_restart
			                              ? in->type
			                              : run->inbounds[j].type)
			                  ->name);
			bad++;
		}
	}
	for (size_t j = 0; j < run->n_inbounds; j++) {
		const struct inbound *in = &run->inbounds[j];

		if (inbound_ops(in->type)->reload_needs_restart &&
		    find_inbound(cfg, in->name) < 0) {
			log_error("%s: [inbound %s] (a %s inbound) is gone, which needs a restart",
			          cfg->file, in->name, inbound_ops(in->type)->name);
			bad++;
		}
	}
	return bad;
}

/* --- the sockets each worker gets --- */

struct prepared {
	struct worker_plan **plans; /* one per worker, each the worker's to free once posted */
	int (*fds)[PLAN_FDS_MAX];
	unsigned *n_fds;
	int n;
};

static void prepared_free(struct prepared *pr)
{
	for (int w = 0; w < pr->n; w++) {
		for (unsigned k = 0; pr->fds && k < pr->n_fds[w]; k++)
			close(pr->fds[w][k]);
		if (pr->plans)
			free(pr->plans[w]);
	}
	free(pr->plans);
	free(pr->fds);
	free(pr->n_fds);
	memset(pr, 0, sizeof(*pr));
}

static int add_fd(struct prepared *pr, int w, int fd)
{
	if (fd < 0)
		return fd;
	pr->fds[w][pr->n_fds[w]++] = fd;
	return 0;
}

static bool same_addr(const struct sockaddr_storage *a, socklen_t al,
                      const struct sockaddr_storage *b, socklen_t bl)
{
	return al == bl && (!al || !memcmp(a, b, al));
}

/*
 * Per worker and inbound: keep the socket the old inbound of that name has
 * when the address and kind are the same, else open one now. Then the
 * metrics listener (worker 0) and the access log. Errors are logged.
 */
static int prepare_sockets(struct prepared *pr, const struct config *run, const struct config *cfg,
                           int n_workers, unsigned gen)
{
	bool alog_same = !run->access_log == !cfg->access_log &&
	                 (!cfg->access_log || strcmp(run->access_log, cfg->access_log) == 0);
	bool stats_same = same_addr(&run->stats_listen, run->stats_listen_len, &cfg->stats_listen,
	                            cfg->stats_listen_len);

	int ret;

	pr->n = n_workers;
	pr->plans = calloc((size_t)n_workers, sizeof(*pr->plans));
	pr->fds = calloc((size_t)n_workers, sizeof(*pr->fds));
	pr->n_fds = calloc((size_t)n_workers, sizeof(*pr->n_fds));
	if (!pr->plans || !pr->fds || !pr->n_fds)
		return -ENOMEM;
	for (int w = 0; w < n_workers; w++) {
		struct worker_plan *p = pr->plans[w] = calloc(1, sizeof(*p));

		if (!p)
			return -ENOMEM;
		p->gen = gen;
		for (size_t i = 0; i < cfg->n_inbounds; i++) {
			const struct inbound *in = &cfg->inbounds[i];
			int j = find_inbound(run, in->name);
			bool keep = j >= 0 && same_socket(&run->inbounds[j], in);

			p->listener[i] = keep ? j : PLAN_NEW;
			if (!keep && (ret = add_fd(pr, w, listener_socket(cfg, in, n_workers))) < 0)
				return ret;
		}
		for (size_t i = 0; i < cfg->n_inbounds; i++) {
			const struct inbound *in = &cfg->inbounds[i];
			int j = find_inbound(run, in->name);
			bool keep = j >= 0 && same_socket(&run->inbounds[j], in) &&
			            has_udp_socket(&run->inbounds[j]);

			p->udp_tp[i] = !has_udp_socket(in) ? PLAN_NONE : keep ? j : PLAN_NEW;
			if (p->udp_tp[i] == PLAN_NEW &&
			    (ret = add_fd(pr, w, udp_tp_socket(cfg, in))) < 0)
				return ret;
		}
		p->metrics = w != 0 || !cfg->stats_listen_len ? PLAN_NONE
		             : stats_same                     ? PLAN_KEEP
		                                              : PLAN_NEW;
		if (p->metrics == PLAN_NEW &&
		    (ret = add_fd(pr, w,
		                  metrics_socket(&cfg->stats_listen, cfg->stats_listen_len))) < 0)
			return ret;
		p->alog = alog_same ? PLAN_KEEP : cfg->access_log ? PLAN_NEW : PLAN_NONE;
		if (p->alog == PLAN_NEW) {
			int fd = alog_open(cfg->access_log);
			if (fd < 0) {
				log_error("%s: [main] access-log: cannot open %s: %s", cfg->file,
				          cfg->access_log, strerror(-fd));
				return fd;
			}
			add_fd(pr, w, fd);
		}
		p->n_fds = pr->n_fds[w];
	}
	return 0;
}

/* --- the summary line --- */

static void summarize(char *out, size_t cap, const struct config *run, const struct config *cfg)
{
	size_t o = 0;
	int added = 0, removed = 0, changed = 0, moved = 0, ob = 0;

	for (size_t i = 0; i < cfg->n_inbounds; i++) {
		int j = find_inbound(run, cfg->inbounds[i].name);
		if (j < 0)
			added++;
		else if (!same_socket(&run->inbounds[j], &cfg->inbounds[i]))
			moved++;
		else if (!same_inbound(&run->inbounds[j], &cfg->inbounds[i]))
			changed++;
	}
	for (size_t j = 0; j < run->n_inbounds; j++)
		removed += find_inbound(cfg, run->inbounds[j].name) < 0;
	for (size_t i = 0; i < cfg->n_outbounds; i++)
		ob += config_outbound_index(run, cfg->outbounds[i].name) < 0;
	o += (size_t)snprintf(out + o, cap - o,
	                      "inbounds: %d added, %d removed (draining), %d replaced (new "
	                      "address or kind), %d changed; %zu outbounds (%d new), %zu rules",
	                      added, removed, moved, changed, cfg->n_outbounds, ob, cfg->n_rules);
	(void)o;
}

/* What starts and stops, as the start-up says it. */
static void log_changes(const struct config *run, const struct config *cfg,
                        const struct worker_plan *p)
{
	char addr[SA_STR_MAX];

	for (size_t i = 0; i < cfg->n_inbounds; i++)
		if (p->listener[i] == PLAN_NEW)
			log_info("inbound %s (%s) listening on %s", cfg->inbounds[i].name,
			         inbound_ops(cfg->inbounds[i].type)->name,
			         sa_str(&cfg->inbounds[i].listen, addr));
	for (size_t j = 0; j < run->n_inbounds; j++) {
		int i = find_inbound(cfg, run->inbounds[j].name);

		if (i < 0 || p->listener[i] != (int)j)
			log_info("inbound %s: %s on %s; its open connections go on",
			         run->inbounds[j].name,
			         i < 0 ? "removed: no longer listening"
			               : "moved: no longer listening",
			         sa_str(&run->inbounds[j].listen, addr));
	}
	if (p->metrics == PLAN_NEW)
		log_info("metrics on http://%s/metrics", sa_str(&cfg->stats_listen, addr));
	else if (p->metrics == PLAN_NONE && run->stats_listen_len)
		log_info("metrics: no longer served");
}

/* --- the reload --- */

/* How many workers have applied reload gen. */
static unsigned applied(const struct server *srv, unsigned gen)
{
	unsigned n = 0;

	for (int i = 0; i < srv->n_workers; i++)
		n += atomic_load(&srv->workers[i].applied) == gen;
	return n;
}

/*
 * Steps 1 and 2: the INI, and what it asks that the running process cannot
 * give. Every message becomes a log line of its own. NULL: refused (logged).
 */
static struct config *read_and_check(const struct reload *rl, const struct config *run,
                                     const struct privdrop *pd)
{
	struct config *cfg = NULL;
	char *msgs = NULL;
	size_t mlen = 0;
	FILE *err = open_memstream(&msgs, &mlen);
	int ret, bad = 0;

	if (!err)
		return NULL;
	ret = config_load(rl->path, &cfg, err);
	if (ret == 0) {
		bad += main_restart_needed(run, cfg);
		bad += inbounds_restart_needed(run, cfg);
		if (privdrop_reload_check(pd, run, cfg) < 0)
			bad++;
	}
	fclose(err);
	if (msgs)
		log_lines(msgs);
	free(msgs);
	if (ret < 0 && ret != -EINVAL)
		log_error("%s: %s", rl->path ? rl->path : "(built-in)", strerror(-ret));
	if (ret == 0 && !bad)
		return cfg;
	config_free(cfg);
	return NULL;
}

/* Step 3: the snapshot, every users file read now. */
static struct snapshot *build_snapshot(struct config *cfg, int n_workers, unsigned gen)
{
	struct snapshot *snap;
	char *msgs = NULL;
	size_t mlen = 0;
	FILE *err = open_memstream(&msgs, &mlen);
	int ret;

	if (!err) {
		config_free(cfg);
		return NULL;
	}
	snap = snapshot_new(cfg, n_workers, gen, err, &ret);
	fclose(err);
	if (msgs)
		log_lines(msgs);
	free(msgs);
	return snap;
}

int reload_run(struct reload *rl, struct server *srv, struct wg_hosted *wg,
               const struct privdrop *pd)
{
	struct snapshot *snap = NULL, *old = srv->snap;
	const struct config *run = old->cfg;
	struct wg_hosted_change *wgc = NULL;
	struct prepared pr = {0};
	struct config *cfg;
	char summary[256];
	unsigned gen = rl->gen + 1, acked = applied(srv, rl->gen);
	int ret = -EINVAL;

	if (acked != (unsigned)srv->n_workers) {
		log_error("SIGHUP: reload %u is still not acknowledged by every worker (%u of %d): "
		          "configuration not reloaded",
		          rl->gen, acked, srv->n_workers);
		rl->failed++;
		return -EBUSY;
	}
	/* 1-3. Read, check, build: the INI, what needs a restart, the users files. */
	cfg = read_and_check(rl, run, pd);
	if (!cfg || !(snap = build_snapshot(cfg, srv->n_workers, gen)))
		goto fail;
	/* The salt filters a new Shadowsocks inbound needs, before any worker sees it. */
	if (server_ss_init(srv, snap->cfg) < 0) {
		log_error("SIGHUP: out of memory for the Shadowsocks salt filters");
		goto fail;
	}
	/* 4. Sockets for new and moved listeners, a new metrics listener, a new access log. */
	ret = prepare_sockets(&pr, run, snap->cfg, srv->n_workers, gen);
	if (ret < 0)
		goto fail;
	/* 5. WireGuard: parse, check, create the interfaces it adds. */
	ret = wg_hosted_prepare(wg, snap->cfg, &wgc);
	if (ret < 0)
		goto fail;
	/* 6. The descriptors to every worker; a failure here still changes nothing. */
	rl->fd_seq++;
	for (int i = 0; i < srv->n_workers; i++) {
		pr.plans[i]->fd_seq = rl->fd_seq;
		ret = worker_send_fds(&srv->workers[i], rl->fd_seq, pr.fds[i], pr.n_fds[i]);
		pr.n_fds[i] = 0; /* closed by worker_send_fds(), sent or not */
		if (ret < 0) {
			log_error("SIGHUP: cannot hand worker %d its sockets: %s", i,
			          strerror(-ret));
			while (i--) /* those sent are listening: the workers close them now */
				worker_post(&srv->workers[i], WORKER_MSG_DROP_FDS);
			goto fail;
		}
	}
	/* 7. Commit: nothing below can fail. */
	wg_hosted_apply(wg, wgc);
	summarize(summary, sizeof(summary), run, snap->cfg);
	log_changes(run, snap->cfg, pr.plans[0]);
	for (int i = 0; i < srv->n_workers; i++) {
		pr.plans[i]->snap = snap;
		snapshot_ref(snap);
		worker_post_plan(&srv->workers[i], pr.plans[i]);
		pr.plans[i] = NULL; /* the worker's */
	}
	prepared_free(&pr);
	srv->snap = snap;
	log_level = snap->cfg->log_level;
	user_accts_set_config(srv->accts, snap->cfg);
	reload_raise_nofile(snap->cfg, srv->n_workers);
	rl->gen = gen;
	rl->ok++;
	rl->last_ok_s = (uint64_t)time(NULL);
	/* 8. Wait (bounded) until every worker has switched, so READY=1 means it. */
	for (int waited = 0; (acked = applied(srv, gen)) != (unsigned)srv->n_workers; waited++) {
		if (waited > RELOAD_WAIT_MS) {
			log_error(
			        "SIGHUP: reload %u: workers did not acknowledge within %d ms (%u of "
			        "%d); the others switch when they do",
			        gen, RELOAD_WAIT_MS, acked, srv->n_workers);
			break;
		}
		usleep(1000);
	}
	snapshot_unref(old); /* main's reference; connections keep theirs */
	log_info("SIGHUP: configuration reloaded (reload %u): %s", gen, summary);
	return 0;
fail:
	if (wgc)
		wg_hosted_abort(wgc);
	prepared_free(&pr);
	snapshot_unref(snap);
	rl->failed++;
	log_error("SIGHUP: configuration not reloaded; the running configuration stays in force");
	return ret < 0 ? ret : -EINVAL;
}
