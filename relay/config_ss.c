/* SPDX-License-Identifier: MIT */
/* A shadowsocks section's method and key: what the config parser asks of proto/shadowsocks.c. */
#include <stdlib.h>
#include <string.h>

#include "config_internal.h"
#include "shadowsocks.h"

/* method = NAME: a Shadowsocks cipher (ss_method_names). */
int config_ss_method(struct parser *p, const char *v)
{
	char q[QUOTE_BYTES];
	enum ss_method m = ss_method_by_name(v);

	if (!m)
		kerr(p, "\"%s\" is not one of %s", config_quote(q, v), ss_method_names);
	return (int)m;
}

/*
 * A shadowsocks section's key from method and password (which is wiped):
 * an inbound takes one key, an outbound a 2022 identity key list.
 */
static struct ss_key *ss_key_build(struct parser *p, int method, char **password, int pw_line,
                                   bool list)
{
	struct ss_key *k = calloc(1, sizeof(*k));
	const char *why;

	if (!k) {
		config_err(p, pw_line, "password", "out of memory");
		return NULL;
	}
	why = ss_key_init(k, (enum ss_method)method, *password, list);
	explicit_bzero(*password, strlen(*password));
	free(*password);
	*password = NULL;
	if (why) {
		config_err(p, pw_line, "password", "%s", why);
		ss_key_free(k);
		return NULL;
	}
	return k;
}

/* [inbound NAME] type = shadowsocks: method, password, and users only with a 2022 AES method. */
void config_ss_close_inbound(struct parser *p, struct inbound *in)
{
	const struct ss_method_info *mi = ss_method_info((enum ss_method)in->ss_method);
	bool users = in->users_file || in->inline_users.n;

	config_require(p, IN_METHOD);
	config_require(p, IN_PASSWORD);
	if (in->ss_password && mi)
		in->ss = ss_key_build(p, in->ss_method, &in->ss_password, p->key_line[IN_PASSWORD],
		                      false);
	if (!users || !mi)
		return;
	if (!mi->v2022 || mi->alg == AEAD_CHACHA20_POLY1305) {
		config_err(
		        p, p->key_line[in->users_file ? IN_USERS : IN_USER],
		        in->users_file ? "users" : "user",
		        "needs 2022-blake3-aes-128-gcm or 2022-blake3-aes-256-gcm: users are told "
		        "apart by identity headers (SIP023), which only those methods have");
		return;
	}
	for (size_t i = 0; i < in->inline_users.n; i++) {
		uint8_t k[SS_SALT_MAX];

		if (ss_psk_decode(k, mi->key_len, in->inline_users.v[i].pass) < 0)
			config_err(p, p->key_line[IN_USER], "user",
			           "user \"%s\": the password is not base64 of a %u-byte key",
			           in->inline_users.v[i].name, mi->key_len);
		explicit_bzero(k, sizeof(k));
	}
}

/* [outbound NAME] type = shadowsocks: server, method and password; the key is a 2022 identity key list. */
void config_ss_close_outbound(struct parser *p, struct outbound *o)
{
	config_require(p, OUT_SERVER);
	config_require(p, OUT_METHOD);
	config_require(p, OUT_PASSWORD);
	if (o->password && o->ss_method)
		o->ss = ss_key_build(p, o->ss_method, &o->password, p->key_line[OUT_PASSWORD],
		                     true);
}
