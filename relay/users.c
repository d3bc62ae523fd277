/* SPDX-License-Identifier: MIT */
/* Users tables: users files, inline users, and the constant-time credential check. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "strset.h"

/*
 * Every name and password is stored in a zero-filled buffer of SLOT bytes, so
 * users_check() compares all of it without a length-dependent loop: neither
 * holds a NUL, so two slots are equal exactly when the strings are, and
 * slots order like strcmp() (a shorter string pads with 0, below any byte).
 */
enum { SLOT = USERS_FIELD_MAX + 1 };

static void __attribute__((format(printf, 4, 5)))
uerr(FILE *err, const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	if (!err)
		return;
	if (line > 0)
		fprintf(err, "%s:%d: ", file, line);
	else
		fprintf(err, "%s: ", file);
	va_start(ap, fmt);
	vfprintf(err, fmt, ap);
	va_end(ap);
	fputc('\n', err);
}

static int cmp_user(const void *a, const void *b)
{
	const struct user *x = a, *y = b;

	return strcmp(x->name, y->name);
}

/* Wipe and free one entry's strings. */
static void user_clear(struct user *e)
{
	if (e->pass) {
		explicit_bzero(e->pass, strlen(e->pass));
		free(e->pass);
	}
	free(e->name);
	e->name = e->pass = NULL;
}

void users_free(struct users *u)
{
	if (!u)
		return;
	users_ss_free(u);
	for (size_t i = 0; i < u->n; i++)
		user_clear(&u->v[i]);
	free(u->v);
	u->v = NULL;
	u->n = 0;
}

void users_destroy(struct users *u)
{
	users_free(u);
	free(u);
}

const char *users_check_name(const char *name, size_t len)
{
	if (len == 0)
		return "empty user name";
	if (len > USERS_FIELD_MAX)
		return "user name longer than 255 bytes";
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)name[i];
		if (ch <= ' ' || ch == ':' || ch == 0x7f)
			return "user name contains a space, ':' or a control character";
	}
	return NULL;
}

const char *users_check_pass(const char *pass, size_t len)
{
	if (len == 0)
		return "empty password";
	if (len > USERS_FIELD_MAX)
		return "password longer than 255 bytes";
	if (memchr(pass, '\0', len) || memchr(pass, '\n', len) || memchr(pass, '\r', len))
		return "password contains a NUL or line break";
	return NULL;
}

int users_add(struct users *u, const char *name, size_t name_len, const char *pass, size_t pass_len)
{
	struct user *v, e = {0};

	if (users_check_name(name, name_len) || users_check_pass(pass, pass_len))
		return -EINVAL;
	e.name = calloc(1, SLOT);
	e.pass = calloc(1, SLOT);
	if (!e.name || !e.pass)
		goto nomem;
	memcpy(e.name, name, name_len);
	memcpy(e.pass, pass, pass_len);
	v = realloc(u->v, (u->n + 1) * sizeof(*v));
	if (!v)
		goto nomem;
	u->v = v;
	u->v[u->n++] = e;
	return 0;
nomem:
	free(e.name);
	free(e.pass);
	return -ENOMEM;
}

void users_sort(struct users *u)
{
	if (u->n > 1)
		qsort(u->v, u->n, sizeof(*u->v), cmp_user);
}

/*
 * Three-way compare of two SLOT-byte fields without a branch or an early
 * exit on their content: every byte is read, the first difference wins
 * (the walk goes backwards and keeps the last difference seen). <0, 0, >0.
 */
static int ct_cmp(const unsigned char *a, const unsigned char *b)
{
	unsigned r = 0;

	for (size_t i = SLOT; i-- > 0;) {
		unsigned d = (unsigned)a[i] - (unsigned)b[i]; /* -255..255 as int */
		unsigned m = 0u - ((d | (0u - d)) >> 31);     /* all ones when d != 0 */

		r = (r & ~m) | (d & m);
	}
	return (int)r;
}

/*
 * Neither whether the name exists nor where it sorts shows in the time
 * taken: the search makes a fixed ceil(log2 n) steps (each compares a whole
 * slot in constant time and moves by a mask, not a branch), then one more
 * compare says whether the entry found is the name; the password is then
 * compared over the whole slot whatever that said. Which entries are read
 * does depend on the name (a cache side channel, not a network-visible one).
 */
