/* SPDX-License-Identifier: MIT */
/* Runs the [wireguard NAME] interfaces of spliced.ini next to the relay workers. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device.h"
#include "log.h"
#include "wgconf.h"
#include "wg_hosted.h"

struct wg_hosted_dev {
	struct wgconf conf; /* kept for the device's lifetime, as `spliced wg up` does */
	struct wg_device *dev;
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

int wg_hosted_start(const struct config *cfg, struct wg_hosted **out)
{
	struct wg_hosted *h = calloc(1, sizeof(*h));
	int ret = 0;

	if (!h)
		return -ENOMEM;
	for (size_t i = 0; i < cfg->n_wireguards; i++) {
		const struct wireguard_sec *s = &cfg->wireguards[i];
		struct wg_device_opts opts = {
		        .name = s->name, .routes = true, .ready_fd = -1, .time_scale = 1};
		struct wg_hosted_dev *d = &h->v[h->n];

		ret = parse(s, &d->conf);
		if (ret < 0)
			break;
		opts.workers = d->conf.workers;
		opts.offload = d->conf.offload;
		ret = wg_device_create(&d->dev, &d->conf, &opts);
		if (ret < 0) {
			wgconf_free(&d->conf);
			log_error("wireguard %s: cannot bring the interface up", s->name);
			break;
		}
		h->n++;
		ret = -pthread_create(&d->thread, NULL, run, d);
		if (ret < 0) {
			log_error("wireguard %s: cannot start: %s", s->name, strerror(-ret));
			break;
		}
		d->running = true;
		pthread_setname_np(d->thread, "spliced-wg");
		log_info("wireguard %s: up (%s)", s->name, s->conf);
	}
	if (ret < 0) {
		wg_hosted_stop(h);
		return ret;
	}
	*out = h;
	return 0;
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
		wgconf_free(&h->v[i].conf);
	}
	free(h);
}
