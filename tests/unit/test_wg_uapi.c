/* SPDX-License-Identifier: MIT */
/* Unit tests for the wg(8) userspace API: set=1 parsing, get=1 formatting, the socket server. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "t.h"
#include "uapi_server.h"

T_SUITE("wg_uapi");

/* Two keys as wg(8) sends them over the UAPI (lowercase hex). */
#define K1 "605050873a85c7914c22a48da87dc35bb9d8171a42181d2a5dae1e3da397e643"
#define K2 "e84b5a6d2717c1003a13b431570353dbaca9146cf150c5f8575680feba52027a"
#define K3 "0000000000000000000000000000000000000000000000000000000000000000"

static void hex32(uint8_t out[32], const char *hex)
{
	for (int i = 0; i < 32; i++) {
		unsigned int b;

		sscanf(hex + 2 * i, "%2x", &b);
		out[i] = (uint8_t)b;
	}
}

static void test_parse_full(void)
{
	struct wg_uapi_set s;
	uint8_t k[32];
	char a[INET6_ADDRSTRLEN];
	const char *body = "private_key=" K1 "\n"
	                   "listen_port=51820\n"
	                   "fwmark=4294967295\n"
	                   "replace_peers=true\n"
	                   "public_key=" K2 "\n"
	                   "protocol_version=1\n"
	                   "preshared_key=" K1 "\n"
	                   "endpoint=192.0.2.7:51821\n"
	                   "persistent_keepalive_interval=25\n"
	                   "replace_allowed_ips=true\n"
	                   "allowed_ip=10.1.2.3/24\n"
	                   "allowed_ip=fd00::1:2/64\n"
	                   "public_key=" K1 "\n"
	                   "update_only=true\n"
	                   "endpoint=[2001:db8::5]:65535\n"
	                   "public_key=" K3 "\n"
	                   "remove=true\n";

	T_EQ_INT(wg_uapi_parse_set(&s, body), 0);
	hex32(k, K1);
	T_ASSERT(s.has_private_key);
	T_EQ_MEM(s.private_key, k, 32);
	T_ASSERT(s.has_listen_port);
	T_EQ_INT(s.listen_port, 51820);
	T_ASSERT(s.has_fwmark);
	T_EQ_INT(s.fwmark, 4294967295u);
	T_ASSERT(s.replace_peers);
	T_EQ_INT(s.n_peers, 3);
	if (s.n_peers != 3)
		goto out;
	hex32(k, K2);
	T_EQ_MEM(s.peers[0].public_key, k, 32);
	T_ASSERT(!s.peers[0].remove && !s.peers[0].update_only);
	T_ASSERT(s.peers[0].has_preshared_key);
	T_ASSERT(s.peers[0].has_endpoint);
	T_EQ_INT(s.peers[0].endpoint.sa.sa_family, AF_INET);
	T_EQ_INT(ntohs(s.peers[0].endpoint.in4.sin_port), 51821);
	T_EQ_INT(ntohl(s.peers[0].endpoint.in4.sin_addr.s_addr), 0xc0000207);
	T_ASSERT(s.peers[0].has_keepalive);
	T_EQ_INT(s.peers[0].keepalive, 25);
	T_ASSERT(s.peers[0].replace_allowed_ips);
	T_EQ_INT(s.peers[0].n_allowed_ips, 2);
	if (s.peers[0].n_allowed_ips == 2) {
		/* host bits are cleared, as the kernel does */
		T_EQ_INT(s.peers[0].allowed_ips[0].family, AF_INET);
		T_EQ_INT(s.peers[0].allowed_ips[0].prefixlen, 24);
		inet_ntop(AF_INET, s.peers[0].allowed_ips[0].addr.bytes, a, sizeof(a));
		T_EQ_STR(a, "10.1.2.0");
		T_EQ_INT(s.peers[0].allowed_ips[1].family, AF_INET6);
		T_EQ_INT(s.peers[0].allowed_ips[1].prefixlen, 64);
		inet_ntop(AF_INET6, s.peers[0].allowed_ips[1].addr.bytes, a, sizeof(a));
		T_EQ_STR(a, "fd00::");
	}
	T_ASSERT(s.peers[1].update_only);
	T_ASSERT(!s.peers[1].has_preshared_key && !s.peers[1].has_keepalive);
	T_EQ_INT(s.peers[1].endpoint.sa.sa_family, AF_INET6);
	T_EQ_INT(ntohs(s.peers[1].endpoint.in6.sin6_port), 65535);
	T_ASSERT(s.peers[2].remove);
out:
	wg_uapi_set_free(&s);
	T_EQ_INT(s.n_peers, 0); /* freed and wiped */
}

