/* SPDX-License-Identifier: MIT */
/* WireGuard left out of this build (meson -Dwireguard=disabled): [wireguard] sections and `spliced wg` say so. */
#include <errno.h>
#include <stdio.h>

#include "log.h"
#include "wg_cli.h"
#include "wg_hosted.h"

/* A configuration that asks for it is refused at its [wireguard] line, as any other error. */
static int refuse(const struct config *cfg)
{
	for (size_t i = 0; i < cfg->n_wireguards; i++)
		fprintf(stderr,
		        "%s:%d: [wireguard %s]: this build has no WireGuard "
		        "(built with -Dwireguard=disabled)\n",
		        cfg->file, cfg->wireguards[i].line, cfg->wireguards[i].name);
	return cfg->n_wireguards ? -EINVAL : 0;
}

int wg_hosted_check(const struct config *cfg)
{
	return refuse(cfg);
}

int wg_hosted_create(const struct config *cfg, struct wg_hosted **out)
{
	*out = NULL;
	return refuse(cfg);
}

int wg_hosted_run(struct wg_hosted *h)
{
	(void)h;
	return 0;
}

uint16_t wg_hosted_listen_port(const struct wg_hosted *h, size_t i)
{
	(void)h, (void)i;
	return 0;
}

void wg_hosted_dump_stats(struct wg_hosted *h)
{
	(void)h;
}

void wg_hosted_stop(struct wg_hosted *h)
{
	(void)h;
}

/* A reload: a [wireguard] section is refused as at start; with none there is nothing to change. */
int wg_hosted_prepare(struct wg_hosted *h, const struct config *cfg, struct wg_hosted_change **out)
{
	(void)h;
	*out = NULL;
	return refuse(cfg);
}

void wg_hosted_apply(struct wg_hosted *h, struct wg_hosted_change *c)
{
	(void)h, (void)c;
}

void wg_hosted_abort(struct wg_hosted_change *c)
{
	(void)c;
}

int wg_main(int argc, char **argv)
{
	(void)argc, (void)argv;
	fprintf(stderr,
	        "spliced wg: this build has no WireGuard (built with -Dwireguard=disabled)\n");
	return 2;
}
