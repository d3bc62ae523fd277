/* SPDX-License-Identifier: MIT */
/* Least privilege: after start-up, become [main] user/group with only the capabilities still needed. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "log.h"
#include "privdrop.h"

enum {
	UNPRIV_PORT_DEFAULT = 1024, /* net.ipv4.ip_unprivileged_port_start's default */
	CAP_WORDS = 2,              /* _LINUX_CAPABILITY_U32S_3 */
};

static const char *const cap_names[] = {
        [CAP_NET_BIND_SERVICE] = "CAP_NET_BIND_SERVICE",
        [CAP_NET_ADMIN] = "CAP_NET_ADMIN",
        [CAP_NET_RAW] = "CAP_NET_RAW",
};

const char *privdrop_cap_name(int cap, char buf[16])
{
	if (cap >= 0 && (size_t)cap < sizeof(cap_names) / sizeof(cap_names[0]) && cap_names[cap])
		return cap_names[cap];
	snprintf(buf, 16, "CAP_%d", cap);
	return buf;
}

/*
 * One integer from a /proc/sys file; def when it cannot be read. read() and
 * strtol rather than fscanf: start-up runs this, and scanf's code is a 64 KiB
 * window of libc text an idle process would otherwise keep (bench/idle).
 */
static long read_sysctl(const char *path, long def)
{
	char buf[32], *end;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;
	long v;

	if (fd < 0)
		return def;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return def;
	buf[n] = 0;
	errno = 0;
	v = strtol(buf, &end, 10);
	return errno || end == buf ? def : v;
}

bool privdrop_port_privileged(unsigned port)
{
	/* Per network namespace; spliced reads the one it runs in. */
	long start =
	        read_sysctl("/proc/sys/net/ipv4/ip_unprivileged_port_start", UNPRIV_PORT_DEFAULT);

	return port != 0 && (long)port < start;
}

/* SO_BINDTODEVICE on a socket not yet bound to a device needs no capability since 5.7. */
static bool bindtodevice_needs_raw(void)
{
	struct utsname u;
	unsigned major = 0, minor = 0;

	if (uname(&u) < 0 || sscanf(u.release, "%u.%u", &major, &minor) != 2)
		return true;
	return major < 5 || (major == 5 && minor < 7);
}

void privdrop_need(struct privdrop_needs *n, int cap, int line, const char *why)
{
	uint64_t bit = 1ull << cap;

	if (n->caps & bit)
		return; /* the first line asking for it is the one messages name */
	n->caps |= bit;
	n->line[cap] = line;
	n->why[cap] = why;
}

static unsigned listen_port(const struct inbound *in)
{
	if (in->listen.ss_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)&in->listen)->sin6_port);
	return ntohs(((const struct sockaddr_in *)&in->listen)->sin_port);
}

/* A listener of `bound` (the running configuration) has this address: it is not bound again. */
static bool already_bound(const struct config *bound, const struct inbound *in)
{
	for (size_t i = 0; bound && i < bound->n_inbounds; i++)
		if (bound->inbounds[i].listen_len == in->listen_len &&
		    !memcmp(&bound->inbounds[i].listen, &in->listen, in->listen_len))
			return true;
	return false;
}

