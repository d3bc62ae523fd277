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

/*
 * What of a wg-quick file only a new interface takes: its addresses, MTU,
 * route table, whether it routes a /0 (with wg-quick's rules), workers and
 * offloads. A reload that changes one of them needs a restart.
 */
struct wg_fixed {
	unsigned mtu;
	enum wgconf_table table;
	uint32_t table_id;
	unsigned workers;
	bool offload, default_route;
	size_t n_addresses;
	struct netlink_prefix *addresses;
};

struct wg_hosted_dev {
	struct wg_device *dev;
	char name[CONFIG_IFNAME_MAX + 1];
	uint16_t listen_port; /* the file's ListenPort (0: random) */
	struct wg_fixed fixed;
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

static bool default_route(const struct wgconf *c)
{
	for (size_t i = 0; i < c->n_peers; i++)
		for (size_t j = 0; j < c->peers[i].n_allowed_ips; j++)
			if (c->peers[i].allowed_ips[j].prefixlen == 0)
				return true;
	return false;
}

static int fixed_of(const struct wgconf *c, struct wg_fixed *f)
{
	*f = (struct wg_fixed){.mtu = c->mtu,
	                       .table = c->table,
	                       .table_id = c->table_id,
	                       .workers = c->workers,
	                       .offload = c->offload,
	                       .default_route = default_route(c),
	                       .n_addresses = c->n_addresses};
	if (!c->n_addresses)
		return 0;
	f->addresses = malloc(c->n_addresses * sizeof(*f->addresses));
	if (!f->addresses)
		return -ENOMEM;
	memcpy(f->addresses, c->addresses, c->n_addresses * sizeof(*f->addresses));
	return 0;
}

/* The first of the fixed parts that differs, or NULL. */
static const char *fixed_changed(const struct wg_fixed *a, const struct wg_fixed *b)
{
	if (a->n_addresses != b->n_addresses ||
	    (a->n_addresses &&
	     memcmp(a->addresses, b->addresses, a->n_addresses * sizeof(*a->addresses))))
		return "Address";
	if (a->mtu != b->mtu)
		return "MTU";
	if (a->table != b->table || a->table_id != b->table_id)
		return "Table";
	if (a->default_route != b->default_route)
		return "a /0 in AllowedIPs (the default route and its rules)";
	if (a->workers != b->workers)
		return "[Spliced] Workers";
	if (a->offload != b->offload)
		return "[Spliced] Offload";
	return NULL;
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
		snprintf(d->name, sizeof(d->name), "%s", s->name);
		ret = fixed_of(&conf, &d->fixed);
		if (ret == 0)
			ret = wg_device_create(&d->dev, &conf, &opts);
		wgconf_free(&conf);
		if (ret < 0) {
			log_error("wireguard %s: cannot bring the interface up", s->name);
			free(d->fixed.addresses);
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
		free(h->v[i].fixed.addresses);
	}
	free(h);
}

/* --- reloads --- */

struct wg_hosted_change {
	size_t n;
	struct {
		int keep; /* index in h->v, or -1: dev is new (created, not running) */
		struct wgconf conf;
		struct wg_hosted_dev dev;
	} v[CONFIG_MAX_WIREGUARD];
	bool gone[CONFIG_MAX_WIREGUARD]; /* h->v[i] is not in the new configuration */
	bool routes;
};

static int find_dev(const struct wg_hosted *h, const char *name)
{
	for (size_t i = 0; i < h->n; i++)
		if (strcmp(h->v[i].name, name) == 0)
			return (int)i;
	return -1;
}

void wg_hosted_abort(struct wg_hosted_change *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n; i++) {
		wgconf_free(&c->v[i].conf);
		if (c->v[i].keep < 0) {
			wg_device_destroy(c->v[i].dev.dev);
			free(c->v[i].dev.fixed.addresses);
		}
	}
	free(c);
}

