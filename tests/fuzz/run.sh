#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Build the fuzz targets with clang (libFuzzer + ASan + UBSan) into build-fuzz/
# and run them; prints "PASS: fuzz/<target>" or "FAIL: fuzz/<target>" per target.
#
# How long each runs:
#   tests/fuzz/run.sh                    every target; together they share a
#                                        fixed budget, FUZZ_BUDGET seconds
#                                        (default 160) split evenly, so adding a
#                                        target does not lengthen ./scripts/test
#                                        (which runs it this way)
#   FUZZ_MINUTES=30 tests/fuzz/run.sh    on demand: every target 30 minutes
#   FUZZ_MINUTES=10 tests/fuzz/run.sh wg_rx_split http_connect   those, 10 min each
#   FUZZ_SECONDS=600 tests/fuzz/run.sh http_connect   per target, in seconds
#   FUZZ_BUDGET=60 tests/fuzz/run.sh     a quick pass: 60 s over all targets
#   FUZZ_RUNS=10000000 FUZZ_MINUTES=60 tests/fuzz/run.sh   a campaign: each target
#                                        until 10 M executions or an hour, whichever first
# Build time is not counted in the budget.
#
# The corpus grows across runs in build-fuzz/corpus/<target>; crash inputs land
# in build-fuzz/artifacts/ and replay with: build-fuzz/fuzz_<target> FILE.
# Without the libFuzzer runtime (libclang-rt-14-dev) the same targets run under
# tests/fuzz/standalone.c, a random + mutation driver, for the same time
# (FUZZ_STANDALONE=1 forces that mode).
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
here="$top/tests/fuzz"
out=${FUZZ_BUILD:-$top/build-fuzz}
# Every target, one a line: tests/fuzz/fuzz_<name>.c. wg_* targets also get the WireGuard
# sources below; a target needing more sources gets a line in the build step.
all=(
	socks5_server
	socks5_client
	socks5_udp
	http_connect
	http_client
	http_forward
	http_get
	base64
	wg_receive
	wg_rx_split
	offload
	tun_nat
	dns
	wg_conf
	wg_uapi
	config
	users
	ss_server
	ss_open
)
[ $# -gt 0 ] && all=("$@")
# 160 s: what the first 8 targets took at 20 s each, kept as the suite grows.
if [ -n "${FUZZ_MINUTES:-}" ]; then
	secs=$((FUZZ_MINUTES * 60))
elif [ -n "${FUZZ_SECONDS:-}" ]; then
	secs=$FUZZ_SECONDS
else
	secs=$((${FUZZ_BUDGET:-160} / ${#all[@]}))
	[ "$secs" -lt 1 ] && secs=1
fi
proto_src=("$top/proto/proto.c" "$top/proto/dns.c" "$top/proto/socks5.c" "$top/proto/socks5_addr.c" "$top/proto/socks5_udp.c" "$top/proto/http_connect.c" "$top/proto/http_forward.c" "$top/proto/http_client.c" "$top/proto/http_get.c" "$top"/lib/{base64,ct,log,sockaddr,stats}.c)
# The WireGuard targets (fuzz_wg_*) also compile kmod-free/wireguard, tun/netlink.c and lib/'s
# ChaCha20 (HChaCha20, the block function's rounds, the vector routines), and link
# the bundled wolfSSL (scripts/build-wolfssl, cached) or else the system one, and libmnl.
# lib/aesgcm's VAES-512 and lib/poly1305's IFMA routines where the host is x86-64 (meson decides
# this for the real build; both take their routines only where CPUID says so).
x86_vec=0
[ "$(uname -m)" = x86_64 ] && x86_vec=1
wg_src=("$top"/kmod-free/wireguard/{allowedips,cookie,counter,crypto,index,noise,peer,ratelimiter,receive,rx_split,timers,wgconf,uapi,uapi_server}.c "$top/tun/netlink.c"
	"$top"/lib/{chacha,chacha_core,poly1305}.c -DPOLY1305_IFMA=$x86_vec)
if wolf_prefix=$("$top/scripts/build-wolfssl" --quiet 2>/dev/null) && [ -n "$wolf_prefix" ]; then
	wolf_flags=(-I"$wolf_prefix/include" "$wolf_prefix/lib/libwolfssl.a" -lm -lpthread)
else
	read -ra wolf_flags <<<"$(pkg-config --cflags --libs wolfssl 2>/dev/null) -lm -lpthread"
fi
wg_flags=("${wolf_flags[@]}" -lmnl)
wg_flags+=(-I"$top/kmod-free/wireguard" -I"$top/tun")
# fuzz_offload compiles the TUN offloads and checksums (tun/); fuzz_tun_nat the packet parser
# and the TUN inbound's NAT.
tun_src=("$top"/tun/{offload,packet}.c -I"$top/tun")
tun_nat_src=("$top"/tun/{nat,packet}.c "$top/lib/siphash.c" -I"$top/tun" -lpthread)
# The Shadowsocks targets (fuzz_ss_*), and the config parser that makes Shadowsocks keys, compile
# proto/'s crypto (over wolfSSL) and lib/'s ChaCha core.
ss_src=("$top"/proto/{aead,blake3,shadowsocks,shadowsocks_2022}.c "$top"/lib/{aesgcm,chacha,chacha_core,poly1305}.c
	-DAESGCM_VAES=$x86_vec -DPOLY1305_IFMA=$x86_vec "${wolf_flags[@]}")
# fuzz_config compiles the relay/ config parser and users tables, and links inih.
config_src=("$top"/relay/{config,config_inbound,config_keys,config_main,config_outbound,config_ss,config_stats,config_tun,config_value,users,users_ss}.c -I"$top/relay" -linih "${ss_src[@]}")
# fuzz_users compiles the users tables alone.
users_src=("$top"/relay/{users,users_ss}.c -I"$top/relay" "${ss_src[@]}")
cflags=(-g -O1 -fno-omit-frame-pointer -std=gnu11 -D_GNU_SOURCE -Wall -Wextra -Werror
	-I"$top/proto" -I"$top/lib" -I"$here" -fsanitize=address,undefined -fno-sanitize-recover=undefined)

if ! command -v clang >/dev/null; then
	for t in "${all[@]}"; do echo "SKIP: fuzz/$t (clang not installed)"; done
	exit 0
fi
mkdir -p "$out/artifacts" "$out/seeds"

# libFuzzer's runtime is in libclang-rt-14-dev, which clang only recommends.
mode=libfuzzer
[ -n "${FUZZ_STANDALONE:-}" ] && mode=standalone
printf 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n)\n{ (void)d; (void)n; return 0; }\n' >"$out/probe.c"
if [ "$mode" = libfuzzer ] && ! clang -fsanitize=fuzzer "$out/probe.c" -o "$out/probe" 2>"$out/probe.log"; then
	mode=standalone
	echo "# fuzz: clang -fsanitize=fuzzer does not link ($(head -n 1 "$out/probe.log")); using tests/fuzz/standalone.c"
fi
rm -f "$out/probe" "$out/probe.c" "$out/probe.log"

# seed NAME TARGET BYTES: one seed input (printf escapes); the first octet is
# the target's selector (see each fuzz_*.c).
seed() { mkdir -p "$out/seeds/$2"; printf "$3" >"$out/seeds/$2/$1"; }
make_seeds() {
	local v6='\x20\x01\x0d\xb8\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01'
	seed ipv4 socks5_server '\x00\x05\x01\x00\x05\x01\x00\x01\x7f\x00\x00\x01\x00\x50GET'
	seed auth socks5_server '\xc3\x05\x02\x00\x02\x01\x05alice\x06secret\x05\x01\x00\x03\x0bexample.com\x01\xbbhello'
	seed authfail socks5_server '\x81\x05\x01\x02\x01\x01u\x01p'
	seed ipv6 socks5_server "\\x05\\x05\\x01\\x00\\x05\\x01\\x00\\x04$v6\\x00\\x16"
	seed bind socks5_server '\x02\x05\x01\x00\x05\x02\x00\x01\x0a\x00\x00\x01\x00\x15'
	seed udp socks5_server '\x20\x05\x01\x00\x05\x03\x00\x01\x00\x00\x00\x00\x00\x00'
	seed fwdudp socks5_server '\x10\x05\x01\x00\x05\x05\x00\x01\x00\x00\x00\x00\x00\x00'
	seed plain socks5_client '\x00\x05\x00\x05\x00\x00\x01\x0a\x00\x00\x01\x30\x39data'
	seed auth6 socks5_client "\\xb1\\x05\\x02\\x01\\x00\\x05\\x00\\x00\\x04$v6\\x01\\xbb"
	seed refused socks5_client '\x20\x05\x00\x05\x05\x00\x01\x00\x00\x00\x00\x00\x00'
	seed bnddomain socks5_client '\x10\x05\x00\x05\x00\x00\x03\x04host\x00\x50'
	seed v4 socks5_udp '\x00\x00\x00\x00\x01\xc0\x00\x02\x01\x00\x35hi'
	seed name socks5_udp '\x00\x00\x00\x00\x03\x0bexample.org\x1f\x90'
	seed frames socks5_udp "\\x83\\x00\\x02\\x0a\\x01\\xc0\\x00\\x02\\x01\\x00\\x35hi\\x00\\x01\\x16\\x04$v6\\x01\\xbbx\\x00\\x00\\x12\\x03\\x0bexample.org\\x1f\\x90"
	seed domain http_connect '\x00CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n'
	seed auth http_connect '\xc4CONNECT [::1]:8080 HTTP/1.1\r\nProxy-Authorization: Basic YWxpY2U6c2VjcmV0\r\n\r\n\x16\x03'
	seed lf http_connect '\x83\nCONNECT 10.0.0.1:22 HTTP/1.0\nproxy-authorization: basic dTpw\n\n'
	seed get http_connect '\x00GET http://example.com/ HTTP/1.1\r\nHost: example.com\r\n\r\n'
	seed get http_forward '\x00GET http://example.com:8080/a?b HTTP/1.1\r\nHost: x\r\nConnection: keep-alive, X-A\r\nX-A: 1\r\nProxy-Authorization: Basic eDp5\r\n\r\n'
	seed post http_forward '\x00POST http://[::1]/ HTTP/1.0\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\nExpect: 100-continue\r\n\r\nhello'
	seed resp http_forward '\x05HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close, X-B\r\nX-B: 2\r\nKeep-Alive: 1\r\n\r\nhello'
	seed resp10 http_forward '\x01HTTP/1.0 100 Continue\r\n\r\nHTTP/1.0 204 No\r\nTransfer-Encoding: gzip\r\n\r\n'
	seed chunked http_forward '\x32a;x=y\r\n0123456789\r\n0\r\nT: 1\r\n\r\nGET'
	seed ok http_client '\x00HTTP/1.1 200 Connection established\r\n\r\npayload'
	seed auth http_client '\xc3HTTP/1.0 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm="x"\r\n\r\n'
	seed lf http_client '\x05HTTP/1.1 502 Bad Gateway\nContent-Length: 0\n\n'
	seed rfc7617 base64 '\xffQWxhZGRpbjpvcGVuIHNlc2FtZQ=='
	seed pad1 base64 '\x03Zm9vYmE='
	seed pad2 base64 '\x10Zg=='
	# wg_receive: [flags][op len16 bytes]...; an IPv4/UDP packet 10.0.0.1 -> 10.0.0.2 sealed by the peer
	local ip4='\x45\x00\x00\x1c\x00\x00\x00\x00\x40\x11\x00\x00\x0a\x00\x00\x01\x0a\x00\x00\x02\x00\x01\x00\x02\x00\x08\x00\x00'
	seed sealed wg_receive "\\x01\\x01\\x00\\x1c$ip4\\x21\\x00\\x1c$ip4\\x03\\x00\\x02\\x01\\x00\\x01\\x00\\x1c$ip4"
	seed flipped wg_receive "\\x03\\x11\\x00\\x1c$ip4\\x02\\x00\\x00\\x12\\x00\\x04\\x01\\x00\\x00\\x00"
	seed raw wg_receive '\x04\x00\x00\x20\x04\x00\x00\x00\x01\x02\x03\x04\x00\x00\x00\x00\x00\x00\x00\x00AAAAAAAAAAAAAAAA\x02\x00\x00'
	# wg_rx_split: [n-1 | small-cap bit][cap] then per message [flags][len 3][gso 2] (see the .c)
	seed trains wg_rx_split '\x01\x00\x00\x00\x10\x00\x20\x00\x00\x00\x04\x00\x01\x00\x04\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00'
	seed runts wg_rx_split '\x00\x00\x00\xe3\xff\x00\x01\x00'
	seed mixed wg_rx_split '\x0b\x05\x01\x00\x02\x00\x40\x00\x02\x00\x02\x00\x40\x00\x24\x00\x10\x00\x40\x00\x04\x00\x10\x00\x00\x00\x0c\x10\x00\x00\x00\x00\x08\x94\x00\x00\x00\x00\x01\x00\x00\x00'
	# offload: [selector] then a TUN read (virtio_net_hdr + packet), or (0x10) packets to coalesce
	local t4='\x45\x00\x00\x8c\x00\x01\x40\x00\x40\x06\x00\x00\x0a\x00\x00\x01\x0a\x00\x00\x02\x12\x34\x00\x50\x00\x00'
	seed tso offload "\\x05\\x01\\x01\\x28\\x00\\x64\\x00\\x14\\x00\\x10\\x00\\x45\\x00\\x01\\x54\\x00\\x01\\x40\\x00\\x40\\x06\\x00\\x00\\x0a\\x00\\x00\\x01\\x0a\\x00\\x00\\x02\\x12\\x34\\x00\\x50\\x00\\x00\\x00\\x01\\x00\\x00\\x00\\x00\\x50\\x18\\xff\\xff\\x00\\x00\\x00\\x00$(printf 'A%.0s' $(seq 300))"
	seed csum offload "\\x01\\x01\\x00\\x00\\x00\\x00\\x00\\x14\\x00\\x10\\x00\\x45\\x00\\x00\\x3c\\x00\\x01\\x40\\x00\\x40\\x06\\x00\\x00\\x0a\\x00\\x00\\x01\\x0a\\x00\\x00\\x02\\x12\\x34\\x00\\x50\\x00\\x00\\x00\\x01\\x00\\x00\\x00\\x00\\x50\\x18\\xff\\xff\\x00\\x00\\x00\\x00BBBBBBBBBBBBBBBBBBBB"
	seed coalesce offload "\\x10\\x00\\x8c$t4\\x03\\xe8\\x00\\x00\\x00\\x00\\x50\\x10\\xff\\xff\\x00\\x00\\x00\\x00$(printf 'C%.0s' $(seq 100))\\x00\\x8c$t4\\x04\\x4c\\x00\\x00\\x00\\x00\\x50\\x18\\xff\\xff\\x00\\x00\\x00\\x00$(printf 'D%.0s' $(seq 100))"
	# tun_nat: [selector] then reads [len 2][bytes]: a SYN app -> 203.0.113.7:443, the listener's
	# SYN-ACK to the fake source, an ACK; IPv6 the same; with (0x07) and without vnet headers
	local syn4='\x45\x00\x00\x28\x00\x01\x40\x00\x40\x06\x00\x00\xc6\x12\x00\x01\xcb\x00\x71\x07\x9c\x40\x01\xbb\x00\x00\x00\x01\x00\x00\x00\x00\x50\x02\xff\xff\x00\x00\x00\x00'
	local sa4='\x45\x00\x00\x28\x00\x01\x40\x00\x40\x06\x00\x00\xc6\x12\x00\x01\xc6\x12\x00\x03\x9c\x40\x04\x00\x00\x00\x00\x01\x00\x00\x00\x00\x50\x12\xff\xff\x00\x00\x00\x00'
	local syn6="\\x60\\x00\\x00\\x00\\x00\\x14\\x06\\x40\\xfd\\xfe\\x53\\x70$(printf '\\x00%.0s' $(seq 11))\\x01\\x20\\x01\\x0d\\xb8$(printf '\\x00%.0s' $(seq 11))\\x07\\x9c\\x40\\x01\\xbb\\x00\\x00\\x00\\x01\\x00\\x00\\x00\\x00\\x50\\x02\\xff\\xff\\x00\\x00\\x00\\x00"
	seed plain tun_nat "\\x06\\x00\\x28$syn4\\x00\\x28$sa4\\x00\\x3c$syn6"
	seed vnet tun_nat "\\x07\\x00\\x32\\x01\\x00\\x00\\x00\\x00\\x00\\x14\\x00\\x10\\x00$syn4\\x00\\x32\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00$sa4"
	# dns: a query as a TUN app sends it (A www.example.com with an EDNS OPT record), and AAAA
	seed a dns '\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x01\x03www\x07example\x03com\x00\x00\x01\x00\x01\x00\x00\x29\x10\x00\x00\x00\x00\x00\x00\x00'
	seed aaaa dns '\x00\x07\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x09localhost\x00\x00\x1c\x00\x01'
	seed full wg_conf '[Interface]\nPrivateKey = YFBQhzqFx5FMIqSNqH3DW7nYFxpCGB0qXa4ePaOX5kM=\nListenPort = 51820\nAddress = 10.0.0.1/24, fd00::1/64\nMTU = 1380\nTable = off\nFwMark = 0x20\n\n[Peer]\nPublicKey = 6EtabScXwQA6E7QxVwNT26ypFGzxUMX4V1aA/rpSAno=\nPresharedKey = YFBQhzqFx5FMIqSNqH3DW7nYFxpCGB0qXa4ePaOX5kM=\nAllowedIPs = 10.0.0.2/32, ::/0\nEndpoint = [::1]:51821\nPersistentKeepalive = 25\n\n[Spliced]\nName = wg9\nWorkers = 2\nOffload = no\n'
	local k='e84b5a6d2717c1003a13b431570353dbaca9146cf150c5f8575680feba52027a'
	seed set wg_uapi "\\x00private_key=$k\\nlisten_port=51820\\nfwmark=0\\nreplace_peers=true\\npublic_key=$k\\nprotocol_version=1\\npreshared_key=$k\\nendpoint=127.0.0.1:1\\npersistent_keepalive_interval=25\\nreplace_allowed_ips=true\\nallowed_ip=10.0.0.0/8\\nallowed_ip=fd00::/8\\npublic_key=$k\\nremove=true\\n"
	seed serve wg_uapi "\\x01get=1\\n\\nset=1\\nlisten_port=1\\npublic_key=$k\\nupdate_only=true\\nendpoint=[::1]:2\\n\\nget=1\\n\\n"
	seed full config '[main]\nworkers = 2\nlog-level = debug\nidle-timeout = 0\npipe-size = 64k\n\n[inbound s]\ntype = socks5\nlisten = 127.0.0.1:1080\nuser = alice:secret\nuser = bob:pw\n\n[inbound h]\ntype = http\nlisten = [::1]:8080\noutbound = up\n\n[inbound f]\ntype = forward\nlisten = 127.0.0.1:8443\ntarget = example.org:443\n\n[outbound d2]\ntype = direct\nbind-address = [fd00::1]\nbind-interface = eth0\nfwmark = 0x20\n\n[outbound up]\ntype = socks5\nserver = 127.0.0.1:1081\nusername = u\npassword = p\n\n[route]\ndefault = d2\nrule = cidr 10.0.0.0/8 -> up\nrule = cidr fd00::/8 -> block\nrule = port 6000-6063 -> block\nrule = domain .Example.COM. -> direct\n'
	seed bad config '\xef\xbb\xbfkey = before\n[inbound]\n[inbound a b]\n[main] ; c\n  indented = 1\n[inbound s]\ntype = socks5\nlisten = 1.2.3.4\nlisten = [::1]:0\nuser = x\nusers = nofile\n[outbound o]\ntype = socks5\nusername = u\n[route]\nrule = cidr 10.0.0.1/8 -> o\nrule = port 9-1 -> nowhere\ndefault = missing\n'
	cp "$top/spliced.example.ini" "$out/seeds/config/example"
	# users: [selector: inline users in the low 2 bits] then the file
	seed good users '\x00# users\nalice secret\nbob:pa:ss word \t\r\n\n  carol\tspaced  pass\ndave x\n'
	seed bad users '\x03alice pw\nlonely\n:nopass\nbob \nn\x00ul pw\ncarol a\rb\ne\x7f pw\nalice again\n'
	seed long users "\\x00$(printf 'n%.0s' $(seq 255)) $(printf 'p%.0s' $(seq 255))\\n$(printf 'm%.0s' $(seq 256)) x\\nok $(printf 'q%.0s' $(seq 256))\\n"
	# ss_server / ss_open: [selector: method in bits 0-2, authentic mode bit 3] then the body
	seed aead-addr ss_server '\x08\x05\x03\x0bexample.com\x01\xbbGET / HTTP/1.1\r\n\r\n'
	seed aead-split ss_server '\x19\x01\x01\x0a\x00\x00\x01\x00\x50payload'
	seed v2022 ss_server '\x2d\x80\x00\x01\x7f\x00\x00\x01\x01\xbb\x00\x03\x00\x00\x00hello'
	seed v2022-eih ss_server '\x3f\x80\x00\x04\x20\x01\x0d\xb8\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01\x00\x35\x00\x00hi'
	seed v2022-nopad ss_server '\x0e\x80\x00\x01\x0a\x00\x00\x01\x00\x50\x00\x00'
	seed raw ss_server '\x01\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f\x20\x21'
	seed resp ss_open '\x08\x10\x00response bytes, some of them'
	seed resp22 ss_open '\x2e\x01\x00a 2022 response in one-byte chunks'
	seed forged ss_open '\x1d\x02\x07forged somewhere'
	seed raw ss_open '\x05\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00'
}
make_seeds

max_len() { case $1 in http_connect | http_client | http_forward | config | offload | tun_nat) echo 12000 ;; users) echo 4096 ;; ss_*) echo 20000 ;; *) echo 2048 ;; esac; }
dict() { case $1 in http_connect | http_client | http_forward) echo "$here/http_connect.dict" ;; socks5_*) echo "$here/socks5.dict" ;; config) echo "$here/config.dict" ;; esac; }