static void needs_of(const struct config *cfg, const struct config *bound,
                     struct privdrop_needs *out)
{
	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < cfg->n_inbounds; i++)
		if (privdrop_port_privileged(listen_port(&cfg->inbounds[i])) &&
		    !already_bound(bound, &cfg->inbounds[i]))
			privdrop_need(out, CAP_NET_BIND_SERVICE, cfg->inbounds[i].line,
			              "a listen port below net.ipv4.ip_unprivileged_port_start");
	if (cfg->stats_listen_len &&
	    privdrop_port_privileged(
	            ntohs(((const struct sockaddr_in *)&cfg->stats_listen)->sin_port)) &&
	    !(bound && bound->stats_listen_len == cfg->stats_listen_len &&
	      !memcmp(&bound->stats_listen, &cfg->stats_listen, cfg->stats_listen_len)))
		privdrop_need(out, CAP_NET_BIND_SERVICE, cfg->stats_line,
		              "a [stats] listen port below net.ipv4.ip_unprivileged_port_start");
	for (size_t i = 0; i < cfg->n_inbounds; i++)
		if (cfg->inbounds[i].type == INBOUND_TPROXY && cfg->inbounds[i].udp)
			privdrop_need(
			        out, CAP_NET_ADMIN, cfg->inbounds[i].line,
			        "tproxy with udp (each reply is sent from its original destination: "
			        "IP_TRANSPARENT)");
	for (size_t i = 0; i < cfg->n_outbounds; i++) {
		const struct outbound *o = &cfg->outbounds[i];

		if (o->type != OUTBOUND_DIRECT)
			continue;
		/* SO_MARK: CAP_NET_ADMIN (CAP_NET_RAW also works since 5.17, but sniffs) */
		if (o->fwmark)
			privdrop_need(out, CAP_NET_ADMIN, o->line, "fwmark (SO_MARK)");
		if (o->bind_interface[0] && bindtodevice_needs_raw())
			privdrop_need(out, CAP_NET_RAW, o->line,
			              "bind-interface (SO_BINDTODEVICE before Linux 5.7)");
	}
	for (size_t i = 0; i < cfg->n_inbounds; i++)
		if (cfg->inbounds[i].type == INBOUND_TUN)
			privdrop_need(
			        out, CAP_NET_ADMIN, cfg->inbounds[i].line,
			        "type = tun (rules removed at exit, SO_MARK with auto-route)");
	for (size_t i = 0; i < cfg->n_wireguards; i++)
		privdrop_need(out, CAP_NET_ADMIN, cfg->wireguards[i].line,
		              "[wireguard] (routes and rules removed at exit, `wg set` rebinds)");
}

void privdrop_needs(const struct config *cfg, struct privdrop_needs *out)
{
	needs_of(cfg, NULL, out);
}

/* --- the drop --- */

static int capset_caps(uint64_t permitted, uint64_t effective)
{
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
	struct __user_cap_data_struct data[CAP_WORDS];

	memset(data, 0, sizeof(data));
	for (int i = 0; i < CAP_WORDS; i++) {
		data[i].permitted = (uint32_t)(permitted >> (32 * i));
		data[i].effective = (uint32_t)(effective >> (32 * i));
	}
	return syscall(SYS_capset, &hdr, data) < 0 ? -errno : 0;
}

static int capget_caps(uint64_t *permitted, uint64_t *effective)
{
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
	struct __user_cap_data_struct data[CAP_WORDS];

	if (syscall(SYS_capget, &hdr, data) < 0)
		return -errno;
	*permitted = *effective = 0;
	for (int i = 0; i < CAP_WORDS; i++) {
		*permitted |= (uint64_t)data[i].permitted << (32 * i);
		*effective |= (uint64_t)data[i].effective << (32 * i);
	}
	return 0;
}

