/* SPDX-License-Identifier: MIT */
/* spliced entry point: command line, signals, starting and stopping the workers. */
#include <errno.h>
#include <malloc.h>
#include <linux/capability.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "args.h"
#include "build_config.h"
#include "config.h"
#include "crypto_info.h"
#include "access_log.h"
#include "inbound.h"
#include "log.h"
#include "sockaddr.h"
#include "stats.h"
#include "user_acct.h"
#include "loop.h"
#include "privdrop.h"
#include "sdnotify.h"
#include "tun_dev.h"
#include "resolve.h"
#include "metrics.h"
#include "reload.h"
#include "wg_cli.h"
#include "wg_hosted.h"
#include "worker.h"

enum exit_code { EXIT_OK = 0, EXIT_RUNTIME = 1, EXIT_CONFIG = 2 };

static const char usage_text[] =
        "Usage: spliced [-c FILE] [--check]\n"
        "       spliced --version | --help\n"
        "       spliced wg <genkey|pubkey|genpsk|up|down|speed> ...  (WireGuard)\n"
        "\n"
        "A relay for Linux: SOCKS5, HTTP CONNECT and port-forward inbounds; direct,\n"
        "upstream SOCKS5, upstream HTTP and block outbounds. One io_uring worker per\n"
        "core; plain TCP payload moves with splice(2) and never enters user space.\n"
        "\n"
        "Options:\n"
        "  -c, --config FILE  read the INI configuration FILE. Without it spliced runs\n"
        "                     the built-in configuration: a SOCKS5 inbound on\n"
        "                     127.0.0.1:1080 and the direct outbound.\n"
        "      --check        validate the configuration, print every problem as\n"
        "                     \"file:line: message\" and exit (0 valid, 2 invalid).\n"
        "  -V, --version      print the version, the io_uring features the kernel\n"
        "                     offers and the crypto backend, then exit.\n"
        "  -h, --help         print this help and exit.\n"
        "\n"
        "Signals:\n"
        "  SIGTERM, SIGINT    stop accepting, let open connections finish for up to\n"
        "                     [main] drain-timeout, then close them and exit 0.\n"
        "  SIGHUP             reload: read and check the whole configuration again (its\n"
        "                     users and wg-quick files too). On any error nothing\n"
        "                     changes and each problem is logged as file:line; else\n"
        "                     new connections take the new configuration, open ones\n"
        "                     keep theirs. Reopens the access-log file by its name.\n"
        "  SIGUSR1            print the counters of every user who logged in, of\n"
        "                     every tun inbound and of every [wireguard] interface,\n"
        "                     and reopen the access-log file (for log rotation).\n"
        "\n"
        "Exit status: 0 after a clean stop, 1 on a runtime error (cannot listen,\n"
        "io_uring unavailable with backend = io_uring), 2 on a usage or configuration\n"
        "error.\n"
        "Every configuration key and its default: spliced.ini(5), docs/configuration.md\n"
        "(the rest: spliced(8)).\n";

/* "features: ..." then, if meson options left any out, " (built without: ...)". */
static void print_features(void)
{
	static const struct {
		const char *name;
		bool in;
	} opt[] = {
	        {"shadowsocks", SPLICED_HAVE_SHADOWSOCKS},
	        {"tun", SPLICED_HAVE_TUN_INBOUND},
	        {"wireguard", SPLICED_HAVE_WIREGUARD},
	        {"metrics", SPLICED_HAVE_METRICS},
	        {"kernel-profiles", SPLICED_HAVE_KERNEL_PROFILES},
	};
	size_t n_out = 0;

	printf("features: socks5 http mixed forward redirect tproxy udp");
	for (size_t i = 0; i < sizeof(opt) / sizeof(opt[0]); i++)
		if (opt[i].in)
			printf(" %s", opt[i].name);
	for (size_t i = 0; i < sizeof(opt) / sizeof(opt[0]); i++)
		if (!opt[i].in)
			printf("%s%s", n_out++ ? " " : " (built without: ", opt[i].name);
	printf("%s\n", n_out ? ")" : "");
}

