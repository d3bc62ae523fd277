#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# 10,000 idle relayed SOCKS5 connections: spliced keeps a bounded thread count and small RSS, and every connection still works afterwards.
. "$(dirname "$0")/../lib.sh"

CONNHOLD=${CONNHOLD:-$T_BUILD/tests/tools/connhold}
WANT=${IDLE_CONNS:-10000}
MAX_THREADS=64
# RSS bound with 10,000 idle connections: the engine keeps per connection a
# slot of a few hundred bytes plus a handshake buffer while handshaking; the
# kernel's socket buffers and pipes are not in RSS. 64 MiB leaves ~6 KiB of
# user memory per connection: far above a sane design, far below
# a thread- or buffer-per-connection one (a 64 KiB buffer per direction
# would need 1.25 GiB).
MAX_RSS_KB=$((64 * 1024))
# The issue's target is 4 MiB peak RSS with 100 idle connections; we print
# the figure and assert only a loose bound so allocator noise is not a failure.
SMALL=100
SMALL_TARGET_KB=$((4 * 1024))
SMALL_MAX_KB=$((16 * 1024))

need_spliced
need "$CONNHOLD"
ulimit -n "$(ulimit -Hn)"

threads() { ls "/proc/$1/task" 2>/dev/null | wc -l; }
# status_kb PID FIELD: VmRSS / VmHWM in KiB.
status_kb() { awk -v f="$2:" '$1 == f { print $2 }' "/proc/$1/status" 2>/dev/null; }

EP=$(free_port)
"$CONNHOLD" serve -q 127.0.0.1:"$EP" 127.0.0.2:"$EP" 127.0.0.3:"$EP" 127.0.0.4:"$EP" \
	2>"$T_TMP/echo.err" &
on_cleanup_pid $!
wait_port 127.0.0.1 "$EP" 10 || { fail setup "echo server did not start: $(cat "$T_TMP/echo.err")"; finish; }

SP=$(free_port)
start_spliced "[main]
log-level = warn
max-connections = $((WANT + 1000))
[inbound socks]
type = socks5
listen = 127.0.0.1:$SP" || { fail setup "spliced did not start"; finish; }
PID=$SPLICED_PID
sleep 0.3
base_socks=$(sock_count "$PID")
base_fds=$(fd_count "$PID")

echo "# spliced at rest: $(threads "$PID") threads, VmRSS $(status_kb "$PID" VmRSS) KiB, $base_fds fds ($(fd_kinds "$PID"))"

