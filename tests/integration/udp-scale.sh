#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# 10,000 UDP associations held at once, in a namespace of the test's own (its ephemeral port
# range widened, since each association takes three UDP ports of one host here): every one
# echoes a datagram; together they add at most 4 MiB to spliced's RSS, and a fixed number of
# descriptors each: three for UDP ASSOCIATE (the TCP control connection and the relay socket
# RFC 1928 asks for, and the outbound socket, the session's own), two for UDP-in-TCP (the
# connection and the outbound socket). When the clients close, every descriptor goes back.
# The plain build is measured (ASan's shadow memory would be what RSS counts).
. "$(dirname "$0")/../lib.sh"
need_spliced
need python3 ip
need_root udp-scale || { finish; }
N=10000

netns_new S || { fail setup/netns; finish; }
ip -n "$S" link set lo up
ip netns exec "$S" sysctl -qw net.ipv4.ip_local_port_range="1024 65000" || { fail setup/sysctl; finish; }
EP=9001 PS=9000
udp_echo "$S" 127.0.0.1 "$EP" || { fail setup/echo "the echo server did not start"; finish; }

rss_kib() { awk '/^VmRSS/ { print $2 }' "/proc/$1/status"; }
one_run() { # MODE (udp or fwd): N associations from two clients, then closed
	local mode=$1 flag= r0 r1 f0 f1 held per_fd i
	[ "$mode" = fwd ] && flag=--fwd
	SPLICED_NETNS=$S
	start_spliced "
[main]
max-connections = 30000
udp-max-sessions = 30000
udp-timeout = 5m
[inbound s]
type = socks5
listen = 127.0.0.1:$PS
udp = on
" || { fail "$mode/start" "spliced did not start"; return; }
	r0=$(rss_kib "$SPLICED_PID") f0=$(fd_count "$SPLICED_PID")
	for i in 1 2; do
		rm -f "$T_TMP/in$i" && mkfifo "$T_TMP/in$i"
		ip netns exec "$S" python3 "$T_TOP/tests/tools/udpmany.py" 127.0.0.1 "$PS" 127.0.0.1 "$EP" \
			$((N / 2)) $flag <"$T_TMP/in$i" >"$T_TMP/out$i" 2>&1 &
		on_cleanup_pid $!
	done
	exec 7>"$T_TMP/in1" 8>"$T_TMP/in2"
	for _ in $(seq 600); do
		grep -q held "$T_TMP/out1" && grep -q held "$T_TMP/out2" && break
		sleep 0.1
	done
	held=$(cat "$T_TMP/out1" "$T_TMP/out2" | awk '/^held/ { h += $2 } END { print h + 0 }')
	r1=$(rss_kib "$SPLICED_PID") f1=$(fd_count "$SPLICED_PID")
	per_fd=2
	[ "$mode" = udp ] && per_fd=3
	echo "# $mode: $held associations: RSS $r0 -> $r1 KiB (+$((r1 - r0)), $(((r1 - r0) * 1024 / (held > 0 ? held : 1))) B each), descriptors $f0 -> $f1"
	expect_eq "$mode/all-echoed" "$held" "$N" "associations with their echo"
	if [ $((r1 - r0)) -le 4096 ]; then pass "$mode/rss-at-most-4MiB"; else fail "$mode/rss-at-most-4MiB" "+$((r1 - r0)) KiB"; fi
	expect_eq "$mode/descriptors-each" "$((f1 - f0))" "$((per_fd * N))" "descriptors added"
	exec 7>&- 8>&-
	for _ in $(seq 100); do [ "$(fd_count "$SPLICED_PID")" -le "$f0" ] && break; sleep 0.1; done
	expect_eq "$mode/descriptors-back" "$(fd_count "$SPLICED_PID")" "$f0" "descriptors after the clients closed"
	stop_spliced
	expect_eq "$mode/sigterm-exit" "$?" 0 "exit status"
}
one_run udp
one_run fwd
finish
