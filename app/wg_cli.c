/* SPDX-License-Identifier: MIT */
/* `spliced wg ...`: key helpers and bringing a userspace WireGuard interface up or down. */
#include "wg_cli.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <net/if.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "chacha.h"
#include "clock.h"
#include "crypto.h"
#include "device.h"
#include "log.h"
#include "netlink.h"
#include "strset.h"
#include "wgconf.h"

/* Environment switch that must accompany --unsafe-test-time-scale (tests only). */
#define TEST_KNOB_ENV "SPLICED_WG_ALLOW_TEST_KNOBS"

static struct wg_device *running;

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: spliced wg <command> [arguments]\n"
	        "\n"
	        "  genkey                 print a new private key (base64)\n"
	        "  pubkey                 read a private key on stdin, print its public key\n"
	        "  genpsk                 print a new preshared key\n"
	        "  up FILE.conf [options] create the interface described by a wg-quick file\n"
	        "      -n, --name NAME        interface name (default: [Spliced] name, else the\n"
	        "                             file name without .conf)\n"
	        "      -f, --foreground       stay in the foreground (default: detach once up)\n"
	        "      -w, --workers N        worker threads (default: one per CPU)\n"
	        "          --no-offload       no TUN TSO/GRO and no UDP GSO/GRO\n"
	        "          --no-routes        do not add addresses, routes or rules\n"
	        "  down NAME              delete the interface; its spliced process exits\n"
	        "  speed                  one-core ChaCha20-Poly1305 seal speed of the linked crypto\n"
	        "\n"
	        "Once up, `wg show NAME` and `wg set NAME ...` work through\n"
	        "/var/run/wireguard/NAME.sock. SIGUSR1 logs the drop counters to stderr.\n");
}

static int print_key(const uint8_t key[WG_KEY_LEN])
{
	char b64[WGCONF_KEY_B64_LEN + 1];

	wgconf_key_to_base64(b64, key);
	printf("%s\n", b64);
	wg_wipe(b64, sizeof(b64));
	return fflush(stdout) == 0 ? 0 : 1;
}

static int cmd_genkey(bool psk)
{
	uint8_t k[WG_KEY_LEN];
	int ret;

	if (isatty(STDOUT_FILENO))
		log_warn("writing a %s key to a terminal", psk ? "preshared" : "private");
	ret = psk ? wg_random(k, sizeof(k)) : wg_x25519_generate(k);
	if (ret < 0) {
		log_error("wg: cannot get random bytes: %s", strerror(-ret));
		return 1;
	}
	ret = print_key(k);
	wg_wipe(k, sizeof(k));
	return ret;
}

static int cmd_pubkey(void)
{
	char line[256];
	uint8_t priv[WG_KEY_LEN], pub[WG_KEY_LEN];
	size_t n;
	int ret = 1;

	if (!fgets(line, sizeof(line), stdin)) {
		log_error("wg pubkey: no key on stdin");
		return 1;
	}
	n = strset_cspan(line, "\r\n");
	line[n] = '\0';
	if (wgconf_key_from_base64(priv, line) < 0) {
		log_error("wg pubkey: private key on stdin is not 32 bytes of base64");
		goto out;
	}
	if (wg_x25519_public(pub, priv) < 0) {
		log_error("wg pubkey: cannot derive the public key");
		goto out;
	}
	ret = print_key(pub);
out:
	wg_wipe(line, sizeof(line));
	wg_wipe(priv, sizeof(priv));
	return ret;
}

/* Seals (then opens) MTU-sized packets for about a second each: the one-core ceiling of the data path. */
static double aead_rate(bool seal, uint8_t *buf, const uint8_t *key)
{
	enum { PKT = 1420, ROUNDS = 2048 };
	uint64_t n = 0, start = clock_ns();
	double secs;

	do {
		for (int i = 0; i < ROUNDS; i++, n++) {
			if (seal)
				wg_aead_seal(buf, buf, PKT, NULL, 0, n, key);
			else if (!wg_aead_open(buf + PKT + WG_AEAD_TAG_LEN, buf,
			                       PKT + WG_AEAD_TAG_LEN, NULL, 0, 0, key))
				return 0; /* cannot happen: buf was sealed with nonce 0 */
		}
		secs = (double)(clock_ns() - start) / 1e9;
	} while (secs < 1.0);
	return (double)n * PKT * 8 / secs / 1e9;
}

static int cmd_speed(void)
{
	enum { PKT = 1420 };
	static uint8_t buf[2 * (PKT + WG_AEAD_TAG_LEN)];
	uint8_t key[WG_KEY_LEN];
	double seal, open;

	if (wg_random(key, sizeof(key)) < 0 || wg_random(buf, sizeof(buf)) < 0)
		return 1;
	seal = aead_rate(true, buf, key);
	wg_aead_seal(buf, buf, PKT, NULL, 0, 0, key);
	open = aead_rate(false, buf, key);
	wg_wipe(key, sizeof(key));
	printf("chacha20-poly1305, %d-byte packets, one core (%s ChaCha20): seal %.2f Gbit/s, open "
	       "%.2f Gbit/s\n",
	       PKT, chacha_fast() ? chacha_impl() : "wolfSSL", seal, open);
	return open > 0 ? 0 : 1;
}

static void on_signal(int sig)
{
	if (!running)
		return;
	if (sig == SIGUSR1)
		wg_device_dump_stats(running);
	else
		wg_device_stop(running);
}

static int run_device(const struct wgconf *conf, struct wg_device_opts *opts)
{
	struct sigaction sa = {.sa_handler = on_signal};
	struct wg_device *d;
	int ret;

	ret = wg_device_create(&d, conf, opts);
	if (ret < 0)
		return 1;
	running = d;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGUSR1, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	ret = wg_device_run(d);
	running = NULL;
	wg_device_destroy(d);
	return ret < 0 ? 1 : 0;
}