# Each worker thread is named spliced-wK (top -H, ps -L, perf tell them apart);
# workers = auto is one per online CPU.
nw=$(getconf _NPROCESSORS_ONLN)
want=
for ((i = 0; i < ${nw:-0}; i++)); do want+="spliced-w$i "; done
got=$(grep -xh 'spliced-w[0-9]*' /proc/"$PID"/task/*/comm | sort -V | tr '\n' ' ')
expect_eq worker-thread-names "$got" "$want" "worker threads (workers = auto, $nw CPUs online)"

# The client: "connhold hold" driven line by line through a FIFO.
mkfifo "$T_TMP/cmd"
"$CONNHOLD" -s 127.0.0.1:"$SP" -t 127.0.0.1:"$EP" -t 127.0.0.2:"$EP" -t 127.0.0.3:"$EP" \
	-t 127.0.0.4:"$EP" -w 60000 -c 512 hold <"$T_TMP/cmd" >"$T_TMP/out" 2>&1 &
CLIENT=$!
on_cleanup_pid $CLIENT
exec 3>"$T_TMP/cmd"
nlines=0
# ask CMD: send one command, wait (bounded) for its one-line answer, put it in r.
ask() {
	local i
	echo "$1" >&3
	nlines=$((nlines + 1))
	for i in $(seq 1200); do
		if [ "$(wc -l <"$T_TMP/out")" -ge $nlines ]; then
			r=$(sed -n "${nlines}p" "$T_TMP/out")
			return 0
		fi
		kill -0 $CLIENT 2>/dev/null || break
		sleep 0.1
	done
	r="no answer from connhold: $(tail -n 3 "$T_TMP/out")"
	return 1
}

# --- 100 idle connections: the small-footprint target -----------------------
ask "open $SMALL"
expect_eq open-$SMALL "$r" "opened $SMALL failed 0" "client"
ask ping
expect_eq ping-$SMALL "$r" "ping ok $SMALL bad 0" "client"
hwm=$(status_kb "$PID" VmHWM)
echo "# peak RSS (VmHWM) with $SMALL idle connections: ${hwm:-?} KiB (issue target <= $SMALL_TARGET_KB KiB: $([ "${hwm:-999999}" -le $SMALL_TARGET_KB ] && echo met || echo NOT met)); $(threads "$PID") threads"
if [ -n "$hwm" ] && [ "$hwm" -le $SMALL_MAX_KB ]; then
	pass "peak-rss-$SMALL-idle"
else
	fail "peak-rss-$SMALL-idle" "VmHWM ${hwm:-?} KiB > loose bound $SMALL_MAX_KB KiB"
fi

# --- N idle connections -------------------------------------------------------
# spliced holds two sockets per relayed connection plus what it has at rest
# (listeners, rings, eventfds, pipe pool) and a margin for pipes in flight.
# RLIMIT_NOFILE bounds each descriptor table: when the workers share the main
# thread's table, all 2N sockets must fit one limit; with per-worker tables
# (unshare(CLONE_FILES)) each worker holds only its share.
hard=$(ulimit -Hn)
main_socks=$(ls -l "/proc/$PID/fd" 2>/dev/null | grep -c 'socket:')
N=$WANT
if [ "$main_socks" -ge $((2 * SMALL)) ]; then
	if [ "$hard" != unlimited ] && [ $((2 * WANT + base_fds + 128)) -gt "$hard" ]; then
		N=$(((hard - base_fds - 128) / 2))
		echo "# one shared descriptor table and RLIMIT_NOFILE hard limit $hard (raising it needs CAP_SYS_RESOURCE, not granted here): $WANT relayed connections need $((2 * WANT)) sockets plus the $base_fds held at rest, so this run holds N=$N"
	fi
else
	echo "# the workers keep private descriptor tables ($main_socks of $((2 * SMALL)) relay sockets in the main thread's): RLIMIT_NOFILE $hard applies per worker"
fi
t0=$SECONDS
ask "open $((N - SMALL))"
echo "# opening $((N - SMALL)) more took $((SECONDS - t0))s: $r"
expect_eq "open-$N" "$r" "opened $((N - SMALL)) failed 0" "client"
sleep 2 # idle for a while: nothing should be parked per connection
th=$(threads "$PID")
rss=$(status_kb "$PID" VmRSS)
fds=$(fd_kinds "$PID")
echo "# with $N idle relayed connections: $th threads, VmRSS ${rss:-?} KiB, VmHWM $(status_kb "$PID" VmHWM) KiB, open files: $fds"
if [ "$th" -gt 0 ] && [ "$th" -le $MAX_THREADS ]; then
	pass "threads-$N-idle"
else
	fail "threads-$N-idle" "$th threads in /proc/$PID/task, bound $MAX_THREADS"
fi
if [ -n "$rss" ] && [ "$rss" -le $MAX_RSS_KB ]; then
	pass "rss-$N-idle"
else
	fail "rss-$N-idle" "VmRSS ${rss:-?} KiB, bound $MAX_RSS_KB KiB"
fi

# Every one of them still relays: one byte each way on all N at once.
t0=$SECONDS
ask ping
echo "# ping on $N took $((SECONDS - t0))s; spliced then has $(threads "$PID") threads"
expect_eq "all-$N-work" "$r" "ping ok $N bad 0" "client"
th=$(threads "$PID")
if [ "$th" -le $MAX_THREADS ]; then
	pass "threads-after-ping"
else
	fail "threads-after-ping" "$th threads after one byte on each connection, bound $MAX_THREADS"
fi
ask check
expect_eq "none-closed" "$r" "check alive $N dead 0" "client"

# Close them all from the client side; spliced must release both legs of each.
echo quit >&3
exec 3>&-
wait_pid $CLIENT 30 >/dev/null
ok=0
for i in $(seq 200); do
	[ "$(sock_count "$PID")" -le "$base_socks" ] && { ok=1; break; }
	sleep 0.1
done
if [ $ok = 1 ]; then
	pass closed-cleanly
else
	fail closed-cleanly "spliced holds $(sock_count "$PID") sockets 20 s after the client closed all, $base_socks at rest"
fi
echo "# spliced afterwards: $(fd_kinds "$PID")"
if kill -0 "$PID" 2>/dev/null; then pass alive; else fail alive "spliced exited"; fi
stop_spliced
expect_eq sigterm-exit "$?" 0 "exit status"
finish
