/* SPDX-License-Identifier: MIT */
/* Unit tests for the wg-quick config parser, its file:line errors and the key encodings. */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>

#include "sockaddr.h"
#include "t.h"
#include "wgconf.h"

T_SUITE("wgconf");

/* A key pair from wg(8) and a hex form computed independently (base64 -d | xxd -p). */
static const char *b64_key = "YFBQhzqFx5FMIqSNqH3DW7nYFxpCGB0qXa4ePaOX5kM=";
static const char *hex_key = "605050873a85c7914c22a48da87dc35bb9d8171a42181d2a5dae1e3da397e643";

static void test_key_roundtrip(void)
{
	uint8_t k[32], k2[32];
	char b64[45], hex[65];

	T_EQ_INT(wgconf_key_from_base64(k, b64_key), 0);
	wgconf_key_to_base64(b64, k);
	T_EQ_STR(b64, b64_key);
	wgconf_key_to_hex(hex, k);
	T_EQ_STR(hex, hex_key);
	T_EQ_INT(wgconf_key_from_hex(k2, hex_key), 0);
	T_EQ_MEM(k, k2, 32);
	/* every byte value through both encodings */
	for (int i = 0; i < 256; i++) {
		memset(k, i, 32);
		k[0] = (uint8_t)(255 - i);
		wgconf_key_to_base64(b64, k);
		T_EQ_INT(wgconf_key_from_base64(k2, b64), 0);
		T_EQ_MEM(k, k2, 32);
		wgconf_key_to_hex(hex, k);
		T_EQ_INT(wgconf_key_from_hex(k2, hex), 0);
		T_EQ_MEM(k, k2, 32);
	}
}

static void test_key_rejects(void)
{
	uint8_t k[32];

	T_EQ_INT(wgconf_key_from_base64(k, ""), -EINVAL);
	T_EQ_INT(wgconf_key_from_base64(k, "YFBQhzqFx5FMIqSNqH3DW7nYFxpCGB0qXa4ePaOX5kM"), -EINVAL);
	T_EQ_INT(wgconf_key_from_base64(k, "YFBQhzqFx5FMIqSNqH3DW7nYFxpCGB0qXa4ePaOX5k!="),
	         -EINVAL);
	/* non-canonical: low padding bits set ('N' = 13, low two bits 01) */
	T_EQ_INT(wgconf_key_from_base64(k, "YFBQhzqFx5FMIqSNqH3DW7nYFxpCGB0qXa4ePaOX5kN="),
	         -EINVAL);
	/* two pads: 31 bytes, not a key */
	T_EQ_INT(wgconf_key_from_base64(k, "YFBQhzqFx5FMIqSNqH3DW7nYFxpCGB0qXa4ePaOX5k=="),
	         -EINVAL);
	/* 33 bytes of base64 */
	T_EQ_INT(wgconf_key_from_base64(k, "YFBQhzqFx5FMIqSNqH3DW7nYFxpCGB0qXa4ePaOX5kMA"),
	         -EINVAL);
	T_EQ_INT(wgconf_key_from_hex(
	                 k, "zz5050873a85c7914c22a48da87dc35bb9d8171a42181d2a5dae1e3da397e643"),
	         -EINVAL);
	T_EQ_INT(wgconf_key_from_hex(k, "6050"), -EINVAL);
}

static const char *good = "# a comment\n"
                          "[Interface]\n"
                          "PrivateKey = YFBQhzqFx5FMIqSNqH3DW7nYFxpCGB0qXa4ePaOX5kM=\n"
                          "ListenPort = 51820\n"
                          "Address = 10.9.0.1/24, fd00:9::1/64\n"
                          "FwMark = 0x1234\n"
                          "DNS = 1.1.1.1\n"
                          "\n"
                          "[Peer]\n"
                          "PublicKey = hEk3LrS1gNE2KOZ4iE2GeXH4V7HgbLWXXuIQIy2P3Ac=\n"
                          "PresharedKey = FpCyhws9cxwWoV4xELtfJvjJN+zQVRPISllRWgeopVE=\n"
                          "AllowedIPs = 10.9.0.2/32, 192.168.7.9/24\n"
                          "AllowedIPs = fd00:9::2/128\n"
                          "Endpoint = 127.0.0.1:51821 # trailing comment\n"
                          "PersistentKeepalive = 25\n"
                          "[Peer]\n"
                          "PublicKey = xTIBA5rboUvnH4htodjb6e697QjLERt1NAB4mZqp8Dg=\n"
                          "Endpoint = [::1]:9\n"
                          "[Spliced]\n"
                          "name = swg0\n"
                          "workers = 2\n"
                          "offload = off\n";