static void print_version(void)
{
	struct utsname u;
	struct loop_features f;
	int ret;

	printf("spliced %s\n", SPLICED_VERSION);
	if (uname(&u) == 0)
		printf("kernel: %s %s %s\n", u.sysname, u.release, u.machine);
	if (loop_kernel_profile())
		printf("kernel profile: %u.%u (SPLICED_KERNEL_PROFILE): only what that kernel offers\n",
		       loop_kernel_profile() / 100, loop_kernel_profile() % 100);
	ret = loop_probe(&f);
	if (ret < 0) {
		printf("io_uring: unavailable (%s): the epoll backend runs\n", strerror(-ret));
	} else {
		printf("io_uring: available; setup %s; ext-arg %s; fast-poll %s; cqe-skip %s; "
		       "multishot accept %s\n",
		       f.defer_taskrun  ? "single-issuer+defer-taskrun"
		       : f.coop_taskrun ? "coop-taskrun"
		                        : "basic",
		       f.ext_arg ? "yes" : "no", f.fast_poll ? "yes" : "no",
		       f.cqe_skip ? "yes" : "no", f.multishot_accept ? "yes" : "no");
	}
	printf("backends: io_uring, epoll ([main] backend, SPLICED_BACKEND)\n");
	/* What this build has; meson options leave out the rest (docs/cross.md#size). */
	print_features();
	printf("data path: poll + splice(2) with SPLICE_F_NONBLOCK, pooled pipes\n");
	crypto_info_print(stdout);
}

static int worker_count(const struct config *cfg)
{
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);

	return cfg->workers > 0 ? cfg->workers : (ncpu > 0 ? (int)ncpu : 1);
}

static void log_stats(struct server *srv)
{
	stats_log_group(LOG_INFO, &srv->stats);
	/* How the listeners spread the load (accept-steering), worker by worker. */
	char per[256];
	size_t off = 0;
	for (int i = 0; i < srv->n_workers && off < sizeof(per); i++)
		off += (size_t)snprintf(per + off, sizeof(per) - off, "%s%llu", i ? " " : "",
		                        (unsigned long long)srv->workers[i].stats.accepted);
	log_info("stats: accepted per worker: %s%s", per, off >= sizeof(per) ? "..." : "");
	user_accts_log(srv->accts, LOG_INFO);
}

/* An inbound anyone who reaches it may use is legitimate (on a LAN, behind a firewall), but say so. */
static void warn_open_inbounds(const struct config *cfg)
{
	char addr[SA_STR_MAX];

	for (size_t i = 0; i < cfg->n_inbounds; i++)
		if (cfg->inbounds[i].type != INBOUND_TUN && access_open_to_all(&cfg->inbounds[i]))
			log_warn("inbound %s listens on %s without users or allow: anyone who can "
			         "reach it can use the proxy",
			         cfg->inbounds[i].name, sa_str(&cfg->inbounds[i].listen, addr));
}

/* $SPLICED_BACKEND, when set, overrides [main] backend (the test harness's epoll pass). */
static int backend_from_env(struct config *cfg)
{
	const char *v = getenv("SPLICED_BACKEND");

	if (!v || !*v)
		return 0;
	if (!strcmp(v, "auto"))
		cfg->backend = CONFIG_BACKEND_AUTO;
	else if (!strcmp(v, "io_uring"))
		cfg->backend = CONFIG_BACKEND_IO_URING;
	else if (!strcmp(v, "epoll"))
		cfg->backend = CONFIG_BACKEND_EPOLL;
	else {
		fprintf(stderr, "spliced: SPLICED_BACKEND=%s: not one of auto, io_uring, epoll\n",
		        v);
		return -EINVAL;
	}
	return 0;
}

