#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# spliced on either side of hev-socks5's UDP, against hev's own binaries built outside this
# repository (Debian does not ship them, so this is not part of ./scripts/test; run it by hand):
#
#   HEV_SOCKS5_SERVER=/path/hev-socks5-server HEV_SOCKS5_TUNNEL=/path/hev-socks5-tunnel \
#       tests/peers/hev-udp.sh
#
# 1. spliced's socks5 outbound with hev-socks5-server as its upstream: udp = udp (UDP
#    ASSOCIATE) and udp = tcp (FWD UDP), from a UDP ASSOCIATE client and a FWD UDP client.
# 2. hev-socks5-tunnel in front of spliced (udp: 'udp' and udp: 'tcp'): a plain UDP client in
#    namespace C sends to 10.88.0.1 through hev's TUN; spliced, in C too, takes it and sends it
#    out with fwmark 1, which a rule routes over a veth to namespace B's echo server.
# Datagrams of 1, 512, 1400 and 1472 bytes must come back byte-exact. (hev-socks5-server
# 2.13.1 itself, asked directly, cuts datagrams over 1472 bytes in UDP ASSOCIATE and drops
# them with FWD UDP: its UDP buffers are 1500 bytes. So larger sizes test hev, not us.)
. "$(dirname "$0")/../lib.sh"
need_spliced
need python3 ip
need_root hev-udp || { finish; }
[ -x "${HEV_SOCKS5_SERVER:-}" ] || { fail setup "HEV_SOCKS5_SERVER does not name hev-socks5-server"; finish; }
[ -x "${HEV_SOCKS5_TUNNEL:-}" ] || { fail setup "HEV_SOCKS5_TUNNEL does not name hev-socks5-tunnel"; finish; }
UA=$T_TOP/tests/tools/udpassoc.py

# --- 1: hev-socks5-server upstream, on loopback ---
EP=$(free_port) HP=$(free_port)
udp_echo "" 127.0.0.1 "$EP" || { fail setup/echo; finish; }
printf 'main:\n  workers: 1\n  port: %s\n  listen-address: "127.0.0.1"\nmisc:\n  log-file: stderr\n  log-level: warn\n' \
	"$HP" >"$T_TMP/hev.yml"
"$HEV_SOCKS5_SERVER" "$T_TMP/hev.yml" 2>"$T_TMP/hev.log" &
on_cleanup_pid $!
wait_port 127.0.0.1 "$HP" 10 || { fail setup/hev-server "$(tail -n 3 "$T_TMP/hev.log")"; finish; }
P_U=$(free_port) P_T=$(free_port)
start_spliced "
[inbound via-udp]
type = socks5
listen = 127.0.0.1:$P_U
udp = on
outbound = hev-udp
[inbound via-tcp]
type = socks5
listen = 127.0.0.1:$P_T
udp = on
outbound = hev-tcp
[outbound hev-udp]
type = socks5
server = 127.0.0.1:$HP
[outbound hev-tcp]
type = socks5
server = 127.0.0.1:$HP
udp = tcp
" || { fail start "spliced did not start"; finish; }
for m in udp:$P_U tcp:$P_T; do
	for c in "" --fwd; do
		o=$(timeout 30 python3 "$UA" 127.0.0.1 "${m#*:}" $c echo 127.0.0.1 "$EP" 1 echo 127.0.0.1 "$EP" 512 \
			echo 127.0.0.1 "$EP" 1400 echo 127.0.0.1 "$EP" 1472 2>&1)
		expect_lines "hev-server-upstream/${m%%:*}${c:+-fwd-client}" "$o" "echo 1 ok 127\.0\.0\.1:$EP" \
			"echo 512 ok 127\.0\.0\.1:$EP" "echo 1400 ok 127\.0\.0\.1:$EP" "echo 1472 ok 127\.0\.0\.1:$EP"
	done
done
stop_spliced

# --- 2: hev-socks5-tunnel in front of spliced ---
netns_new C || { fail setup/netns; finish; }
netns_new B || { fail setup/netns; finish; }
ip -n "$C" link set lo up
netns_veth "$C" 10.99.0.1/24 "$B" 10.99.0.2/24 || { fail setup/veth; finish; }
ip -n "$B" addr add 10.88.0.1/32 dev lo
ip -n "$C" route add 10.88.0.0/24 via 10.99.0.2 table 100 &&
	ip -n "$C" rule add fwmark 1 lookup 100 pref 100 || { fail setup/rule; finish; }
EP2=10991 PS=10977
udp_echo "$B" 10.88.0.1 "$EP2" || { fail setup/echo2; finish; }
SPLICED_NETNS=$C
start_spliced "
[inbound s]
type = socks5
listen = 127.0.0.1:$PS
udp = on
[outbound direct]
type = direct
fwmark = 1
" || { fail start2 "spliced did not start"; finish; }
for mode in udp tcp; do
	printf "tunnel:\n  name: hevt0\n  mtu: 8500\n  ipv4: 198.18.0.1\nsocks5:\n  port: %s\n  address: 127.0.0.1\n  udp: '%s'\nmisc:\n  log-file: stderr\n  log-level: warn\n" \
		"$PS" "$mode" >"$T_TMP/tun-$mode.yml"
	ip netns exec "$C" "$HEV_SOCKS5_TUNNEL" "$T_TMP/tun-$mode.yml" 2>"$T_TMP/tun-$mode.log" &
	tpid=$!
	on_cleanup_pid "$tpid"
	for _ in $(seq 50); do ip -n "$C" link show hevt0 >/dev/null 2>&1 && break; sleep 0.1; done
	ip -n "$C" link set hevt0 up 2>/dev/null
	ip -n "$C" route replace 10.88.0.0/24 dev hevt0 || { fail "tunnel-$mode/route" "$(tail -n 3 "$T_TMP/tun-$mode.log")"; continue; }
	o=$(ip netns exec "$C" timeout 30 python3 "$T_TOP/tests/tools/udpping.py" 10.88.0.1 "$EP2" 1 512 1400 1472 2>&1)
	expect_lines "hev-tunnel-$mode/echo" "$o" "echo 1 ok" "echo 512 ok" "echo 1400 ok" "echo 1472 ok"
	kill -TERM "$tpid"
	wait_pid "$tpid" 5
done
stop_spliced
stats=$(grep -o 'stats: relay: .*' "$SPLICED_LOG" | tail -n 1)
echo "# spliced behind hev-socks5-tunnel: $(tr ' ' '\n' <<<"$stats" | grep -E '^udp_(assocs|up|down)=' | tr '\n' ' ')"
finish
