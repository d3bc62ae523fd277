#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Debian's dante-server (danted) as the socks5 upstream of spliced's UDP: a UDP ASSOCIATE
# client in namespace A talks to spliced in A, whose socks5 outbound opens an association of
# its own with danted in namespace B; the echo server is on B's 10.88.0.1. Datagrams of 1,
# 512, 1400 and 60,000 bytes come back byte-exact, from a UDP client and from a UDP-in-TCP
# (FWD UDP) client, and spliced counts one upstream leg per association.
. "$(dirname "$0")/../lib.sh"
need_spliced
need python3 danted ip
need_root dante-upstream-udp || { finish; }
UA=$T_TOP/tests/tools/udpassoc.py

netns_new A || { fail setup/netns; finish; }
netns_new B || { fail setup/netns; finish; }
netns_veth "$A" 10.99.0.1/24 "$B" 10.99.0.2/24 || { fail setup/veth; finish; }
ip -n "$B" addr add 10.88.0.1/32 dev lo && ip -n "$A" route add 10.88.0.0/24 via 10.99.0.2 ||
	{ fail setup/route; finish; }

EP=10991 DP=1080 PS=10977
udp_echo "$B" 10.88.0.1 "$EP" || { fail setup/echo "the echo server did not start"; finish; }
cat >"$T_TMP/danted.conf" <<C
logoutput: stderr
internal: 10.99.0.2 port = $DP
external: 10.99.0.2
socksmethod: none
clientmethod: none
user.privileged: root
user.unprivileged: nobody
client pass { from: 10.99.0.0/24 to: 0.0.0.0/0 }
socks pass { from: 10.99.0.0/24 to: 0.0.0.0/0 command: udpassociate connect }
socks pass { from: 0.0.0.0/0 to: 10.99.0.0/24 command: udpreply }
C
ip netns exec "$B" danted -f "$T_TMP/danted.conf" -p "$T_TMP/danted.pid" 2>"$T_TMP/danted.log" &
on_cleanup_pid $!
wait_port 10.99.0.2 "$DP" 10 "$B" || { fail setup/danted "$(tail -n 5 "$T_TMP/danted.log")"; finish; }

SPLICED_NETNS=$A
use_asan_spliced
start_spliced "
[main]
log-level = debug
[inbound s]
type = socks5
listen = 127.0.0.1:$PS
udp = on
outbound = dante
[outbound dante]
type = socks5
server = 10.99.0.2:$DP
" || { fail start "spliced did not start"; finish; }

for mode in udp fwd; do
	flag=
	[ $mode = fwd ] && flag=--fwd
	o=$(ip netns exec "$A" timeout 60 python3 "$UA" 127.0.0.1 "$PS" $flag echo 10.88.0.1 "$EP" 1 \
		echo 10.88.0.1 "$EP" 512 echo 10.88.0.1 "$EP" 1400 echo 10.88.0.1 "$EP" 60000 2>&1)
	expect_lines "danted/$mode-client" "$o" "echo 1 ok 10\.88\.0\.1:$EP" "echo 512 ok 10\.88\.0\.1:$EP" \
		"echo 1400 ok 10\.88\.0\.1:$EP" "echo 60000 ok 10\.88\.0\.1:$EP"
done
stop_spliced
expect_eq sigterm-exit "$?" 0 "exit status"
expect_counters through-danted "$SPLICED_LOG" udp_assocs=2 udp_upstreams=2 udp_upstream_failed=0 \
	udp_up=8 udp_down=8
expect_clean_log sanitizers
finish
