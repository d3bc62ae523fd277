#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# accept-steering: "cpu" hands a connection to the worker of the CPU that processed its SYN; "hash" (the default) spreads by 4-tuple.
. "$(dirname "$0")/../lib.sh"

CONNHOLD=$T_BUILD/tests/tools/connhold
CPS=$T_BUILD/tests/tools/cps
need_spliced
need "$CONNHOLD" "$CPS" taskset
if [ "$(nproc)" -lt 2 ]; then
	skip all "needs 2 CPUs to tell the workers apart (nproc = $(nproc))"
	finish
fi

EP=$(free_port)
"$CONNHOLD" serve -q 127.0.0.1:"$EP" 2>"$T_TMP/echo.err" &
on_cleanup_pid $!
wait_port 127.0.0.1 "$EP" 10 || { fail setup "echo server did not start: $(cat "$T_TMP/echo.err")"; finish; }

# per_worker STEERING CPU: run short SOCKS5 connections from a client pinned to
# CPU, stop spliced, and set CONNS (the client's count) and PER (its
# "accepted per worker" log line).
per_worker() {
	local steering=$1 cpu=$2 sp out
	sp=$(free_port)
	CONNS=0 PER=
	start_spliced "[main]
workers = 2
accept-steering = $steering
[inbound socks]
type = socks5
listen = 127.0.0.1:$sp" || return 1
	# loopback processes a SYN on the sending CPU, so pinning the client pins the SYNs
	out=$(taskset -c "$cpu" "$CPS" -s 127.0.0.1:"$sp" -t 127.0.0.1:"$EP" -j 2 -d 1 2>&1)
	[[ $out =~ ^cps\ [0-9]+\ conns\ ([0-9]+)\ errors\ 0 ]] && CONNS=${BASH_REMATCH[1]}
	stop_spliced >/dev/null
	PER=$(sed -n 's/.*accepted per worker: //p' "$SPLICED_LOG")
	echo "# steering $steering, client on CPU $cpu: $out; accepted per worker: $PER"
}

# The readiness probe of start_spliced is one more connection, from this
# shell's CPU: the other worker may have that one.
for cpu in 0 1; do
	if per_worker cpu "$cpu" && [ "$CONNS" -ge 50 ]; then
		read -r w0 w1 <<<"$PER"
		mine=$w0 other=$w1
		[ "$cpu" = 1 ] && mine=$w1 other=$w0
		if [ "${mine:-0}" -ge "$CONNS" ] && [ "${other:-9}" -le 1 ]; then
			pass "cpu-steering-to-worker-$cpu"
		else
			fail "cpu-steering-to-worker-$cpu" "$CONNS connections from CPU $cpu, accepted per worker: $PER"
		fi
	else
		fail "cpu-steering-to-worker-$cpu" "client: $CONNS connections; log: $(tail -n 3 "$SPLICED_LOG")"
	fi
done

# The default: the kernel's hash spreads one CPU's connections over both workers.
if per_worker hash 0 && [ "$CONNS" -ge 50 ]; then
	read -r w0 w1 <<<"$PER"
	if [ "${w0:-0}" -gt 1 ] && [ "${w1:-0}" -gt 1 ] && [ $((w0 + w1)) -ge "$CONNS" ]; then
		pass hash-spreads-over-workers
	else
		fail hash-spreads-over-workers "$CONNS connections from CPU 0, accepted per worker: $PER"
	fi
else
	fail hash-spreads-over-workers "client: $CONNS connections; log: $(tail -n 3 "$SPLICED_LOG")"
fi
finish
