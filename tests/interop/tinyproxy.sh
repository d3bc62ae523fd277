#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The http outbound against Debian's tinyproxy as the upstream: byte-exact both ways through the socks5 and http inbounds, Basic auth, names passed through, every refusal mapped to the client's SOCKS5 REP or HTTP status, and plain-HTTP requests forwarded to it in absolute-form (served even where it refuses CONNECT to the port).
T_NAME=interop/tinyproxy
. "$(dirname "$0")/../lib.sh"
need_spliced
need curl python3 tinyproxy

www=$T_TMP/www
mkdir -p "$www"
head -c $((16 * 1024 * 1024)) /dev/urandom >"$www/blob"
http_server H "$www" 127.0.0.1 || { fail setup "http server"; finish; }
P_CLOSED=$(free_port)

# tinyproxy_start NAME EXTRA-CONFIG: a foreground tinyproxy on loopback; sets TP_<NAME>.
tinyproxy_start() {
	local name=$1 port conf=$T_TMP/tinyproxy-$1.conf
	port=$(free_port)
	cat >"$conf" <<CONF
Port $port
Listen 127.0.0.1
Timeout 30
MaxClients 64
Allow 127.0.0.1
LogFile "$T_TMP/tinyproxy-$name.log"
LogLevel Connect
PidFile "$T_TMP/tinyproxy-$name.pid"
DisableViaHeader Yes
$2
CONF
	tinyproxy -d -c "$conf" >"$T_TMP/tinyproxy-$name.out" 2>&1 &
	on_cleanup_pid $!
	T_LOGS+=("$T_TMP/tinyproxy-$name.log")
	wait_port 127.0.0.1 "$port" 10 || { fail "tinyproxy-$name-start" "$(cat "$T_TMP/tinyproxy-$name.out")"; finish; }
	printf -v "TP_$name" %s "$port"
}
tinyproxy_start open ""
tinyproxy_start auth "BasicAuth alice s3cr3t"
tinyproxy_start ports "ConnectPort 443"

# An upstream that accepts and never answers: the outbound handshake must time out.
SILENT=$(free_port)
python3 -c "
import socket, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('127.0.0.1', $SILENT)); s.listen(8)
cs = []
while True:
    cs.append(s.accept()[0])
" &
on_cleanup_pid $!
wait_port 127.0.0.1 "$SILENT" 10 || { fail setup "silent upstream"; finish; }

declare -A P
conf="[main]
workers = 2
handshake-timeout = 2s
[outbound open]
type = http
server = 127.0.0.1:$TP_open
[outbound auth]
type = http
server = 127.0.0.1:$TP_auth
username = alice
password = s3cr3t
[outbound badpass]
type = http
server = 127.0.0.1:$TP_auth
username = alice
password = wrong
[outbound noauth]
type = http
server = 127.0.0.1:$TP_auth
[outbound ports]
type = http
server = 127.0.0.1:$TP_ports
[outbound down]
type = http
server = 127.0.0.1:$P_CLOSED
[outbound silent]
type = http
server = 127.0.0.1:$SILENT
"
for ob in open auth badpass noauth ports down silent; do
	for inb in socks5 http; do
		P[$inb-$ob]=$(free_port)
		conf+="
[inbound $inb-$ob]
type = $inb
listen = 127.0.0.1:${P[$inb-$ob]}
outbound = $ob
"
	done
done
start_spliced "$conf" || { fail start "spliced did not start"; finish; }

# curl_get NAME URL [CURL ARGS...]: the blob, byte for byte.
curl_get() { curl_cmp "$1" "$www/blob" "${@:2}"; }

# Plain-HTTP requests go to the upstream as proxy requests (absolute-form, its credentials),
# not through CONNECT: the "ports" upstream refuses CONNECT to this port and still serves them.
for ob in open auth ports; do
	curl_get "$ob-http-forward" "http://127.0.0.1:$H_PORT/blob" --proxy "http://127.0.0.1:${P[http-$ob]}"
done
expect_eq forward-wrong-password-passes-its-status "$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 --proxy "http://127.0.0.1:${P[http-badpass]}" "http://127.0.0.1:$H_PORT/blob")" 401 "status tinyproxy gave"
if grep -q "Request (file descriptor [0-9]*): GET http://127.0.0.1:$H_PORT/blob HTTP/1.1" "$T_TMP/tinyproxy-ports.log"; then
	pass forward-tinyproxy-saw-absolute-form