bool users_check_len(const struct users *u, const char *name, size_t name_len, const char *pass,
                     size_t pass_len)
{
	unsigned char given_name[SLOT] = {0}, given[SLOT] = {0};
	volatile unsigned char diff = 0;
	size_t base = 0, len;
	unsigned found;
	int c;

	if (!u || !u->n || !name || !pass || name_len > USERS_FIELD_MAX ||
	    pass_len > USERS_FIELD_MAX)
		return false;
	memcpy(given_name, name, name_len);
	memcpy(given, pass, pass_len);
	/* base ends on the last entry <= name (or 0): upper-bound search, fixed steps */
	for (len = u->n; len > 1; len -= len / 2) {
		size_t half = len / 2;

		c = ct_cmp((const unsigned char *)u->v[base + half].name, given_name);
		base += half & ((size_t)0 - (((unsigned)(c - 1)) >> 31)); /* c <= 0 */
	}
	c = ct_cmp((const unsigned char *)u->v[base].name, given_name);
	found = 1u ^ (((unsigned)c | (0u - (unsigned)c)) >> 31);
	for (size_t i = 0; i < SLOT; i++)
		diff |= (unsigned char)(u->v[base].pass[i] ^ given[i]);
	/* A NUL inside a given field never matches (a stored one has none). */
	if (memchr(pass, '\0', pass_len) || memchr(name, '\0', name_len))
		found = 0;
	explicit_bzero(given, sizeof(given));
	return found & (diff == 0);
}

bool users_check(const struct users *u, const char *name, const char *pass)
{
	if (!name || !pass)
		return false;
	return users_check_len(u, name, strlen(name), pass, strlen(pass));
}

struct seen {
	const char *name;
	int line;
};

static int cmp_seen(const void *a, const void *b)
{
	const struct seen *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	return c ? c : x->line - y->line;
}

/* Report names that appear twice, at the later line. Returns the number found. */
static int report_duplicates(const struct users *u, const int *lines, const char *path, FILE *err)
{
	struct seen *s;
	int dups = 0;

	if (u->n < 2)
		return 0;
	s = calloc(u->n, sizeof(*s));
	if (!s)
		return -ENOMEM;
	for (size_t i = 0; i < u->n; i++)
		s[i] = (struct seen){u->v[i].name, lines[i]};
	qsort(s, u->n, sizeof(*s), cmp_seen);
	for (size_t i = 1; i < u->n; i++) {
		if (strcmp(s[i].name, s[i - 1].name) == 0) {
			uerr(err, path, s[i].line, "user \"%s\" already defined on line %d",
			     s[i].name, s[i - 1].line);
			dups++;
		}
	}
	free(s);
	return dups;
}

/*
 * One line: NAME, then ':' or a run of blanks, then the password up to the
 * end of the line (trailing blanks removed, inner blanks kept). Returns 0,
 * -EINVAL (message written) or -ENOMEM.
 */
static int parse_user_line(struct users *u, char *s, const char *path, int line, FILE *err,
                           const struct inbound *in)
{
	size_t n = strset_cspan(s, ": \t"), plen;
	const char *why, *pass;

	why = users_check_name(s, n); /* first: a bad name is never echoed */
	if (why) {
		uerr(err, path, line, "%s", why);
		return -EINVAL;
	}
	if (s[n] == '\0') {
		/* not echoed: a lone word may well be a password pasted on its own line */
		uerr(err, path, line,
		     "one word without a password (expected \"name password\"; not shown: it may "
		     "be a secret)");
		return -EINVAL;
	}
	pass = s + n + 1;
	if (s[n] != ':')
		pass += strset_span(pass, " \t");
	plen = strlen(pass);
	why = users_check_pass(pass, plen);
	if (why) {
		uerr(err, path, line, "user \"%.*s\": %s", (int)n, s, why);
		return -EINVAL;
	}
	s[n] = '\0'; /* the password starts after it */
	if (in && in->inline_users.n &&
	    bsearch(&(struct user){.name = s}, in->inline_users.v, in->inline_users.n,
	            sizeof(struct user), cmp_user)) {
		uerr(err, path, line, "user \"%s\" is also defined by a user = key in [inbound %s]",
		     s, in->name);
		return -EINVAL;
	}
	return users_add(u, s, n, pass, plen);
}

