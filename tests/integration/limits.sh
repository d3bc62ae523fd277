#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# spliced's limits: max-connections, surviving EMFILE, handshake-timeout and idle-timeout.
. "$(dirname "$0")/../lib.sh"

CONNHOLD=${CONNHOLD:-$T_BUILD/tests/tools/connhold}
PROBE=${PROBE:-$T_BUILD/tests/tools/probe}
need_spliced
need "$CONNHOLD" "$PROBE"
ulimit -n "$(ulimit -Hn)"

# cpu_ticks PID: utime + stime of all its threads, in clock ticks.
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null; }

EP=$(free_port)
"$CONNHOLD" serve -q 127.0.0.1:"$EP" 2>"$T_TMP/echo.err" &
on_cleanup_pid $!
wait_port 127.0.0.1 "$EP" 10 || { fail setup "echo server did not start: $(cat "$T_TMP/echo.err")"; finish; }

# --- max-connections = 50 ---------------------------------------------------
SP=$(free_port)
if start_spliced "[main]
log-level = warn
max-connections = 50
[inbound socks]
type = socks5
listen = 127.0.0.1:$SP"; then
	sleep 0.3
	base=$(sock_count "$SPLICED_PID")
	holder m -s 127.0.0.1:"$SP" -t 127.0.0.1:"$EP" -w 5000
	hask m "open 50"
	expect_eq maxconn-50-open "$r" "opened 50 failed 0" "client"
	hask m ping
	expect_eq maxconn-50-work "$r" "ping ok 50 bad 0" "client"
	t0=$(now_ms)
	hask m "open 1"
	dt=$(($(now_ms) - t0))
	if [[ $r =~ ^opened\ 0\ failed\ 1\ (eof|reset)=1$ ]] && [ $dt -lt 3000 ]; then
		pass maxconn-51st-refused
		echo "# 51st connection: $r after ${dt} ms"
	else
		fail maxconn-51st-refused "want it closed by spliced within 3 s: got '$r' after ${dt} ms"
	fi
	hask m ping
	expect_eq maxconn-existing-unaffected "$r" "ping ok 50 bad 0" "client"
	hask m "close 10"
	if wait_socks "$SPLICED_PID" $((base + 2 * 40)) 5; then
		hask m "open 10"
		expect_eq maxconn-accepts-again "$r" "opened 10 failed 0" "client"
	else
		fail maxconn-accepts-again "spliced still holds $(sock_count "$SPLICED_PID") sockets 5 s after 10 of 50 closed (at rest $base)"
	fi
	hask m ping
	expect_eq maxconn-all-work "$r" "ping ok 50 bad 0" "client"
	hquit m
	stop_spliced
	expect_eq maxconn-exit "$?" 0 "exit status"
else
	fail maxconn-start "spliced did not start"
fi

# --- EMFILE: RLIMIT_NOFILE 64 -----------------------------------------------
REAL_BIN=$SPLICED_BIN
SPLICED_BIN=$T_TMP/spliced-lowfd
printf '#!/bin/sh\nexec prlimit --nofile=64:64 "%s" "$@"\n' "$REAL_BIN" >"$SPLICED_BIN"
chmod +x "$SPLICED_BIN"
SP=$(free_port)
if start_spliced "[main]
log-level = warn
[inbound socks]
type = socks5
listen = 127.0.0.1:$SP"; then
	PID=$SPLICED_PID
	SPLICED_BIN=$REAL_BIN
	sleep 0.3
	base=$(sock_count "$PID")
	echo "# EMFILE: spliced runs with RLIMIT_NOFILE 64; at rest: $(fd_kinds "$PID")"
	holder e1 -s 127.0.0.1:"$SP" -t 127.0.0.1:"$EP" -w 4000
	hask e1 "open 60"
	echo "# 60 connections against 64 descriptors: $r"
	held=0
	[[ $r =~ ^opened\ ([0-9]+)\ failed\ ([0-9]+) ]] && held=${BASH_REMATCH[1]}
	if [ "$held" -ge 1 ] && [ "${BASH_REMATCH[2]:-0}" -ge 1 ]; then
		pass emfile-limit-reached
	else
		fail emfile-limit-reached "want some of 60 held and some refused: $r"
	fi
	# More clients knock while it is out of descriptors; sample its CPU meanwhile.
	holder e2 -s 127.0.0.1:"$SP" -t 127.0.0.1:"$EP" -w 5000
	hsend e2 "open 40"
	sleep 0.5
	c0=$(cpu_ticks "$PID")
	sleep 2
	c1=$(cpu_ticks "$PID")
	hz=$(getconf CLK_TCK)
	if [ -n "$c1" ]; then
		echo "# CPU while at EMFILE with clients waiting: $((c1 - c0)) ticks in 2 s (CLK_TCK $hz)"
		# a spinning accept loop burns ~2 s per 2 s; allow a quarter of that
		if [ $((c1 - c0)) -le $((hz / 2)) ]; then pass emfile-no-spin; else
			fail emfile-no-spin "$((c1 - c0)) ticks of CPU in 2 s at EMFILE (bound $((hz / 2)))"; fi
	else
		fail emfile-no-spin "spliced is gone"
	fi
	if kill -0 "$PID" 2>/dev/null; then pass emfile-alive; else fail emfile-alive "spliced exited under EMFILE"; fi
	hask e1 ping
	expect_eq emfile-held-keep-working "$r" "ping ok $held bad 0" "client"
	hwait e2
	echo "# while at EMFILE, 40 more: $r"
	hquit e1
	hquit e2
	if wait_socks "$PID" "$base" 15; then pass emfile-released; else
		fail emfile-released "spliced holds $(sock_count "$PID") sockets 15 s after all clients closed ($base at rest)"; fi
	holder e3 -s 127.0.0.1:"$SP" -t 127.0.0.1:"$EP" -w 5000
	hask e3 "open 10"
	expect_eq emfile-accepts-again "$r" "opened 10 failed 0" "client"
	hask e3 ping
	expect_eq emfile-new-work "$r" "ping ok 10 bad 0" "client"
	hquit e3
	stop_spliced "$PID"
	expect_eq emfile-exit "$?" 0 "exit status"