/* The body ends at the first empty line; a missing final newline is fine. */
static void test_parse_boundaries(void)
{
	struct wg_uapi_set s;

	T_EQ_INT(wg_uapi_parse_set(&s, ""), 0);
	T_ASSERT(!s.has_private_key && !s.has_listen_port && s.n_peers == 0);
	wg_uapi_set_free(&s);
	T_EQ_INT(wg_uapi_parse_set(&s, "listen_port=1\n\nlisten_port=x\n"), 0);
	T_EQ_INT(s.listen_port, 1);
	wg_uapi_set_free(&s);
	T_EQ_INT(wg_uapi_parse_set(&s, "listen_port=0"), 0);
	T_ASSERT(s.has_listen_port);
	T_EQ_INT(s.listen_port, 0);
	wg_uapi_set_free(&s);
	/* An all-zero private key means "remove it": parsed, flagged, zero. */
	T_EQ_INT(wg_uapi_parse_set(&s, "private_key=" K3 "\n"), 0);
	T_ASSERT(s.has_private_key);
	T_ASSERT(wgconf_key_is_zero(s.private_key));
	wg_uapi_set_free(&s);
	/* A peer with only a public key: created with nothing else set. */
	T_EQ_INT(wg_uapi_parse_set(&s, "public_key=" K2 "\n"), 0);
	T_EQ_INT(s.n_peers, 1);
	T_ASSERT(!s.peers[0].has_endpoint && !s.peers[0].replace_allowed_ips);
	wg_uapi_set_free(&s);
}

static void test_parse_rejects(void)
{
	static const struct {
		const char *body;
		int err;
	} bad[] = {
	        {"listen_port\n", -EINVAL},
	        {"nonsense=1\n", -EINVAL},
	        {"=1\n", -EINVAL},
	        {"listen_port=65536\n", -EINVAL},
	        {"listen_port=-1\n", -EINVAL},
	        {"listen_port= 1\n", -EINVAL},
	        {"listen_port=1x\n", -EINVAL},
	        {"listen_port=\n", -EINVAL},
	        {"listen_port=99999999999999999999999\n", -EINVAL},
	        {"fwmark=4294967296\n", -EINVAL},
	        {"replace_peers=false\n", -EINVAL},
	        {"private_key=" K1 "0\n", -EINVAL},
	        {"private_key=605050873a85c7914c22a48da87dc35bb9d8171a42181d2a5dae1e3da397e64\n",
	         -EINVAL},
	        {"private_key=z05050873a85c7914c22a48da87dc35bb9d8171a42181d2a5dae1e3da397e643\n",
	         -EINVAL},
	        /* peer keys before any public_key */
	        {"endpoint=192.0.2.1:1\n", -EINVAL},
	        {"allowed_ip=10.0.0.0/8\n", -EINVAL},
	        {"remove=true\n", -EINVAL},
	        /* device keys after a peer began */
	        {"public_key=" K2 "\nprivate_key=" K1 "\n", -EINVAL},
	        {"public_key=" K2 "\nlisten_port=1\n", -EINVAL},
	        {"public_key=" K2 "\nfwmark=1\n", -EINVAL},
	        {"public_key=" K2 "\nreplace_peers=true\n", -EINVAL},
	        {"public_key=nothex\n", -EINVAL},
	        {"public_key=" K2 "\nremove=1\n", -EINVAL},
	        {"public_key=" K2 "\nupdate_only=yes\n", -EINVAL},
	        {"public_key=" K2 "\nreplace_allowed_ips=false\n", -EINVAL},
	        {"public_key=" K2 "\npreshared_key=abc\n", -EINVAL},
	        {"public_key=" K2 "\npersistent_keepalive_interval=65536\n", -EINVAL},
	        {"public_key=" K2 "\nallowed_ip=10.0.0.1\n", -EINVAL},
	        {"public_key=" K2 "\nallowed_ip=10.0.0.0/33\n", -EINVAL},
	        {"public_key=" K2 "\nallowed_ip=fd00::/129\n", -EINVAL},
	        {"public_key=" K2 "\nallowed_ip=10.0.0.300/8\n", -EINVAL},
	        {"public_key=" K2 "\nendpoint=192.0.2.1\n", -EINVAL},
	        {"public_key=" K2 "\nendpoint=192.0.2.1:0\n", -EINVAL},
	        {"public_key=" K2 "\nendpoint=192.0.2.1:65536\n", -EINVAL},
	        {"public_key=" K2 "\nendpoint=2001:db8::1:5\n", -EINVAL},
	        {"public_key=" K2 "\nendpoint=[2001:db8::1]5\n", -EINVAL},
	        {"public_key=" K2 "\nendpoint=:5\n", -EINVAL},
	        {"public_key=" K2 "\nprotocol_version=2\n", -EPROTONOSUPPORT},
	};
	struct wg_uapi_set s;
	char line[1024];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int ret = wg_uapi_parse_set(&s, bad[i].body);

		if (ret != bad[i].err)
			T_FAILF("body \"%s\": %d, expected %d", bad[i].body, ret, bad[i].err);
		/* a failed parse leaves nothing to free */
		T_EQ_INT(s.n_peers, 0);
		T_ASSERT(s.peers == NULL);
	}
	/* A line longer than any valid one (511 bytes of key=value) is refused. */
	memset(line, 'a', sizeof(line));
	memcpy(line, "nonsense=", 9);
	line[600] = '\0';
	T_EQ_INT(wg_uapi_parse_set(&s, line), -EINVAL);
	/* A name that does not resolve (numeric hosts only here: no DNS from a unit test). */
	wgconf_numeric_hosts_only = true;
	T_EQ_INT(wg_uapi_parse_set(&s, "public_key=" K2 "\nendpoint=example.invalid:5\n"), -EINVAL);
	wgconf_numeric_hosts_only = false;
}