static void test_parse_good(void)
{
	struct wgconf c;
	char err[WGCONF_ERR_LEN];
	char ep[SA_STR_MAX];

	T_EQ_INT(wgconf_parse_string(&c, good, "good.conf", err, sizeof(err)), 0);
	if (err[0])
		T_FAILF("unexpected error %s", err);
	T_ASSERT(c.has_private_key);
	T_EQ_INT(c.listen_port, 51820);
	T_EQ_INT(c.fwmark, 0x1234);
	T_EQ_INT(c.mtu, WGCONF_DEFAULT_MTU);
	T_EQ_INT(c.n_addresses, 2);
	T_EQ_INT(c.addresses[0].family, AF_INET);
	T_EQ_INT(c.addresses[0].prefixlen, 24);
	T_EQ_INT(c.addresses[0].addr.bytes[3], 1); /* an address keeps its host bits */
	T_EQ_INT(c.addresses[1].family, AF_INET6);
	T_EQ_INT(c.n_peers, 2);
	T_ASSERT(c.peers[0].has_preshared_key);
	T_EQ_INT(c.peers[0].n_allowed_ips, 3);
	T_EQ_INT(c.peers[0].allowed_ips[1].addr.bytes[3], 0); /* a route prefix is masked */
	T_EQ_INT(c.peers[0].persistent_keepalive, 25);
	T_ASSERT(c.peers[0].has_endpoint);
	T_EQ_STR(sa_str(&c.peers[0].endpoint, ep), "127.0.0.1:51821");
	T_EQ_STR(sa_str(&c.peers[1].endpoint, ep), "[::1]:9");
	T_ASSERT(!c.peers[1].has_preshared_key);
	T_EQ_STR(c.name, "swg0");
	T_EQ_INT(c.workers, 2);
	T_ASSERT(!c.offload);
	wgconf_free(&c);
}

/* Each bad file must fail with exactly this "name:line: ..." prefix and mention the text. */
static void expect_error(const char *text, const char *prefix, const char *mention)
{
	struct wgconf c;
	char err[WGCONF_ERR_LEN];
	int ret = wgconf_parse_string(&c, text, "bad.conf", err, sizeof(err));

	T_ASSERT(ret < 0);
	if (strncmp(err, prefix, strlen(prefix)) != 0 || !strstr(err, mention))
		T_FAILF("error '%s' lacks '%s' or '%s'", err, prefix, mention);
}

static void test_parse_errors(void)
{
	expect_error("[Interface]\nPrivateKey = abc\n", "bad.conf:2:", "PrivateKey");
	expect_error(
	        "[Interface]\n\n[Peer]\nPublicKey = YFBQhzqFx5FMIqSNqH3DW7nYFxpCGB0qXa4ePaOX5kM\n",
	        "bad.conf:4:", "PublicKey");
	expect_error("[Peer]\nPublicKey = YFBQhzqFx5FMIqSNqH3DW7nYFxpCGB0qXa4ePaOX5kM=\n"
	             "PresharedKey = AAAA\n",
	             "bad.conf:3:", "PresharedKey");
	expect_error("[Interface]\nListenPort = 70000\n", "bad.conf:2:", "ListenPort");
	expect_error("[Interface]\nMTU = 100\n", "bad.conf:2:", "MTU");
	expect_error("[Interface]\nFrobnicate = 1\n", "bad.conf:2:", "Frobnicate");
	expect_error("[Interfaces]\n", "bad.conf:1:", "Interfaces");
	expect_error("PrivateKey = x\n", "bad.conf:1:", "outside");
	expect_error("[Interface\n", "bad.conf:1:", "]");
	expect_error("[Interface]\nAddress = 10.0.0.300/24\n", "bad.conf:2:", "10.0.0.300");
	expect_error("[Peer]\nAllowedIPs = 10.0.0.0/33\n", "bad.conf:2:", "AllowedIPs");
	expect_error("[Peer]\nEndpoint = ::1:51820\n", "bad.conf:2:", "Endpoint");
	expect_error("[Peer]\nAllowedIPs = 10.0.0.0/8\n", "bad.conf:1:", "PublicKey");
	expect_error("[Interface]\nPostUp = iptables -F\n", "bad.conf:2:", "PostUp");
	expect_error("[Interface]\nno equals sign\n", "bad.conf:2:", "Key = Value");
	expect_error("[Peer]\nPublicKey = YFBQhzqFx5FMIqSNqH3DW7nYFxpCGB0qXa4ePaOX5kM=\n"
	             "[Peer]\nPublicKey = YFBQhzqFx5FMIqSNqH3DW7nYFxpCGB0qXa4ePaOX5kM=\n",
	             "bad.conf:3:", "twice");
}