/* Rings and listeners, no thread yet: everything here may need root (low ports). */
static int create_workers(struct server *srv)
{
	const struct config *cfg = srv->snap->cfg;
	char addr[SA_STR_MAX];
	int ret, fd;

	srv->workers = calloc((size_t)srv->n_workers, sizeof(*srv->workers));
	if (!srv->workers)
		return -ENOMEM;
	for (int i = 0; i < srv->n_workers; i++) {
		ret = worker_init(&srv->workers[i], i, srv);
		if (ret < 0) {
			srv->n_workers = i + 1;
			if (cfg->backend == CONFIG_BACKEND_IO_URING &&
			    (ret == -ENOSYS || ret == -EPERM || ret == -ENOMEM))
				log_error(
				        "io_uring is unavailable (%s) and [main] backend = io_uring: "
				        "check the sysctl kernel.io_uring_disabled and the "
				        "container's seccomp profile, or set backend = auto",
				        strerror(-ret));
			else
				log_error("worker %d: %s", i, strerror(-ret));
			return ret;
		}
		for (size_t j = 0; j < cfg->n_inbounds; j++) {
			ret = worker_listen(&srv->workers[i], (unsigned)j);
			if (ret < 0) {
				srv->n_workers = i + 1;
				return ret;
			}
		}
	}
	for (size_t j = 0; j < cfg->n_inbounds; j++) {
		if (cfg->inbounds[j].type == INBOUND_TUN)
			continue; /* tun_dev.c said where */
		log_info("inbound %s (%s) listening on %s", cfg->inbounds[j].name,
		         inbound_ops(cfg->inbounds[j].type)->name,
		         sa_str(&cfg->inbounds[j].listen, addr));
	}
	/* The metrics endpoint is served by worker 0's loop. */
	if (cfg->stats_listen_len) {
		fd = metrics_socket(&cfg->stats_listen, cfg->stats_listen_len);
		if (fd < 0 ||
		    (ret = metrics_open(&srv->workers[0], fd, &srv->workers[0].metrics)) < 0)
			return fd < 0 ? fd : ret;
		log_info("metrics on http://%s/metrics", sa_str(&cfg->stats_listen, addr));
	}
	return 0;
}

/* The one line that says which backend runs, and why. */
static void log_started(const struct server *srv)
{
	const struct loop *l = &srv->workers[0].loop;
	char prof[48] = "";

	if (l->feat.profile)
		snprintf(prof, sizeof(prof), ", kernel profile %u.%u", l->feat.profile / 100,
		         l->feat.profile % 100);
	if (l->ep)
		log_info("started %d workers (backend epoll: %s)", srv->n_workers, l->backend_why);
	else
		log_info("started %d workers (backend io_uring: %s%s%s)", srv->n_workers,
		         l->feat.defer_taskrun  ? "defer-taskrun"
		         : l->feat.coop_taskrun ? "coop-taskrun"
		                                : "basic",
		         l->feat.multishot_accept ? ", multishot accept" : "", prof);
	if (l->ep && l->backend_why[0] == 'i')
		log_warn("io_uring is unavailable (%s): running on epoll; check the sysctl "
		         "kernel.io_uring_disabled and the container's seccomp profile",
		         l->backend_why);
}

static int start_workers(struct server *srv)
{
	int ret;

	for (int i = 0; i < srv->n_workers; i++) {
		ret = worker_start(&srv->workers[i]);
		if (ret < 0) {
			log_error("cannot start worker %d: %s", i, strerror(-ret));
			for (int j = 0; j < i; j++) {
				worker_post(&srv->workers[j], WORKER_MSG_STOP);
				pthread_join(srv->workers[j].thread, NULL);
			}
			srv->workers[i].thread = 0;
			return ret;
		}
	}
	for (int i = 0; i < srv->n_workers; i++)
		worker_release_listeners(&srv->workers[i]);
	log_started(srv);
	return 0;
}

struct running {
	struct server *srv;
	struct wg_hosted *wg;
	struct privdrop pd;
	struct reload reload;
	int notify_fd; /* $NOTIFY_SOCKET (systemd Type=notify), or -1 */
	/* spliced_build_info and the rest of the process's own metrics */
	struct stats_group group;
	struct stats_desc desc[6];
	char build_labels[192];
	uint64_t start_s;
	/* The start's snapshot: the TUN devices keep pointing into its configuration. */
	struct snapshot *first;
};

static void read_process(const struct stats_group *g, uint64_t *out)
{
	const struct running *r = g->ctx;

	out[0] = 1;
	out[1] = r->start_s;
	out[2] = r->reload.ok;
	out[3] = r->reload.failed;
	out[4] = r->reload.last_ok_s;
	out[5] = r->reload.gen;
}

