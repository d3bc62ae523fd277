# SPDX-License-Identifier: MIT
# Shared helpers for tests/integration/*.sh: result lines, cleanup registry, ports, netns, spliced.
# Source it first thing: . "$(dirname "$0")/../lib.sh"
# shellcheck shell=bash

set -uo pipefail

T_TOP=${SPLICED_TOP:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
T_BUILD=${SPLICED_BUILD:-$T_TOP/build}
SPLICED_BIN=${SPLICED_BIN:-$T_BUILD/app/spliced}
XFER=${XFER:-$T_BUILD/tests/tools/xfer}
T_NAME=${T_NAME:-integration/$(basename "$0" .sh)}
T_TMP=$(mktemp -d "/tmp/spl-$(basename "$0" .sh).XXXXXX")
T_FAILS=0
T_PIDS=()
T_NETNS=()
T_FILES=()
T_LOGS=()   # logs of daemons we started, shown when a case fails
T_NS_SEQ=0
T_START=$SECONDS

# --- result lines ---------------------------------------------------------

pass() { echo "PASS: $T_NAME/$1"; }
skip() { echo "SKIP: $T_NAME/$1 (${2:-skipped})"; }

# fail CASE [WHY]: print the FAIL line, then the logs of every daemon we started.
fail() {
	echo "FAIL: $T_NAME/$1${2:+ ($2)}"
	T_FAILS=$((T_FAILS + 1))
	local l
	for l in "${T_LOGS[@]}"; do
		[ -s "$l" ] || continue
		echo "# --- last lines of $(basename "$l")"
		tail -n 20 "$l" | sed 's/^/#   /'
	done
}

# check CASE CMD...: PASS when CMD succeeds, FAIL (with its output) otherwise.
check() {
	local name=$1 out
	shift
	if out=$("$@" 2>&1); then
		pass "$name"
	else
		fail "$name" "command failed: $*"
		printf '%s\n' "$out" | tail -n 15 | sed 's/^/#   /'
	fi
}

# expect_eq CASE GOT WANT [WHAT]
expect_eq() {
	if [ "$2" == "$3" ]; then pass "$1"; else fail "$1" "${4:-value}: got '$2', want '$3'"; fi
}

# finish: the last line of every script; non-zero exit when any case failed.
# expect_lines NAME OUTPUT WANT...: every WANT line (a grep -x pattern) is in OUTPUT.
expect_lines() {
	local name=$1 out=$2 w
	shift 2
	for w in "$@"; do
		if ! grep -qxE "$w" <<<"$out"; then fail "$name" "no line '$w' in: $(tr '\n' '|' <<<"$out")"; return; fi
	done
	pass "$name"
}

finish() {
	echo "# $T_NAME: $((SECONDS - T_START))s, $T_FAILS failed"
	[ "$T_FAILS" -eq 0 ]
	exit
}

# need CMD...: SKIP the whole script (exit 0) when a required command is missing.
need() {
	local c
	for c in "$@"; do
		if ! command -v "$c" >/dev/null 2>&1 && [ ! -x "$c" ]; then
			skip all "$c not installed"
			exit 0
		fi
	done
}

need_root() {
	if [ "$(id -u)" != 0 ]; then
		skip "${1:-netns}" "needs root for network namespaces"
		return 1
	fi
}

# --- cleanup registry -----------------------------------------------------

on_cleanup_pid() { T_PIDS+=("$@"); }
on_cleanup_file() { T_FILES+=("$@"); }

t_cleanup() {
	local p n i
	trap - EXIT INT TERM
	for p in "${T_PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
	# Give them up to 2 s to exit, then insist.
	for i in $(seq 20); do
		n=0
		for p in "${T_PIDS[@]}"; do kill -0 "$p" 2>/dev/null && n=1; done
		[ $n -eq 0 ] && break
		sleep 0.1
	done
	for p in "${T_PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done
	for n in "${T_NETNS[@]}"; do
		# Anything still running inside the namespace was started by this test.
		for p in $(ip netns pids "$n" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
		ip netns del "$n" 2>/dev/null
	done
	for n in "${T_FILES[@]}"; do rm -rf "$n"; done
	rm -rf "$T_TMP"
}
trap t_cleanup EXIT
trap 'echo "FAIL: $T_NAME/interrupted"; exit 1' INT TERM HUP

# --- processes and ports --------------------------------------------------

# free_port: a random TCP port nobody listens on (others run tests concurrently, so pick
# randomly instead of counting up from a base), below the ephemeral range so that no
# outgoing connection can take it before our listener binds it.
free_port() {
	local p i lo=10000 hi=32768 eph
	read -r eph _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null && [ "$eph" -gt 12000 ] && hi=$eph
	for i in $(seq 200); do
		p=$((lo + (RANDOM * 32768 + RANDOM) % (hi - lo)))
		if [ -z "$(ss -Htan "( sport = :$p )" 2>/dev/null)" ]; then
			echo "$p"
			return 0
		fi
	done
	return 1
}

# wait_port HOST PORT [SECONDS] [NETNS]: wait until a TCP connect succeeds.
# Do not use it on a one-shot (--once) server: the probe would be its only client.
wait_port() {
	local host=$1 port=$2 secs=${3:-10} ns=${4:-} i h=${1#[}
	h=${h%]}
	for i in $(seq $((secs * 20))); do
		if [ -n "$ns" ]; then
			ip netns exec "$ns" bash -c "exec 3<>/dev/tcp/$h/$port" 2>/dev/null && return 0
		else
			bash -c "exec 3<>/dev/tcp/$h/$port" 2>/dev/null && return 0
		fi
		sleep 0.05
	done
	return 1
}

# wait_file FILE [SECONDS]: wait until FILE exists and is non-empty.
wait_file() {
	local i
	for i in $(seq $((${2:-10} * 20))); do
		[ -s "$1" ] && return 0
		sleep 0.05
	done
	return 1
}

# wait_pid PID SECONDS: wait for a background child; 124 when it is still running then.
wait_pid() {
	local pid=$1 i
	for i in $(seq $(($2 * 20))); do
		if ! kill -0 "$pid" 2>/dev/null; then
			wait "$pid"
			return
		fi
		sleep 0.05
	done
	return 124
}

# xfer_server VAR [NETNS] -- XFER-LISTEN-ARGS...: start "xfer listen ... --port-file" in the
# background (stdin/stdout as the caller redirects them with XFER_IN/XFER_OUT), wait until it
# listens; sets VAR_PID and VAR_PORT and VAR_ERR (its stderr file).
XFER_IN=/dev/null
XFER_OUT=/dev/null
xfer_server() {
	local var=$1 ns=
	shift
	if [ "$1" != "--" ]; then ns=$1; shift; fi
	shift
	local pf=$T_TMP/$var.port err=$T_TMP/$var.err pid
	rm -f "$pf"
	if [ -n "$ns" ]; then
		ip netns exec "$ns" "$XFER" listen "$@" --port-file "$pf" <"$XFER_IN" >"$XFER_OUT" 2>"$err" &
	else
		"$XFER" listen "$@" --port-file "$pf" <"$XFER_IN" >"$XFER_OUT" 2>"$err" &
	fi
	pid=$!
	on_cleanup_pid "$pid"
	printf -v "${var}_PID" %s "$pid"
	printf -v "${var}_ERR" %s "$err"
	if ! wait_file "$pf" 10; then
		echo "# xfer listen $* did not start: $(cat "$err")"
		return 1
	fi
	printf -v "${var}_PORT" %s "$(cat "$pf")"
}

# --- network namespaces ---------------------------------------------------

# netns_new VAR: create a namespace named spl<pid>-<n> with lo up; its name goes into VAR.
netns_new() {
	local n
	T_NS_SEQ=$((T_NS_SEQ + 1))
	n="spl$$-$T_NS_SEQ"
	ip netns add "$n" || return 1
	T_NETNS+=("$n")
	ip -n "$n" link set lo up || return 1
	printf -v "$1" %s "$n"
}

# netns_veth NS_A ADDR_A NS_B ADDR_B: link two namespaces with a veth pair (ADDR as cidr).
netns_veth() {
	local a=$1 aa=$2 b=$3 ba=$4 ia="v${T_NS_SEQ}a$$" ib="v${T_NS_SEQ}b$$"
	ia=${ia:0:15}
	ib=${ib:0:15}
	ip link add "$ia" netns "$a" type veth peer name "$ib" netns "$b" || return 1
	ip -n "$a" addr add "$aa" dev "$ia" && ip -n "$a" link set "$ia" up &&
		ip -n "$b" addr add "$ba" dev "$ib" && ip -n "$b" link set "$ib" up
}

# in_ns NS CMD...: run CMD inside NS ("" = here).
in_ns() {
	local ns=$1
	shift
	if [ -n "$ns" ]; then ip netns exec "$ns" "$@"; else "$@"; fi
}

# --- spliced --------------------------------------------------------------

T_SPLICED_SEQ=0
SPLICED_NETNS=    # set to run the next start_spliced inside a namespace

# start_spliced CONFIG-TEXT: write it to a temp INI, start $SPLICED_BIN -c INI in the
# background, wait until every "listen =" port accepts. Sets SPLICED_PID, SPLICED_LOG,
# SPLICED_CONF. Returns 1 (after printing its log) when it does not come up.
start_spliced() {
	T_SPLICED_SEQ=$((T_SPLICED_SEQ + 1))
	local conf=$T_TMP/spliced-$T_SPLICED_SEQ.ini log=$T_TMP/spliced-$T_SPLICED_SEQ.log
	local l hp host port ok=1 ns=$SPLICED_NETNS
	printf '%s\n' "$1" >"$conf"
	if [ -n "$ns" ]; then
		ip netns exec "$ns" "$SPLICED_BIN" -c "$conf" 2>"$log" &
	else
		"$SPLICED_BIN" -c "$conf" 2>"$log" &
	fi
	SPLICED_PID=$!
	SPLICED_LOG=$log
	SPLICED_CONF=$conf
	on_cleanup_pid "$SPLICED_PID"
	T_LOGS+=("$log")
	while read -r l; do
		hp=${l#*=}
		hp=${hp// /}
		host=${hp%:*}
		port=${hp##*:}
		if ! wait_port "$host" "$port" 10 "$ns"; then
			ok=0
			break
		fi
	done < <(grep -E '^[[:space:]]*listen[[:space:]]*=' "$conf")
	if [ $ok -eq 0 ] || ! kill -0 "$SPLICED_PID" 2>/dev/null; then
		echo "# spliced did not come up (config $conf):"
		sed 's/^/#   /' "$conf"
		echo "# its log:"
		tail -n 30 "$log" | sed 's/^/#   /'
		return 1
	fi
}

# sighup_reload PID LOG: SIGHUP to spliced PID, then wait (10 s at most) for this reload's
# verdict line in LOG; 0 when it says the configuration was reloaded, 1 when not (or none came).
sighup_reload() {
	local before
	before=$(grep -cE 'SIGHUP: configuration (reloaded|not reloaded)' "$2")
	kill -HUP "$1"
	for _ in $(seq 200); do
		[ "$(grep -cE 'SIGHUP: configuration (reloaded|not reloaded)' "$2")" -gt "$before" ] && break
		sleep 0.05
	done
	grep -E 'SIGHUP: configuration (reloaded|not reloaded)' "$2" | tail -n 1 | grep -q 'reloaded (reload'
}

# stop_spliced [PID]: SIGTERM and wait up to 10 s; returns its exit status.
stop_spliced() {
	local pid=${1:-$SPLICED_PID}
	kill -TERM "$pid" 2>/dev/null
	wait_pid "$pid" 10
}

# sha FILE: its sha256 hex.
sha() { sha256sum "$1" | cut -d' ' -f1; }

# use_asan_spliced: run the ASan/UBSan build (scripts/test builds it) from here
# on, with leak checks; says which binary is under test.
use_asan_spliced() {
	if [ -n "${SPLICED_ASAN_BIN:-}" ] && [ -x "$SPLICED_ASAN_BIN" ]; then
		SPLICED_BIN=$SPLICED_ASAN_BIN
		echo "# spliced under test: ASan/UBSan build $SPLICED_BIN"
	else
		echo "# SPLICED_ASAN_BIN not set: running the plain build $SPLICED_BIN (no sanitizer verdict)"
	fi
	export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
}

# expect_clean_log NAME [LOG]: NAME passes when spliced's log has no sanitizer
# report and no warning from the worker's guard against miscounted ops.
expect_clean_log() {
	local log=${2:-$SPLICED_LOG} re='ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:|counted in flight'
	if grep -qE "$re" "$log"; then
		fail "$1" "$(grep -m3 -E "$re" "$log")"
	else
		pass "$1"
	fi
}

# need_spliced: SKIP the script when the binary is missing.
need_spliced() {
	if [ ! -x "$SPLICED_BIN" ]; then
		skip all "$SPLICED_BIN not built"
		exit 0
	fi
	if [ ! -x "$XFER" ]; then
		skip all "$XFER not built"
		exit 0
	fi
}

# http_server VAR DIR ADDR [PORT] [NETNS]: python3 -m http.server serving DIR on ADDR
# (127.0.0.1 or ::1); sets VAR_PID and VAR_PORT.
http_server() {
	local var=$1 dir=$2 addr=$3 port=${4:-} ns=${5:-} pid log
	[ -n "$port" ] || port=$(free_port)
	log=$T_TMP/$var.log
	# Not through in_ns: a backgrounded function is a subshell, and its PID is not python's.
	if [ -n "$ns" ]; then
		ip netns exec "$ns" python3 -m http.server --bind "$addr" --directory "$dir" "$port" >"$log" 2>&1 &
	else
		python3 -m http.server --bind "$addr" --directory "$dir" "$port" >"$log" 2>&1 &
	fi
	pid=$!
	on_cleanup_pid "$pid"
	printf -v "${var}_PID" %s "$pid"
	printf -v "${var}_PORT" %s "$port"
	if ! wait_port "$addr" "$port" 10 "$ns"; then
		echo "# http.server on $addr:$port did not start: $(tail -n 5 "$log")"
		return 1
	fi
}

# netns_drop_port NS PORT: inside NS, silently drop incoming TCP to PORT (no RST, no ICMP),
# so a connect there times out.
netns_drop_port() {
	local f=$T_TMP/drop-$1-$2.nft
	cat >"$f" <<NFT
table inet spl_drop_$2 {
	chain input {
		type filter hook input priority 0; policy accept;
		tcp dport $2 drop
	}
}
NFT
	ip netns exec "$1" nft -f "$f"
}

# --- descriptors and time -------------------------------------------------

# spliced's workers each own a private descriptor table (unshare(CLONE_FILES)),
# so /proc/PID/fd shows only the main thread's: look at every task's table and
# count each open file once (by inode).
# find, not ls -l: ls prints a header line per task, which made the count move with
# io_uring's io-wq worker threads as they come and go.
fd_targets() { find /proc/"$1"/task/*/fd -mindepth 1 -maxdepth 1 -printf '%l\n' 2>/dev/null | awk '/:\[/ || /^\// { print }' | sort -u; }
# fd_count PID: how many open files (sockets, pipes, ...) it holds, each once.
fd_count() { fd_targets "$1" | wc -l; }
# sock_count PID: its sockets; pooled pipes may legitimately outlive a connection.
sock_count() { fd_targets "$1" | grep -c '^socket:'; }
# fd_kinds PID: "N socket, N pipe, ..." for diagnostics.
fd_kinds() { fd_targets "$1" | sed 's/:.*//; s/^\/.*/file/' | sort | uniq -c | awk '{ printf "%s%s %s", sep, $1, $2; sep = ", " }'; }
# wait_socks PID WANT SECONDS: wait until the process holds at most WANT sockets.
wait_socks() {
	local i
	for i in $(seq $(($3 * 10))); do
		[ "$(sock_count "$1")" -le "$2" ] && return 0
		sleep 0.1
	done
	return 1
}
# udp_echo NS HOST PORT: a UDP echo server on HOST:PORT inside NS ("" = here) for the rest of
# the test; returns 1 if it did not come up. Started without a function in between, so $! is
# the server itself (ip netns exec execs it): the cleanup must not kill a subshell and leave
# the server running, holding what scripts/test's caller holds (cpu.lock).
udp_echo() {
	local ns=$1 out=$T_TMP/udp-echo.$2.$3 run=()
	[ -n "$ns" ] && run=(ip netns exec "$ns")
	"${run[@]}" python3 -c '
import socket, sys
s = socket.socket(socket.AF_INET6 if ":" in sys.argv[1] else socket.AF_INET, socket.SOCK_DGRAM)
s.bind((sys.argv[1], int(sys.argv[2])))
print("ready", flush=True)
while True:
    d, a = s.recvfrom(70000)
    s.sendto(d, a)
' "$2" "$3" >"$out" 2>&1 &
	on_cleanup_pid $!
	for _ in $(seq 50); do grep -q ready "$out" && return 0; sleep 0.1; done
	return 1
}

# expect_counters PREFIX LOG NAME=VALUE...: spliced's last "stats: relay:" line in LOG has
# each NAME=VALUE; one PASS/FAIL per pair, named PREFIX/NAME=VALUE.
expect_counters() {
	local prefix=$1 stats want
	stats=$(grep -o 'stats: relay: .*' "$2" | tail -n 1)
	shift 2
	for want in "$@"; do
		if grep -q "$want " <<<"$stats "; then pass "$prefix/$want"; else fail "$prefix/$want" "$stats"; fi
	done
}

# www_blob BYTES: www=$T_TMP/www holding blob (BYTES random octets), served on 127.0.0.1 by
# an http.server (http_server H: H_PORT, H_PID).
www_blob() {
	www=$T_TMP/www
	mkdir -p "$www" && head -c "$1" /dev/urandom >"$www/blob" && http_server H "$www" 127.0.0.1
}

# curl_cmp NAME WANT-FILE URL [CURL ARGS...]: pass if curl fetches URL and the body equals
# WANT-FILE byte for byte; else fail with curl's error or the size it got.
curl_cmp() {
	local name=$1 want=$2 url=$3 got=$T_TMP/got.$1 e
	shift 3
	if e=$(curl -sS --max-time 30 "$@" -o "$got" "$url" 2>&1) && cmp -s "$got" "$want"; then
		pass "$name"
	else
		fail "$name" "curl $* $url: ${e:-content differs ($(stat -c %s "$got" 2>/dev/null) bytes)}"
	fi
}
# now_ms: monotonic enough wall clock in milliseconds.
now_ms() { echo $(($(date +%s%N) / 1000000)); }

# --- connhold hold sessions -----------------------------------------------

# holder NAME CONNHOLD-ARGS...: a "connhold ... hold" driven through a FIFO
# ($CONNHOLD, set by the script). hsend NAME CMD sends without waiting; hwait NAME
# waits (up to 60 s, less if connhold dies) for that command's answer line, into r;
# hask NAME CMD does both; hquit NAME ends the session.
declare -gA H_FD H_PID H_N
holder() {
	local name=$1 fd
	shift
	mkfifo "$T_TMP/$name.in"
	"$CONNHOLD" "$@" hold <"$T_TMP/$name.in" >"$T_TMP/$name.out" 2>&1 &
	H_PID[$name]=$!
	on_cleanup_pid $!
	exec {fd}>"$T_TMP/$name.in"
	H_FD[$name]=$fd
	H_N[$name]=0
}
hsend() {
	echo "$2" >&"${H_FD[$1]}"
	H_N[$1]=$((H_N[$1] + 1))
}
hwait() {
	local i n=${H_N[$1]}
	for i in $(seq 1200); do
		if [ "$(wc -l <"$T_TMP/$1.out")" -ge "$n" ]; then
			r=$(sed -n "${n}p" "$T_TMP/$1.out")
			return 0
		fi
		kill -0 "${H_PID[$1]}" 2>/dev/null || break
		sleep 0.05
	done
	r="no answer from connhold $1: $(tail -n 3 "$T_TMP/$1.out")"
	return 1
}
hask() {
	hsend "$1" "$2"
	hwait "$1"
}
hquit() {
	local fd=${H_FD[$1]}
	echo quit >&"$fd"
	exec {fd}>&-
	wait_pid "${H_PID[$1]}" 10 >/dev/null
}
