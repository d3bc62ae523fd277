#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# 10,000 idle Shadowsocks connections through a spliced client and server (each relays all of
# them): no pump buffer is held while nothing is in flight, so the RSS of each stays small, the
# thread count stays bounded, and every connection still works afterwards.
. "$(dirname "$0")/../lib.sh"

CONNHOLD=${CONNHOLD:-$T_BUILD/tests/tools/connhold}
WANT=${IDLE_CONNS:-10000}
MAX_THREADS=64
# What an idle Shadowsocks connection costs each process in user memory: the connection slot
# (a few hundred bytes) and the leg's two key schedules (~2.5 KiB: wolfSSL's Aes with its
# GHASH table per direction), about 3 KiB, so ~30 MiB for 10,000; the bound leaves room for
# the allocator. A 66 KiB pump buffer held per direction would be 1.3 GiB.
MAX_RSS_KB=$((64 * 1024))

need_spliced
need "$CONNHOLD"
ulimit -n "$(ulimit -Hn)"

threads() { ls "/proc/$1/task" 2>/dev/null | wc -l; }
status_kb() { awk -v f="$2:" '$1 == f { print $2 }' "/proc/$1/status" 2>/dev/null; }

EP=$(free_port)
"$CONNHOLD" serve -q 127.0.0.1:"$EP" 127.0.0.2:"$EP" 127.0.0.3:"$EP" 127.0.0.4:"$EP" 2>"$T_TMP/echo.err" &
on_cleanup_pid $!
wait_port 127.0.0.1 "$EP" 10 || { fail setup "echo server did not start: $(cat "$T_TMP/echo.err")"; finish; }

PSS=$(free_port) PSC=$(free_port)
start_spliced "[main]
max-connections = $((WANT + 1000))
[inbound ss]
type = shadowsocks
listen = 127.0.0.1:$PSS
method = aes-256-gcm
password = idle" || { fail setup "server did not start"; finish; }
SRV=$SPLICED_PID SRV_LOG=$SPLICED_LOG
start_spliced "[main]
log-level = warn
max-connections = $((WANT + 1000))
[inbound s]
type = socks5
listen = 127.0.0.1:$PSC
outbound = ss
[outbound ss]
type = shadowsocks
server = 127.0.0.1:$PSS
method = aes-256-gcm
password = idle" || { fail setup "client did not start"; finish; }
CLI=$SPLICED_PID
sleep 0.3
base_srv=$(sock_count "$SRV") base_cli=$(sock_count "$CLI")
echo "# at rest: server VmRSS $(status_kb "$SRV" VmRSS) KiB, client VmRSS $(status_kb "$CLI" VmRSS) KiB"

holder H -s 127.0.0.1:"$PSC" -t 127.0.0.1:"$EP" -t 127.0.0.2:"$EP" -t 127.0.0.3:"$EP" -t 127.0.0.4:"$EP" \
	-w 60000 -c 512
t0=$SECONDS
hask H "open $WANT"
echo "# opening $WANT took $((SECONDS - t0)) s: $r"
expect_eq "open-$WANT" "$r" "opened $WANT failed 0" "client"
# One byte each way on every connection: both streams' headers are out, every key in use.
hask H ping
expect_eq "ping-$WANT" "$r" "ping ok $WANT bad 0" "client"
sleep 2 # idle: nothing is in flight
for side in server:$SRV client:$CLI; do
	name=${side%%:*} pid=${side#*:}
	rss=$(status_kb "$pid" VmRSS) th=$(threads "$pid")
	echo "# $name with $WANT idle Shadowsocks connections: VmRSS ${rss:-?} KiB ($((${rss:-0} * 1024 / WANT)) bytes a connection, at most), VmHWM $(status_kb "$pid" VmHWM) KiB, $th threads"
	if [ -n "$rss" ] && [ "$rss" -le $MAX_RSS_KB ]; then pass "rss-$name"; else fail "rss-$name" "VmRSS ${rss:-?} KiB > $MAX_RSS_KB KiB"; fi
	if [ "$th" -le $MAX_THREADS ]; then pass "threads-$name"; else fail "threads-$name" "$th threads"; fi
done
# They all still work.
hask H ping
expect_eq "all-still-work" "$r" "ping ok $WANT bad 0" "client"
hquit H
ok=0
for _ in $(seq 200); do
	[ "$(sock_count "$SRV")" -le "$base_srv" ] && [ "$(sock_count "$CLI")" -le "$base_cli" ] && { ok=1; break; }
	sleep 0.1
done
expect_eq closed-cleanly "$ok" 1 "both processes back to their sockets at rest"
stop_spliced "$CLI"
expect_eq client-exit "$?" 0 "exit status"
stop_spliced "$SRV"
expect_eq server-exit "$?" 0 "exit status"
expect_counters server "$SRV_LOG" resets=0 ss_bad_auth=0
finish