/* Threads of this process, from /proc/self/task; 0 when /proc is not there. */
static int count_threads(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int n = 0;

	if (!d)
		return 0;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

/* Clears the bounding set of everything not kept (needs CAP_SETPCAP, so before setresuid). */
static int drop_bounding(uint64_t keep)
{
	for (int cap = 0; cap < PRIVDROP_CAPS; cap++) {
		if (prctl(PR_CAPBSET_READ, cap, 0, 0, 0) < 0)
			break; /* past the kernel's last capability */
		if (!(keep & 1ull << cap) && prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0)
			return -errno;
	}
	return 0;
}

/* True when the bounding set holds a capability outside keep. */
static bool bounding_beyond(uint64_t keep)
{
	for (int cap = 0; cap < PRIVDROP_CAPS; cap++) {
		int in = prctl(PR_CAPBSET_READ, cap, 0, 0, 0);

		if (in < 0)
			break;
		if (in && !(keep & 1ull << cap))
			return true;
	}
	return false;
}

/* "CAP_NET_ADMIN CAP_NET_BIND_SERVICE" or "none". */
static const char *caps_text(uint64_t caps, char *out, size_t len)
{
	size_t off = 0;

	snprintf(out, len, "none");
	for (int cap = 0; cap < PRIVDROP_CAPS && off < len; cap++) {
		char b[16];

		if (caps & 1ull << cap)
			off += (size_t)snprintf(out + off, len - off, "%s%s", off ? " " : "",
			                        privdrop_cap_name(cap, b));
	}
	return out;
}

/*
 * Pipe buffers of an unprivileged user are accounted per user: beyond
 * fs.pipe-user-pages-soft new pipes get 2 pages and F_SETPIPE_SZ fails, so
 * the relay keeps working with small pipes (more wake-ups). Root is exempt
 * (CAP_SYS_RESOURCE), which is why this only matters after the drop.
 */
static void warn_pipe_limit(const struct config *cfg)
{
	long soft = read_sysctl("/proc/sys/fs/pipe-user-pages-soft", 0);
	long page = sysconf(_SC_PAGESIZE);
	unsigned long long want = 2ull * cfg->max_connections * cfg->pipe_size;

	if (!cfg->n_inbounds || soft <= 0 || page <= 0 ||
	    want <= (unsigned long long)soft * (unsigned long long)page)
		return; /* no relay (WireGuard only), or room for every connection */
	log_warn("user %s: the kernel allows an unprivileged user %ld MiB of pipes "
	         "(fs.pipe-user-pages-soft = %ld, about %llu busy connections at pipe-size %u); "
	         "beyond that pipes shrink to %ld KiB: raise the sysctl for many busy connections",
	         cfg->run_user, soft * page >> 20, soft,
	         (unsigned long long)soft * (unsigned long long)page / (2ull * cfg->pipe_size),
	         cfg->pipe_size, 2 * page >> 10);
}

/* Already running as the user (e.g. started by systemd with User=): only shed capabilities. */
static int reduce_only(const struct config *cfg, uint64_t keep)
{
	uint64_t perm = 0, eff = 0;
	int ret = capget_caps(&perm, &eff);

	if (ret < 0)
		return ret;
	if (keep & ~perm) {
		char b[128];
		log_warn(
		        "user %s: capabilities %s are needed but not held; what needs them will fail",
		        cfg->run_user, caps_text(keep & ~perm, b, sizeof(b)));
		keep &= perm;
	}
	if (eff & 1ull << CAP_SETPCAP)
		drop_bounding(keep);
	return capset_caps(keep, keep);
}

int privdrop_apply(const struct config *cfg, const struct privdrop_needs *n, struct privdrop *out)
{
	uint64_t keep = n->caps, perm = 0, eff = 0;
	uid_t ru, eu, su;
	gid_t rg, eg, sg;
	char text[128];
	int threads = count_threads(), ret = 0;
	bool from_root = geteuid() == 0;

	memset(out, 0, sizeof(*out));
	if (!cfg->run_as)
		return 0;
	if (threads > 1) {
		/* a thread started earlier would keep root's capabilities */
		log_error("internal: %d threads exist before the privilege drop", threads);
		return -EBUSY;
	}
	if (!from_root) {
		if (geteuid() != cfg->run_uid || getegid() != cfg->run_gid) {
			log_error(
			        "[main] user = %s: spliced must start as root (or as that user) to "
			        "become it; it runs as uid %u",
			        cfg->run_user, (unsigned)geteuid());
			return -EPERM;
		}
		ret = reduce_only(cfg, keep);
		goto check;
	}
	/* Keep the permitted set across setresuid(); effective is cleared, set again below. */
	if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) < 0 || (ret = drop_bounding(keep)) < 0) {
		ret = ret < 0 ? ret : -errno;
		log_error("cannot drop capabilities: %s", strerror(-ret));
		return ret;
	}
	if (setgroups(0, NULL) < 0 || setresgid(cfg->run_gid, cfg->run_gid, cfg->run_gid) < 0 ||
	    setresuid(cfg->run_uid, cfg->run_uid, cfg->run_uid) < 0) {
		ret = -errno;
		log_error("cannot become user %s (uid %u, gid %u): %s", cfg->run_user,
		          (unsigned)cfg->run_uid, (unsigned)cfg->run_gid, strerror(-ret));
		return ret;
	}
	ret = capset_caps(keep, keep);
	prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0);