/* The process as metrics: build info (version, wolfSSL, the ring's features), start, reloads. */
static void process_group(struct running *r)
{
	const struct loop_features *f = &r->srv->workers[0].loop.feat;
	struct crypto_info ci;

	crypto_info_get(&ci);
	snprintf(r->build_labels, sizeof(r->build_labels),
	         "version=\"%s\",wolfssl=\"%s\",wolfssl_version=\"%s\",io_uring=\"%s\","
	         "cqe_skip=\"%s\"",
	         SPLICED_VERSION, ci.backend, ci.version ? ci.version : "none",
	         f->defer_taskrun  ? "defer-taskrun"
	         : f->coop_taskrun ? "coop-taskrun"
	                           : "basic",
	         f->cqe_skip ? "yes" : "no");
	r->desc[0] = (struct stats_desc){"build_info",
	                                 "1, labelled with the version, the wolfSSL it links and "
	                                 "the io_uring set-up the kernel gave",
	                                 STATS_GAUGE, r->build_labels};
	r->desc[1] = (struct stats_desc){"start_time_seconds", "when spliced started, Unix seconds",
	                                 STATS_GAUGE, NULL};
	r->desc[2] = (struct stats_desc){"config_reloads", "SIGHUP reloads, by result",
	                                 STATS_COUNTER, "result=\"applied\""};
	r->desc[3] = (struct stats_desc){"config_reloads", "SIGHUP reloads, by result",
	                                 STATS_COUNTER, "result=\"refused\""};
	r->desc[4] = (struct stats_desc){"config_last_reload_success_timestamp_seconds",
	                                 "when the last reload was applied, Unix seconds (0: none)",
	                                 STATS_GAUGE, NULL};
	r->desc[5] = (struct stats_desc){"config_generation",
	                                 "reloads applied since start (the configuration in force)",
	                                 STATS_GAUGE, NULL};
	r->group = (struct stats_group){
	        .name = "process",
	        .family = "",
	        .desc = r->desc,
	        .n = sizeof(r->desc) / sizeof(r->desc[0]),
	        .read = read_process,
	        .ctx = r,
	};
	stats_register(&r->group);
}

static int serve(struct running *r, sigset_t *sigs)
{
	struct server *srv = r->srv;
	char status[128];

	/* Every listener is bound and every worker runs: what Type=notify waits for. */
	snprintf(status, sizeof(status),
	         "READY=1\nSTATUS=%zu inbounds on %d workers, %zu WireGuard "
	         "interfaces",
	         srv->snap->cfg->n_inbounds, srv->n_workers, srv->snap->cfg->n_wireguards);
	sdnotify(r->notify_fd, status);
	/*
	 * Start-up's garbage (the INI parse, the users files, c-ares' set-up
	 * reading resolv.conf) is freed by now, but its pages stay resident in
	 * the heap: give them back (issue 16, idle memory).
	 */
	malloc_trim(0);
	for (;;) {
		siginfo_t si;
		int sig = sigwaitinfo(sigs, &si);
		if (sig < 0)
			continue;
		if (sig == SIGHUP) {
			/* systemd's reload waits for the READY=1 after the real reload. */
			sdnotify_reloading(r->notify_fd);
			reload_run(&r->reload, srv, r->wg, &r->pd);
			snprintf(status, sizeof(status),
			         "READY=1\nSTATUS=%zu inbounds on %d workers, %zu WireGuard "
			         "interfaces (reload %u)",
			         srv->snap->cfg->n_inbounds, srv->n_workers,
			         srv->snap->cfg->n_wireguards, r->reload.gen);
			sdnotify(r->notify_fd, status);
		}
		if (sig == SIGHUP || sig == SIGUSR1)
			for (int i = 0; srv->snap->cfg->access_log && i < srv->n_workers; i++)
				worker_post(&srv->workers[i], WORKER_MSG_REOPEN_LOG);
		if (sig == SIGHUP)
			continue;
		if (sig == SIGUSR1) {
			user_accts_log(srv->accts, LOG_INFO);
			tun_devs_log_stats();
			if (srv->snap->cfg->n_wireguards)
				wg_hosted_dump_stats(r->wg);
			else
				log_info("SIGUSR1: no [wireguard] interface to report; the relay's "
				         "counters are logged at exit");
			continue;
		}
		log_info("%s: stopping (drain up to %u ms)", strsignal(sig),
		         srv->snap->cfg->drain_timeout_ms);
		sdnotify(r->notify_fd, "STOPPING=1");
		break;
	}
	for (int i = 0; i < srv->n_workers; i++)
		worker_post(&srv->workers[i], WORKER_MSG_STOP);
	for (int i = 0; i < srv->n_workers; i++)
		pthread_join(srv->workers[i].thread, NULL);
	return EXIT_OK;
}

