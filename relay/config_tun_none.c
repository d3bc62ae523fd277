/* SPDX-License-Identifier: MIT */
/* The tun inbound left out of this build (meson -Dtun_inbound=disabled): a type = tun section is refused. */
#include "config_internal.h"

/* Its keys are read and dropped: the one error is the type line's (config_tun_close). */
#define DROP(key)                                                  \
	void config_tun_set_##key(struct parser *p, const char *v) \
	{                                                          \
		(void)p, (void)v;                                  \
	}
DROP(name)
DROP(mtu)
DROP(address)
DROP(routes)
DROP(auto_route)
DROP(table)
DROP(priority)
DROP(fwmark)
DROP(queues)
DROP(offload)
DROP(max_flows)
DROP(linger)
DROP(txqlen)
DROP(netns)
DROP(dns_server)
DROP(dns_hijack)
DROP(mapped_dns)

void config_tun_defaults(struct inbound *in)
{
	(void)in;
}

void config_tun_close(struct parser *p)
{
	config_err(p, p->key_line[IN_TYPE], "type",
	           "this build has no tun inbound (built with -Dtun_inbound=disabled)");
}

void config_tun_finish(struct parser *p)
{
	(void)p;
}