else
	fail forward-tinyproxy-saw-absolute-form "$(grep -i request "$T_TMP/tinyproxy-ports.log" | tail -n 3)"
fi
for ob in open auth; do
	curl_get "$ob-socks5-ipv4" "http://127.0.0.1:$H_PORT/blob" --socks5 "127.0.0.1:${P[socks5-$ob]}"
	# The name goes to the upstream unresolved: tinyproxy resolves "localhost".
	curl_get "$ob-socks5-name" "http://localhost:$H_PORT/blob" --socks5-hostname "127.0.0.1:${P[socks5-$ob]}"
	curl_get "$ob-http-connect" "http://127.0.0.1:$H_PORT/blob" -p --proxy "http://127.0.0.1:${P[http-$ob]}"
done

# Both ways at once, byte for byte, on several connections: each sends 4 MiB of its own
# stream and checks the echo. (-H 0: tinyproxy does not pass a half-close on, it closes.)
CONNHOLD=$T_BUILD/tests/tools/connhold
EP=$(free_port)
"$CONNHOLD" serve -q 127.0.0.1:"$EP" 2>"$T_TMP/echo.err" &
on_cleanup_pid $!
wait_port 127.0.0.1 "$EP" 10 || { fail setup "echo server"; finish; }
o=$(timeout 60 "$CONNHOLD" -s 127.0.0.1:"${P[socks5-auth]}" -t 127.0.0.1:"$EP" -w 50000 run -n 8 -b 4M -H 0 2>&1)
case "$o" in
"run ok 8 fail 0"*) pass auth-both-ways-8x4MiB ;;
*) fail auth-both-ways-8x4MiB "$o" ;;
esac
echo "# $o"

# expect_refusal NAME OUTBOUND TARGET-PORT REP HTTP-STATUS: the upstream's verdict, passed
# on in each client's protocol (xfer exits 10+REP for SOCKS5, 30 with HTTP=NNN for HTTP).
expect_refusal() {
	local name=$1 ob=$2 port=$3 rep=$4 status=$5 o rc
	o=$(timeout 20 "$XFER" connect --socks5 "127.0.0.1:${P[socks5-$ob]}" 127.0.0.1 "$port" </dev/null 2>&1)
	rc=$?
	if [ $rc -eq $((10 + rep)) ] && grep -q "^REP=0x0$rep\$" <<<"$o"; then pass "$name-socks5-rep-0$rep"
	else fail "$name-socks5-rep-0$rep" "exit $rc: $(tr '\n' ' ' <<<"$o")"; fi
	o=$(timeout 20 "$XFER" connect --http "127.0.0.1:${P[http-$ob]}" 127.0.0.1 "$port" </dev/null 2>&1)
	rc=$?
	if [ $rc -eq 30 ] && grep -q "^HTTP=$status\$" <<<"$o"; then pass "$name-http-$status"
	else fail "$name-http-$status" "exit $rc: $(tr '\n' ' ' <<<"$o")"; fi
}
# tinyproxy's 401 (wrong credentials), 407 (none) and 403 (ConnectPort): not allowed.
expect_refusal wrong-password badpass "$H_PORT" 2 403
expect_refusal no-credentials noauth "$H_PORT" 2 403
expect_refusal port-forbidden ports "$H_PORT" 2 403
# tinyproxy's 500 "Unable to connect" (the target refused it): a general failure.
expect_refusal target-refused open "$P_CLOSED" 1 502
# The upstream itself refuses the TCP connect: REP 05.
expect_refusal upstream-down down "$H_PORT" 5 502
# The upstream never answers: handshake-timeout, REP 06 / 504.
t0=$(now_ms)
expect_refusal upstream-silent silent "$H_PORT" 6 504
echo "# silent upstream: both refusals within $(($(now_ms) - t0)) ms (handshake-timeout 2 s each)"

# tinyproxy carried the traffic (its own log says so) and saw the credentials.
n=$(grep -c 'Established connection' "$T_TMP/tinyproxy-auth.log")
if [ "$n" -ge 4 ]; then pass tinyproxy-auth-log-shows-connections
else fail tinyproxy-auth-log-shows-connections "$n 'Established connection' lines: $(tail -n 5 "$T_TMP/tinyproxy-auth.log")"; fi
if kill -0 "$SPLICED_PID" 2>/dev/null; then pass alive; else fail alive "spliced exited"; fi
stop_spliced
expect_eq sigterm-exit "$?" 0 "exit status"
finish