/*
 * Detaching: the child builds the device and reports through a pipe, so
 * `spliced wg up` returns only once the interface exists (or with the
 * child's error).
 */
static int daemonize_and_run(const struct wgconf *conf, struct wg_device_opts *opts)
{
	int p[2];
	pid_t pid;
	char c;

	if (pipe2(p, O_CLOEXEC) < 0) {
		log_error("wg up: pipe: %s", strerror(errno));
		return 1;
	}
	pid = fork();
	if (pid < 0) {
		log_error("wg up: fork: %s", strerror(errno));
		return 1;
	}
	if (pid == 0) {
		close(p[0]);
		setsid();
		if (!freopen("/dev/null", "r", stdin))
			_exit(1);
		opts->ready_fd = p[1];
		_exit(run_device(conf, opts));
	}
	close(p[1]);
	if (read(p[0], &c, 1) == 1) {
		printf("%s: up (pid %d)\n", opts->name, (int)pid);
		close(p[0]);
		return 0;
	}
	close(p[0]);
	waitpid(pid, NULL, 0);
	return 1;
}

static int cmd_up(int argc, char **argv)
{
	static const struct option longopts[] = {
	        {"name", required_argument, NULL, 'n'},
	        {"foreground", no_argument, NULL, 'f'},
	        {"workers", required_argument, NULL, 'w'},
	        {"no-offload", no_argument, NULL, 'O'},
	        {"no-routes", no_argument, NULL, 'R'},
	        {"unsafe-test-time-scale", required_argument, NULL, 'T'},
	        {"help", no_argument, NULL, 'h'},
	        {NULL, 0, NULL, 0},
	};
	struct wg_device_opts opts = {
	        .routes = true, .offload = true, .time_scale = 1, .ready_fd = -1};
	char name[IFNAMSIZ] = "", err[WGCONF_ERR_LEN];
	const char *file;
	bool foreground = false, offload_set = false;
	struct wgconf conf;
	int c, ret;

	optind = 1;
	while ((c = getopt_long(argc, argv, "n:fw:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'n':
			if (!*optarg || strlen(optarg) >= IFNAMSIZ) {
				log_error("wg up: --name: '%s' is not 1-15 characters", optarg);
				return 2;
			}
			snprintf(name, sizeof(name), "%s", optarg);
			break;
		case 'f':
			foreground = true;
			break;
		case 'w':
			opts.workers = (unsigned int)atoi(optarg);
			if (opts.workers < 1 || opts.workers > WGCONF_MAX_WORKERS) {
				log_error("wg up: --workers: 1-%d", WGCONF_MAX_WORKERS);
				return 2;
			}
			break;
		case 'O':
			opts.offload = false;
			offload_set = true;
			break;
		case 'R':
			opts.routes = false;
			break;
		case 'T':
			/* Shortens every protocol timer; never something to set by accident. */
			if (!getenv(TEST_KNOB_ENV) || strcmp(getenv(TEST_KNOB_ENV), "1")) {
				log_error("wg up: --unsafe-test-time-scale needs %s=1",
				          TEST_KNOB_ENV);
				return 2;
			}
			opts.time_scale = (unsigned int)atoi(optarg);
			if (opts.time_scale < 1 || opts.time_scale > 1000) {
				log_error("wg up: --unsafe-test-time-scale: 1-1000");
				return 2;
			}
			log_warn("wg: protocol clock runs %ux faster (test only)", opts.time_scale);
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc - 1) {
		usage(stderr);
		return 2;
	}
	file = argv[optind];
	ret = wgconf_parse_file(&conf, file, err, sizeof(err));
	if (ret < 0) {
		log_error("%s", err);
		return 1;
	}
	if (!*name)
		snprintf(name, sizeof(name), "%s", conf.name);
	if (!*name && wgconf_name_from_path(file, name) < 0) {
		log_error("%s: cannot derive an interface name from the file name; use --name",
		          file);
		wgconf_free(&conf);
		return 1;
	}
	if (!opts.workers)
		opts.workers = conf.workers;
	if (!offload_set)
		opts.offload = conf.offload;
	opts.name = name;
	ret = foreground ? run_device(&conf, &opts) : daemonize_and_run(&conf, &opts);
	wgconf_free(&conf);
	return ret;
}

static int cmd_down(int argc, char **argv)
{
	unsigned int idx;
	int ret;

	if (argc != 2) {
		usage(stderr);
		return 2;
	}
	idx = if_nametoindex(argv[1]);
	if (!idx) {
		log_error("wg down: %s: no such interface", argv[1]);
		return 1;
	}
	ret = netlink_link_del((int)idx);
	if (ret < 0) {
		log_error("wg down: %s: %s", argv[1], strerror(-ret));
		return 1;
	}
	return 0;
}

int wg_main(int argc, char **argv)
{
	const char *cmd = argc > 1 ? argv[1] : NULL;

	if (!cmd || !strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
		usage(cmd ? stdout : stderr);
		return cmd ? 0 : 2;
	}
	if (!strcmp(cmd, "genkey") && argc == 2)
		return cmd_genkey(false);
	if (!strcmp(cmd, "genpsk") && argc == 2)
		return cmd_genkey(true);
	if (!strcmp(cmd, "pubkey") && argc == 2)
		return cmd_pubkey();
	if (!strcmp(cmd, "up"))
		return cmd_up(argc - 1, argv + 1);
	if (!strcmp(cmd, "speed") && argc == 2)
		return cmd_speed();
	if (!strcmp(cmd, "down"))
		return cmd_down(argc - 1, argv + 1);
	log_error("wg: unknown command '%s'", cmd);
	usage(stderr);
	return 2;
}
