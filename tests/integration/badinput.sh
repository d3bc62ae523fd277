#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Malformed, truncated, oversized and slow handshakes against spliced (ASan build when available) while a long transfer runs through it.
. "$(dirname "$0")/../lib.sh"

CONNHOLD=${CONNHOLD:-$T_BUILD/tests/tools/connhold}
PROBE=${PROBE:-$T_BUILD/tests/tools/probe}
XFER_BYTES=${BADINPUT_BYTES:-200M}
XFER_RATE=${BADINPUT_RATE:-20M} # paced so it overlaps every probe below
PAR=${BADINPUT_PAR:-32}         # probes in flight at once

use_asan_spliced
need_spliced
need "$CONNHOLD" "$PROBE"
ulimit -n "$(ulimit -Hn)"

hexstr() { printf '%s' "$1" | od -An -tx1 -v | tr -d ' \n'; }
hexrep() { local i s=; for ((i = 0; i < $2; i++)); do s+=$1; done; printf '%s' "$s"; }
port_hex() { printf '%04x' "$1"; }

EP=$(free_port)
"$CONNHOLD" serve -q 127.0.0.1:"$EP" 2>"$T_TMP/echo.err" &
on_cleanup_pid $!
wait_port 127.0.0.1 "$EP" 10 || { fail setup "echo server did not start: $(cat "$T_TMP/echo.err")"; finish; }

SP=$(free_port)
AP=$(free_port)
HP=$(free_port)
start_spliced "[main]
log-level = warn
handshake-timeout = 2s
[inbound socks]
type = socks5
listen = 127.0.0.1:$SP
[inbound auth]
type = socks5
listen = 127.0.0.1:$AP
user = alice:secret
[inbound web]
type = http
listen = 127.0.0.1:$HP" || { fail setup "spliced did not start"; finish; }
PID=$SPLICED_PID
# Warm up first (pipes taken into the pool by a transfer may stay there), then
# take the baseline.
out=$("$CONNHOLD" -s 127.0.0.1:"$SP" -t 127.0.0.1:"$EP" run -n 2 -b 1M 2>&1)
[[ $out == "run ok 2 fail 0 "* ]] || echo "# warm-up transfer: $out"
sleep 0.5
base=$(fd_count "$PID")
base_kinds=$(fd_kinds "$PID")
echo "# spliced at rest: $base open files: $base_kinds"

# The long transfer: echoed back and compared byte for byte by connhold.
"$CONNHOLD" -s 127.0.0.1:"$SP" -t 127.0.0.1:"$EP" -w 120000 run -n 1 -b "$XFER_BYTES" \
	-r "$XFER_RATE" >"$T_TMP/xfer.out" 2>&1 &
XPID=$!
on_cleanup_pid $XPID

# Probe jobs: each writes "NAME<TAB>REGEX<TAB>probe output" to its own file.
jobs_dir=$T_TMP/probes
mkdir -p "$jobs_dir"
njobs=0
PPIDS=()
# expect NAME PORT REGEX PROBE-ARGS...: queue a probe whose output must match REGEX.
expect() {
	local name=$1 port=$2 re=$3
	shift 3
	njobs=$((njobs + 1))
	(
		out=$("$PROBE" 127.0.0.1:"$port" "$@" 2>&1)
		printf '%s\t%s\t%s\n' "$name" "$re" "$out" >"$jobs_dir/$(printf %05d $njobs)"
	) &
	PPIDS+=($!)
	if [ $((njobs % PAR)) = 0 ]; then wait_probes; fi
}
wait_probes() {
	local p
	for p in "${PPIDS[@]}"; do wait "$p"; done
	PPIDS=()
}

CLOSED='end=(eof|reset)'
G=050100 # greeting: no authentication
REQ4=050100017f000001$(port_hex "$EP")
REQD=0501000309$(hexstr localhost)$(port_hex "$EP")

