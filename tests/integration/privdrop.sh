#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# [main] user = nobody: spliced starts as root, sets up what needs root, then every thread runs
# as nobody with exactly the capabilities its configuration still needs, read back from every
# /proc/PID/task/*/status (Uid, Gid, Groups, CapEff/CapPrm/CapBnd/CapInh/CapAmb, NoNewPrivs):
#   none    a SOCKS5 inbound above port 1024 with a users file: no capability at all
#   bind    a listener on port 80: CAP_NET_BIND_SERVICE
#   mark    an outbound with fwmark and bind-interface: CAP_NET_ADMIN (SO_MARK per connection)
#   bindif  an outbound with bind-interface only: nothing (SO_BINDTODEVICE needs none since 5.7)
#   wg      a hosted [wireguard] interface with a /0 peer: CAP_NET_ADMIN, used by `wg set
#           listen-port` (the new sockets need SO_MARK) and at SIGTERM (policy rules removed)
# Each transfers bytes (sha256-checked). SIGHUP with a users file nobody cannot read is refused
# with "file:line: ... needs a restart" and the old users still log in; once readable it
# reloads. SIGUSR1 prints the WireGuard counters (it used to kill the relay). A reload whose
# acknowledgement is late (one worker thread held in a ptrace stop) keeps the old tables and
# frees them once every worker has caught up: under ASan, no leak.
. "$(dirname "$0")/../lib.sh"
need ip wg sha256sum python3
need_root privdrop || { finish; }
. "$T_TOP/tests/wg-lib.sh"

NOBODY_UID=$(id -u nobody) || { fail setup/nobody "no user nobody"; finish; }
NOBODY_GID=$(id -g nobody)
# spliced, once it is nobody, reads users files through this directory
chmod 755 "$T_TMP"

# --check resolves the names: an unknown user or group is a file:line error, exit 2
printf '[main]\nuser = no-such-user-spliced\ngroup = no-such-group-spliced\n[inbound s]\ntype = socks5\nlisten = 127.0.0.1:1\n' >"$T_TMP/bad.ini"
out=$("$SPLICED_BIN" --check -c "$T_TMP/bad.ini" 2>&1)
rc=$?
if [ $rc -eq 2 ] && grep -qF "bad.ini:2: [main] user: unknown user \"no-such-user-spliced\"" <<<"$out" &&
	grep -qF "bad.ini:3: [main] group: unknown group \"no-such-group-spliced\"" <<<"$out"; then
	pass check/unknown-user-group
else
	fail check/unknown-user-group "rc=$rc: $out"
fi
printf '[main]\nuser = nobody\n[inbound s]\ntype = socks5\nlisten = 127.0.0.1:1\n' >"$T_TMP/good.ini"
out=$("$SPLICED_BIN" --check -c "$T_TMP/good.ini" 2>&1)
expect_eq check/user-nobody "$?" 0 "--check exit status ($out)"

netns_new A || { fail setup/netns; finish; }
head -c 8388608 /dev/urandom >"$T_TMP/blob"
WANT=$(sha "$T_TMP/blob")