static void test_missing_file(void)
{
	struct wgconf c;
	char err[WGCONF_ERR_LEN];

	T_EQ_INT(wgconf_parse_file(&c, "/nonexistent/wg9.conf", err, sizeof(err)), -ENOENT);
	T_ASSERT(strstr(err, "/nonexistent/wg9.conf") != NULL);
}

/* wg-quick's Endpoint forms: host:port, [v6]:port (brackets around v4 too), names resolved now. */
static void test_endpoint_parse(void)
{
	static const char *bad[] = {
	        "",           "1.2.3.4",    "1.2.3.4:", "1.2.3.4:0",   "1.2.3.4:65536",
	        "1.2.3.4:8a", "1.2.3.4:-1", "::1:9",    "[::1]9",      "[::1]",
	        "[::1:9",     ":80",        "[]:80",    "1.2.3.4: 80", "300.1.1.1:80",
	};
	union wgconf_sockaddr ep;

	T_EQ_INT(wgconf_endpoint_parse("192.0.2.7:51821", &ep), 0);
	T_EQ_INT(ep.sa.sa_family, AF_INET);
	T_EQ_INT(ntohs(ep.in4.sin_port), 51821);
	T_EQ_INT(ntohl(ep.in4.sin_addr.s_addr), 0xc0000207);
	T_EQ_INT(wgconf_endpoint_parse("[1.2.3.4]:080", &ep), 0);
	T_EQ_INT(ep.sa.sa_family, AF_INET);
	T_EQ_INT(ntohs(ep.in4.sin_port), 80);
	T_EQ_INT(wgconf_endpoint_parse("[2001:db8::5]:65535", &ep), 0);
	T_EQ_INT(ep.sa.sa_family, AF_INET6);
	T_EQ_INT(ntohs(ep.in6.sin6_port), 65535);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (wgconf_endpoint_parse(bad[i], &ep) == 0)
			T_FAILF("accepted \"%s\"", bad[i]);
	/* a name is resolved at parse time (/etc/hosts), unless numeric hosts only */
	T_EQ_INT(wgconf_endpoint_parse("localhost:7", &ep), 0);
	T_ASSERT(ep.sa.sa_family == AF_INET || ep.sa.sa_family == AF_INET6);
	T_EQ_INT(ntohs(ep.sa.sa_family == AF_INET ? ep.in4.sin_port : ep.in6.sin6_port), 7);
	wgconf_numeric_hosts_only = true;
	T_EQ_INT(wgconf_endpoint_parse("localhost:7", &ep), -EHOSTUNREACH);
	T_EQ_INT(wgconf_endpoint_parse("127.0.0.1:7", &ep), 0);
	wgconf_numeric_hosts_only = false;
}

static void test_name_from_path(void)
{
	char n[16];

	T_EQ_INT(wgconf_name_from_path("/etc/wireguard/wg0.conf", n), 0);
	T_EQ_STR(n, "wg0");
	T_EQ_INT(wgconf_name_from_path("x/averyveryverylongname.conf", n), -EINVAL);
	T_EQ_INT(wgconf_name_from_path("bad name.conf", n), -EINVAL);
}

int main(void)
{
	T_RUN(test_key_roundtrip);
	T_RUN(test_key_rejects);
	T_RUN(test_parse_good);
	T_RUN(test_parse_errors);
	T_RUN(test_missing_file);
	T_RUN(test_endpoint_parse);
	T_RUN(test_name_from_path);
	return t_finish();
}
