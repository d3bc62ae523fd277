/* SPDX-License-Identifier: MIT */
/* Shadowsocks left out of this build: no 2022 inbound reaches the users tables (users_ss.c). */
#include <stdio.h>

#include "users.h"

size_t users_ss_psk_bad(const struct inbound *in, const char *pass)
{
	(void)in, (void)pass;
	return 0;
}

int users_ss_build(struct users *u, const struct inbound *in, FILE *err)
{
	(void)u, (void)in, (void)err;
	return 0;
}

void users_ss_free(struct users *u)
{
	(void)u;
}
