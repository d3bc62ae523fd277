/* SPDX-License-Identifier: MIT */
/* The access log (access-log = FILE | stderr): a line per finished connection, buffered per worker. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "access_log.h"
#include "conn.h"
#include "log.h"
#include "sockaddr.h"
#include "worker.h"

/*
 * A line (fields in this order, each key=value, values without blanks):
 *   2026-12-01T18:14:00.123Z inbound=s client=127.0.0.1:50312 user=alice
 *   target=example.org:443 remote=93.184.216.34:443 outbound=direct up=517
 *   down=4410 ms=182 result=ok
 * "-" where there is nothing to say (no user, no outbound leg). The line is
 * formatted when the connection is released and kept in the worker's
 * buffer; the buffer goes to the file with one write(2) once a second or
 * once 32 KiB wait, so the data path pays a snprintf per connection and no
 * syscall. O_APPEND keeps the workers' writes whole. Each worker has a
 * descriptor of its own, so SIGHUP/SIGUSR1 make each reopen the file by
 * its name without touching another's.
 */

enum { ALOG_BUF = 64 * 1024, ALOG_FLUSH_AT = 32 * 1024, ALOG_LINE_MAX = 1024 };

int alog_open(const char *path)
{
	int fd;

	if (strcmp(path, "stderr") == 0)
		return fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY, 0640);
	return fd < 0 ? -errno : fd;
}

void alog_begin(struct conn *c)
{
	struct worker *w = c->w;
	socklen_t len = sizeof(c->log->client);

	if (w->alog.fd < 0 || !(c->log = calloc(1, sizeof(*c->log))))
		return;
	c->log->start_ms = w->loop.now_ms;
	if (getpeername(c->leg[LEG_IN].fd, &c->log->client.sa, &len) < 0)
		c->log->client.sa.sa_family = AF_UNSPEC;
}

void alog_client(struct conn *c, const struct sockaddr_storage *sa)
{
	if (c->log)
		memcpy(&c->log->client, sa,
		       sa->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6)
		                                 : sizeof(struct sockaddr_in));
}

void alog_user(struct conn *c, const char *user)
{
	if (c->log && user)
		snprintf(c->log->user, sizeof(c->log->user), "%s", user);
}

void alog_target(struct conn *c, const struct proto_target *t)
{
	if (!c->log || !t)
		return;
	if (t->kind == TARGET_IP) {
		sa_str(&t->addr, c->log->target);
		return;
	}
	snprintf(c->log->target, sizeof(c->log->target), "%s:%u", t->host, t->port);
	/* A SOCKS5 name is any octets but NUL: no blank or line break may reach the log. */
	for (char *p = c->log->target; *p; p++)
		if ((unsigned char)*p <= ' ' || (unsigned char)*p >= 0x7f)
			*p = '?';
}

void alog_remote(struct conn *c, int fd)
{
	socklen_t len = sizeof(c->log->remote);

	if (c->log && getpeername(fd, &c->log->remote.sa, &len) < 0)
		c->log->remote.sa.sa_family = AF_UNSPEC;
}

void alog_result(struct conn *c, const char *why)
{
	if (c->log && !c->log->result)
		c->log->result = why;
}

static void flush(struct worker *w)
{
	size_t off = 0;

	while (off < w->alog.len) {
		ssize_t n = write(w->alog.fd, w->alog.buf + off, w->alog.len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			/* A full disk must not become a log flood: once a minute per worker. */
			if (w->loop.now_ms - w->alog.warned_ms >= 60000 || !w->alog.warned_ms) {
				w->alog.warned_ms = w->loop.now_ms;
				log_warn(
				        "worker %d: access-log: write: %s: %zu bytes of lines lost",
				        w->id, n < 0 ? strerror(errno) : "nothing written",
				        w->alog.len - off);
			}
			break;
		}
		off += (size_t)n;
	}
	w->alog.len = 0;
	w->alog.flushed_ms = w->loop.now_ms;
}

void alog_end(struct conn *c)
{
	struct worker *w = c->w;
	struct conn_log *l = c->log;
	char client[SA_STR_MAX] = "-", remote[SA_STR_MAX] = "-", ts[32];
	struct timespec now;
	struct tm tm;
	const char *result;
	int n;

	if (!l)
		return;
	c->log = NULL;
	if (!w->alog.buf && !(w->alog.buf = malloc(ALOG_BUF))) {
		free(l);
		return;
	}
	if (w->alog.len + ALOG_LINE_MAX > ALOG_BUF)
		flush(w);
	clock_gettime(CLOCK_REALTIME, &now);
	gmtime_r(&now.tv_sec, &tm);
	strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
	if (l->client.sa.sa_family != AF_UNSPEC)
		sa_str(&l->client, client);
	if (l->remote.sa.sa_family != AF_UNSPEC)
		sa_str(&l->remote, remote);
	result = l->result                ? l->result
	         : c->handed_over         ? "udp-associate"
	         : c->state == CONN_RELAY ? (c->rst ? "reset" : "ok")
	                                  : "closed";
	n = snprintf(w->alog.buf + w->alog.len, ALOG_LINE_MAX,
	             "%s.%03ldZ inbound=%s client=%s user=%s target=%s remote=%s outbound=%s "
	             "up=%llu down=%llu ms=%llu result=%s\n",
	             ts, now.tv_nsec / 1000000, c->snap->cfg->inbounds[c->inbound].name, client,
	             l->user[0] ? l->user : "-", l->target[0] ? l->target : "-", remote,
	             c->outbound >= 0 ? c->snap->cfg->outbounds[c->outbound].name : "-",
	             (unsigned long long)c->dir[0].bytes, (unsigned long long)c->dir[1].bytes,
	             (unsigned long long)(w->loop.now_ms - l->start_ms), result);
	if (n > 0 && (size_t)n >= ALOG_LINE_MAX) {
		/* Cut (it cannot be with today's limits): still one line, not glued to the next. */
		n = ALOG_LINE_MAX - 1;
		w->alog.buf[w->alog.len + (size_t)n - 1] = '\n';
	}
	if (n > 0)
		w->alog.len += (size_t)n;
	free(l);
}

void alog_tick(struct worker *w, int force)
{
	if (w->alog.fd < 0 || !w->alog.len)
		return;
	if (force || w->alog.len >= ALOG_FLUSH_AT || w->loop.now_ms - w->alog.flushed_ms >= 1000)
		flush(w);
}

uint64_t alog_due_ms(const struct worker *w)
{
	uint64_t since = w->loop.now_ms - w->alog.flushed_ms;

	return since >= 1000 ? 0 : 1000 - since;
}

void alog_reopen(struct worker *w)
{
	int fd;

	if (w->alog.fd < 0 || !w->alog.path)
		return;
	alog_tick(w, 1); /* what waits belongs to the old file */
	fd = alog_open(w->alog.path);
	if (fd < 0) {
		log_warn("worker %d: access-log %s: cannot reopen: %s; still writing the old file",
		         w->id, w->alog.path, strerror(-fd));
		return;
	}
	close(w->alog.fd);
	w->alog.fd = fd;
}