# --- SOCKS5 greeting and request errors (RFC 1928 sections 3, 4, 6) ---------
expect socks-wrong-version "$SP" "reply=- .*$CLOSED" -x 040100
expect socks-version-4-request "$SP" "$CLOSED" -x 040100507f00000100
expect socks-nmethods-0 "$SP" "reply=05ff .*$CLOSED" -x 0500
expect socks-no-acceptable-method "$SP" "reply=05ff .*$CLOSED" -x 050102
expect socks-unknown-atyp "$SP" "reply=05000508.*$CLOSED" -x $G -d 100 -x 050100097f0000010050
expect socks-empty-domain "$SP" "reply=05000501.*$CLOSED" -x $G -d 100 -x 050100030000$(port_hex "$EP")
# 255 octets, the most ATYP 3 can carry; resolution fails → REP 04
d255=$(hexstr "$(printf 'a%.0s' {1..63}).$(printf 'b%.0s' {1..63}).$(printf 'c%.0s' {1..63}).$(printf 'd%.0s' {1..55}).invalid")
expect socks-domain-255 "$SP" "reply=05000504.*$CLOSED" -w 20000 -x $G -d 100 -x 05010003ff${d255}0050
expect socks-bind "$SP" "reply=05000507.*$CLOSED" -x $G -d 100 -x 050200017f0000010050
expect socks-udp-associate "$SP" "reply=05000507.*$CLOSED" -x $G -d 100 -x 050300017f0000010050
expect socks-unknown-command "$SP" "reply=05000507.*$CLOSED" -x $G -d 100 -x 050900017f0000010050
expect socks-request-version "$SP" "reply=05000501.*$CLOSED" -x $G -d 100 -x 040100017f0000010050
expect socks-reserved-nonzero "$SP" "reply=05000501.*$CLOSED" -x $G -d 100 -x 050107017f0000010050
# RFC 1929: the longest credentials the format allows, wrong → 01 01
U255=$(hexrep 75 255)
expect auth-oversized-credentials "$AP" "reply=05020101 .*$CLOSED" -x 050102 -d 100 -x 01ff${U255}ff${U255}
expect auth-empty-username "$AP" "reply=0502.*$CLOSED" -x 050102 -d 100 -x 010003616263
expect auth-wrong-subversion "$AP" "reply=0502 .*$CLOSED" -x 050102 -d 100 -x 050561616161610161
expect auth-method-none-refused "$AP" "reply=05ff .*$CLOSED" -x 050100

# --- HTTP CONNECT errors --------------------------------------------------------
expect http-garbage-request-line "$HP" "http=400" -a 'GARBAGE\r\n\r\n'
expect http-binary-request-line "$HP" "http=400" -x 00ff00ff0d0a0d0a
expect http-not-forwarded "$HP" "http=405" -a 'TRACE http://127.0.0.1/ HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n'
expect http-origin-form "$HP" "http=400" -a 'GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n'
expect http-bad-target "$HP" "http=400" -a 'CONNECT nocolon HTTP/1.1\r\n\r\n'
expect http-headers-over-limit "$HP" "http=431" -a "CONNECT 127.0.0.1:$EP HTTP/1.1\\r\\nX-Pad: " \
	-R 9000 -x 61 -a '\r\n\r\n'
expect http-many-headers-over-limit "$HP" "http=431" -a "CONNECT 127.0.0.1:$EP HTTP/1.1\\r\\n" \
	-R 1200 -x $(hexstr 'X-A: b')0d0a -a '\r\n'

# --- slow-loris: never finishes, must be cut at handshake-timeout (2 s) ----------
expect socks-slow-loris "$SP" "$CLOSED ms=[0-9]+ total_ms=(1[5-9][0-9][0-9]|[23][0-9][0-9][0-9])$" \
	-1 -d 300 -x $G -x $REQ4
expect http-slow-loris "$HP" "$CLOSED ms=[0-9]+ total_ms=(1[5-9][0-9][0-9]|[23][0-9][0-9][0-9])( |$)" \
	-1 -d 200 -a "CONNECT 127.0.0.1:$EP HTTP/1.1\\r\\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
expect silent-client "$SP" "reply=- .*$CLOSED ms=[0-9]+ total_ms=(1[5-9][0-9][0-9]|[23][0-9][0-9][0-9])$"

