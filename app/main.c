/* SPDX-License-Identifier: MIT */
/* spliced entry point: command line, signals, starting and stopping the workers. */
#include <errno.h>
#include <getopt.h>
#include <linux/capability.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

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
#include "resolve.h"
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
        "  SIGHUP             re-read every inbound's users file; open connections are\n"
        "                     untouched; on error the previous users stay in force.\n"
        "                     Reopens the access-log file by its name.\n"
        "  SIGUSR1            print the counters of every user who logged in and of\n"
        "                     every [wireguard] interface, and reopen the access-log\n"
        "                     file (for log rotation).\n"
        "\n"
        "Exit status: 0 after a clean stop, 1 on a runtime error (cannot listen,\n"
        "io_uring unavailable), 2 on a usage or configuration error.\n"
        "Every configuration key and its default: spliced.ini(5), docs/configuration.md\n"
        "(the rest: spliced(8)).\n";

static void print_version(void)
{
	struct utsname u;
	struct loop_features f;
	int ret;

	printf("spliced %s\n", SPLICED_VERSION);
	if (uname(&u) == 0)
		printf("kernel: %s %s %s\n", u.sysname, u.release, u.machine);
	ret = loop_probe(&f);
	if (ret < 0) {
		printf("io_uring: unavailable (%s)\n", strerror(-ret));
	} else {
		printf("io_uring: available; setup %s; ext-arg %s; fast-poll %s; cqe-skip %s\n",
		       f.defer_taskrun  ? "single-issuer+defer-taskrun"
		       : f.coop_taskrun ? "coop-taskrun"
		                        : "basic",
		       f.ext_arg ? "yes" : "no", f.fast_poll ? "yes" : "no",
		       f.cqe_skip ? "yes" : "no");
	}
	printf("data path: poll + splice(2) with SPLICE_F_NONBLOCK, pooled pipes\n");
	crypto_info_print(stdout);
}

/*
 * Enough descriptors for two legs per connection, plus headroom for the
 * pipes, which are held only while bytes are in flight (splice.c).
 * Workers run on private descriptor tables (worker.c), and the limit applies
 * to each table, so the need per table is divided by the worker count.
 */
static void raise_nofile(const struct config *cfg, int n_workers)
{
	struct rlimit rl;
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

static int worker_count(const struct config *cfg)
{
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);

	return cfg->workers > 0 ? cfg->workers : (ncpu > 0 ? (int)ncpu : 1);
}

static int load_users(struct server *srv, struct users **tables)
{
	const struct config *cfg = srv->cfg;
	int err = 0;

	for (size_t i = 0; i < cfg->n_inbounds; i++) {
		tables[i] = NULL;
		if (!inbound_requires_auth(&cfg->inbounds[i]))
			continue;
		tables[i] = inbound_users_build(&cfg->inbounds[i], stderr, &err);
		if (!tables[i]) {
			while (i--)
				if (tables[i]) {
					users_free(tables[i]);
					free(tables[i]);
				}
			return err ? err : -EINVAL;
		}
	}
	return 0;
}

static void free_users_table(struct users *u)
{
	if (u) {
		users_free(u);
		free(u);
	}
}

/*
 * Reloads, counted. The workers acknowledge a reload by adding one to
 * srv->reload_acks when their event handler sees the message; that counter
 * is never reset, so `posted` (messages sent, n_workers per reload) is what
 * it reads once every worker has acknowledged every reload so far. A
 * reload starts only then: an acknowledgement that arrives late (after a
 * reload gave up waiting) can never be taken for one of the next reload,
 * and since no message is pending when a reload posts its own, no two
 * coalesce into one acknowledgement. Tables replaced by a reload that gave
 * up waiting are held, not leaked, and freed once the count catches up.
 */
struct reload {
	unsigned gen;    /* reloads started */
	unsigned posted; /* RELOAD messages posted, all reloads */
	struct users *held[CONFIG_MAX_INBOUNDS];
	bool holding;
};

enum { RELOAD_WAIT_MS = 5000 };

static void free_held(struct reload *rl, size_t n_inbounds)
{
	for (size_t i = 0; rl->holding && i < n_inbounds; i++)
		free_users_table(rl->held[i]);
	rl->holding = false;
}

/*
 * SIGHUP: build every table first (all or nothing), publish them, then wait
 * until each worker has passed through its event handler, after which no
 * worker can still hold an old pointer (workers only use it inside one
 * completion handler), and free the old tables.
 */
