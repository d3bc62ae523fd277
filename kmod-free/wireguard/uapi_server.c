/* SPDX-License-Identifier: MIT */
/* The UAPI socket server: /var/run/wireguard/<name>.sock, one client at a time, under a deadline. */
#include "uapi_server.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "clock.h"

#define UAPI_DIR "/var/run/wireguard"

enum {
	READ_CHUNK = 4096,
};

int wg_uapi_listen(const char *name, char *path, size_t pathlen)
{
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	int fd = -1, probe = -1, ret;
	mode_t old;

	if (snprintf(sun.sun_path, sizeof(sun.sun_path), UAPI_DIR "/%s.sock", name) >=
	    (int)sizeof(sun.sun_path))
		return -ENAMETOOLONG;
	if (mkdir(UAPI_DIR, 0755) < 0 && errno != EEXIST)
		return -errno;
	/* A socket someone still answers on belongs to a running device: do not steal it. */
	probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (probe < 0)
		return -errno;
	if (connect(probe, (struct sockaddr *)&sun, sizeof(sun)) == 0) {
		ret = -EADDRINUSE;
		goto out;
	}
	unlink(sun.sun_path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		ret = -errno;
		goto out;
	}
	old = umask(0077);
	ret = bind(fd, (struct sockaddr *)&sun, sizeof(sun));
	umask(old);
	if (ret < 0 || listen(fd, 16) < 0) {
		ret = -errno;
		goto out;
	}
	snprintf(path, pathlen, "%s", sun.sun_path);
	close(probe);
	return fd;
out:
	if (fd >= 0)
		close(fd);
	close(probe);
	return ret;
}

/* One client connection: its descriptor and when serving it must end (CLOCK_MONOTONIC ms). */
struct client {
	int fd;
	int64_t deadline;
};

static int64_t now_ms(void)
{
	return (int64_t)(clock_ns() / 1000000);
}

/* Waits until fd is ready for events or the client's time is up: 0 or -ETIMEDOUT. */
static int wait_ready(const struct client *c, short events)
{
	for (;;) {
		int64_t left = c->deadline - now_ms();
		struct pollfd pfd = {.fd = c->fd, .events = events};
		int r;

		if (left <= 0)
			return -ETIMEDOUT;
		r = poll(&pfd, 1, (int)left);
		if (r > 0)
			return 0;
		if (r < 0 && errno != EINTR)
			return -errno;
	}
}

static int write_all(const struct client *c, const char *p, size_t len)
{
	while (len) {
		ssize_t n = write(c->fd, p, len);
		int ret;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN) {
			ret = wait_ready(c, POLLOUT);
			if (ret < 0)
				return ret;
			continue;
		}
		if (n <= 0)
			return n < 0 ? -errno : -EPIPE;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static void reply_errno(const struct client *c, int err)
{
	char buf[32];
	int n = snprintf(buf, sizeof(buf), "errno=%d\n\n", err < 0 ? -err : err);

	write_all(c, buf, (size_t)n);
}

static int do_get(const struct client *c, const struct wg_uapi_ops *ops)
{
	struct wg_uapi_info info;
	char *text;
	size_t len = 0;
	int ret;

	memset(&info, 0, sizeof(info));
	ret = ops->get(ops->ctx, &info);
	if (ret < 0) {
		reply_errno(c, ret);
		return 0;
	}
	text = wg_uapi_format_get(&info, &len);
	wg_uapi_info_free(&info);
	if (!text) {
		reply_errno(c, -ENOMEM);
		return 0;
	}
	ret = write_all(c, text, len);
	explicit_bzero(text, len);
	free(text);
	return ret;
}

static void do_set(const struct client *c, const struct wg_uapi_ops *ops, const char *body)
{
	struct wg_uapi_set req;
	int ret = wg_uapi_parse_set(&req, body);

	if (ret == 0) {
		ret = ops->set(ops->ctx, &req);
		wg_uapi_set_free(&req);
	}
	reply_errno(c, ret);
}

/* The end of a request: "get=1\n\n", or a set=1 body closed by an empty line. */
static char *request_end(char *buf, size_t len)
{
	for (size_t i = 1; i < len; i++)
		if (buf[i] == '\n' && buf[i - 1] == '\n')
			return buf + i + 1;
	return NULL;
}

void wg_uapi_serve(int fd, const struct wg_uapi_ops *ops, unsigned int timeout_ms)
{
	struct client c = {.fd = fd, .deadline = now_ms() + timeout_ms};
	char *buf = NULL;
	size_t len = 0, cap = 0;
	int fl = fcntl(fd, F_GETFL);

	/* Non-blocking, so that no read or write can outlast the deadline. */
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return;

	for (;;) {
		char *end;
		ssize_t n;

		while ((end = request_end(buf, len)) != NULL) {
			size_t used = (size_t)(end - buf);

			end[-1] = '\0';
			if (!strncmp(buf, "get=1\n", 6)) {
				if (do_get(&c, ops) < 0)
					goto out;
			} else if (!strncmp(buf, "set=1\n", 6)) {
				do_set(&c, ops, buf + 6);
			} else {
				reply_errno(&c, -EINVAL);
				goto out;
			}
			explicit_bzero(buf, used);
			memmove(buf, buf + used, len - used);
			len -= used;
		}
		if (len == cap) {
			char *nb;

			if (cap >= WG_UAPI_MAX_REQUEST)
				goto out;
			nb = malloc(cap ? cap * 2 : READ_CHUNK);
			if (!nb)
				goto out;
			if (buf) {
				memcpy(nb, buf, len);
				explicit_bzero(buf, cap);
				free(buf);
			}
			buf = nb;
			cap = cap ? cap * 2 : READ_CHUNK;
		}
		if (wait_ready(&c, POLLIN) < 0)
			goto out; /* the client's time is up */
		n = read(fd, buf + len, cap - len);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			goto out;
		len += (size_t)n;
	}
out:
	if (buf) {
		explicit_bzero(buf, cap);
		free(buf);
	}
}
