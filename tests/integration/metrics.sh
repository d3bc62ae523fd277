#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# [stats] listen: GET /metrics in the Prometheus text format. Debian's promtool accepts the
# output; the counters move while a transfer runs and end exact; 1,000 scrapes during an upload
# and a download change no relayed byte (sha256 at both ends); other paths 404, other methods
# 405, malformed heads 400; a client outside [stats] allow, one over the limit of clients and
# one that never finishes its request are closed; upstream handshakes that fail (microsocks
# refusing our login, a server that closes) are counted by reason; spliced (ASan) stays clean.
. "$(dirname "$0")/../lib.sh"
need promtool curl python3 openssl microsocks
need_spliced
use_asan_spliced

SCRAPE="python3 $T_TOP/tests/tools/scrape.py"
PACE="python3 $T_TOP/tests/tools/pace.py"
RAW="python3 $T_TOP/tests/tools/httpraw.py"
SIZE=$((24 * 1024 * 1024))
RATE=3M # about 8 s each way: the 1,000 scrapes take 4-5 s under ASan on a loaded machine

# metric FILE SERIES: the value of one series ("name{labels}" exactly as printed), or "none".
metric() { K="$2" awk '$1 == ENVIRON["K"] { print $2; f = 1 } END { if (!f) print "none" }' "$1"; }
# bytes FILE inbound|outbound NAME DIRECTION: both paths summed.
bytes() {
	echo $(($(metric "$1" "spliced_$2_bytes_total{$2=\"$3\",direction=\"$4\",path=\"splice\"}") + \
		$(metric "$1" "spliced_$2_bytes_total{$2=\"$3\",direction=\"$4\",path=\"buffer\"}")))
}

data=$T_TMP/data
openssl enc -aes-128-ctr -pass pass:metrics-$$ -nosalt -pbkdf2 </dev/zero 2>/dev/null | head -c "$SIZE" >"$data"
want=$(sha "$data")

SP=$(free_port)
AP=$(free_port)
MP=$(free_port)
RP=$(free_port)
JP=$(free_port)
JUNK=$(free_port)
MSP=$(free_port)
printf 'u"q\\x pw-u\n' >"$T_TMP/users"
chmod 600 "$T_TMP/users"
start_spliced "[main]
workers = 2
[inbound socks]
type = socks5
listen = 127.0.0.1:$SP
[inbound auth]
type = socks5
listen = 127.0.0.1:$AP
users = $T_TMP/users
[inbound viarefused]
type = socks5
listen = 127.0.0.1:$RP
outbound = refused
[inbound viajunk]
type = socks5
listen = 127.0.0.1:$JP
outbound = junk
[outbound refused]
type = socks5
server = 127.0.0.1:$MSP
username = upuser
password = wrong
[outbound junk]
type = socks5
server = 127.0.0.1:$JUNK
[stats]
listen = 127.0.0.1:$MP
allow = 127.0.0.1/32" || { fail start; finish; }
URL=http://127.0.0.1:$MP/metrics

# --- the format: promtool, and a user whose name needs escaping --------------------------
xfer_server ECHO -- 127.0.0.1 0 --echo || { fail setup/echo; finish; }
echo hi | "$XFER" connect --socks5 127.0.0.1:"$AP" --user 'u"q\x' --pass pw-u 127.0.0.1 "$ECHO_PORT" \
	>/dev/null 2>&1
# upstream handshakes that fail: microsocks refuses our login; a server that reads the
# greeting and closes without an answer
microsocks -i 127.0.0.1 -p "$MSP" -u upuser -P uppass >"$T_TMP/ms.log" 2>&1 &
on_cleanup_pid $!
python3 - "$JUNK" "$T_TMP/junk.ready" >"$T_TMP/junk.out" 2>&1 <<'PY' &
import socket, sys
l = socket.socket(); l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
l.bind(("127.0.0.1", int(sys.argv[1]))); l.listen(1); l.settimeout(20)
open(sys.argv[2], "w").write("ready")
c, _ = l.accept(); c.recv(64); c.close()
PY
JUNKPID=$!
on_cleanup_pid $JUNKPID
wait_port 127.0.0.1 "$MSP" 10 || fail setup/microsocks
wait_file "$T_TMP/junk.ready" 5 || fail setup/junk
echo hi | "$XFER" connect --socks5 127.0.0.1:"$RP" 127.0.0.1 "$ECHO_PORT" >/dev/null 2>&1 &&
	fail format/upstream-refused-fails "relayed through a refused login"