/* Many allowed IPs grow the arrays (realloc path). */
static void test_parse_many(void)
{
	size_t n = 3000, cap = n * 32 + 200, len = 0;
	char *body = malloc(cap);
	struct wg_uapi_set s;

	T_ASSERT(body != NULL);
	if (!body)
		return;
	len += (size_t)snprintf(body + len, cap - len, "public_key=%s\n", K2);
	for (size_t i = 0; i < n; i++)
		len += (size_t)snprintf(body + len, cap - len, "allowed_ip=10.%zu.%zu.0/24\n",
		                        i / 256, i % 256);
	T_EQ_INT(wg_uapi_parse_set(&s, body), 0);
	T_EQ_INT(s.n_peers, 1);
	if (s.n_peers == 1) {
		T_EQ_INT(s.peers[0].n_allowed_ips, n);
		T_EQ_INT(s.peers[0].allowed_ips[n - 1].addr.bytes[1], (n - 1) / 256);
		T_EQ_INT(s.peers[0].allowed_ips[n - 1].addr.bytes[2], (n - 1) % 256);
	}
	wg_uapi_set_free(&s);
	free(body);
}

static void fill_info(struct wg_uapi_info *info, struct netlink_prefix *aips)
{
	static struct wg_uapi_peer_info peers[2];

	memset(info, 0, sizeof(*info));
	memset(peers, 0, sizeof(peers));
	info->has_private_key = true;
	hex32(info->private_key, K1);
	info->listen_port = 51820;
	info->fwmark = 7;
	hex32(peers[0].public_key, K2);
	peers[0].has_preshared_key = true;
	hex32(peers[0].preshared_key, K1);
	peers[0].has_endpoint = true;
	peers[0].endpoint.in6.sin6_family = AF_INET6;
	peers[0].endpoint.in6.sin6_port = htons(4000);
	inet_pton(AF_INET6, "2001:db8::9", &peers[0].endpoint.in6.sin6_addr);
	peers[0].last_handshake.tv_sec = 1700000000;
	peers[0].last_handshake.tv_nsec = 123456789;
	peers[0].rx_bytes = 1ull << 40;
	peers[0].tx_bytes = 92;
	peers[0].keepalive = 25;
	memset(aips, 0, 2 * sizeof(*aips));
	aips[0].family = AF_INET;
	aips[0].prefixlen = 32;
	inet_pton(AF_INET, "10.0.0.2", aips[0].addr.bytes);
	aips[1].family = AF_INET6;
	aips[1].prefixlen = 0;
	peers[0].allowed_ips = aips;
	peers[0].n_allowed_ips = 2;
	hex32(peers[1].public_key, K1);
	info->peers = peers;
	info->n_peers = 2;
}

