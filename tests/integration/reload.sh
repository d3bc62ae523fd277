#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# SIGHUP reloads the whole INI. Each kind of change, with transfers (sha256 at both ends) that
# run across all the reloads: an inbound added (it accepts at once, and READY=1 comes only
# after it does), one removed (it stops accepting, its open connection drains), one moved to
# another port, an outbound whose type changes and a route rule (new connections take them,
# open ones keep theirs), a users file, idle-timeout (applies to open connections), [stats]
# moved. Refused, with nothing changed: a broken file (file:line logged), a key that needs a
# restart, a port someone else holds. The reloads leak nothing (ASan).
. "$(dirname "$0")/../lib.sh"
need python3 curl openssl
need_spliced

PACE="python3 $T_TOP/tests/tools/pace.py"
SIZE=$((40 * 1024 * 1024))
RATE=3M # ~13 s: long enough to span every reload below

metric() { K="$2" awk '$1 == ENVIRON["K"] { print $2; f = 1 } END { if (!f) print "none" }' "$1"; }
# wait_log LOG REGEX [SECONDS]
wait_log() {
	for _ in $(seq $((${3:-5} * 20))); do grep -qE "$2" "$1" && return 0; sleep 0.05; done
	return 1
}
NRELOAD=0
# hup: SIGHUP, then this reload's verdict; 0 when applied.
hup() { sighup_reload "$SPLICED_PID" "$SPLICED_LOG"; }
# accepts PORT: a SOCKS5 (or any) connect to 127.0.0.1:PORT succeeds.
accepts() { bash -c "exec 3<>/dev/tcp/127.0.0.1/$1" 2>/dev/null; }
# socks_echo PORT [USER PASS]: "hi" through the socks5 inbound on PORT to the echo server.
socks_echo() {
	local auth=()
	[ $# -ge 3 ] && auth=(--user "$2" --pass "$3")
	echo hi | timeout 10 "$XFER" connect --socks5 127.0.0.1:"$1" "${auth[@]}" 127.0.0.1 "$ECHO_PORT" 2>/dev/null
}

data=$T_TMP/data
openssl enc -aes-128-ctr -pass pass:reload-$$ -nosalt -pbkdf2 </dev/zero 2>/dev/null | head -c "$SIZE" >"$data"
want=$(sha "$data")
xfer_server ECHO -- 127.0.0.1 0 --echo || { fail setup/echo; finish; }
www=$T_TMP/www
mkdir -p "$www" && echo page >"$www/index.html"
http_server WWW "$www" 127.0.0.1 || { fail setup/http; finish; }

# An upstream for the outbound whose type changes: a second spliced (plain build).
UPP=$(free_port)
start_spliced "[inbound up]
type = socks5
listen = 127.0.0.1:$UPP" || { fail setup/upstream; finish; }

use_asan_spliced
PA=$(free_port) PB=$(free_port) PB2=$(free_port) PC=$(free_port) PD=$(free_port)
MP=$(free_port) MP2=$(free_port)
printf 'alice pw-a\n' >"$T_TMP/users"
chmod 600 "$T_TMP/users"
conf() { # conf EXTRA-MAIN B-PORT STATS-PORT SECTIONS...
	printf '[main]\nworkers = 2\nidle-timeout = 60s\n%s\n[stats]\nlisten = 127.0.0.1:%s\n' "$1" "$3"
	printf '[inbound b]\ntype = socks5\nlisten = 127.0.0.1:%s\nusers = %s\n' "$2" "$T_TMP/users"
	printf '[outbound x]\ntype = direct\n'
	shift 3
	printf '%s\n' "$@"
}
A="[inbound a]
type = socks5
listen = 127.0.0.1:$PA"
C="[inbound c]
type = http
listen = 127.0.0.1:$PC"
ROUTE_X="[route]
rule = port $ECHO_PORT -> x"

# The notify socket: at each READY=1, does inbound c's port accept?
nsock=$T_TMP/notify.sock
python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
with open(sys.argv[3], "a") as f:
    print("listening", file=f, flush=True)
    while True:
        d = s.recv(4096).decode().split("\n")
        for field in d:
            print(field, file=f, flush=True)
        if "READY=1" in d:
            c = socket.socket(); c.settimeout(2)
            try:
                c.connect(("127.0.0.1", int(sys.argv[2]))); print("c-accepts", file=f, flush=True)
            except OSError:
                print("c-refuses", file=f, flush=True)
            c.close()
' "$nsock" "$PC" "$T_TMP/notify.out" 2>"$T_TMP/notify.err" &
on_cleanup_pid $!
for _ in $(seq 50); do grep -q listening "$T_TMP/notify.out" 2>/dev/null && break; sleep 0.1; done

export NOTIFY_SOCKET=$nsock
start_spliced "$(conf "" "$PB" "$MP" "$A" "$ROUTE_X")" || { fail start; finish; }
unset NOTIFY_SOCKET
INI=$SPLICED_CONF

# --- transfers that span every reload: an upload and a download through b, one through a ---
mkfifo "$T_TMP/up.fifo"
(sha256sum <"$T_TMP/up.fifo" | cut -d' ' -f1 >"$T_TMP/up.sha") &
on_cleanup_pid $!
XFER_OUT=$T_TMP/up.fifo xfer_server UPT -- 127.0.0.1 0 --once --no-half-close || { fail setup/up-target; finish; }
XFER_OUT=/dev/null
$PACE "$data" $RATE | "$XFER" listen 127.0.0.1 0 --once --port-file "$T_TMP/down.port" >/dev/null 2>"$T_TMP/down.err" &
on_cleanup_pid $!
wait_file "$T_TMP/down.port" 10 || { fail setup/down-target; finish; }
mkfifo "$T_TMP/a.fifo"
(sha256sum <"$T_TMP/a.fifo" | cut -d' ' -f1 >"$T_TMP/a.sha") &
on_cleanup_pid $!
XFER_OUT=$T_TMP/a.fifo xfer_server AT -- 127.0.0.1 0 --once --no-half-close || { fail setup/a-target; finish; }
XFER_OUT=/dev/null
$PACE "$data" $RATE | "$XFER" connect --socks5 127.0.0.1:"$PB" --user alice --pass pw-a 127.0.0.1 "$UPT_PORT" >/dev/null 2>"$T_TMP/up.err" &
UPC=$!
"$XFER" connect --no-half-close --socks5 127.0.0.1:"$PB" --user alice --pass pw-a 127.0.0.1 "$(cat "$T_TMP/down.port")" \
	</dev/null 2>"$T_TMP/down-client.err" | sha256sum | cut -d' ' -f1 >"$T_TMP/down.sha" &
DNC=$!
$PACE "$data" $RATE | "$XFER" connect --socks5 127.0.0.1:"$PA" 127.0.0.1 "$AT_PORT" >/dev/null 2>"$T_TMP/a.err" &
AC=$!
on_cleanup_pid $UPC $DNC $AC
# An idle connection for idle-timeout, and one to the echo port (routed to x) held open.
CONNHOLD=$T_BUILD/tests/tools/connhold
holder idle -s 127.0.0.1:"$PA" -t 127.0.0.1:"$ECHO_PORT" -w 3000
hask idle "open 1"
expect_eq setup/idle-open "$r" "opened 1 failed 0"
sleep 1

# 1. Added: inbound c (http) accepts; READY=1 came after it did.
conf "" "$PB" "$MP" "$A" "$C" "$ROUTE_X" >"$INI"
if hup; then pass add/applied; else fail add/applied "$(tail -n 3 "$SPLICED_LOG")"; fi
got=$(curl -sS --max-time 5 -x http://127.0.0.1:"$PC" http://127.0.0.1:"$WWW_PORT"/ 2>&1)
expect_eq add/new-inbound-serves "$got" page
for _ in $(seq 50); do [ "$(grep -c '^READY=1' "$T_TMP/notify.out")" -ge 2 ] && break; sleep 0.1; done
order=$(grep -E '^(READY=1|RELOADING=1|c-accepts|c-refuses)$' "$T_TMP/notify.out" | tr '\n' ' ')
expect_eq add/ready-wraps-the-reload "$order" "READY=1 c-refuses RELOADING=1 READY=1 c-accepts "

# 2. Removed: a stops accepting; the transfer through it goes on (checked at the end).
conf "" "$PB" "$MP" "$C" "$ROUTE_X" >"$INI"
if hup; then pass remove/applied; else fail remove/applied "$(tail -n 3 "$SPLICED_LOG")"; fi
if accepts "$PA"; then fail remove/stops-accepting "port $PA still accepts"; else pass remove/stops-accepting; fi
kill -0 $AC 2>/dev/null && pass remove/open-connection-drains || fail remove/open-connection-drains "the transfer through a ended"

# 3. Moved: b listens on another port; the old one stops, the transfers through it go on.
conf "" "$PB2" "$MP" "$C" "$ROUTE_X" >"$INI"
if hup; then pass move/applied; else fail move/applied "$(tail -n 3 "$SPLICED_LOG")"; fi
expect_eq move/new-port "$(socks_echo "$PB2" alice pw-a)" hi
if accepts "$PB"; then fail move/old-port-closed; else pass move/old-port-closed; fi

# 4. Users file: bob in, alice out, for new logins (as before whole-config reload).
printf 'bob pw-b\n' >"$T_TMP/users"
if hup; then pass users/applied; else fail users/applied; fi
expect_eq users/new-user-in "$(socks_echo "$PB2" bob pw-b)" hi
expect_eq users/old-user-out "$(socks_echo "$PB2" alice pw-a)" ""

# 5. An outbound changes type (x: direct -> socks5 upstream): new connections take it.
conf "" "$PB2" "$MP" "$C" "$ROUTE_X" | sed "s/^\[outbound x\]$/[outbound x]\nserver = 127.0.0.1:$UPP/; s/^type = direct$/type = socks5/" >"$INI"
if hup; then pass outbound/applied; else fail outbound/applied "$(tail -n 3 "$SPLICED_LOG")"; fi
expect_eq outbound/through-upstream "$(socks_echo "$PB2" bob pw-b)" hi
curl -sS -o "$T_TMP/m1" http://127.0.0.1:"$MP"/metrics
if [ "$(metric "$T_TMP/m1" 'spliced_outbound_connections_total{outbound="x"}')" -ge 2 ]; then pass outbound/counted
else fail outbound/counted "$(grep 'outbound="x"' "$T_TMP/m1" | head -n 3)"; fi
# ... and the route: the echo port now goes to block; the held connection keeps its route.
conf "" "$PB2" "$MP" "$C" "[route]
rule = port $ECHO_PORT -> block" >"$INI"
if hup; then pass route/applied; else fail route/applied; fi
expect_eq route/new-connection-blocked "$(socks_echo "$PB2" bob pw-b)" ""
hask idle ping
expect_eq route/open-connection-keeps-its-route "$r" "ping ok 1 bad 0"

# 6. [main] idle-timeout = 2s applies to the open idle connection, not the busy ones.
conf "idle-timeout = 2s" "$PB2" "$MP" "$C" "[route]
rule = port $ECHO_PORT -> block" | sed '/^idle-timeout = 60s$/d' >"$INI"
if hup; then pass idle/applied; else fail idle/applied "$(tail -n 3 "$SPLICED_LOG")"; fi
sleep 4
hask idle check
if [[ $r =~ ^check\ alive\ 0\ dead\ 1 ]]; then pass idle/open-connection-timed-out; else fail idle/open-connection-timed-out "$r"; fi
hquit idle
# back to 60 s, or the paced transfers would be cut
conf "" "$PB2" "$MP" "$C" "[route]
rule = port $ECHO_PORT -> block" >"$INI"
hup || fail idle/restored

# 7. Refused, nothing changes: a broken file, a key that needs a restart, a port in use.
good=$(cat "$INI")
gen0=$(curl -sS http://127.0.0.1:"$MP"/metrics | awk '$1 == "spliced_config_generation" { print $2 }')
printf '%s\n[inbound d]\ntype = socks5\nlisten = 127.0.0.1:%s\nbogus = 1\n' "$good" "$PD" >"$INI"
line=$(grep -n '^bogus' "$INI" | cut -d: -f1)
if hup; then fail broken/refused "applied"; else pass broken/refused; fi
grep -qF "$INI:$line: [inbound d] bogus: unknown key" "$SPLICED_LOG" && pass broken/file-line-logged ||
	fail broken/file-line-logged "$(tail -n 3 "$SPLICED_LOG")"
if accepts "$PD"; then fail broken/nothing-changed "inbound d accepts"; else pass broken/nothing-changed; fi
printf '%s\n' "$good" | sed 's/^workers = 2$/workers = 3/' >"$INI"
if hup; then fail restart/refused "applied"; else pass restart/refused; fi
grep -qF "$INI:1: [main] workers: changed (2 -> 3), which needs a restart" "$SPLICED_LOG" && pass restart/logged ||
	fail restart/logged "$(tail -n 3 "$SPLICED_LOG")"
python3 -c 'import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(8); time.sleep(30)' "$PD" &
BUSY=$!
on_cleanup_pid $BUSY
wait_port 127.0.0.1 "$PD" 5 || fail in-use/setup "nothing listens on $PD"
printf '%s\n[inbound d]\ntype = socks5\nlisten = 127.0.0.1:%s\n[inbound e]\ntype = socks5\nlisten = 127.0.0.1:%s\n' \
	"$good" "$(free_port)" "$PD" >"$INI"
if hup; then fail in-use/refused "applied"; else pass in-use/refused; fi
grep -qE "inbound e: cannot listen on 127.0.0.1:$PD: Address already in use" "$SPLICED_LOG" && pass in-use/logged ||
	fail in-use/logged "$(tail -n 3 "$SPLICED_LOG")"
kill $BUSY
gen1=$(curl -sS http://127.0.0.1:"$MP"/metrics | awk '$1 == "spliced_config_generation" { print $2 }')
expect_eq refused/generation-unchanged "$gen1" "$gen0"
expect_eq refused/old-config-serves "$(curl -sS --max-time 5 -x http://127.0.0.1:"$PC" http://127.0.0.1:"$WWW_PORT"/ 2>&1)" page

# 8. [stats] moves.
printf '%s\n' "$good" | sed "s/^listen = 127.0.0.1:$MP$/listen = 127.0.0.1:$MP2/" >"$INI"
if hup; then pass stats/applied; else fail stats/applied "$(tail -n 3 "$SPLICED_LOG")"; fi
if curl -sS -o "$T_TMP/m2" http://127.0.0.1:"$MP2"/metrics; then pass stats/new-port; else fail stats/new-port; fi
if curl -s --max-time 2 -o /dev/null http://127.0.0.1:"$MP"/metrics; then fail stats/old-port-closed; else pass stats/old-port-closed; fi
r1=$(metric "$T_TMP/m2" 'spliced_config_reloads_total{result="applied"}')
r2=$(metric "$T_TMP/m2" 'spliced_config_reloads_total{result="refused"}')
expect_eq stats/reloads-counted "$r1/$r2" "9/3" "applied/refused"

# --- every transfer went through, byte for byte --------------------------------------------
for p in $UPC $DNC $AC; do wait_pid "$p" 60; done
wait_pid "$UPT_PID" 20
wait_pid "$AT_PID" 20
for _ in $(seq 50); do [ -s "$T_TMP/up.sha" ] && [ -s "$T_TMP/down.sha" ] && [ -s "$T_TMP/a.sha" ] && break; sleep 0.1; done
expect_eq across/upload-sha256 "$(cat "$T_TMP/up.sha")" "$want"
expect_eq across/download-sha256 "$(cat "$T_TMP/down.sha")" "$want"
expect_eq across/removed-inbound-sha256 "$(cat "$T_TMP/a.sha")" "$want"
n=$(grep -c 'SIGHUP: configuration reloaded' "$SPLICED_LOG")
echo "# $n reloads applied while the transfers ran"

stop_spliced
expect_eq stop/exit "$?" 0
expect_clean_log stop/asan-clean
finish