static void reload_users(struct server *srv, struct reload *rl, const struct privdrop *pd)
{
	struct users *fresh[CONFIG_MAX_INBOUNDS], *old[CONFIG_MAX_INBOUNDS];
	const struct config *cfg = srv->cfg;
	unsigned acks = atomic_load(&srv->reload_acks);

	if (acks != rl->posted) {
		log_error("SIGHUP: reload %u is still not acknowledged by every worker (%u of %u); "
		          "users not reloaded",
		          rl->gen, acks - (rl->posted - (unsigned)srv->n_workers),
		          (unsigned)srv->n_workers);
		return;
	}
	free_held(rl, cfg->n_inbounds); /* every worker has moved past them */
	if (privdrop_reload_check(pd, cfg, cfg) < 0 || load_users(srv, fresh) < 0) {
		log_error("SIGHUP: users not reloaded; the previous users stay in force");
		return;
	}
	rl->gen++;
	for (size_t i = 0; i < cfg->n_inbounds; i++)
		old[i] = atomic_exchange(&srv->users[i], fresh[i]);
	rl->posted += (unsigned)srv->n_workers;
	for (int i = 0; i < srv->n_workers; i++)
		worker_post(&srv->workers[i], WORKER_MSG_RELOAD);
	for (int waited = 0; atomic_load(&srv->reload_acks) != rl->posted; waited++) {
		if (waited > RELOAD_WAIT_MS) {
			log_error(
			        "SIGHUP: reload %u: workers did not acknowledge within %d ms; the old "
			        "users tables are freed once they do",
			        rl->gen, RELOAD_WAIT_MS);
			memcpy(rl->held, old, cfg->n_inbounds * sizeof(old[0]));
			rl->holding = true;
			return;
		}
		usleep(1000);
	}
	for (size_t i = 0; i < cfg->n_inbounds; i++)
		free_users_table(old[i]);
	log_info("SIGHUP: users reloaded (reload %u)", rl->gen);
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
		if (access_open_to_all(&cfg->inbounds[i]))
			log_warn("inbound %s listens on %s without users or allow: anyone who can "
			         "reach it can use the proxy",
			         cfg->inbounds[i].name, sa_str(&cfg->inbounds[i].listen, addr));
}