static void test_format_get(void)
{
	struct wg_uapi_info info;
	struct netlink_prefix aips[2];
	size_t len = 0;
	char *text;
	const char *want = "private_key=" K1 "\n"
	                   "listen_port=51820\n"
	                   "fwmark=7\n"
	                   "public_key=" K2 "\n"
	                   "preshared_key=" K1 "\n"
	                   "protocol_version=1\n"
	                   "endpoint=[2001:db8::9]:4000\n"
	                   "last_handshake_time_sec=1700000000\n"
	                   "last_handshake_time_nsec=123456789\n"
	                   "tx_bytes=92\n"
	                   "rx_bytes=1099511627776\n"
	                   "persistent_keepalive_interval=25\n"
	                   "allowed_ip=10.0.0.2/32\n"
	                   "allowed_ip=::/0\n"
	                   "public_key=" K1 "\n"
	                   "protocol_version=1\n"
	                   "last_handshake_time_sec=0\n"
	                   "last_handshake_time_nsec=0\n"
	                   "tx_bytes=0\n"
	                   "rx_bytes=0\n"
	                   "persistent_keepalive_interval=0\n"
	                   "errno=0\n\n";

	fill_info(&info, aips);
	text = wg_uapi_format_get(&info, &len);
	T_ASSERT(text != NULL);
	if (!text)
		return;
	T_EQ_STR(text, want);
	T_EQ_INT(len, strlen(want));
	free(text);
	/* No private key, no fwmark, no peers: only the port and errno. */
	memset(&info, 0, sizeof(info));
	info.listen_port = 1;
	text = wg_uapi_format_get(&info, &len);
	T_EQ_STR(text, "listen_port=1\nerrno=0\n\n");
	free(text);
}

static void test_set_from_conf(void)
{
	struct wgconf conf;
	struct wg_uapi_set s;
	char err[WGCONF_ERR_LEN];
	const char *text = "[Interface]\n"
	                   "PrivateKey = YFBQhzqFx5FMIqSNqH3DW7nYFxpCGB0qXa4ePaOX5kM=\n"
	                   "ListenPort = 7000\n"
	                   "FwMark = 0x10\n"
	                   "[Peer]\n"
	                   "PublicKey = 6EtabScXwQA6E7QxVwNT26ypFGzxUMX4V1aA/rpSAno=\n"
	                   "AllowedIPs = 10.0.0.0/8, fd00::/8\n"
	                   "Endpoint = 127.0.0.1:7001\n"
	                   "PersistentKeepalive = 5\n";
	uint8_t k[32];

	T_EQ_INT(wgconf_parse_string(&conf, text, "t.conf", err, sizeof(err)), 0);
	T_EQ_INT(wg_uapi_set_from_conf(&s, &conf), 0);
	hex32(k, K1);
	T_ASSERT(s.has_private_key);
	T_EQ_MEM(s.private_key, k, 32);
	T_EQ_INT(s.listen_port, 7000);
	T_EQ_INT(s.fwmark, 16);
	T_ASSERT(s.replace_peers);
	T_EQ_INT(s.n_peers, 1);
	if (s.n_peers == 1) {
		hex32(k, K2);
		T_EQ_MEM(s.peers[0].public_key, k, 32);
		T_ASSERT(s.peers[0].replace_allowed_ips);
		T_EQ_INT(s.peers[0].n_allowed_ips, 2);
		T_EQ_INT(s.peers[0].keepalive, 5);
		T_ASSERT(s.peers[0].has_endpoint);
		T_ASSERT(!s.peers[0].has_preshared_key);
	}
	wg_uapi_set_free(&s);
	wgconf_free(&conf);
}

/* A fake device for wg_uapi_serve: counts calls, keeps the last set request's shape. */
struct fake {
	int gets, sets, set_ret;
	uint16_t last_port;
	size_t last_peers;
};

static int fake_get(void *ctx, struct wg_uapi_info *out)
{
	struct fake *f = ctx;

	f->gets++;
	out->listen_port = 4242;
	return 0;
}

static int fake_set(void *ctx, const struct wg_uapi_set *req)
{
	struct fake *f = ctx;

	f->sets++;
	f->last_port = req->listen_port;
	f->last_peers = req->n_peers;
	return f->set_ret;
}

/* Writes requests, closes our sending side, serves, returns everything the server answered. */
static char *serve(struct fake *f, const char *requests)
{
	struct wg_uapi_ops ops = {.get = fake_get, .set = fake_set, .ctx = f};
	static char out[8192];
	size_t len = 0;
	ssize_t n;
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0)
		return NULL;
	if (write(sv[0], requests, strlen(requests)) != (ssize_t)strlen(requests))
		return NULL;
	shutdown(sv[0], SHUT_WR);
	wg_uapi_serve(sv[1], &ops, 1000);
	close(sv[1]);
	while ((n = read(sv[0], out + len, sizeof(out) - 1 - len)) > 0)
		len += (size_t)n;
	out[len] = '\0';
	close(sv[0]);
	return out;
}