# --- random bytes -------------------------------------------------------------
for seed in 1 2 3 4 5 6; do
	expect "socks-random-$seed" "$SP" "$CLOSED" -S $seed -z 700
	expect "auth-random-$seed" "$AP" "$CLOSED" -S $seed -z 700
	expect "http-random-$seed" "$HP" "$CLOSED" -S $seed -z 700
	expect "socks-after-greeting-random-$seed" "$SP" "reply=0500.*$CLOSED" -x $G -d 100 -S $seed -z 300
done

# --- clients that reset (SO_LINGER 0) right after a message: the reply, sent through
# io_uring, may then fail; only that connection may notice ---------------------------
for i in 1 2 3 4 5 6 7 8; do
	expect "socks-rst-after-greeting-$i" "$SP" "end=rst-sent" -x $G -r
	expect "socks-rst-after-request-$i" "$SP" "end=rst-sent" -x $G -d 50 -x $REQ4 -r
	expect "socks-rst-with-request-$i" "$SP" "end=rst-sent" -x $G$REQ4 -r
	expect "auth-rst-after-greeting-$i" "$AP" "end=rst-sent" -x 050102 -r
done

# --- a valid handshake cut at every byte position --------------------------------
# cut_all NAME PORT GREETING REQUEST: for each k, send the first k octets (the
# greeting, its reply awaited, then the rest) and half-close (spliced must close
# its side) or close outright (spliced must notice and free the slot).
cut_all() {
	local name=$1 port=$2 g=$3 q=$4 k n glen args
	glen=$((${#g} / 2))
	n=$((glen + ${#q} / 2))
	for ((k = 0; k < n; k++)); do
		if [ $k -le $glen ]; then
			args=(-x "${g:0:$((2 * k))}")
		else
			args=(-x "$g" -d 100 -x "${q:0:$((2 * (k - glen)))}")
		fi
		expect "$name-cut-$k-shut" "$port" "$CLOSED" -w 4000 -h "${args[@]}"
		expect "$name-cut-$k-close" "$port" "end=closed" -k "${args[@]}"
	done
}
cut_all socks-ipv4 "$SP" $G "$REQ4"
cut_all socks-domain "$SP" $G "$REQD"
cut_all auth "$AP" 050102 "0105$(hexstr alice)06$(hexstr secret)"
HREQ=$(hexstr "CONNECT 127.0.0.1:$EP HTTP/1.1")0d0a$(hexstr "Host: 127.0.0.1:$EP")0d0a0d0a
cut_all http "$HP" "" "$HREQ"
wait_probes

# --- verdicts ------------------------------------------------------------------
if kill -0 $XPID 2>/dev/null; then
	echo "# the transfer was still running when all $njobs probes had finished"
else
	echo "# note: the transfer ended before the probes did (lower BADINPUT_RATE to overlap more)"
fi
bad=0
for f in "$jobs_dir"/*; do
	IFS=$'\t' read -r name re out <"$f"
	if [[ $out =~ $re ]]; then
		pass "$name"
	else
		fail "$name" "want /$re/: $out"
		bad=$((bad + 1))
	fi
done
echo "# $njobs probes, $bad failed"

if wait_pid $XPID 120; then
	pass "transfer-$XFER_BYTES-byte-exact"
	echo "# $(cat "$T_TMP/xfer.out")"
else
	fail "transfer-$XFER_BYTES-byte-exact" "$(cat "$T_TMP/xfer.out")"
fi

if kill -0 "$PID" 2>/dev/null; then pass alive; else fail alive "spliced exited"; fi
ok=0
for i in $(seq 100); do
	[ "$(fd_count "$PID")" -le "$base" ] && { ok=1; break; }
	sleep 0.1
done
if [ $ok = 1 ]; then pass fds-back-to-baseline; else
	fail fds-back-to-baseline "$(fd_count "$PID") open files 10 s after the last probe, $base at rest; now: $(fd_kinds "$PID"); at rest: $base_kinds"
fi
stop_spliced "$PID"
expect_eq sigterm-exit "$?" 0 "exit status"
# No sanitizer report, and the worker's guard against miscounted ops (worker.c STUCK_OPS_MS) silent.
expect_clean_log sanitizers-clean
finish