echo hi | "$XFER" connect --socks5 127.0.0.1:"$JP" 127.0.0.1 "$ECHO_PORT" >/dev/null 2>&1 &&
	fail format/upstream-closed-fails "relayed through a server that closed"
wait_pid $JUNKPID 10
curl -sS -o "$T_TMP/m0" -D "$T_TMP/h0" "$URL" || fail format/get "curl failed"
expect_eq format/outbound-handshake-refused \
	"$(metric "$T_TMP/m0" 'spliced_outbound_handshake_failures_total{outbound="refused",reason="refused"}')" 1
expect_eq format/outbound-handshake-closed \
	"$(metric "$T_TMP/m0" 'spliced_outbound_handshake_failures_total{outbound="junk",reason="closed"}')" 1
if out=$(promtool check metrics <"$T_TMP/m0" 2>&1); then pass format/promtool-check-metrics
else fail format/promtool-check-metrics "$(head -n 5 <<<"$out")"; fi
grep -qi '^Content-Type: text/plain; version=0.0.4; charset=utf-8' "$T_TMP/h0" && pass format/content-type ||
	fail format/content-type "$(tr '\r\n' '  ' <"$T_TMP/h0")"
expect_eq format/user-label-escaped "$(metric "$T_TMP/m0" 'spliced_user_connections_total{user="u\"q\\x"}')" 1
for m in spliced_build_info spliced_start_time_seconds spliced_worker_ring_sqes_total \
	spliced_inbound_connections_active spliced_outbound_connect_failures_total \
	spliced_relay_bytes_up_total spliced_metrics_requests_total spliced_config_generation; do
	grep -q "^# TYPE $m " "$T_TMP/m0" || fail "format/has-$m"
done
pass format/families-present
# promtool finds problems at all: a counter without _total, a duplicate series.
printf '# HELP x_bytes b\n# TYPE x_bytes counter\nx_bytes 1\n' | promtool check metrics >/dev/null 2>&1 &&
	fail format/promtool-can-fail "promtool accepted a counter without _total" || pass format/promtool-can-fail

# --- counters move while an upload and a download run, 1,000 scrapes meanwhile -----------
# upload: paced client -> target (hashed there); download: paced target -> client (hashed here)
mkfifo "$T_TMP/up.fifo"
(sha256sum <"$T_TMP/up.fifo" | cut -d' ' -f1 >"$T_TMP/up.sha") &
on_cleanup_pid $!
XFER_OUT=$T_TMP/up.fifo xfer_server UPT -- 127.0.0.1 0 --once --no-half-close || { fail setup/up-target; finish; }
XFER_OUT=/dev/null
$PACE "$data" $RATE | "$XFER" listen 127.0.0.1 0 --once --port-file "$T_TMP/down.port" >/dev/null 2>"$T_TMP/down.err" &
on_cleanup_pid $!
wait_file "$T_TMP/down.port" 10 || { fail setup/down-target; finish; }
$PACE "$data" $RATE | "$XFER" connect --socks5 127.0.0.1:"$SP" 127.0.0.1 "$UPT_PORT" >/dev/null 2>"$T_TMP/up.err" &
UPC=$!
"$XFER" connect --no-half-close --socks5 127.0.0.1:"$SP" 127.0.0.1 "$(cat "$T_TMP/down.port")" \
	</dev/null 2>"$T_TMP/down-client.err" | sha256sum | cut -d' ' -f1 >"$T_TMP/down.sha" &
DNC=$!
on_cleanup_pid $UPC $DNC
# the first scrape once bytes flow both ways (a loaded machine may take a while to start them)
for i in $(seq 100); do
	curl -sS -o "$T_TMP/m1" "$URL"
	[ "$(bytes "$T_TMP/m1" inbound socks up)" -gt 0 ] && [ "$(bytes "$T_TMP/m1" inbound socks down)" -gt 0 ] && break
	sleep 0.1
