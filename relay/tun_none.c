/* SPDX-License-Identifier: MIT */
/* The tun inbound left out of this build (meson -Dtun_inbound=disabled): config_tun_none.c refuses it. */
#include <errno.h>
#include <stddef.h>

#include "inbound.h"
#include "tun_dev.h"
#include "tun_internal.h"
#include "tun_queue.h"

/* Never reached: no configuration with a tun inbound gets past the parser. */
const struct inbound_ops inbound_tun_ops = {.name = "tun"};
const struct loop_module tun_queue_module = {.name = "tun"};
const struct loop_module tun_dns_module = {.name = "tun-dns"};

int tun_devs_create(const struct config *cfg, int n_workers)
{
	(void)cfg, (void)n_workers;
	return 0;
}

void tun_devs_log_stats(void)
{
}

void tun_devs_destroy(void)
{
}

struct tun_dev *tun_dev_get(unsigned inbound)
{
	(void)inbound;
	return NULL;
}

int tun_dev_listen_socket(struct tun_dev *d, int w_id)
{
	(void)d, (void)w_id;
	return -EOPNOTSUPP;
}

int tun_queue_open(struct worker *w, unsigned i, struct tun_queue **out)
{
	(void)w, (void)i;
	*out = NULL;
	return -EOPNOTSUPP;
}

void tun_queue_arm(struct tun_queue *q)
{
	(void)q;
}

void tun_queue_stop(struct tun_queue *q)
{
	(void)q;
}

int tun_queue_fd(const struct tun_queue *q)
{
	(void)q;
	return -1;
}

void tun_queue_tick(struct tun_queue *q)
{
	(void)q;
}
