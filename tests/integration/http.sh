# SPDX-License-Identifier: MIT
# HTTP CONNECT inbound: curl tunnels through it, 407/400/405/403/502/504 replies (plain-HTTP forwarding: http-forward.sh).
. "$(dirname "$0")/../lib.sh"
need_spliced
need curl python3

www=$T_TMP/www
mkdir -p "$www"
head -c $((1024 * 1024)) /dev/urandom >"$www/blob"
printf 'small\n' >"$www/small.txt"
http_server H4 "$www" 127.0.0.1 || { fail setup "http server"; finish; }
http_server H6 "$www" ::1 "$H4_PORT" || { fail setup "http server [::1]"; finish; }
H=$H4_PORT

P_OPEN=$(free_port)
P_AUTH=$(free_port)
P_BLOCKED=$(free_port)
P_CLOSED=$(free_port)
start_spliced "
[main]
workers = 2
log-level = info

[inbound web]
type = http
listen = 127.0.0.1:$P_OPEN

[inbound webauth]
type = http
listen = 127.0.0.1:$P_AUTH
user = alice:s3cret

[outbound nope]
type = block

[route]
rule = port $P_BLOCKED -> nope
default = direct
" || { fail start "spliced did not start"; finish; }
MAIN_PID=$SPLICED_PID

curl_get() {
	local name=$1 url=$2 want=$3 got=$T_TMP/got.$1 e
	shift 3
	if e=$(curl -sS --max-time 20 "$@" -o "$got" "$url" 2>&1) && cmp -s "$got" "$want"; then
		pass "$name"
	else
		fail "$name" "curl $* $url: ${e:-content differs ($(stat -c %s "$got" 2>/dev/null) bytes)}"
	fi
}
curl_get connect-ipv4 "http://127.0.0.1:$H/blob" "$www/blob" -p --proxy "http://127.0.0.1:$P_OPEN"
curl_get connect-domain "http://localhost:$H/blob" "$www/blob" --proxytunnel --proxy "http://127.0.0.1:$P_OPEN"
curl_get connect-ipv6 "http://[::1]:$H/blob" "$www/blob" -p --proxy "http://127.0.0.1:$P_OPEN"
curl_get auth-ok "http://127.0.0.1:$H/blob" "$www/blob" -p --proxy "http://127.0.0.1:$P_AUTH" \
	--proxy-user alice:s3cret
curl_get auth-ok-url "http://127.0.0.1:$H/small.txt" "$www/small.txt" -p \
	--proxy "http://alice:s3cret@127.0.0.1:$P_AUTH"

# expect_http CASE CODE NS XFER-CONNECT-ARGS...: xfer's CONNECT gets status CODE.
expect_http() {
	local name=$1 want=$2 ns=$3 o rc
	shift 3
	o=$(in_ns "$ns" timeout 30 "$XFER" connect --timeout 20 "$@" </dev/null 2>&1)
	rc=$?
	if grep -q "^HTTP=$want\$" <<<"$o" && { [ "$want" = 200 ] || [ $rc -eq 30 ]; }; then
		pass "$name"
	else
		fail "$name" "xfer connect $*: exit $rc, want HTTP=$want; got: $(tr '\n' ' ' <<<"$o")"
	fi
}
expect_http 407-no-credentials 407 "" --http "127.0.0.1:$P_AUTH" 127.0.0.1 "$H"
expect_http 407-wrong-password 407 "" --http "127.0.0.1:$P_AUTH" --user alice --pass s3cre 127.0.0.1 "$H"
expect_http 407-wrong-user 407 "" --http "127.0.0.1:$P_AUTH" --user bob --pass s3cret 127.0.0.1 "$H"
expect_http 200-with-credentials 200 "" --http "127.0.0.1:$P_AUTH" --user alice --pass s3cret 127.0.0.1 "$H"
if curl -sS --max-time 10 -p --proxy "http://127.0.0.1:$P_AUTH" -o /dev/null "http://127.0.0.1:$H/small.txt" 2>"$T_TMP/c.err"; then
	fail curl-407 "curl through the auth inbound without credentials succeeded"
elif grep -q 407 "$T_TMP/c.err"; then
	pass curl-407
else
	fail curl-407 "curl failed without a 407: $(cat "$T_TMP/c.err")"
fi
expect_http 502-refused 502 "" --http "127.0.0.1:$P_OPEN" 127.0.0.1 "$P_CLOSED"
expect_http 403-blocked 403 "" --http "127.0.0.1:$P_OPEN" 127.0.0.1 "$P_BLOCKED"

