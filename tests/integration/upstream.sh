# SPDX-License-Identifier: MIT
# socks5 outbound chained to real upstreams: Debian's dante-server and microsocks (with and
# without user/password); a wrong upstream password fails the client's request.
. "$(dirname "$0")/../lib.sh"
need_spliced
need curl python3 danted microsocks

www=$T_TMP/www
mkdir -p "$www"
head -c $((16 * 1024 * 1024)) /dev/urandom >"$www/blob"
http_server H4 "$www" 127.0.0.1 || { fail setup "http server"; finish; }
http_server H6 "$www" ::1 "$H4_PORT" || { fail setup "http server [::1]"; finish; }
H=$H4_PORT
P_CLOSED=$(free_port)

# --- dante: a minimal no-auth config, foreground, logging to its own stderr.
PD=$(free_port)
cat >"$T_TMP/danted.conf" <<CONF
logoutput: stderr
internal: 127.0.0.1 port = $PD
external: 127.0.0.1
socksmethod: none
clientmethod: none
user.privileged: root
user.unprivileged: nobody
client pass {
	from: 127.0.0.0/8 to: 0.0.0.0/0
}
socks pass {
	from: 127.0.0.0/8 to: 0.0.0.0/0
	command: connect
	log: connect
}
CONF
if ! danted -V -f "$T_TMP/danted.conf" >"$T_TMP/danted.check" 2>&1; then
	fail danted-config "danted -V rejected the config: $(tail -n 3 "$T_TMP/danted.check")"
	finish
fi
danted -f "$T_TMP/danted.conf" -p "$T_TMP/danted.pid" 2>"$T_TMP/danted.log" &
on_cleanup_pid $!
T_LOGS+=("$T_TMP/danted.log")
wait_port 127.0.0.1 "$PD" 10 || { fail danted-start "danted did not listen"; finish; }

# --- microsocks, without and with user/password.
PM=$(free_port)
PMA=$(free_port)
microsocks -i 127.0.0.1 -p "$PM" >"$T_TMP/ms.log" 2>&1 &
on_cleanup_pid $!
microsocks -i 127.0.0.1 -p "$PMA" -u upuser -P 'up pass' >"$T_TMP/msa.log" 2>&1 &
on_cleanup_pid $!
wait_port 127.0.0.1 "$PM" 10 && wait_port 127.0.0.1 "$PMA" 10 || { fail microsocks-start "microsocks did not listen"; finish; }

declare -A P
conf="[main]
workers = 2
[outbound dante]
type = socks5
server = 127.0.0.1:$PD
[outbound ms]
type = socks5
server = 127.0.0.1:$PM
[outbound msauth]
type = socks5
server = 127.0.0.1:$PMA
username = upuser
password = up pass
[outbound msbad]
type = socks5
server = 127.0.0.1:$PMA
username = upuser
password = wrong
"
for ob in dante ms msauth msbad; do
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

for ob in dante ms msauth; do
	curl_get "$ob-socks5-ipv4" "http://127.0.0.1:$H/blob" --socks5 "127.0.0.1:${P[socks5-$ob]}"
	curl_get "$ob-socks5-domain" "http://localhost:$H/blob" --socks5-hostname "127.0.0.1:${P[socks5-$ob]}"
	curl_get "$ob-http-connect" "http://127.0.0.1:$H/blob" -p --proxy "http://127.0.0.1:${P[http-$ob]}"
done

# The upstream's refusal is passed on: dante gets ECONNREFUSED from a closed port.
o=$(timeout 20 "$XFER" connect --socks5 "127.0.0.1:${P[socks5-dante]}" 127.0.0.1 "$P_CLOSED" </dev/null 2>&1)
rc=$?
if [ $rc -eq 15 ] && grep -q '^REP=0x05$' <<<"$o"; then pass dante-refused-passed-on
else fail dante-refused-passed-on "exit $rc, want REP=0x05: $(tr '\n' ' ' <<<"$o")"; fi

# A wrong upstream password: the client gets a failure reply, never a tunnel.
o=$(timeout 20 "$XFER" connect --socks5 "127.0.0.1:${P[socks5-msbad]}" 127.0.0.1 "$H" </dev/null 2>&1)
rc=$?
if [ $rc -ge 11 ] && [ $rc -le 19 ] && grep -q '^REP=0x0[1-9]$' <<<"$o"; then
	pass wrong-upstream-password-socks5
	echo "# wrong upstream password: $(grep REP= <<<"$o")"
else
	fail wrong-upstream-password-socks5 "exit $rc, want a non-zero REP: $(tr '\n' ' ' <<<"$o")"
fi
o=$(timeout 20 "$XFER" connect --http "127.0.0.1:${P[http-msbad]}" 127.0.0.1 "$H" </dev/null 2>&1)
rc=$?
if [ $rc -eq 30 ] && grep -q '^HTTP=5[0-9][0-9]$' <<<"$o"; then
	pass wrong-upstream-password-http
else
	fail wrong-upstream-password-http "exit $rc, want HTTP=5xx: $(tr '\n' ' ' <<<"$o")"
fi
if curl -sS --max-time 10 --socks5 "127.0.0.1:${P[socks5-msbad]}" -o /dev/null "http://127.0.0.1:$H/blob" 2>/dev/null; then
	fail wrong-upstream-password-curl "curl succeeded through an upstream with a wrong password"
else
	pass wrong-upstream-password-curl
fi

# Half-close and byte-exact upload through dante: the client half-closes after 8 MiB, the
# target answers only after EOF.
req=$T_TMP/req
head -c $((8 * 1024 * 1024)) /dev/urandom >"$req"
TP=$(free_port)
XFER_IN=$www/blob XFER_OUT=$T_TMP/srv.out
if xfer_server S -- 127.0.0.1 "$TP" --once --after-eof; then
	timeout 30 "$XFER" connect --socks5 "127.0.0.1:${P[socks5-dante]}" 127.0.0.1 "$TP" <"$req" >"$T_TMP/cli.out" 2>"$T_TMP/cli.err"
	crc=$?
	wait_pid "$S_PID" 10
	if [ $crc -eq 0 ] && [ "$(sha "$req")" = "$(sha "$T_TMP/srv.out")" ] && [ "$(sha "$www/blob")" = "$(sha "$T_TMP/cli.out")" ]; then
		pass dante-halfclose-both-ways-sha256
	else
		fail dante-halfclose-both-ways-sha256 "client exit $crc; $(tr '\n' ' ' <"$T_TMP/cli.err") target: $(tr '\n' ' ' <"$S_ERR")"
	fi
fi
XFER_IN=/dev/null XFER_OUT=/dev/null

# The upstreams really carried the traffic (their own logs say so).
for f in ms msa; do
	n=$(grep -c 'connected to' "$T_TMP/$f.log")
	if [ "$n" -ge 3 ]; then pass "$f-log-shows-connections"
	else fail "$f-log-shows-connections" "$T_TMP/$f.log has $n 'connected to' lines, want >= 3"; fi
done
n=$(grep -c 'pass(1): tcp/connect' "$T_TMP/danted.log")
if [ "$n" -ge 4 ]; then pass dante-log-shows-connections
else fail dante-log-shows-connections "danted.log has $n 'pass(1): tcp/connect' lines, want >= 4: $(tail -n 5 "$T_TMP/danted.log")"; fi
finish