else
	SPLICED_BIN=$REAL_BIN
	fail emfile-start "spliced did not start with RLIMIT_NOFILE 64"
fi

# --- handshake-timeout = 1s, idle-timeout = 2s ------------------------------
SP=$(free_port)
if start_spliced "[main]
log-level = warn
handshake-timeout = 1s
idle-timeout = 2s
[inbound socks]
type = socks5
listen = 127.0.0.1:$SP"; then
	# probe_closed NAME PROBE-ARGS...: spliced must close it 0.7..2.5 s after connect.
	probe_closed() {
		local name=$1 out ms
		shift
		out=$("$PROBE" 127.0.0.1:"$SP" -w 5000 "$@")
		ms=$(sed -n 's/.*total_ms=\([0-9]*\).*/\1/p' <<<"$out")
		if [[ $out =~ end=(eof|reset) ]] && [ "${ms:-0}" -ge 700 ] && [ "${ms:-0}" -le 2500 ]; then
			pass "$name"
			echo "# $name: $out"
		else
			fail "$name" "want closed by spliced ~1 s after connect: $out"
		fi
	}
	probe_closed handshake-timeout-silent
	probe_closed handshake-timeout-half-greeting -x 050200
	probe_closed handshake-timeout-half-request -x 050100 -d 100 -x 050100017f

	holder idle -s 127.0.0.1:"$SP" -t 127.0.0.1:"$EP" -w 5000
	holder busy -s 127.0.0.1:"$SP" -t 127.0.0.1:"$EP" -w 5000
	hask idle "open 1"
	r1=$r
	hask busy "open 1"
	if [ "$r1" = "opened 1 failed 0" ] && [ "$r" = "opened 1 failed 0" ]; then
		hask idle ping
		hask busy ping
		sleep 1
		hask idle check
		expect_eq idle-timeout-not-early "$r" "check alive 1 dead 0" "after 1 s idle"
		bad=0
		for i in $(seq 7); do # 3.5 s more, one byte every 0.5 s
			sleep 0.5
			hask busy ping
			[ "$r" = "ping ok 1 bad 0" ] || { bad=1; break; }
		done
		if [ $bad = 0 ]; then pass idle-timeout-active-kept; else
			fail idle-timeout-active-kept "an active connection was closed: $r"; fi
		hask idle check
		if [[ $r =~ ^check\ alive\ 0\ dead\ 1 ]]; then pass idle-timeout-idle-closed; else
			fail idle-timeout-idle-closed "idle 4.5 s with idle-timeout 2s: $r"; fi
	else
		fail idle-timeout-setup "could not open: $r1 / $r"
	fi
	hquit idle
	hquit busy
	stop_spliced
	expect_eq timeouts-exit "$?" 0 "exit status"
else
	fail timeouts-start "spliced did not start"
fi
finish