int users_load_stream(FILE *f, const char *path, struct users *out, FILE *err,
                      const struct inbound *in)
{
	char *buf = NULL;
	size_t cap = 0;
	int *lines = NULL, line = 0, bad = 0, rc = 0;
	ssize_t n;

	*out = (struct users){0};
	while ((n = getline(&buf, &cap, f)) >= 0) {
		char *s = buf;
		int *nl;

		line++;
		if ((size_t)n != strlen(buf)) {
			uerr(err, path, line, "line contains a NUL byte");
			bad++;
			continue;
		}
		while (n > 0 && strchr("\r\n \t", buf[n - 1]))
			buf[--n] = '\0';
		s += strset_span(s, " \t");
		if (*s == '\0' || *s == '#')
			continue;
		rc = parse_user_line(out, s, path, line, err, in);
		if (rc == -EINVAL) {
			bad++;
			continue;
		}
		if (rc < 0)
			goto out;
		/* A 2022 server's user: the password is the user's PSK (SIP023). */
		size_t klen = in ? users_ss_psk_bad(in, out->v[out->n - 1].pass) : 0;
		if (klen) {
			uerr(err, path, line,
			     "user \"%s\": the password is not base64 of a %zu-byte key "
			     "(openssl rand -base64 %zu makes one)",
			     out->v[out->n - 1].name, klen, klen);
			bad++;
		}
		nl = realloc(lines, out->n * sizeof(*lines));
		if (!nl) {
			rc = -ENOMEM;
			goto out;
		}
		lines = nl;
		lines[out->n - 1] = line;
	}
	if (ferror(f)) {
		rc = -(errno ? errno : EIO);
		uerr(err, path, 0, "read error: %s", strerror(-rc));
		goto out;
	}
	rc = report_duplicates(out, lines, path, err);
	if (rc < 0)
		goto out;
	bad += rc;
	rc = bad ? -EINVAL : 0;
	users_sort(out);
out:
	if (buf) {
		explicit_bzero(buf, cap);
		free(buf);
	}
	free(lines);
	if (rc < 0)
		users_free(out);
	return rc;
}

static int open_and_load(const char *path, struct users *out, FILE *err, const struct inbound *in)
{
	FILE *f = fopen(path, "re");
	int rc;

	*out = (struct users){0};
	if (!f) {
		rc = -errno;
		uerr(err, path, 0, "cannot open: %s", strerror(-rc));
		return rc;
	}
	rc = users_load_stream(f, path, out, err, in);
	fclose(f);
	return rc;
}

int users_file_audit(const char *path, uid_t owner, FILE *err)
{
	struct stat st;
	int n = 0;

	if (stat(path, &st) < 0)
		return 0; /* the loader says why it cannot read it */
	if (st.st_mode & 0007) {
		uerr(err, path, 0, "warning: readable or writable by every user (chmod o-rwx)");
		n++;
	}
	if (st.st_mode & 0020) {
		uerr(err, path, 0, "warning: writable by group %u (chmod g-w)",
		     (unsigned)st.st_gid);
		n++;
	}
	if (st.st_uid != 0 && st.st_uid != geteuid() && st.st_uid != owner) {
		uerr(err, path, 0, "warning: owned by uid %u, who can change who may log in",
		     (unsigned)st.st_uid);
		n++;
	}
	return n;
}

int users_load_file(const char *path, struct users *out, FILE *err)
{
	return open_and_load(path, out, err, NULL);
}

bool inbound_requires_auth(const struct inbound *in)
{
	return in->inline_users.n > 0 || in->users_file != NULL;
}

struct users *inbound_users_build(const struct inbound *in, FILE *err, int *err_out)
{
	struct users *u = calloc(1, sizeof(*u)), file = {0};
	int rc = 0;

	if (!u) {
		rc = -ENOMEM;
		goto out;
	}
	if (in->users_file) {
		rc = open_and_load(in->users_file, &file, err, in);
		if (rc < 0)
			goto out;
	}
	/* Both lists are valid and disjoint by now: merge them into one table. */
	for (size_t i = 0; i < in->inline_users.n + file.n; i++) {
		const struct user *e = i < in->inline_users.n ? &in->inline_users.v[i]
		                                              : &file.v[i - in->inline_users.n];
		rc = users_add(u, e->name, strlen(e->name), e->pass, strlen(e->pass));
		if (rc < 0)
			goto out;
	}
	users_sort(u);
	rc = users_ss_build(u, in, err);
out:
	users_free(&file);
	if (rc < 0) {
		users_destroy(u);
		u = NULL;
	}
	if (err_out)
		*err_out = rc;
	return u;
}