/* Warnings about who may read or change the users files (L9); --check prints them too. */
static void audit_users_files(const struct config *cfg)
{
	for (size_t i = 0; i < cfg->n_inbounds; i++)
		if (cfg->inbounds[i].users_file)
			users_file_audit(cfg->inbounds[i].users_file,
			                 cfg->run_as ? cfg->run_uid : (uid_t)-1, stderr);
}

/*
 * Start-up order, so that every thread runs with the reduced credentials
 * (capabilities are per thread; a thread started before the drop would
 * keep root's): first everything that may need root (descriptor limit,
 * WireGuard TUN, sockets, routes and UAPI socket, then the rings and the
 * listeners), then the drop, then every thread: WireGuard devices, relay
 * workers (each resolves names on its own loop). The workers run even
 * without an inbound: a reload may add one, and [stats] is served by one.
 */
static int start(struct running *r)
{
	struct server *srv = r->srv;
	const struct config *cfg = srv->snap->cfg;
	struct privdrop_needs needs;
	int ret;

	ret = wg_hosted_create(cfg, &r->wg);
	if (ret < 0)
		return ret;
	/* TUN devices, their routes and rules: before the workers, which take a queue each. */
	ret = tun_devs_create(cfg, worker_count(cfg));
	if (ret < 0)
		return ret;
	ret = create_workers(srv);
	if (ret < 0)
		return ret;
	privdrop_needs(cfg, &needs);
	for (size_t i = 0; i < cfg->n_wireguards; i++)
		if (privdrop_port_privileged(wg_hosted_listen_port(r->wg, i)))
			privdrop_need(
			        &needs, CAP_NET_BIND_SERVICE, cfg->wireguards[i].line,
			        "a WireGuard ListenPort below net.ipv4.ip_unprivileged_port_start");
	ret = privdrop_apply(cfg, &needs, &r->pd);
	if (ret < 0)
		return ret;
	privdrop_warn_unreadable(&r->pd, cfg);
	ret = wg_hosted_run(r->wg);
	if (ret < 0)
		return ret;
	process_group(r);
	stats_register(&srv->stats); /* the "relay" sums, over workers that exist now */
	return start_workers(srv);
}

