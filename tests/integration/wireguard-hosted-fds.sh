#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A WireGuard interface hosted next to relay workers: the workers keep none of its descriptors, so `wg set listen-port` releases the old port for good, and moving back binds it cleanly.
. "$(dirname "$0")/../lib.sh"
need ip wg
need_spliced
need_root || finish
. "$T_TOP/tests/wg-lib.sh"

netns_new NS || { fail setup "netns"; finish; }
wg_keypair K
IF="whf$$"; IF=${IF:0:15}
P1=$((40000 + RANDOM % 5000)) P2=$((45000 + RANDOM % 5000))
cat >"$T_TMP/w.conf" <<C
[Interface]
PrivateKey = $K_PRIV
ListenPort = $P1
Address = 10.79.0.1/24
C
SP=$(free_port)
printf '[main]\nworkers = 2\n[inbound socks]\ntype = socks5\nlisten = 127.0.0.1:%s\n[wireguard %s]\nconfig = %s\n' \
	"$SP" "$IF" "$T_TMP/w.conf" >"$T_TMP/w.ini"
ip netns exec "$NS" "$SPLICED_BIN" -c "$T_TMP/w.ini" 2>"$T_TMP/spliced.log" &
PID=$!
on_cleanup_pid $PID
T_LOGS+=("$T_TMP/spliced.log")
wait_port 127.0.0.1 "$SP" 10 "$NS" || { fail setup "spliced did not start"; finish; }

# udp_bound PORT: sockets bound to that UDP port in the namespace.
udp_bound() { ip netns exec "$NS" ss -Huan "( sport = :$1 )" | wc -l; }
# fds_of_task TID: the socket inodes in one thread's descriptor table.
inodes() { ls -l /proc/"$PID"/task/"$1"/fd 2>/dev/null | grep -o 'socket:\[[0-9]*\]' | sort -u; }

n1=$(udp_bound "$P1")
[ "$n1" -ge 1 ] && pass listening-on-port || fail listening-on-port "$n1 UDP sockets on $P1"
# No relay worker holds one of WireGuard's UDP sockets (or anything else main opened).
wgsocks=$(ip netns exec "$NS" ss -Huanep "( sport = :$P1 )" | grep -o 'ino:[0-9]*' | cut -d: -f2 | sort -u)
leak=0
for t in /proc/"$PID"/task/*; do
	[[ $(cat "$t/comm") == spliced-w[0-9]* ]] || continue
	for ino in $wgsocks; do grep -q "socket:\[$ino\]" <<<"$(inodes "$(basename "$t")")" && leak=$((leak + 1)); done
done
expect_eq workers-hold-no-wg-socket "$leak" 0 "WireGuard sockets in relay workers' tables"

ip netns exec "$NS" wg set "$IF" listen-port "$P2" || fail set-port "wg set failed"
sleep 0.3
expect_eq old-port-released "$(udp_bound "$P1")" 0 "UDP sockets still bound to the old port $P1"
expect_eq new-port-bound "$(udp_bound "$P2")" "$n1" "UDP sockets on the new port $P2"
ip netns exec "$NS" wg set "$IF" listen-port "$P1" || fail set-port-back "wg set failed"
sleep 0.3
expect_eq back-on-old-port "$(udp_bound "$P1")" "$n1" "UDP sockets on $P1 after moving back (no orphans)"
expect_eq second-port-released "$(udp_bound "$P2")" 0 "UDP sockets on $P2"
got=$(ip netns exec "$NS" wg show "$IF" listen-port)
expect_eq wg-show-port "$got" "$P1" "wg show listen-port"
stop_spliced "$PID"
expect_eq sigterm-exit $? 0 "exit status"
finish
