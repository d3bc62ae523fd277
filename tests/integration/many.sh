#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# 2,000 concurrent connections through spliced (SOCKS5 and forward), each moving a few hundred KB, all byte-exact.
. "$(dirname "$0")/../lib.sh"

CONNHOLD=${CONNHOLD:-$T_BUILD/tests/tools/connhold}
N=${MANY_CONNS:-2000}
BYTES=${MANY_BYTES:-300K}

need_spliced
need "$CONNHOLD"
# 2,000 client sockets here, 4,000 in spliced, 2,000 in the echo server.
ulimit -n "$(ulimit -Hn)"

EP=$(free_port)
"$CONNHOLD" serve -q 127.0.0.1:"$EP" 127.0.0.2:"$EP" 127.0.0.3:"$EP" 127.0.0.4:"$EP" \
	2>"$T_TMP/echo.err" &
on_cleanup_pid $!
wait_port 127.0.0.1 "$EP" 10 || { fail setup "echo server did not start: $(cat "$T_TMP/echo.err")"; finish; }

SP=$(free_port)
FP=$(free_port)
start_spliced "[main]
log-level = warn
max-connections = 20000
[inbound socks]
type = socks5
listen = 127.0.0.1:$SP
[inbound fwd]
type = forward
listen = 127.0.0.1:$FP
target = 127.0.0.1:$EP" || { fail setup "spliced did not start"; finish; }
sleep 0.3 # let the readiness probes' connections close
base_socks=$(sock_count "$SPLICED_PID")
echo "# spliced at rest: $(fd_kinds "$SPLICED_PID")"

# run_case NAME CONNHOLD-ARGS...: N connections at once, BYTES each, echoed and compared.
run_case() {
	local name=$1 out t0=$SECONDS
	shift
	out=$("$CONNHOLD" "$@" -w 240000 -c 512 run -n "$N" -b "$BYTES" 2>&1)
	echo "# $name: $out ($((SECONDS - t0))s)"
	if [[ $out == "run ok $N fail 0 "* ]]; then
		pass "$name"
	else
		fail "$name" "want all $N byte-exact: $out"
	fi
}

# Targets spread over four loopback addresses: the echo server sees four
# distinct destination addresses, as a real proxy's outbound would.
run_case "socks5-$N-concurrent-x$BYTES" -s 127.0.0.1:"$SP" \
	-t 127.0.0.1:"$EP" -t 127.0.0.2:"$EP" -t 127.0.0.3:"$EP" -t 127.0.0.4:"$EP"
run_case "forward-$N-concurrent-x$BYTES" -t 127.0.0.1:"$FP"

if kill -0 "$SPLICED_PID" 2>/dev/null; then pass alive; else fail alive "spliced exited"; fi
if wait_socks "$SPLICED_PID" "$base_socks" 10; then
	pass sockets-released
else
	fail sockets-released "spliced holds $(sock_count "$SPLICED_PID") sockets 10 s after all connections closed, $base_socks at rest"
fi
echo "# spliced afterwards: $(fd_kinds "$SPLICED_PID")"
stop_spliced
rc=$?
expect_eq sigterm-exit "$rc" 0 "exit status"
finish
