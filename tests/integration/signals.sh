#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# SIGTERM/SIGINT: spliced stops accepting, drains in-flight transfers up to drain-timeout, then closes the rest and exits 0.
. "$(dirname "$0")/../lib.sh"

CONNHOLD=${CONNHOLD:-$T_BUILD/tests/tools/connhold}
PROBE=${PROBE:-$T_BUILD/tests/tools/probe}
need_spliced
need "$CONNHOLD" "$PROBE"
ulimit -n "$(ulimit -Hn)"

# send_sig SIG: deliver SIG to spliced now (t0, sig); wait_exit NAME DRAIN MIN_MS: wait
# (bounded) for the exit; PASS NAME-exit when it exits 0 no earlier than MIN_MS after the
# signal and within DRAIN + 2 s. Sets dt (ms from signal to exit).
send_sig() {
	sig=$1
	t0=$(now_ms)
	kill -"$sig" "$SPLICED_PID"
}
wait_exit() {
	local name=$1 drain=$2 min=$3 rc
	wait_pid "$SPLICED_PID" $((drain + 8))
	rc=$?
	dt=$(($(now_ms) - t0))
	echo "# $name: exit status $rc, ${dt} ms after SIG$sig (drain-timeout ${drain}s)"
	if [ $rc = 0 ] && [ $dt -le $(((drain + 2) * 1000)) ] && [ $dt -ge "$min" ]; then
		pass "$name-exit"
	else
		fail "$name-exit" "want exit 0 in [$min ms, $((drain + 2)) s] after SIG$sig: status $rc after ${dt} ms"
	fi
}

EP=$(free_port)
"$CONNHOLD" serve -q 127.0.0.1:"$EP" 2>"$T_TMP/echo.err" &
on_cleanup_pid $!
wait_port 127.0.0.1 "$EP" 10 || { fail setup "echo server did not start: $(cat "$T_TMP/echo.err")"; finish; }

config() { # config DRAIN SOCKS-PORT
	printf '[main]\nlog-level = info\ndrain-timeout = %ss\n[inbound socks]\ntype = socks5\nlisten = 127.0.0.1:%s\n' "$1" "$2"
}

# --- SIGTERM: in-flight transfer fits in drain-timeout ------------------------------
SP=$(free_port)
if start_spliced "$(config 5 "$SP")"; then
	# 48 MiB paced at 16 MiB/s: ~3 s, so ~2 s of it happen after the signal.
	"$CONNHOLD" -s 127.0.0.1:"$SP" -t 127.0.0.1:"$EP" -w 30000 run -n 1 -b 48M -r 16M \
		>"$T_TMP/x1.out" 2>&1 &
	X1=$!
	on_cleanup_pid $X1
	sleep 1
	t0=$(now_ms)
	kill -TERM "$SPLICED_PID"
	sleep 0.3
	out=$("$PROBE" 127.0.0.1:"$SP" -x 050100 -w 1000)
	if [[ $out == *"end=connect-Connection refused"* ]]; then pass sigterm-stops-accepting; else
		fail sigterm-stops-accepting "a connect 0.3 s after SIGTERM: $out"; fi
	if kill -0 $X1 2>/dev/null; then
		echo "# the transfer was still in flight 0.3 s after SIGTERM (as intended)"
	fi
	wait_pid $X1 20
	if [[ $(cat "$T_TMP/x1.out") == "run ok 1 fail 0 "* ]]; then pass sigterm-inflight-completes; else
		fail sigterm-inflight-completes "transfer across SIGTERM: $(cat "$T_TMP/x1.out")"; fi
	wait_pid "$SPLICED_PID" 10
	rc=$?
	dt=$(($(now_ms) - t0))
	echo "# transfer: $(cat "$T_TMP/x1.out"); spliced exited $rc, ${dt} ms after SIGTERM"
	if [ $rc = 0 ] && [ $dt -le 7000 ]; then pass sigterm-drained-exit; else
		fail sigterm-drained-exit "want exit 0 within drain-timeout 5 s + 2 s: status $rc after ${dt} ms"; fi
else
	fail sigterm-start "spliced did not start"
fi

# --- SIGTERM: a connection outlives drain-timeout ---------------------------------
SP=$(free_port)
if start_spliced "$(config 2 "$SP")"; then
	holder h -s 127.0.0.1:"$SP" -t 127.0.0.1:"$EP" -w 3000
	hask h "open 1"
	expect_eq drain-open "$r" "opened 1 failed 0" "client"
	# and a transfer that cannot finish in 2 s (100 MiB at 10 MiB/s)
	"$CONNHOLD" -s 127.0.0.1:"$SP" -t 127.0.0.1:"$EP" -w 30000 run -n 1 -b 100M -r 10M \
		>"$T_TMP/x2.out" 2>&1 &
	X2=$!
	on_cleanup_pid $X2
	sleep 0.5
	send_sig TERM
	sleep 1
	hask h ping
	expect_eq drain-existing-keep-working "$r" "ping ok 1 bad 0" "ping 1 s into the drain"
	wait_exit drain-expired 2 1500
	hask h check
	if [[ $r =~ ^check\ alive\ 0\ dead\ 1 ]]; then pass drain-expired-closed; else
		fail drain-expired-closed "the held connection after spliced exited: $r"; fi
	wait_pid $X2 10
	echo "# transfer cut by the drain deadline (expected): $(cat "$T_TMP/x2.out")"
	if [[ $(cat "$T_TMP/x2.out") == "run ok 0 fail 1 "* ]]; then pass drain-expired-transfer-cut; else
		fail drain-expired-transfer-cut "a 10 s transfer should have been cut at drain-timeout: $(cat "$T_TMP/x2.out")"; fi
	hquit h
else
	fail drain-start "spliced did not start"
fi

# --- SIGINT, idle connection held ---------------------------------------------
SP=$(free_port)
if start_spliced "$(config 1 "$SP")"; then
	holder i -s 127.0.0.1:"$SP" -t 127.0.0.1:"$EP" -w 3000
	hask i "open 1"
	expect_eq sigint-open "$r" "opened 1 failed 0" "client"
	send_sig INT
	wait_exit sigint-held 1 0
	hquit i
else
	fail sigint-start "spliced did not start"
fi

# --- SIGINT with nothing open: prompt exit --------------------------------------
SP=$(free_port)
if start_spliced "$(config 5 "$SP")"; then
	sleep 0.3
	send_sig INT
	wait_exit sigint-idle 5 0
	if [ "$dt" -le 2000 ]; then pass sigint-idle-prompt; else
		fail sigint-idle-prompt "no connection open, yet exit took ${dt} ms (drain-timeout 5 s)"; fi
else
	fail sigint-idle-start "spliced did not start"
fi
finish