int wg_hosted_prepare(struct wg_hosted *h, const struct config *cfg, struct wg_hosted_change **out)
{
	struct wg_hosted_change *c = calloc(1, sizeof(*c));
	int ret = 0, bad = 0;

	*out = NULL;
	if (!c)
		return -ENOMEM;
	for (size_t i = 0; i < h->n; i++)
		c->gone[i] = true;
	for (size_t i = 0; i < cfg->n_wireguards; i++) {
		const struct wireguard_sec *s = &cfg->wireguards[i];
		struct wg_fixed f;
		const char *what;
		int k = find_dev(h, s->name);

		if (parse(s, &c->v[c->n].conf) < 0) {
			bad++;
			continue;
		}
		c->v[c->n].keep = k;
		c->n++;
		if (fixed_of(&c->v[c->n - 1].conf, &f) < 0) {
			ret = -ENOMEM;
			goto fail;
		}
		if (k >= 0) {
			c->gone[k] = false;
			what = fixed_changed(&h->v[k].fixed, &f);
			free(f.addresses);
			if (what) {
				log_error("%s:%d: [wireguard %s]: %s changed in %s, which needs a "
				          "restart (wg syncconf does not change it either)",
				          cfg->file, s->line, s->name, what, s->conf);
				bad++;
				continue;
			}
			/* Before anything changes: the new ListenPort can be had. */
			if (c->v[c->n - 1].conf.listen_port &&
			    c->v[c->n - 1].conf.listen_port != wg_device_port(h->v[k].dev) &&
			    (ret = wg_device_port_free(c->v[c->n - 1].conf.listen_port)) < 0) {
				log_error("%s:%d: [wireguard %s]: ListenPort %u: %s", cfg->file,
				          s->line, s->name, c->v[c->n - 1].conf.listen_port,
				          strerror(-ret));
				bad++;
			}
			continue;
		}
		/* A new interface: made now (TUN, addresses, routes, sockets), run at apply. */
		struct wg_hosted_dev *d = &c->v[c->n - 1].dev;
		struct wg_device_opts opts = {.name = s->name,
		                              .routes = true,
		                              .ready_fd = -1,
		                              .time_scale = 1,
		                              .workers = c->v[c->n - 1].conf.workers,
		                              .offload = c->v[c->n - 1].conf.offload};

		d->fixed = f;
		d->listen_port = c->v[c->n - 1].conf.listen_port;
		snprintf(d->name, sizeof(d->name), "%s", s->name);
		if (wg_device_create(&d->dev, &c->v[c->n - 1].conf, &opts) < 0) {
			log_error("%s:%d: [wireguard %s]: cannot bring the interface up", cfg->file,
			          s->line, s->name);
			bad++; /* d->dev is NULL: wg_hosted_abort() frees the rest */
		}
	}
	if (bad) {
		ret = -EINVAL;
		goto fail;
	}
	*out = c;
	return 0;
fail:
	wg_hosted_abort(c);
	return ret;
}

void wg_hosted_apply(struct wg_hosted *h, struct wg_hosted_change *c)
{
	struct wg_hosted_dev next[CONFIG_MAX_WIREGUARD];
	size_t n = 0;

	/* Gone: stopped and removed (its routes and rules too). */
	for (size_t i = 0; i < h->n; i++) {
		if (!c->gone[i])
			continue;
		if (h->v[i].running) {
			wg_device_stop(h->v[i].dev);
			pthread_join(h->v[i].thread, NULL);
		}
		wg_device_destroy(h->v[i].dev);
		free(h->v[i].fixed.addresses);
		log_info("wireguard %s: removed", h->v[i].name);
	}
	for (size_t i = 0; i < c->n; i++) {
		struct wg_hosted_dev *d;

		if (c->v[i].keep >= 0) {
			struct wg_sync_report rep;

			d = &h->v[c->v[i].keep];
			d->listen_port = c->v[i].conf.listen_port;
			if (wg_device_sync(d->dev, &c->v[i].conf, true, &rep) == 0)
				log_info(
				        "wireguard %s: peers %u added, %u removed, %u kept (no new "
				        "handshake); routes %u added, %u removed%s%s",
				        d->name, rep.added, rep.removed, rep.kept, rep.routes_added,
				        rep.routes_removed,
				        rep.key_changed ? "; new private key" : "",
				        rep.port_changed ? "; new listen port" : "");
			next[n++] = *d;
		} else {
			next[n++] = c->v[i].dev;
		}
		wgconf_free(&c->v[i].conf);
	}
	/* Kept threads read their entry only as they started: moving it is fine. */
	memcpy(h->v, next, n * sizeof(next[0]));
	h->n = n;
	for (size_t i = 0; i < c->n; i++) {
		struct wg_hosted_dev *d = &h->v[i];

		if (c->v[i].keep >= 0)
			continue;
		if (thread_start(&d->thread, run, d, "spliced-wg") == 0) {
			d->running = true;
			log_info("wireguard %s: up", d->name);
		} else {
			log_error("wireguard %s: cannot start its thread", d->name);
		}
	}
	free(c);
}