int main(int argc, char **argv)
{
	const char *path = NULL;
	bool check = false;
	struct config *cfg = NULL;
	struct server srv;
	struct running run;
	sigset_t sigs;
	struct args args = {.argc = argc, .argv = argv, .ind = 1};
	int opt, ret, rc = EXIT_RUNTIME;

	if (argc > 1 && strcmp(argv[1], "wg") == 0)
		return wg_main(argc - 1, argv + 1);
	ret = loop_kernel_profile_set(getenv("SPLICED_KERNEL_PROFILE"));
	if (ret < 0) {
		fprintf(stderr, "spliced: SPLICED_KERNEL_PROFILE=%s: %s\n",
		        getenv("SPLICED_KERNEL_PROFILE"),
		        ret == -EOPNOTSUPP ? "this build has no kernel profiles (built with "
		                             "-Dkernel_profiles=disabled)"
		                           : "not one of 5.10, 5.15, 6.1");
		return EXIT_CONFIG;
	}
	while ((opt = args_next(&args, ARGS_SPLICED_SHORT, args_spliced)) != -1) {
		switch (opt) {
		case 'c':
			path = args.arg;
			break;
		case 'k':
			check = true;
			break;
		case 'V':
			print_version();
			return EXIT_OK;
		case 'h':
			fputs(usage_text, stdout);
			return EXIT_OK;
		default:
			fputs(usage_text, stderr);
			return EXIT_CONFIG;
		}
	}
	if (args.ind < argc) {
		fprintf(stderr, "spliced: unexpected argument '%s'\n\n%s", argv[args.ind],
		        usage_text);
		return EXIT_CONFIG;
	}

	ret = config_load(path, &cfg, stderr);
	if (ret < 0) {
		if (ret != -EINVAL)
			fprintf(stderr, "spliced: %s: %s\n", path ? path : "(built-in)",
			        strerror(-ret));
		return EXIT_CONFIG;
	}
	/* Before anything else logs: the wg-quick files' and the users audit's warnings too. */
	log_level = cfg->log_level;
	if (backend_from_env(cfg) < 0) {
		config_free(cfg);
		return EXIT_CONFIG;
	}
	if (check && wg_hosted_check(cfg) < 0) {
		config_free(cfg);
		return EXIT_CONFIG;
	}
	audit_users_files(cfg);
	if (check) {
		printf("%s: configuration OK\n", cfg->file);
		config_free(cfg);
		return EXIT_OK;
	}

	/* Signals go to the main thread only (sigwaitinfo); workers inherit the mask. */
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGHUP);
	sigaddset(&sigs, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);

	memset(&srv, 0, sizeof(srv));
	memset(&run, 0, sizeof(run));
	run.srv = &srv;
	run.reload.path = path;
	run.start_s = (uint64_t)time(NULL);
	srv.n_workers = worker_count(cfg);
	reload_raise_nofile(cfg, srv.n_workers);
	srv.snap = snapshot_new(cfg, srv.n_workers, 0, stderr, &ret);
	cfg = NULL; /* the snapshot's from here on (or freed) */
	if (!srv.snap)
		return ret == -ENOMEM ? EXIT_RUNTIME : EXIT_CONFIG;
	cfg = srv.snap->cfg;
	worker_stats_group(&srv);
	srv.guard = auth_guard_new(cfg->max_auth_failures);
	srv.per_source = malloc(sizeof(*srv.per_source));
	srv.accts = user_accts_new(cfg);
	if (!srv.guard || !srv.per_source || !srv.accts || server_ss_init(&srv, cfg) < 0 ||
	    source_limit_init(srv.per_source, cfg->max_per_source, cfg->max_connections) < 0 ||
	    resolver_global_init() < 0) {
		log_error("cannot start: out of memory, or no randomness for the tables' keys");
		snapshot_unref(srv.snap);
		return EXIT_RUNTIME;
	}
	warn_open_inbounds(cfg);
	srv.alog_fd = -1;
	if (cfg->access_log) {
		/* Before the privilege drop: a root-owned log directory stays writable to us. */
		srv.alog_fd = alog_open(cfg->access_log);
		if (srv.alog_fd < 0) {
			log_error("access-log: cannot open %s: %s", cfg->access_log,
			          strerror(-srv.alog_fd));
			snapshot_unref(srv.snap);
			return EXIT_RUNTIME;
		}
	}
	/* Before the privilege drop: the connected socket works whoever spliced becomes. */
	run.notify_fd = sdnotify_open();
	snapshot_ref(srv.snap);
	run.first = srv.snap;
	if (start(&run) == 0)
		rc = serve(&run, &sigs);
	if (run.notify_fd >= 0)
		close(run.notify_fd);
	if (srv.alog_fd >= 0)
		close(srv.alog_fd);
	/* Every worker thread has been joined (serve, or start_workers on failure). */
	wg_hosted_stop(run.wg);
	if (srv.workers)
		log_stats(&srv);
	tun_devs_log_stats();
	/* Rules and routes removed, sysctls restored: the workers took their queues along. */
	tun_devs_destroy();
	snapshot_unref(run.first);
	if (run.group.desc) {
		stats_unregister(&run.group);
		stats_unregister(&srv.stats);
	}
	for (int i = 0; i < srv.n_workers && srv.workers; i++)
		worker_destroy(&srv.workers[i]);
	free(srv.workers);
	resolver_global_cleanup();
	auth_guard_free(srv.guard);
	source_limit_destroy(srv.per_source);
	free(srv.per_source);
	user_accts_free(srv.accts);
	server_ss_free(&srv);
	snapshot_unref(srv.snap);
	return rc;
}