done
t0=$(now_ms)
scr=$($SCRAPE 127.0.0.1 "$MP" 1000 "$T_TMP/m2" 2>&1)
t1=$(now_ms)
echo "# 1000 scrapes in $((t1 - t0)) ms: $scr"
expect_eq during/1000-scrapes-ok "$scr" "ok 1000"
if kill -0 $UPC 2>/dev/null && kill -0 $DNC 2>/dev/null; then pass during/transfers-still-running
else fail during/transfers-still-running "a transfer ended before the scrapes did: pace them slower"; fi
expect_eq during/active "$(metric "$T_TMP/m1" 'spliced_inbound_connections_active{inbound="socks"}')" 2
expect_eq during/outbound-active "$(metric "$T_TMP/m1" 'spliced_outbound_connections_active{outbound="direct"}')" 2
u1=$(bytes "$T_TMP/m1" inbound socks up) u2=$(bytes "$T_TMP/m2" inbound socks up)
d1=$(bytes "$T_TMP/m1" inbound socks down) d2=$(bytes "$T_TMP/m2" inbound socks down)
echo "# bytes up $u1 -> $u2, down $d1 -> $d2 (of $SIZE each)"
if [ "$u1" -gt 0 ] && [ "$u2" -gt "$u1" ] && [ "$u2" -lt "$SIZE" ] && [ "$d1" -gt 0 ] && [ "$d2" -gt "$d1" ]
then pass during/bytes-move; else fail during/bytes-move "up $u1 -> $u2, down $d1 -> $d2"; fi
wait_pid $UPC 60
wait_pid $DNC 60
wait_pid "$UPT_PID" 20
for i in $(seq 50); do [ -s "$T_TMP/up.sha" ] && [ -s "$T_TMP/down.sha" ] && break; sleep 0.1; done
expect_eq after/upload-sha256 "$(cat "$T_TMP/up.sha")" "$want" "sha256 the target received"
expect_eq after/download-sha256 "$(cat "$T_TMP/down.sha")" "$want" "sha256 the client received"
sleep 0.3
curl -sS -o "$T_TMP/m3" "$URL"
expect_eq after/inbound-bytes-up "$(bytes "$T_TMP/m3" inbound socks up)" "$SIZE"
expect_eq after/inbound-bytes-down "$(bytes "$T_TMP/m3" inbound socks down)" "$SIZE"
# the outbound and the relay's totals also carry the echo's "hi\n" through the other inbound
expect_eq after/outbound-bytes-up "$(bytes "$T_TMP/m3" outbound direct up)" $((SIZE + 3))
expect_eq after/outbound-bytes-down "$(bytes "$T_TMP/m3" outbound direct down)" $((SIZE + 3))
expect_eq after/spliced-path "$(metric "$T_TMP/m3" 'spliced_inbound_bytes_total{inbound="socks",direction="up",path="splice"}')" "$SIZE"
expect_eq after/active-zero "$(metric "$T_TMP/m3" 'spliced_inbound_connections_active{inbound="socks"}')" 0
# the two transfers and start_spliced's probe of the port
expect_eq after/accepted "$(metric "$T_TMP/m3" 'spliced_inbound_connections_accepted_total{inbound="socks"}')" 3
expect_eq after/relay-agrees "$(metric "$T_TMP/m3" spliced_relay_bytes_up_total)" $((SIZE + 3))
n200=$(metric "$T_TMP/m3" 'spliced_metrics_requests_total{code="200"}')
if [ "$n200" -ge 1002 ]; then pass after/requests-counted; else fail after/requests-counted "code 200: $n200"; fi