/* Rings and listeners, no thread yet: everything here may need root (low ports). */
static int create_workers(struct server *srv)
{
	const struct config *cfg = srv->cfg;
	char addr[SA_STR_MAX];
	int ret;

	int n = worker_count(cfg);

	srv->workers = calloc((size_t)n, sizeof(*srv->workers));
	if (!srv->workers)
		return -ENOMEM;
	srv->n_workers = n;
	for (int i = 0; i < srv->n_workers; i++) {
		ret = worker_init(&srv->workers[i], i, srv);
		if (ret < 0) {
			srv->n_workers = i + 1;
			if (ret == -ENOSYS || ret == -EPERM)
				log_error(
				        "io_uring is unavailable (%s): check the sysctl "
				        "kernel.io_uring_disabled and the container's seccomp profile",
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
		log_info("inbound %s (%s) listening on %s", cfg->inbounds[j].name,
		         inbound_ops(cfg->inbounds[j].type)->name,
		         sa_str(&cfg->inbounds[j].listen, addr));
	}
	return 0;
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
	log_info("started %d workers (io_uring %s)", srv->n_workers,
	         srv->workers[0].loop.feat.defer_taskrun  ? "defer-taskrun"
	         : srv->workers[0].loop.feat.coop_taskrun ? "coop-taskrun"
	                                                  : "basic");
	return 0;
}

struct running {
	struct server *srv;
	struct wg_hosted *wg;
	struct privdrop pd;
	struct reload reload;
	int notify_fd; /* $NOTIFY_SOCKET (systemd Type=notify), or -1 */
};

static int serve(struct running *r, sigset_t *sigs)
{
	struct server *srv = r->srv;
	char status[128];

	/* Every listener is bound and every worker runs: what Type=notify waits for. */
	snprintf(status, sizeof(status),
	         "READY=1\nSTATUS=%zu inbounds on %d workers, %zu WireGuard "
	         "interfaces",
	         srv->cfg->n_inbounds, srv->n_workers, srv->cfg->n_wireguards);
	sdnotify(r->notify_fd, status);
	for (;;) {
		siginfo_t si;
		int sig = sigwaitinfo(sigs, &si);
		if (sig < 0)
			continue;
		if (sig == SIGHUP || sig == SIGUSR1)
			for (int i = 0; srv->alog_fd >= 0 && i < srv->n_workers; i++)
				worker_post(&srv->workers[i], WORKER_MSG_REOPEN_LOG);
		if (sig == SIGHUP) {
			sdnotify_reloading(r->notify_fd);
			reload_users(srv, &r->reload, &r->pd);
			sdnotify(r->notify_fd, "READY=1");
			continue;
		}
		if (sig == SIGUSR1) {
			user_accts_log(srv->accts, LOG_INFO);
			if (srv->cfg->n_wireguards)
				wg_hosted_dump_stats(r->wg);
			else
				log_info("SIGUSR1: no [wireguard] interface to report; the relay's "
				         "counters are logged at exit");
			continue;
		}
		log_info("%s: stopping (drain up to %u ms)", strsignal(sig),
		         srv->cfg->drain_timeout_ms);
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
 * workers (each resolves names on its own loop).
 */
static int start(struct running *r)
{
	struct server *srv = r->srv;
	const struct config *cfg = srv->cfg;
	struct privdrop_needs needs;
	int ret;

	ret = wg_hosted_create(cfg, &r->wg);
	if (ret < 0)
		return ret;
	if (cfg->n_inbounds) {
		ret = create_workers(srv);
		if (ret < 0)
			return ret;
	}
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
	return cfg->n_inbounds ? start_workers(srv) : 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
	        {"config", required_argument, NULL, 'c'},
	        {"check", no_argument, NULL, 'k'},
	        {"version", no_argument, NULL, 'V'},
	        {"help", no_argument, NULL, 'h'},
	        {NULL, 0, NULL, 0},
	};
	const char *path = NULL;
	bool check = false;
	struct config *cfg = NULL;
	struct server srv;
	struct users *tables[CONFIG_MAX_INBOUNDS];
	struct running run;
	sigset_t sigs;
	int opt, ret, rc = EXIT_RUNTIME;

	if (argc > 1 && strcmp(argv[1], "wg") == 0)
		return wg_main(argc - 1, argv + 1);
	while ((opt = getopt_long(argc, argv, "c:Vh", opts, NULL)) != -1) {
		switch (opt) {
		case 'c':
			path = optarg;
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
	if (optind < argc) {
		fprintf(stderr, "spliced: unexpected argument '%s'\n\n%s", argv[optind],
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
	srv.cfg = cfg;
	raise_nofile(cfg, worker_count(cfg));
	ret = load_users(&srv, tables);
	if (ret < 0) {
		config_free(cfg);
		return EXIT_CONFIG;
	}
	for (size_t i = 0; i < cfg->n_inbounds; i++)
		atomic_init(&srv.users[i], tables[i]);
	worker_stats_group(&srv);
	srv.guard = auth_guard_new(cfg->max_auth_failures);
	srv.per_source = malloc(sizeof(*srv.per_source));
	srv.accts = user_accts_new(cfg);
	if (!srv.guard || !srv.per_source || !srv.accts || server_ss_init(&srv) < 0 ||
	    source_limit_init(srv.per_source, cfg->max_per_source, cfg->max_connections) < 0 ||
	    resolver_global_init() < 0) {
		log_error("cannot start: out of memory, or no randomness for the tables' keys");
		config_free(cfg);
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
			config_free(cfg);
			return EXIT_RUNTIME;
		}
	}
	/* Before the privilege drop: the connected socket works whoever spliced becomes. */
	run.notify_fd = sdnotify_open();
	if (start(&run) == 0)
		rc = serve(&run, &sigs);
	if (run.notify_fd >= 0)
		close(run.notify_fd);
	if (srv.alog_fd >= 0)
		close(srv.alog_fd);
	/* Every worker thread has been joined (serve, or start_workers on failure). */
	wg_hosted_stop(run.wg);
	if (cfg->n_inbounds && srv.workers)
		log_stats(&srv);
	for (int i = 0; i < srv.n_workers; i++)
		worker_destroy(&srv.workers[i]);
	free(srv.workers);
	free_held(&run.reload, cfg->n_inbounds);
	resolver_global_cleanup();
	auth_guard_free(srv.guard);
	source_limit_destroy(srv.per_source);
	free(srv.per_source);
	user_accts_free(srv.accts);
	server_ss_free(&srv);
	for (size_t i = 0; i < cfg->n_inbounds; i++)
		free_users_table(atomic_load(&srv.users[i]));
	config_free(cfg);
	return rc;
}