static void test_serve(void)
{
	struct fake f = {0};
	char *r, want[32];

	r = serve(&f, "get=1\n\n");
	T_EQ_STR(r, "listen_port=4242\nerrno=0\n\n");
	T_EQ_INT(f.gets, 1);
	/* pipelined: a set then a get in one write */
	r = serve(&f, "set=1\nlisten_port=9\npublic_key=" K2 "\n\nget=1\n\n");
	T_EQ_STR(r, "errno=0\n\nlisten_port=4242\nerrno=0\n\n");
	T_EQ_INT(f.sets, 1);
	T_EQ_INT(f.last_port, 9);
	T_EQ_INT(f.last_peers, 1);
	/* the device's error comes back as a positive errno */
	f.set_ret = -EOPNOTSUPP;
	r = serve(&f, "set=1\nlisten_port=10\n\n");
	/* the host's own errno number: EOPNOTSUPP is 95 on x86 and ARM, 122 on MIPS */
	snprintf(want, sizeof(want), "errno=%d\n\n", EOPNOTSUPP);
	T_EQ_STR(r, want);
	f.set_ret = 0;
	/* a body that does not parse never reaches the device */
	r = serve(&f, "set=1\nlisten_port=x\n\n");
	T_EQ_STR(r, "errno=22\n\n");
	T_EQ_INT(f.sets, 2);
	/* an unknown request ends the connection after one error */
	r = serve(&f, "bogus=1\n\nget=1\n\n");
	T_EQ_STR(r, "errno=22\n\n");
	T_EQ_INT(f.gets, 2);
	/* a request cut short (no blank line) is never executed */
	r = serve(&f, "set=1\nlisten_port=11\n");
	T_EQ_STR(r, "");
	T_EQ_INT(f.sets, 2);
}

/*
 * A hostile client in a child process: mode 0 drips a never-ending request
 * one byte every 50 ms, mode 1 pipelines get=1 requests and never reads the
 * answers. Either way it gives up after 5 s. The server, given 300 ms, must
 * have let go while the child is still at it (review L10: at 13687be a
 * dripping client held the device's control thread as long as it liked).
 */
/*
 * The server's deadline: 300 ms, or 3 s under emulation (SPLICED_TEST_SLOW,
 * scripts/test-cross), which qemu on a loaded machine may need to answer
 * a single get; either way well inside the client's 5 s.
 */
static int serve_ms(void)
{
	const char *s = getenv("SPLICED_TEST_SLOW");

	return s && atoi(s) > 1 ? 3000 : 300;
}

static void serve_hostile(int mode)
{
	struct fake f = {0};
	struct wg_uapi_ops ops = {.get = fake_get, .set = fake_set, .ctx = &f};
	int sv[2], st;
	pid_t pid;

	T_EQ_INT(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	pid = fork();
	T_ASSERT(pid >= 0);
	if (pid == 0) {
		static const char get[] = "get=1\n\n";

		close(sv[1]);
		for (int i = 0; i < 100; i++) {
			if (mode == 0 && send(sv[0], "s", 1, MSG_NOSIGNAL) != 1)
				_exit(0);
			for (int k = 0; mode == 1 && k < 1000; k++)
				if (send(sv[0], get, sizeof(get) - 1, MSG_NOSIGNAL | MSG_DONTWAIT) <
				    0)
					break;
			usleep(50000);
		}
		_exit(0);
	}
	close(sv[0]);
	wg_uapi_serve(sv[1], &ops, serve_ms());
	close(sv[1]);
	/* still running: the server stopped on its own deadline, not at the client's end */
	T_EQ_INT(waitpid(pid, &st, WNOHANG), 0);
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	if (mode == 1)
		T_ASSERT(f.gets > 0);
}

static void test_serve_dripping_client(void)
{
	serve_hostile(0);
}

static void test_serve_client_not_reading(void)
{
	serve_hostile(1);
}

int main(void)
{
	T_RUN(test_parse_full);
	T_RUN(test_parse_boundaries);
	T_RUN(test_parse_rejects);
	T_RUN(test_parse_many);
	T_RUN(test_format_get);
	T_RUN(test_set_from_conf);
	T_RUN(test_serve);
	T_RUN(test_serve_dripping_client);
	T_RUN(test_serve_client_not_reading);
	return t_finish();
}