# expect_creds CASE PID CAPS: every thread of PID runs as nobody, no supplementary group,
# CapEff = CapPrm = CapBnd = CAPS (16 hex digits), no inheritable or ambient capability,
# NoNewPrivs set.
expect_creds() {
	local n=$1 pid=$2 caps=$3 t st want bad="" threads=0 names=""
	local ids="$NOBODY_UID $NOBODY_UID $NOBODY_UID $NOBODY_UID"
	local gids="$NOBODY_GID $NOBODY_GID $NOBODY_GID $NOBODY_GID"
	for t in /proc/"$pid"/task/*; do
		st=$(cat "$t/status" 2>/dev/null) || continue # a thread that just ended
		threads=$((threads + 1))
		names+="$(cat "$t/comm" 2>/dev/null) "
		want="Uid:$ids|Gid:$gids|Groups:|CapInh:0000000000000000|CapPrm:$caps|CapEff:$caps|CapBnd:$caps|CapAmb:0000000000000000|NoNewPrivs:1"
		got=$(awk '$1 ~ /^(Uid|Gid|Groups|CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs):$/ {
			k = $1; $1 = ""; sub(/^ +/, ""); print k $0 }' <<<"$st" | paste -sd'|')
		[ "$got" = "$want" ] || bad+="$(cat "$t/comm"): $got; "
	done
	if [ "$threads" -lt 3 ]; then fail "$n" "only $threads threads under /proc/$pid/task"
	elif [ -n "$bad" ]; then fail "$n" "want $want; got $bad"
	else pass "$n"; echo "# $n: $threads threads ($names) as uid $NOBODY_UID, caps $caps"; fi
}

# socks_get CASE NS PROXY [USER PASS]: an 8 MiB transfer from a one-shot target inside A,
# through PROXY, sha256-checked.
socks_get() {
	local n=$1 ns=$2 proxy=$3 auth=() port got
	[ $# -ge 5 ] && auth=(--user "$4" --pass "$5")
	port=$(free_port)
	ip netns exec "$A" "$XFER" listen 127.0.0.1 "$port" --once <"$T_TMP/blob" >/dev/null 2>"$T_TMP/tgt.err" &
	on_cleanup_pid $!
	wait_ss_listen "$A" "$port"
	got=$(ip netns exec "$ns" "$XFER" connect --socks5 "$proxy" "${auth[@]}" 127.0.0.1 "$port" \
		</dev/null 2>"$T_TMP/cli.err" | sha256sum | cut -d' ' -f1)
	expect_eq "$n" "$got" "$WANT" "sha256 ($(tr '\n' ' ' <"$T_TMP/cli.err"))"
}

# wait_ss_listen NS PORT: without connecting (a --once target serves one client only)
wait_ss_listen() {
	local i
	for i in $(seq 100); do
		[ -n "$(ip netns exec "$1" ss -Hltn "( sport = :$2 )")" ] && return 0
		sleep 0.05
	done
	return 1
}

# auth_rc NS PROXY USER PASS: xfer's exit status for a CONNECT to an echo target (0 = in)
auth_rc() {
	ip netns exec "$1" timeout 20 "$XFER" connect --timeout 10 --socks5 "$2" --user "$3" \
		--pass "$4" 127.0.0.1 "$ECHO_PORT" </dev/null >/dev/null 2>&1
	echo $?
}

# wait_log LOG REGEX [SECONDS]
wait_log() {
	local i
	for i in $(seq $((${3:-10} * 20))); do
		grep -qE "$2" "$1" && return 0
		sleep 0.05
	done
	return 1
}

# stop_clean CASE: SIGTERM, exit status 0
stop_clean() {
	stop_spliced
	expect_eq "$1" "$?" 0 "exit status"
}

xfer_server ECHO "$A" -- 127.0.0.1 0 --echo || fail setup/echo "echo server"
SPLICED_NETNS=$A

# --- none: no capability; users file SIGHUP
USERS=$T_TMP/users
printf 'alice pw-alice\n' >"$USERS"
chmod 600 "$USERS" # root only
if start_spliced "[main]
user = nobody
workers = 2

[inbound s]
type = socks5
listen = 127.0.0.1:1080
users = $USERS"; then
	pass none/starts
	expect_creds none/creds "$SPLICED_PID" 0000000000000000
	socks_get none/transfer "$A" 127.0.0.1:1080 alice pw-alice
	expect_creds none/creds-after-transfer "$SPLICED_PID" 0000000000000000
	if grep -q "running as user nobody (uid $NOBODY_UID, gid $NOBODY_GID); capabilities kept: none" "$SPLICED_LOG"
	then pass none/logged; else fail none/logged "$(head -n 5 "$SPLICED_LOG")"; fi
	if grep -qF "$SPLICED_CONF:8: [inbound s] users: \"$USERS\" is not readable by user nobody: a SIGHUP cannot re-read it" "$SPLICED_LOG"
	then pass none/unreadable-warned-at-start; else fail none/unreadable-warned-at-start; fi
	# SIGHUP: the file changed but nobody cannot read it: refused, alice stays, bob stays out
	printf 'bob pw-bob\n' >"$USERS"
	kill -HUP "$SPLICED_PID"
	if wait_log "$SPLICED_LOG" 'SIGHUP: configuration not reloaded'; then
		if grep -qF "$SPLICED_CONF:8: [inbound s] users: cannot open \"$USERS\": Permission denied (spliced no longer runs as root: make the file readable by its user, or restart)" "$SPLICED_LOG"
		then pass none/sighup-unreadable-refused; else fail none/sighup-unreadable-refused "$(tail -n 3 "$SPLICED_LOG")"; fi
	else
		fail none/sighup-unreadable-refused "no refusal logged"
	fi
	expect_eq none/sighup-old-user-still-in "$(auth_rc "$A" 127.0.0.1:1080 alice pw-alice)" 0
	expect_eq none/sighup-new-user-not-in "$(auth_rc "$A" 127.0.0.1:1080 bob pw-bob)" 21
	# readable by nobody's group: the next SIGHUP reloads
	chgrp "$NOBODY_GID" "$USERS"
	chmod 640 "$USERS"
	kill -HUP "$SPLICED_PID"
	if wait_log "$SPLICED_LOG" 'SIGHUP: configuration reloaded'; then pass none/sighup-readable-reloads
	else fail none/sighup-readable-reloads "$(tail -n 3 "$SPLICED_LOG")"; fi
	expect_eq none/reloaded-new-user-in "$(auth_rc "$A" 127.0.0.1:1080 bob pw-bob)" 0
	expect_eq none/reloaded-old-user-out "$(auth_rc "$A" 127.0.0.1:1080 alice pw-alice)" 21
	# SIGUSR1 without [wireguard]: said, not fatal
	kill -USR1 "$SPLICED_PID"
	if wait_log "$SPLICED_LOG" 'SIGUSR1: no \[wireguard\]' 5 && kill -0 "$SPLICED_PID" 2>/dev/null
	then pass none/sigusr1-survives; else fail none/sigusr1-survives; fi
	stop_clean none/stop
else
	fail none/starts
fi

# --- bind: a port below 1024
if start_spliced "[main]
user = nobody

[inbound low]
type = socks5
listen = 127.0.0.1:80"; then
	pass bind/starts
	expect_creds bind/creds "$SPLICED_PID" 0000000000000400 # CAP_NET_BIND_SERVICE (10)
	socks_get bind/transfer "$A" 127.0.0.1:80
	stop_clean bind/stop
else
	fail bind/starts
fi

# --- mark: SO_MARK on every outgoing socket needs CAP_NET_ADMIN; SO_BINDTODEVICE needs none
if start_spliced "[main]
user = nobody
workers = 2

[inbound s]
type = socks5
listen = 127.0.0.1:1081

[outbound marked]
type = direct
fwmark = 0x2a
bind-interface = lo

[route]
default = marked"; then
	pass mark/starts
	expect_creds mark/creds "$SPLICED_PID" 0000000000001000 # CAP_NET_ADMIN (12)
	socks_get mark/transfer "$A" 127.0.0.1:1081
	stop_clean mark/stop
else
	fail mark/starts
fi
# --- bindif: SO_BINDTODEVICE on a fresh socket needs no capability (since Linux 5.7)
if start_spliced "[main]
user = nobody

[inbound s]
type = socks5
listen = 127.0.0.1:1083

[outbound lo]
type = direct
bind-interface = lo

[route]
default = lo"; then
	pass bindif/starts
	expect_creds bindif/creds "$SPLICED_PID" 0000000000000000
	socks_get bindif/transfer "$A" 127.0.0.1:1083
	stop_clean bindif/stop
else
	fail bindif/starts
fi
SPLICED_NETNS=

# --- wg: a hosted interface with a /0 peer (policy rules), B runs `spliced wg up`
netns_new B || { fail setup/netns; finish; }
netns_veth "$A" 192.168.243.1/24 "$B" 192.168.243.2/24 || { fail setup/veth; finish; }
wg_keypair KA
wg_keypair KB
NA="spa$$"; NA=${NA:0:15}
NB="spb$$"; NB=${NB:0:15}
cat >"$T_TMP/a.conf" <<C
[Interface]
PrivateKey = $KA_PRIV
ListenPort = 51850
Address = 10.79.0.1/24

[Peer]
PublicKey = $KB_PUB
AllowedIPs = 0.0.0.0/0
Endpoint = 192.168.243.2:51851
C
cat >"$T_TMP/b.conf" <<C
[Interface]
PrivateKey = $KB_PRIV
ListenPort = 51851
Address = 10.79.0.2/24

[Peer]
PublicKey = $KA_PUB
AllowedIPs = 10.79.0.0/24
Endpoint = 192.168.243.1:51850
C
chmod 600 "$T_TMP/a.conf" "$T_TMP/b.conf"
cat >"$T_TMP/wg.ini" <<C
[main]
user = nobody

[inbound tun]
type = socks5
listen = 10.79.0.1:1080

[wireguard $NA]
config = a.conf
C
# memscan.py PID BASE64...: how often each decoded key occurs in PID's readable memory
cat >"$T_TMP/memscan.py" <<'PY'
import base64, sys
pid, keys = int(sys.argv[1]), [base64.b64decode(k) for k in sys.argv[2:]]
counts = [0] * len(keys)
with open("/proc/%d/maps" % pid) as maps, open("/proc/%d/mem" % pid, "rb", 0) as mem:
    for line in maps:
        f = line.split()
        if "r" not in f[1] or (len(f) > 5 and f[5] in ("[vvar]", "[vsyscall]")):
            continue
        lo, hi = (int(x, 16) for x in f[0].split("-"))
        try:
            mem.seek(lo)
            data = mem.read(hi - lo)
        except (OSError, OverflowError):
            continue
        for i, k in enumerate(keys):
            counts[i] += data.count(k)
print(" ".join(map(str, counts)))
PY
WLOG=$T_TMP/spliced-wg.log
T_LOGS+=("$WLOG")
ip netns exec "$A" "$SPLICED_BIN" -c "$T_TMP/wg.ini" 2>"$WLOG" &
WPID=$!
on_cleanup_pid "$WPID"
on_cleanup_file "/var/run/wireguard/$NA.sock"
if wg_wait_sock "$NA" 10 && wait_port 10.79.0.1 1080 10 "$A" && kill -0 "$WPID" 2>/dev/null; then
	pass wg/starts
	# L14: the parsed wg-quick file is wiped once the device is up; the private key lives
	# on in the device's identity only (before any `wg show`, which copies it again)
	expect_eq wg/private-key-one-copy "$(python3 "$T_TMP/memscan.py" "$WPID" "$KA_PRIV")" 1 \
		"copies of the private key in the process's memory"
	start_swg DB "$B" "$T_TMP/b.conf" "$NB" || fail wg/peer-starts
	if grep -q 'lookup 51820' <<<"$(ip -n "$A" rule)"; then pass wg/policy-rules-installed
	else fail wg/policy-rules-installed "$(ip -n "$A" rule | tr '\n' ';')"; fi
	check wg/ping ip netns exec "$B" ping -c 3 -i 0.2 -W 2 10.79.0.1
	socks_get wg/transfer-over-tunnel "$B" 10.79.0.1:1080
	expect_creds wg/creds "$WPID" 0000000000001000
	if grep -q 'spliced-wg' /proc/"$WPID"/task/*/comm; then pass wg/device-threads-checked
	else fail wg/device-threads-checked "no spliced-wg thread"; fi
	# wg(8) as root talks to the device that runs as nobody; a rebind marks its new sockets
	# (SO_MARK, CAP_NET_ADMIN): unmarked, A's packets to B would loop into the tunnel's /0
	check wg/wg-show wg show "$NA"
	check wg/wg-set-listen-port wg set "$NA" listen-port 51860
	expect_eq wg/rebound "$(wg show "$NA" listen-port)" 51860
	check wg/ping-after-rebind ip netns exec "$A" ping -c 3 -i 0.2 -W 2 10.79.0.2
	# SIGUSR1 prints the interface's counters and the relay lives on
	kill -USR1 "$WPID"
	if wait_log "$WLOG" "stats: wireguard $NA: rx_data=" 5 && kill -0 "$WPID" 2>/dev/null; then pass wg/sigusr1-prints-counters
	else fail wg/sigusr1-prints-counters "$(tail -n 3 "$WLOG")"; fi
	# SIGTERM: the routes and the policy rules go, with the CAP_NET_ADMIN kept
	kill -TERM "$WPID"
	wait_pid "$WPID" 10
	expect_eq wg/stop "$?" 0 "exit status"
	if ip -n "$A" link show "$NA" >/dev/null 2>&1; then fail wg/interface-removed; else pass wg/interface-removed; fi
	if grep -q '51820' <<<"$(ip -n "$A" rule)"; then fail wg/policy-rules-removed "$(ip -n "$A" rule | tr '\n' ';')"
	else pass wg/policy-rules-removed; fi
	re='spliced: error:|[Cc]annot |failed: '
	if grep -qE "$re" "$WLOG"; then fail wg/clean-log "$(grep -E "$re" "$WLOG" | head -n 3)"
	else pass wg/clean-log; fi
else
	fail wg/starts "$(tail -n 20 "$WLOG")"
fi

# --- a late reload acknowledgement (L15), under ASan: one worker thread is held in a ptrace
# stop (the others run) while a SIGHUP waits for its acknowledgement
use_asan_spliced
cat >"$T_TMP/hold.py" <<'PY'
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
PTRACE_SEIZE, PTRACE_INTERRUPT, PTRACE_DETACH, WALL = 0x4206, 0x4207, 17, 0x40000000
tid, ready, release = int(sys.argv[1]), sys.argv[2], sys.argv[3]
if libc.ptrace(PTRACE_SEIZE, tid, None, None) or libc.ptrace(PTRACE_INTERRUPT, tid, None, None):
    sys.exit("ptrace: " + os.strerror(ctypes.get_errno()))
os.waitpid(tid, WALL)  # this one thread stops; the process goes on
open(ready, "w").write("held\n")
for _ in range(600):
    if os.path.exists(release):
        break
    time.sleep(0.1)
libc.ptrace(PTRACE_DETACH, tid, None, None)
PY
printf 'carol pw-carol\n' >"$USERS"
SPLICED_NETNS=$A
if start_spliced "[main]
user = nobody
workers = 2

[inbound s]
type = socks5
listen = 127.0.0.1:1082
users = $USERS"; then
	tid=$(grep -l '^spliced-w1$' /proc/"$SPLICED_PID"/task/*/comm | head -n 1 | cut -d/ -f5)
	python3 "$T_TMP/hold.py" "$tid" "$T_TMP/held" "$T_TMP/release" &
	HOLD=$!
	on_cleanup_pid "$HOLD"
	if wait_file "$T_TMP/held" 10; then
		printf 'dave pw-dave\n' >"$USERS"
		kill -HUP "$SPLICED_PID"
		if wait_log "$SPLICED_LOG" 'reload 1: workers did not acknowledge' 10; then pass late-ack/timeout-reported
		else fail late-ack/timeout-reported "$(tail -n 3 "$SPLICED_LOG")"; fi
		# the new table is published; the held worker has not acknowledged: no new reload
		kill -HUP "$SPLICED_PID"
		if wait_log "$SPLICED_LOG" 'reload 1 is still not acknowledged by every worker \(1 of 2\)' 5
		then pass late-ack/next-reload-waits; else fail late-ack/next-reload-waits "$(tail -n 3 "$SPLICED_LOG")"; fi
		touch "$T_TMP/release"
		wait "$HOLD"
		printf 'erin pw-erin\n' >"$USERS"
		kill -HUP "$SPLICED_PID"
		if wait_log "$SPLICED_LOG" 'SIGHUP: configuration reloaded \(reload 2\)' 10; then pass late-ack/caught-up-reloads
		else fail late-ack/caught-up-reloads "$(tail -n 3 "$SPLICED_LOG")"; fi
		expect_eq late-ack/new-user-in "$(auth_rc "$A" 127.0.0.1:1082 erin pw-erin)" 0
		expect_eq late-ack/old-user-out "$(auth_rc "$A" 127.0.0.1:1082 dave pw-dave)" 21
	else
		fail late-ack/hold-thread "cannot stop thread $tid"
	fi
	stop_clean late-ack/stop
	expect_clean_log late-ack/asan-clean
else
	fail late-ack/starts
fi
finish