# --- hostile requests ---------------------------------------------------------------------
raw() { $RAW 127.0.0.1 "$MP" "$@" 2>&1 | head -n 1; }
expect_eq bad/other-path "$(raw send 'GET / HTTP/1.1\r\nHost: x\r\n\r\n' read)" "status 404"
expect_eq bad/post "$(raw send 'POST /metrics HTTP/1.1\r\nContent-Length: 2\r\n\r\nab' read)" "status 405"
expect_eq bad/head-method "$(raw send 'HEAD /metrics HTTP/1.1\r\n\r\n' read)" "status 405"
expect_eq bad/garbage "$(raw send 'hello there\r\n\r\n' read)" "status 400"
expect_eq bad/absolute-form "$(raw send 'GET http://x/metrics HTTP/1.1\r\n\r\n' read)" "status 400"
expect_eq bad/http2-preface "$(raw send 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n' read)" "status 400"
expect_eq bad/folded-header "$(raw send 'GET /metrics HTTP/1.1\r\nA: b\r\n c\r\n\r\n' read)" "status 400"
expect_eq bad/nul "$(raw send 'GET /met\x00rics HTTP/1.1\r\n\r\n' read)" "status 400"
long=$(head -c 5000 /dev/zero | tr '\0' 'a')
expect_eq bad/head-too-long "$(raw send "GET /metrics HTTP/1.1\r\nX: $long" read)" "status 400"
expect_eq bad/query-ok "$(raw send 'GET /metrics?x=1 HTTP/1.0\r\n\r\n' read)" "status 200"
# a request that arrives an octet at a time (within the deadline) is still answered
out=$(python3 - "$MP" <<'PY'
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
for b in b"GET /metrics HTTP/1.1\r\n\r\n":
    s.send(bytes([b])); time.sleep(0.02)
print(s.recv(64).split(b"\r\n")[0].decode())
PY
)
expect_eq bad/slow-but-complete "$out" "HTTP/1.1 200 OK"
# not in [stats] allow (from 127.0.0.2): closed without an answer
rc=0; curl -sS --interface 127.0.0.2 -o /dev/null "$URL" 2>/dev/null || rc=$?
if [ $rc -ne 0 ]; then pass bad/not-in-allow-closed; else fail bad/not-in-allow-closed "curl from 127.0.0.2 got an answer"; fi

# Clients that never finish: the deadline (10 s) closes them; with 8 held, a 9th is closed at once.
python3 - "$MP" >"$T_TMP/idle.out" 2>&1 <<'PY' &
import socket, sys, time
conns = [socket.create_connection(("127.0.0.1", int(sys.argv[1]))) for _ in range(8)]
for c in conns:
    c.send(b"GET /metrics HTTP/1.1\r\n")  # never the blank line
time.sleep(0.5)
extra = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
extra.settimeout(3)
try:
    print("ninth", "closed" if extra.recv(1) == b"" else "answered")
except (socket.timeout, ConnectionResetError) as e:
    print("ninth", "reset" if isinstance(e, ConnectionResetError) else "open")
t0 = time.monotonic()
for c in conns:
    c.settimeout(15)
    try:
        d = c.recv(1)
    except ConnectionResetError:
        d = b""
print("idle", "closed" if d == b"" else "answered", "after %.0f s" % (time.monotonic() - t0 + 0.5), flush=True)
PY
IDLE=$!
on_cleanup_pid $IDLE
wait_pid $IDLE 20
cat "$T_TMP/idle.out" | sed 's/^/# /'
grep -Eq '^ninth (closed|reset)$' "$T_TMP/idle.out" && pass bad/ninth-client-closed || fail bad/ninth-client-closed "$(cat "$T_TMP/idle.out")"
if grep -Eq '^idle closed after (9|10|11) s$' "$T_TMP/idle.out"; then pass bad/deadline-closes-idle
else fail bad/deadline-closes-idle "$(cat "$T_TMP/idle.out")"; fi
curl -sS -o "$T_TMP/m4" "$URL"
expect_eq bad/timeouts-counted "$(metric "$T_TMP/m4" 'spliced_metrics_requests_total{code="timeout"}')" 8
expect_eq bad/busy-counted "$(metric "$T_TMP/m4" 'spliced_metrics_refused_total{reason="busy"}')" 1
expect_eq bad/allow-counted "$(metric "$T_TMP/m4" 'spliced_metrics_refused_total{reason="allow"}')" 1
expect_eq bad/400-counted "$(metric "$T_TMP/m4" 'spliced_metrics_requests_total{code="400"}')" 6
if promtool check metrics <"$T_TMP/m4" >/dev/null 2>&1; then pass bad/still-serving; else fail bad/still-serving; fi
# Every metrics socket is gone again: the listener and the workers' own.
n=$(ss -Htan state established "( sport = :$MP )" | wc -l)
expect_eq bad/no-client-left "$n" 0 "established connections to the metrics port"

stop_spliced
expect_eq stop/exit "$?" 0
expect_clean_log stop/asan-clean
finish
