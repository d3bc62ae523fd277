/* SPDX-License-Identifier: MIT */
/* spliced entry point: command line, signals, starting and stopping the workers. */
#include <errno.h>
#include <getopt.h>
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
#include "log.h"
#include "sockaddr.h"
#include "stats.h"
#include "loop.h"
#include "resolve.h"
#include "wg_cli.h"
#include "wg_hosted.h"
#include "worker.h"

enum exit_code { EXIT_OK = 0, EXIT_RUNTIME = 1, EXIT_CONFIG = 2 };

static const char usage_text[] =
        "Usage: spliced [-c FILE] [--check]\n"
        "       spliced --version | --help\n"
        "       spliced wg <genkey|pubkey|genpsk|up ...>   (userspace WireGuard)\n"
        "\n"
        "A relay for Linux: SOCKS5, HTTP CONNECT and port-forward inbounds; direct,\n"
        "upstream SOCKS5 and block outbounds. One io_uring worker per core; plain TCP\n"
        "payload moves with splice(2) and never enters user space.\n"
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
        "\n"
        "Exit status: 0 after a clean stop, 1 on a runtime error (cannot listen,\n"
        "io_uring unavailable), 2 on a usage or configuration error.\n"
        "See docs/configuration.md for every configuration key and its default.\n";

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
 * SIGHUP: build every table first (all or nothing), publish them, then wait
 * until each worker has passed through its event handler, after which no
 * worker can still hold an old pointer (workers only use it inside one
 * completion handler), and free the old tables.
 */
static void reload_users(struct server *srv)
{
	struct users *fresh[CONFIG_MAX_INBOUNDS], *old[CONFIG_MAX_INBOUNDS];
	const struct config *cfg = srv->cfg;

	if (load_users(srv, fresh) < 0) {
		log_error("SIGHUP: users not reloaded; the previous users stay in force");
		return;
	}
	for (size_t i = 0; i < cfg->n_inbounds; i++)
		old[i] = atomic_exchange(&srv->users[i], fresh[i]);
	atomic_store(&srv->reload_acks, 0);
	for (int i = 0; i < srv->n_workers; i++)
		worker_post(&srv->workers[i], WORKER_MSG_RELOAD);
	for (int waited = 0; atomic_load(&srv->reload_acks) < (unsigned)srv->n_workers; waited++) {
		if (waited > 5000) {
			log_error("SIGHUP: workers did not acknowledge; old users tables leaked");
			return;
		}
		usleep(1000);
	}
	for (size_t i = 0; i < cfg->n_inbounds; i++)
		free_users_table(old[i]);
	log_info("SIGHUP: users reloaded");
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
}

static int start_workers(struct server *srv)
{
	const struct config *cfg = srv->cfg;
	char addr[SA_STR_MAX];
	int ret;

	srv->n_workers = worker_count(cfg);
	srv->workers = calloc((size_t)srv->n_workers, sizeof(*srv->workers));
	if (!srv->workers)
		return -ENOMEM;
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
		static const char *const types[] = {"?", "socks5", "http", "forward"};
		log_info("inbound %s (%s) listening on %s", cfg->inbounds[j].name,
		         types[cfg->inbounds[j].type], sa_str(&cfg->inbounds[j].listen, addr));
	}
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

static int serve(struct server *srv, sigset_t *sigs)
{
	for (;;) {
		siginfo_t si;
		int sig = sigwaitinfo(sigs, &si);
		if (sig < 0)
			continue;
		if (sig == SIGHUP) {
			reload_users(srv);
			continue;
		}
		log_info("%s: stopping (drain up to %u ms)", strsignal(sig),
		         srv->cfg->drain_timeout_ms);
		break;
	}
	for (int i = 0; i < srv->n_workers; i++)
		worker_post(&srv->workers[i], WORKER_MSG_STOP);
	for (int i = 0; i < srv->n_workers; i++)
		pthread_join(srv->workers[i].thread, NULL);
	return EXIT_OK;
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
	struct wg_hosted *wg = NULL;
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
	if (check && wg_hosted_check(cfg) < 0) {
		config_free(cfg);
		return EXIT_CONFIG;
	}
	if (check) {
		printf("%s: configuration OK\n", cfg->file);
		config_free(cfg);
		return EXIT_OK;
	}
	log_level = cfg->log_level;

	/* Signals go to the main thread only (sigwaitinfo); workers inherit the mask. */
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);

	memset(&srv, 0, sizeof(srv));
	srv.cfg = cfg;
	raise_nofile(cfg, worker_count(cfg));
	ret = load_users(&srv, tables);
	if (ret < 0) {
		config_free(cfg);
		return EXIT_CONFIG;
	}
	for (size_t i = 0; i < cfg->n_inbounds; i++)
		atomic_init(&srv.users[i], tables[i]);
	ret = resolver_start(&srv.resolver, cfg->resolver_threads);
	if (ret < 0) {
		log_error("cannot start the resolver: %s", strerror(-ret));
		goto out;
	}
	if (wg_hosted_start(cfg, &wg) < 0)
		goto out;
	worker_stats_group(&srv);
	if (cfg->n_inbounds == 0 || start_workers(&srv) == 0)
		rc = serve(&srv, &sigs);
	wg_hosted_stop(wg);
	if (cfg->n_inbounds)
		log_stats(&srv);
out:
	resolver_stop(srv.resolver);
	for (int i = 0; i < srv.n_workers; i++)
		worker_destroy(&srv.workers[i]);
	free(srv.workers);
	for (size_t i = 0; i < cfg->n_inbounds; i++)
		free_users_table(atomic_load(&srv.users[i]));
	config_free(cfg);
	return rc;
}
