/* SPDX-License-Identifier: MIT */
/* Shadowsocks left out of this build (meson -Dshadowsocks=disabled): a section asking for it is refused. */
#include "config_internal.h"

/*
 * The error names the section's type line; the section's other keys
 * (method, password) are not checked: nothing would use them.
 */
static void refuse(struct parser *p)
{
	config_err(p, p->key_line[IN_TYPE], "type",
	           "this build has no Shadowsocks (built with -Dshadowsocks=disabled)");
}

int config_ss_method(struct parser *p, const char *v)
{
	(void)p, (void)v;
	return 0;
}

void config_ss_close_inbound(struct parser *p, struct inbound *in)
{
	(void)in;
	refuse(p);
}

void config_ss_close_outbound(struct parser *p, struct outbound *o)
{
	(void)o;
	_Static_assert((int)OUT_TYPE == (int)IN_TYPE, "both tables start with type");
	refuse(p);
}