# raw_http CASE PORT REQUEST CODE: send REQUEST (printf format) as is; want status CODE.
raw_http() {
	local name=$1 port=$2 req=$3 want=$4 hex o text
	# shellcheck disable=SC2059
	hex=$(printf "$req" | od -An -tx1 | tr -d ' \n')
	o=$("$XFER" connect --raw-handshake "$hex" --timeout 5 --raw-idle 300 127.0.0.1 "$port" 2>&1)
	hex=$(sed -n 's/^RECV=//p' <<<"$o")
	text=$(printf '%b' "$(sed 's/../\\x&/g' <<<"$hex")")
	RAW_TEXT=$text
	if [[ $text =~ ^HTTP/1\.[01]\ $want ]]; then
		pass "$name"
	else
		fail "$name" "sent $(printf '%q' "$req"), want status $want, got: $(head -n 1 <<<"$text" | tr -d '\r') ($(grep END= <<<"$o"))"
	fi
}
raw_http 407-raw "$P_AUTH" "CONNECT 127.0.0.1:$H HTTP/1.1\r\nHost: 127.0.0.1:$H\r\n\r\n" 407
# RFC 9110 §11.7.1: a 407 carries the challenge.
if grep -qi '^Proxy-Authenticate: *Basic' <<<"$RAW_TEXT"; then pass 407-has-challenge
else fail 407-has-challenge "no 'Proxy-Authenticate: Basic' header in: $(tr '\r\n' '  ' <<<"$RAW_TEXT")"; fi
raw_http 407-bad-scheme "$P_AUTH" "CONNECT 127.0.0.1:$H HTTP/1.1\r\nProxy-Authorization: Bearer abc\r\n\r\n" 407
raw_http 200-raw "$P_AUTH" "CONNECT 127.0.0.1:$H HTTP/1.1\r\nProxy-Authorization: Basic $(printf alice:s3cret | base64)\r\n\r\n" 200
raw_http 400-garbage "$P_OPEN" "\x01\x02 garbage line\r\n\r\n" 400
raw_http 400-no-port "$P_OPEN" "CONNECT 127.0.0.1 HTTP/1.1\r\n\r\n" 400
# GET and POST in absolute-form are forwarded (http-forward.sh); TRACE is not, and origin-form is no proxy request.
raw_http 405-trace "$P_OPEN" "TRACE http://127.0.0.1:$H/small.txt HTTP/1.1\r\nHost: 127.0.0.1:$H\r\n\r\n" 405
raw_http 400-origin-form "$P_OPEN" "POST / HTTP/1.1\r\nHost: 127.0.0.1:$H\r\nContent-Length: 0\r\n\r\n" 400

# Tunnel data directly after the request header in the same segment must reach the target.
xfer_server EP -- 127.0.0.1 0 --echo || fail setup "echo server"
raw_http pipelined-data "$P_OPEN" "CONNECT 127.0.0.1:$EP_PORT HTTP/1.1\r\n\r\nping-after-header" 200
if [[ $RAW_TEXT == *$'\r\n\r\n'ping-after-header ]]; then pass pipelined-data-echoed
else fail pipelined-data-echoed "reply was: $(printf '%q' "$RAW_TEXT")"; fi

# 502 (unreachable) and 504 (connect timeout) with spliced inside namespace A, whose only
# link is a veth to namespace B, where an nftables rule drops SYNs to port 9.
if need_root 502-504; then
	if netns_new A && netns_new B && netns_veth "$A" 10.201.0.1/24 "$B" 10.201.0.2/24 &&
		netns_drop_port "$B" 9; then
		PA=$(free_port)
		SPLICED_NETNS=$A
		start_spliced "
[main]
workers = 1
connect-timeout = 1s
[inbound w]
type = http
listen = 127.0.0.1:$PA
" || fail start-netns "spliced did not start in $A"
		SPLICED_NETNS=
		expect_http 502-network-unreachable 502 "$A" --http "127.0.0.1:$PA" 198.51.100.1 80
		expect_http 502-refused-remote 502 "$A" --http "127.0.0.1:$PA" 10.201.0.2 7
		t0=$(date +%s%N)
		expect_http 504-timeout 504 "$A" --http "127.0.0.1:$PA" 10.201.0.2 9
		ms=$((($(date +%s%N) - t0) / 1000000))
		if [ $ms -ge 900 ] && [ $ms -lt 5000 ]; then pass 504-after-connect-timeout
		else fail 504-after-connect-timeout "504 after ${ms} ms, connect-timeout = 1s"; fi
	else
		fail netns-setup "could not build namespaces"
	fi
fi

if kill -0 "$MAIN_PID" 2>/dev/null; then pass still-running; else fail still-running "spliced died"; fi
finish
