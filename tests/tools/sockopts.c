/* SPDX-License-Identifier: MIT */
/* sockopts: reports the TCP options another process set on its sockets (read through pidfd_getfd). */

/*
 * Usage: sockopts PID [each]
 * Walks /proc/PID/task/TID/fd of every thread (spliced's workers have their
 * own descriptor tables), takes a copy of each TCP socket with
 * pidfd_getfd(2) on a per-thread pidfd (PIDFD_THREAD, Linux 6.9+) and
 * prints one line:
 *   listen L listen_nodelay LN established E established_nodelay EN
 *   established_keepalive EK keepidle I
 * (I: the TCP_KEEPIDLE seconds the keepalive sockets share, -1 when they
 * differ, 0 when none has keepalive.)
 * With `each`, first one line per established TCP socket:
 *   sock LOCAL-PORT PEER-PORT keepidle I user_timeout U
 * (I: TCP_KEEPIDLE seconds, 0 without SO_KEEPALIVE; U: TCP_USER_TIMEOUT ms).
 * Each socket is counted once (by inode). Needs root (or ptrace rights on
 * PID). Exit 0, 1 when the process cannot be read, 2 on usage errors, 3 when
 * the kernel has no per-thread pidfds (before 6.9).
 */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef PIDFD_THREAD
#define PIDFD_THREAD O_EXCL /* include/uapi/linux/pidfd.h */
#endif

enum { MAX_SOCKS = 1 << 16 };

static unsigned long seen[MAX_SOCKS];
static unsigned n_seen;
static unsigned listen_n, listen_nodelay, est_n, est_nodelay, est_keepalive;
static int keepidle; /* 0: none seen yet, -1: they differ */
static bool each;

static int port_of(const struct sockaddr_storage *ss)
{
	return ntohs(((const struct sockaddr_in *)ss)->sin_port); /* sin6_port: same offset */
}

static bool already_seen(unsigned long ino)
{
	for (unsigned i = 0; i < n_seen; i++)
		if (seen[i] == ino)
			return true;
	if (n_seen < MAX_SOCKS)
		seen[n_seen++] = ino;
	return false;
}

static void inspect(int fd)
{
	int v = 0, nodelay = 0;
	socklen_t len = sizeof(v);
	struct tcp_info ti;

	if (getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &v, &len) || v != IPPROTO_TCP)
		return;
	len = sizeof(nodelay);
	if (getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &nodelay, &len))
		return;
	len = sizeof(v);
	if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &v, &len))
		return;
	if (v) {
		listen_n++;
		listen_nodelay += nodelay != 0;
		return;
	}
	len = sizeof(ti);
	if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) || ti.tcpi_state != TCP_ESTABLISHED)
		return;
	est_n++;
	est_nodelay += nodelay != 0;
	len = sizeof(v);
	int idle = 0;
	if (getsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &v, &len) == 0 && v) {
		len = sizeof(idle);
		getsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, &len);
		est_keepalive++;
		keepidle = keepidle == 0 || keepidle == idle ? idle : -1;
	}
	if (each) {
		struct sockaddr_storage me, peer;
		socklen_t ml = sizeof(me), pl = sizeof(peer);
		unsigned ut = 0;

		len = sizeof(ut);
		getsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &ut, &len);
		if (getsockname(fd, (struct sockaddr *)&me, &ml) == 0 &&
		    getpeername(fd, (struct sockaddr *)&peer, &pl) == 0)
			printf("sock %d %d keepidle %d user_timeout %u\n", port_of(&me),
			       port_of(&peer), idle, ut);
	}
}

static int walk_thread(int pid, int tid)
{
	char path[64];
	DIR *dir;
	struct dirent *de;
	int pidfd = (int)syscall(SYS_pidfd_open, tid, PIDFD_THREAD);

	if (pidfd < 0) {
		fprintf(stderr, "sockopts: pidfd_open %d: %s\n", tid, strerror(errno));
		return errno == EINVAL || errno == ENOSYS ? -2 : -1;
	}
	snprintf(path, sizeof(path), "/proc/%d/task/%d/fd", pid, tid);
	dir = opendir(path);
	if (!dir) {
		close(pidfd);
		return errno == ENOENT ? 0 : -1; /* the thread just exited */
	}
	while ((de = readdir(dir))) {
		char link[sizeof(path) + sizeof(de->d_name) + 1], target[64];
		struct stat st;
		int n = atoi(de->d_name), fd;
		ssize_t tl;

		if (de->d_name[0] == '.')
			continue;
		snprintf(link, sizeof(link), "%s/%s", path, de->d_name);
		tl = readlink(link, target, sizeof(target) - 1);
		if (tl <= 0)
			continue;
		target[tl] = 0;
		if (strncmp(target, "socket:", 7) || stat(link, &st) || already_seen(st.st_ino))
			continue;
		fd = (int)syscall(SYS_pidfd_getfd, pidfd, n, 0);
		if (fd < 0)
			continue; /* closed meanwhile */
		inspect(fd);
		close(fd);
	}
	closedir(dir);
	close(pidfd);
	return 0;
}

int main(int argc, char **argv)
{
	char path[64];
	DIR *dir;
	struct dirent *de;
	int pid;

	each = argc == 3 && strcmp(argv[2], "each") == 0;
	if ((argc != 2 && !each) || (pid = atoi(argv[1])) <= 0) {
		fprintf(stderr, "usage: sockopts PID [each]\n");
		return 2;
	}
	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	dir = opendir(path);
	if (!dir) {
		fprintf(stderr, "sockopts: %s: %s\n", path, strerror(errno));
		return 1;
	}
	while ((de = readdir(dir))) {
		if (de->d_name[0] == '.')
			continue;
		int ret = walk_thread(pid, atoi(de->d_name));
		if (ret < 0) {
			closedir(dir);
			return ret == -2 ? 3 : 1;
		}
	}
	closedir(dir);
	printf("listen %u listen_nodelay %u established %u established_nodelay %u "
	       "established_keepalive %u keepidle %d\n",
	       listen_n, listen_nodelay, est_n, est_nodelay, est_keepalive, keepidle);
	return 0;
}
