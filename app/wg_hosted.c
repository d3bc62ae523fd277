/* SPDX-License-Identifier: MIT */
/* Runs the [wireguard NAME] interfaces of spliced.ini next to the relay workers. */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device.h"
#include "log.h"
#include "thread.h"
#include "wgconf.h"
#include "wg_hosted.h"

struct wg_hosted_dev {
	struct wg_device *dev;
	uint16_t listen_port; /* the file's ListenPort (0: random) */
	pthread_t thread;
	bool running;
};

struct wg_hosted {
	size_t n;
	struct wg_hosted_dev v[CONFIG_MAX_WIREGUARD];
};

static int parse(const struct wireguard_sec *s, struct wgconf *conf)
{
	char err[WGCONF_ERR_LEN];
	int ret = wgconf_parse_file(conf, s->conf, err, sizeof(err));

	if (ret < 0)
		fprintf(stderr, "%s\n", err);
	return ret;
}

int wg_hosted_check(const struct config *cfg)
{
	int bad = 0;

	for (size_t i = 0; i < cfg->n_wireguards; i++) {
		struct wgconf conf;
		if (parse(&cfg->wireguards[i], &conf) < 0)
			bad = -EINVAL;
		else
			wgconf_free(&conf);
	}
	return bad;
}

static void *run(void *arg)
{
	struct wg_hosted_dev *d = arg;
	int ret = wg_device_run(d->dev);

	if (ret < 0)
		log_error("wireguard: device stopped: %s", strerror(-ret));
	return NULL;
}

/*
 * The wg-quick file's keys live in the parsed conf only until the device is
 * up: wg_device_create() copies the private key into the device's identity
 * and each PSK into its peer, and nothing reads the conf afterwards, so it
 * is wiped at once (wgconf_free() clears keys and PSKs) instead of staying
 * in memory for the device's lifetime.
 */
int wg_hosted_create(const struct config *cfg, struct wg_hosted **out)
{
	struct wg_hosted *h = calloc(1, sizeof(*h));
	int ret = 0;

	*out = NULL;
	if (!h)
		return -ENOMEM;
	for (size_t i = 0; i < cfg->n_wireguards; i++) {
		const struct wireguard_sec *s = &cfg->wireguards[i];
		struct wg_device_opts opts = {
		        .name = s->name, .routes = true, .ready_fd = -1, .time_scale = 1};
		struct wg_hosted_dev *d = &h->v[h->n];
		struct wgconf conf;

		ret = parse(s, &conf);
		if (ret < 0)
			break;
		opts.workers = conf.workers;
		opts.offload = conf.offload;
		d->listen_port = conf.listen_port;
		ret = wg_device_create(&d->dev, &conf, &opts);
		wgconf_free(&conf);
		if (ret < 0) {
			log_error("wireguard %s: cannot bring the interface up", s->name);
			break;
		}
		h->n++;
		log_info("wireguard %s: up (%s)", s->name, s->conf);
	}
	if (ret < 0) {
		wg_hosted_stop(h);
		return ret;
	}
	*out = h;
	return 0;
}

int wg_hosted_run(struct wg_hosted *h)
{
	int ret;

	for (size_t i = 0; h && i < h->n; i++) {
		struct wg_hosted_dev *d = &h->v[i];

		ret = thread_start(&d->thread, run, d, "spliced-wg");
		if (ret < 0) {
			log_error("wireguard: cannot start a device thread: %s", strerror(-ret));
			return ret;
		}
		d->running = true;
	}
	return 0;
}

uint16_t wg_hosted_listen_port(const struct wg_hosted *h, size_t i)
{
	return h && i < h->n ? h->v[i].listen_port : 0;
}

void wg_hosted_dump_stats(struct wg_hosted *h)
{
	for (size_t i = 0; h && i < h->n; i++)
		wg_device_dump_stats(h->v[i].dev);
}

void wg_hosted_stop(struct wg_hosted *h)
{
	if (!h)
		return;
	for (size_t i = 0; i < h->n; i++)
		if (h->v[i].running)
			wg_device_stop(h->v[i].dev);
	for (size_t i = 0; i < h->n; i++) {
		if (h->v[i].running)
			pthread_join(h->v[i].thread, NULL);
		wg_device_destroy(h->v[i].dev);
	}
	free(h);
}