rc_all=0
for t in "${all[@]}"; do
	src="$here/fuzz_$t.c"
	bin="$out/fuzz_$t"
	log="$out/fuzz_$t.log"
	if [ ! -f "$src" ]; then echo "FAIL: fuzz/$t (no $src)"; rc_all=1; continue; fi
	if [ "$mode" = libfuzzer ]; then
		build=(clang "${cflags[@]}" -fsanitize=fuzzer "$src" "${proto_src[@]}" -o "$bin")
	else
		build=(clang "${cflags[@]}" "$src" "$here/standalone.c" "${proto_src[@]}" -o "$bin")
	fi
	[[ $t == wg_* ]] && build+=("${wg_src[@]}" "${wg_flags[@]}")
	[[ $t == offload ]] && build+=("${tun_src[@]}")
	[[ $t == tun_nat ]] && build+=("${tun_nat_src[@]}")
	[[ $t == config ]] && build+=("${config_src[@]}")
	[[ $t == users ]] && build+=("${users_src[@]}")
	[[ $t == ss_* ]] && build+=("${ss_src[@]}")
	if ! "${build[@]}" >"$log" 2>&1; then
		echo "FAIL: fuzz/$t (build)"; sed 's/^/    /' "$log" | head -n 20; rc_all=1; continue
	fi
	corpus="$out/corpus/$t"
	mkdir -p "$corpus"
	cp -n "$out/seeds/$t"/* "$corpus"/ 2>/dev/null
	if [ "$mode" = libfuzzer ]; then
		d=$(dict "$t")
		"$bin" -max_total_time="$secs" ${FUZZ_RUNS:+-runs="$FUZZ_RUNS"} -timeout=10 -rss_limit_mb=2048 -max_len="$(max_len "$t")" \
			-print_final_stats=1 -artifact_prefix="$out/artifacts/$t-" ${d:+-dict="$d"} \
			"$corpus" >"$log" 2>&1
	else
		"$bin" -seconds "$secs" -max_len "$(max_len "$t")" "$corpus" >"$log" 2>&1
	fi
	rc=$?
	if [ "$rc" -eq 0 ]; then
		stats=$(grep -E '^stat::number_of_executed_units|^standalone:' "$log" | tail -n 1)
		cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -n 1)
		echo "PASS: fuzz/$t (${secs}s $mode; ${stats#stat::}${cov:+, $cov})"
	else
		echo "FAIL: fuzz/$t (exit $rc; log $log)"
		grep -E 'invariant failed|ERROR:|runtime error|SUMMARY|Test unit written|^Base64:' "$log" |
			head -n 12 | sed 's/^/    /'
		rc_all=1
	fi
done
exit "$rc_all"
