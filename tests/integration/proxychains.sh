# SPDX-License-Identifier: MIT
# Unmodified programs through spliced with proxychains4: iperf3 both directions and curl.
. "$(dirname "$0")/../lib.sh"
need_spliced
need proxychains4 iperf3 jq curl python3

PS=$(free_port)
IPORT=$(free_port)
cat >"$T_TMP/proxychains.conf" <<CONF
strict_chain
quiet_mode
tcp_read_time_out 15000
tcp_connect_time_out 8000
[ProxyList]
socks5 127.0.0.1 $PS user pass
CONF
start_spliced "
[main]
workers = 2
[inbound s]
type = socks5
listen = 127.0.0.1:$PS
user = user:pass
" || { fail start "spliced did not start"; finish; }

iperf3 -s -B 127.0.0.1 -p "$IPORT" >"$T_TMP/iperf3-server.log" 2>&1 &
on_cleanup_pid $!
wait_port 127.0.0.1 "$IPORT" 10 || { fail iperf3-server "did not listen"; finish; }

pc() { timeout 60 proxychains4 -q -f "$T_TMP/proxychains.conf" "$@"; }

# iperf3 CASE ARGS...: must succeed, move bytes both ways (the control channel and the
# data stream), and its socket must be connected to spliced, not to the server.
iperf() {
	local name=$1 j=$T_TMP/$1.json rc
	shift
	pc iperf3 -c 127.0.0.1 -p "$IPORT" -t 3 -J "$@" >"$j" 2>"$T_TMP/$name.err"
	rc=$?
	local sent recv rport err
	sent=$(jq -r '.end.sum_sent.bytes // 0' "$j" 2>/dev/null)
	recv=$(jq -r '.end.sum_received.bytes // 0' "$j" 2>/dev/null)
	rport=$(jq -r '.start.connected[0].remote_port // 0' "$j" 2>/dev/null)
	err=$(jq -r '.error // ""' "$j" 2>/dev/null)
	if [ $rc -eq 0 ] && [ -z "$err" ] && [ "${sent%.*}" -gt 0 ] && [ "${recv%.*}" -gt 0 ] &&
		[ "$rport" = "$PS" ]; then
		pass "$name"
		echo "# $name: $(jq -r '.end.sum_received.bits_per_second / 1e9 | . * 100 | floor / 100' "$j") Gbit/s received"
	else
		fail "$name" "iperf3 exit $rc, error '$err', sent ${sent:-?} received ${recv:-?}, connected to port $rport (spliced: $PS); $(tail -n 3 "$T_TMP/$name.err")"
	fi
}
iperf iperf3-upload
iperf iperf3-download -R

www=$T_TMP/www
mkdir -p "$www"
head -c $((4 * 1024 * 1024)) /dev/urandom >"$www/blob"
http_server H "$www" 127.0.0.1 || { fail setup "http server"; finish; }
if pc curl -sS --max-time 20 -o "$T_TMP/got" "http://127.0.0.1:$H_PORT/blob" 2>"$T_TMP/curl.err" &&
	cmp -s "$T_TMP/got" "$www/blob"; then
	pass curl
else
	fail curl "$(cat "$T_TMP/curl.err")"
fi

# Wrong credentials in the proxychains config: the program's connect() must fail.
sed -i "s/^socks5 .*/socks5 127.0.0.1 $PS user wrong/" "$T_TMP/proxychains.conf"
if pc curl -sS --max-time 10 -o "$T_TMP/got2" "http://127.0.0.1:$H_PORT/blob" 2>/dev/null; then
	fail curl-wrong-password "curl succeeded with a wrong proxy password"
else
	pass curl-wrong-password
fi
finish
