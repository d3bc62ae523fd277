/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the users-file parser (relay/users.c) and the table it builds. */
#include "config.h"
#include "fuzz.h"

#include <errno.h>

/*
 * A lone word the target appends: the parser must refuse that line without
 * echoing it (it may be a password pasted on a line of its own).
 */
static const char canary[] = "Zq9-canary-PW";

/*
 * Every message is one printable line "fuzz.users:N: ..." with N a line of
 * the text (or "fuzz.users: ..." for a read error). Returns how many.
 */
static size_t check_messages(const char *msgs, size_t lines)
{
	size_t n = 0;

	for (const char *m = msgs; *m; n++) {
		const char *eol = strchr(m, '\n');
		char *end;
		unsigned long line;

		CHECK(eol);
		for (const char *c = m; c < eol; c++)
			CHECK((unsigned char)*c >= ' ' && *c != 0x7f);
		CHECK(strncmp(m, "fuzz.users:", 11) == 0);
		if (m[11] != ' ') {
			line = strtoul(m + 11, &end, 10);
			CHECK(line >= 1 && line <= lines && end[0] == ':' && end[1] == ' ');
		}
		m = eol + 1;
	}
	return n;
}

/* The linear, obviously right answer users_check_len() must agree with. */
static bool reference_check(const struct users *u, const char *name, size_t nl, const char *pass,
                            size_t pl)
{
	for (size_t i = 0; i < u->n; i++)
		if (strlen(u->v[i].name) == nl && !memcmp(u->v[i].name, name, nl) &&
		    strlen(u->v[i].pass) == pl && !memcmp(u->v[i].pass, pass, pl))
			return true;
	return false;
}

static void check_table(const struct users *u, const struct inbound *in, const uint8_t *data,
                        size_t size)
{
	for (size_t k = 0; k < u->n; k++) {
		const char *name = u->v[k].name, *pass = u->v[k].pass;
		size_t nl = strlen(name), pl = strlen(pass);

		CHECK(!users_check_name(name, nl) && !users_check_pass(pass, pl));
		CHECK(k == 0 || strcmp(u->v[k - 1].name, name) < 0); /* sorted, unique */
		CHECK(users_check(u, name, pass));
		if (pl > 1) /* a prefix of the password is not the password */
			CHECK(!users_check_len(u, name, nl, pass, pl - 1));
		for (size_t j = 0; j < in->inline_users.n; j++) /* disjoint from inline users */
			CHECK(strcmp(in->inline_users.v[j].name, name) != 0);
	}
	/* Probes cut from the input: the fixed-step search agrees with a linear scan. */
	for (size_t off = 0; off + 2 < size && off < 64; off += 7) {
		size_t nl = 1 + data[off] % 16, pl = 1 + data[off + 1] % 16;
		const char *name = (const char *)data + off + 2, *pass = name + nl;

		if (off + 2 + nl + pl > size)
			break;
		CHECK(users_check_len(u, name, nl, pass, pl) ==
		      (reference_check(u, name, nl, pass, pl) && !memchr(name, 0, nl) &&
		       !memchr(pass, 0, pl)));
	}
}

static int parse(const char *text, size_t len, const struct inbound *in, struct users *out,
                 char **msgs)
{
	size_t mlen;
	FILE *m = open_memstream(msgs, &mlen);
	/* fmemopen() refuses a zero size on some libcs */
	FILE *f = len ? fmemopen((void *)text, len, "r") : fmemopen("\n", 1, "r");
	int rc;

	CHECK(m && f);
	rc = users_load_stream(f, "fuzz.users", out, m, in);
	fclose(f);
	fclose(m);
	CHECK(rc == 0 || rc == -EINVAL || rc == -ENOMEM);
	CHECK((rc == 0) == (**msgs == '\0')); /* an error always says something */
	if (rc < 0)
		CHECK(out->n == 0 && out->v == NULL);
	return rc;
}

/*
 * Input: one selector octet (low 2 bits: how many inline users the inbound
 * has, so file names may clash with them), then the file's bytes, NULs and
 * CRs included.
 */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const inline_names[] = {"alice", "bob", "n"};
	struct inbound in = {0};
	struct users u;
	char *msgs = NULL, *text;
	size_t lines = 1;
	unsigned sel = size ? data[0] : 0;

	if (size) {
		data++;
		size--;
	}
	for (unsigned i = 0; i < (sel & 3) && i < 3; i++)
		CHECK(users_add(&in.inline_users, inline_names[i], strlen(inline_names[i]), "pw",
		                2) == 0);
	users_sort(&in.inline_users);
	for (size_t i = 0; i < size; i++)
		lines += data[i] == '\n';

	if (parse((const char *)data, size, &in, &u, &msgs) == 0)
		check_table(&u, &in, data, size);
	check_messages(msgs, lines);
	users_free(&u);
	free(msgs);

	/* The same text and a lone word: refused, never echoed. */
	if (!memmem(data, size, canary, sizeof(canary) - 1)) {
		text = malloc(size + sizeof(canary) + 2);
		CHECK(text);
		memcpy(text, data, size);
		memcpy(text + size, "\n", 1);
		memcpy(text + size + 1, canary, sizeof(canary) - 1);
		memcpy(text + size + sizeof(canary), "\n", 1);
		CHECK(parse(text, size + sizeof(canary) + 1, &in, &u, &msgs) == -EINVAL);
		CHECK(!strstr(msgs, canary));
		check_messages(msgs, lines + 2);
		users_free(&u);
		free(msgs);
		free(text);
	}
	users_free(&in.inline_users);
	return 0;
}
