/* SPDX-License-Identifier: MIT */
/* sd_notify(3) by hand: an AF_UNIX datagram socket connected to $NOTIFY_SOCKET. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "sdnotify.h"

int sdnotify_open(void)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	size_t n;
	socklen_t len;
	int fd;

	if (!path || !*path)
		return -1;
	n = strlen(path);
	if ((path[0] != '/' && path[0] != '@') || n >= sizeof(sa.sun_path)) {
		log_warn(
		        "NOTIFY_SOCKET=%s: neither a path nor @abstract name that fits: not notifying",
		        path);
		unsetenv("NOTIFY_SOCKET");
		return -1;
	}
	memcpy(sa.sun_path, path, n);
	if (path[0] == '@')
		sa.sun_path[0] = '\0'; /* abstract: no terminating NUL counts */
	len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + (path[0] == '/'));
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, len) < 0) {
		log_warn("NOTIFY_SOCKET=%s: %s: not notifying", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		fd = -1;
	}
	unsetenv("NOTIFY_SOCKET");
	return fd;
}

void sdnotify(int fd, const char *state)
{
	if (fd < 0)
		return;
	if (send(fd, state, strlen(state), MSG_NOSIGNAL) < 0)
		log_debug("sd_notify %s: %s", state, strerror(errno));
}

void sdnotify_reloading(int fd)
{
	struct timespec ts;
	char msg[64];

	clock_gettime(CLOCK_MONOTONIC, &ts);
	snprintf(msg, sizeof(msg), "RELOADING=1\nMONOTONIC_USEC=%llu",
	         (unsigned long long)ts.tv_sec * 1000000ull +
	                 (unsigned long long)ts.tv_nsec / 1000);
	sdnotify(fd, msg);
}
