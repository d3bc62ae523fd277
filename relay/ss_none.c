/* SPDX-License-Identifier: MIT */
/* Shadowsocks left out of this build (meson -Dshadowsocks=disabled): config_ss_none.c refuses it. */
#include <stddef.h>

#include "inbound.h"
#include "outbound.h"
#include "worker.h"

/* Never reached: no configuration with a shadowsocks inbound or outbound gets this far. */
const struct inbound_ops inbound_ss_ops = {.name = "shadowsocks"};
const struct outbound_ops outbound_ss_ops = {.name = "shadowsocks"};

int server_ss_init(struct server *srv, const struct config *cfg)
{
	(void)srv, (void)cfg;
	return 0;
}

struct replay *server_ss_replay(const struct server *srv, const struct inbound *in)
{
	(void)srv, (void)in;
	return NULL;
}

void server_ss_free(struct server *srv)
{
	(void)srv;
}