check:
	if (ret < 0) {
		log_error("cannot set capabilities: %s", strerror(-ret));
		return ret;
	}
	/* No ambient capabilities (EINVAL: a kernel before 4.3 has none), no new privileges. */
	if ((prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL) ||
	    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
		ret = -errno;
		log_error("cannot set no-new-privileges: %s", strerror(-ret));
		return ret;
	}
	/* Trust nothing: read back what the kernel says we are. */
	if (getresuid(&ru, &eu, &su) < 0 || getresgid(&rg, &eg, &sg) < 0 ||
	    capget_caps(&perm, &eff) < 0 || ru != cfg->run_uid || eu != ru || su != ru ||
	    rg != cfg->run_gid || eg != rg || sg != rg || perm & ~keep || eff != perm ||
	    prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1 ||
	    (from_root && (getgroups(0, NULL) != 0 || bounding_beyond(keep)))) {
		log_error("privilege drop did not take effect (uid %u, gid %u)", (unsigned)eu,
		          (unsigned)eg);
		return -EPERM;
	}
	out->dropped = true;
	out->kept = *n;
	out->kept.caps = perm;
	log_info("running as user %s (uid %u, gid %u); capabilities kept: %s; no new privileges",
	         cfg->run_user, (unsigned)ru, (unsigned)rg, caps_text(perm, text, sizeof(text)));
	warn_pipe_limit(cfg);
	return 0;
}

/* --- reloads --- */

/* Users files the current credentials cannot open: a warning (start) or an error (reload) each. */
static int unreadable_users(const struct config *cfg, bool warn)
{
	int bad = 0;

	for (size_t i = 0; i < cfg->n_inbounds; i++) {
		const struct inbound *in = &cfg->inbounds[i];
		int fd;

		if (!in->users_file)
			continue;
		fd = open(in->users_file, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
		if (fd >= 0) {
			close(fd);
			continue;
		}
		if (errno != EACCES && errno != EPERM)
			continue; /* missing or bad files are reported by the loader as usual */
		bad++;
		if (warn)
			log_warn("%s:%d: [inbound %s] users: \"%s\" is not readable by user %s: a "
			         "SIGHUP cannot re-read it (the users read at start stay in force)",
			         cfg->file, in->users_line, in->name, in->users_file,
			         cfg->run_user);
		else
			log_error("%s:%d: [inbound %s] users: \"%s\" is not readable by user %s: "
			          "needs a restart (or make it readable by that user)",
			          cfg->file, in->users_line, in->name, in->users_file,
			          cfg->run_user);
	}
	return bad;
}

void privdrop_warn_unreadable(const struct privdrop *pd, const struct config *cfg)
{
	if (pd->dropped)
		unreadable_users(cfg, true);
}

int privdrop_reload_check(const struct privdrop *pd, const struct config *running,
                          const struct config *cfg)
{
	struct privdrop_needs want;
	int bad = 0;

	if (!pd->dropped)
		return 0;
	needs_of(cfg, running, &want);
	for (int cap = 0; cap < PRIVDROP_CAPS; cap++) {
		char b[16];

		if (!(want.caps & ~pd->kept.caps & 1ull << cap))
			continue;
		log_error("%s:%d: %s needs %s, which spliced gave up when it became user %s: "
		          "needs a restart",
		          cfg->file, want.line[cap], want.why[cap], privdrop_cap_name(cap, b),
		          cfg->run_user);
		bad++;
	}
	bad += unreadable_users(cfg, false);
	return bad ? -EPERM : 0;
}
