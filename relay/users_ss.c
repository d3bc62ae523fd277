/* SPDX-License-Identifier: MIT */
/* A Shadowsocks 2022 inbound's users (SIP023): each password a PSK, and the identity-header table. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "shadowsocks.h"
#include "users.h"

size_t users_ss_psk_bad(const struct inbound *in, const char *pass)
{
	uint8_t k[SS_SALT_MAX];
	size_t klen;
	int rc;

	if (in->type != INBOUND_SHADOWSOCKS || !in->ss)
		return 0;
	klen = ss_method_info(in->ss->method)->key_len;
	rc = ss_psk_decode(k, klen, pass);
	explicit_bzero(k, sizeof(k));
	return rc < 0 ? klen : 0;
}

int users_ss_build(struct users *u, const struct inbound *in, FILE *err)
{
	size_t klen;
	int rc;

	if (in->type != INBOUND_SHADOWSOCKS || !in->ss || !u->n)
		return 0;
	/* The identity-header table: BLAKE3(PSK)[0..16] to user, built once per load. */
	klen = ss_method_info(in->ss->method)->key_len;
	if (!(u->ss = calloc(1, sizeof(*u->ss))))
		return -ENOMEM;
	for (size_t i = 0; i < u->n; i++) {
		rc = ss_users_add(u->ss, u->v[i].name, u->v[i].pass, klen);
		if (rc < 0)
			return rc;
	}
	rc = ss_users_finish(u->ss);
	if (rc == -EEXIST && err)
		fprintf(err, "%s: two users have the same key: a key must name one user\n",
		        in->users_file ? in->users_file : in->name);
	return rc;
}

void users_ss_free(struct users *u)
{
	if (u->ss) {
		ss_users_free(u->ss);
		free(u->ss);
		u->ss = NULL;
	}
}
