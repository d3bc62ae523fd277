#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Plain-HTTP proxying through the http (and mixed) inbound: absolute-form requests forwarded
# to the origin in origin-form with the hop-by-hop fields removed, byte-exact bodies both
# ways (a 4 MiB GET, a 64 MiB POST, a chunked POST), every forwarded method, keep-alive with
# several requests on one client connection that each route on their own, Basic auth (and
# Proxy-Authorization never reaching the origin), Python's urllib through a ProxyHandler, and
# what is refused with nothing reaching the origin: smuggling (Content-Length with
# Transfer-Encoding, conflicting lengths), malformed and oversized heads, targets a proxy does
# not forward.
. "$(dirname "$0")/../lib.sh"
need_spliced
need curl python3 jq microsocks
use_asan_spliced
ECHO=$T_TOP/tests/tools/httpecho.py
RAW=$T_TOP/tests/tools/httpraw.py

OA=$(free_port) OB=$(free_port) OC=$(free_port) MS=$(free_port)
python3 "$ECHO" 127.0.0.1 "$OA" "$T_TMP/origin-a.log" 2>"$T_TMP/origin-a.err" &
on_cleanup_pid $!
python3 "$ECHO" 127.0.0.1 "$OB" "$T_TMP/origin-b.log" 2>"$T_TMP/origin-b.err" &
on_cleanup_pid $!
python3 "$ECHO" 127.0.0.1 "$OC" "$T_TMP/origin-c.log" 2>"$T_TMP/origin-c.err" &
on_cleanup_pid $!
microsocks -i 127.0.0.1 -p "$MS" >/dev/null 2>&1 &
on_cleanup_pid $!
for p in "$OA" "$OB" "$OC" "$MS"; do wait_port 127.0.0.1 "$p" 10 || { fail setup/origins "port $p"; finish; }; done
touch "$T_TMP/origin-a.log" "$T_TMP/origin-b.log"
www_blob $((4 << 20)) || { fail setup/www; finish; }

PH=$(free_port) PA=$(free_port) PM=$(free_port)
start_spliced "
[main]
access-log = $T_TMP/access.log
[inbound h]
type = http
listen = 127.0.0.1:$PH
[inbound auth]
type = http
listen = 127.0.0.1:$PA
user = alice:pw-a
[inbound m]
type = mixed
listen = 127.0.0.1:$PM
[outbound via2]
type = direct
bind-address = 127.0.0.2
[outbound upstream]
type = socks5
server = 127.0.0.1:$MS
[route]
rule = port $OB -> via2
rule = port $OC -> upstream
" || { fail start "spliced did not start"; finish; }
P=http://127.0.0.1:$PH

curl_cmp get-4MiB "$www/blob" "http://127.0.0.1:$H_PORT/blob" -x "$P"
curl_cmp mixed-get-4MiB "$www/blob" "http://127.0.0.1:$H_PORT/blob" -x "http://127.0.0.1:$PM"
py=$(python3 - "$P" "http://127.0.0.1:$H_PORT/blob" <<'PY' 2>&1
import hashlib, sys, urllib.request
o = urllib.request.build_opener(urllib.request.ProxyHandler({"http": sys.argv[1]}))
print(hashlib.sha256(o.open(sys.argv[2], timeout=20).read()).hexdigest())
PY
)
expect_eq urllib/proxy-handler "$py" "$(sha "$www/blob")" "sha256 of the body"

# What the origin got: origin-form, its own Host, no hop-by-hop or proxy fields.
j=$(curl -sS --max-time 10 -x "$P" -H 'Connection: X-Secret' -H 'X-Secret: 1' -H 'Keep-Alive: 9' \
	-H 'Host: elsewhere' "http://127.0.0.1:$OA/p/q?r=1")
expect_eq rewrite/origin-form "$(jq -r .path <<<"$j")" "/p/q?r=1" "path"
expect_eq rewrite/host "$(jq -r .headers.host <<<"$j")" "127.0.0.1:$OA" "Host"
expect_eq rewrite/connection-close "$(jq -r .headers.connection <<<"$j")" close "Connection"
expect_eq rewrite/hop-by-hop-gone "$(jq -r '[.headers["x-secret"], .headers["keep-alive"], .headers["proxy-connection"]] | map(select(. != null)) | length' <<<"$j")" 0 "hop-by-hop fields at the origin"

# Every method, and bodies.
for m in PUT DELETE OPTIONS PATCH; do
	expect_eq "method/$m" "$(curl -sS --max-time 10 -x "$P" -X "$m" "http://127.0.0.1:$OA/m" | jq -r .method)" "$m" "method the origin saw"
done
code=$(curl -sS -o /dev/null -w '%{http_code}' --max-time 10 -x "$P" -I "http://127.0.0.1:$OA/h")
expect_eq method/HEAD "$code" 200 "status"
openssl rand -out "$T_TMP/post.bin" $((64 << 20)) 2>/dev/null
want=$(sha "$T_TMP/post.bin")
j=$(curl -sS --max-time 60 -x "$P" --data-binary @"$T_TMP/post.bin" "http://127.0.0.1:$OA/up")
expect_eq post/64MiB-content-length "$(jq -r '"\(.len) \(.sha256)"' <<<"$j")" "$((64 << 20)) $want" "length and sha256 at the origin"
head -c $((8 << 20)) "$T_TMP/post.bin" >"$T_TMP/post8.bin"
j=$(curl -sS --max-time 60 -x "$P" -H 'Transfer-Encoding: chunked' --data-binary @"$T_TMP/post8.bin" "http://127.0.0.1:$OA/chunked")
expect_eq post/8MiB-chunked "$(jq -r '"\(.len) \(.sha256) \(.headers["transfer-encoding"])"' <<<"$j")" "$((8 << 20)) $(sha "$T_TMP/post8.bin") chunked" "length, sha256, framing at the origin"

# Keep-alive: curl reuses its connection for two URLs; both bodies exact, one client port.
: >"$T_TMP/curl.v"
curl -sv --max-time 30 -x "$P" "http://127.0.0.1:$H_PORT/blob" -o "$T_TMP/ka1" "http://127.0.0.1:$H_PORT/blob" -o "$T_TMP/ka2" 2>"$T_TMP/curl.v"
if cmp -s "$T_TMP/ka1" "$www/blob" && cmp -s "$T_TMP/ka2" "$www/blob" && grep -q 'Re-using existing connection' "$T_TMP/curl.v"; then
	pass keep-alive/curl-two-urls
else
	fail keep-alive/curl-two-urls "$(grep -E 'Re-using|Connection|HTTP/' "$T_TMP/curl.v" | head -n 8 | tr '\n' '|')"
fi
# Requests on one connection, to three origins: port $OB goes out through via2 (source
# 127.0.0.2), port $OC through the socks5 upstream (microsocks); the fourth was pipelined
# behind the third's body.
o=$(python3 "$RAW" 127.0.0.1 "$PH" \
	send "GET http://127.0.0.1:$OA/one HTTP/1.1\r\nHost: x\r\n\r\n" read \
	send "GET http://127.0.0.1:$OB/two HTTP/1.1\r\nHost: x\r\n\r\n" read \
	send "POST http://127.0.0.1:$OA/three HTTP/1.1\r\nContent-Length: 3\r\n\r\nabcGET http://127.0.0.1:$OB/four HTTP/1.1\r\n\r\n" read read \
	send "GET http://127.0.0.1:$OC/five HTTP/1.1\r\n\r\n" read \
	eof 1 2>&1)
clients=$(grep '^body' <<<"$o" | sed 's/^body //' | jq -r '"\(.path)@\(.client)"' | tr '\n' ' ')
expect_eq keep-alive/each-request-routed "$clients" "/one@127.0.0.1 /two@127.0.0.2 /three@127.0.0.1 /four@127.0.0.2 /five@127.0.0.1 " "path@source the origins saw"
if grep -q '^open' <<<"$o" && [ "$(grep -c '^connection keep-alive' <<<"$o")" = 5 ]; then pass keep-alive/stays-open; else fail keep-alive/stays-open "$(tr '\n' '|' <<<"$o")"; fi
o=$(python3 "$RAW" 127.0.0.1 "$PH" send "GET http://127.0.0.1:$OA/close HTTP/1.1\r\n\r\n" read eof 5 2>&1)
if grep -q '^connection close' <<<"$o" && grep -q '^eof' <<<"$o" && grep -q '"path": "/close"' <<<"$o"; then pass close-delimited/closes; else fail close-delimited/closes "$(tr '\n' '|' <<<"$o")"; fi
o=$(python3 "$RAW" 127.0.0.1 "$PH" send "GET http://127.0.0.1:$OA/ten HTTP/1.0\r\n\r\n" read eof 5 2>&1)
if grep -q '^connection close' <<<"$o" && grep -q '^eof' <<<"$o" && grep -q '"version": "HTTP/1.0"' <<<"$o"; then pass http10/closes; else fail http10/closes "$(tr '\n' '|' <<<"$o")"; fi

# Auth: Basic on every request; the credentials stop at the proxy.
j=$(curl -sS --max-time 10 -x "http://alice:pw-a@127.0.0.1:$PA" "http://127.0.0.1:$OA/auth")
expect_eq auth/ok-not-forwarded "$(jq -r '.path + " " + (.headers["proxy-authorization"] // "none")' <<<"$j")" "/auth none" "path, Proxy-Authorization at the origin"
expect_eq auth/wrong-407 "$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 -x "http://alice:nope@127.0.0.1:$PA" "http://127.0.0.1:$OA/x")" 407 "status"
expect_eq auth/missing-407 "$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 -x "http://127.0.0.1:$PA" "http://127.0.0.1:$OA/x")" 407 "status"
o=$(python3 "$RAW" 127.0.0.1 "$PA" \
	send "GET http://127.0.0.1:$OA/a1 HTTP/1.1\r\nProxy-Authorization: Basic YWxpY2U6cHctYQ==\r\n\r\n" read \
	send "GET http://127.0.0.1:$OA/a2 HTTP/1.1\r\n\r\n" read 2>&1)
if [ "$(grep '^status' <<<"$o" | tr '\n' ' ')" = "status 200 status 407 " ]; then pass auth/every-request; else fail auth/every-request "$(tr '\n' '|' <<<"$o")"; fi

# Refused with 400 (431 for size), and nothing reaches the origin.
refused() { # NAME STATUS REQUEST
	local before after o
	before=$(wc -l <"$T_TMP/origin-a.log")
	o=$(python3 "$RAW" 127.0.0.1 "$PH" send "$3" read 2>&1)
	after=$(wc -l <"$T_TMP/origin-a.log")
	if grep -q "^status $2" <<<"$o" && [ "$before" = "$after" ]; then pass "refused/$1"; else fail "refused/$1" "$(tr '\n' '|' <<<"$o") (origin requests $before -> $after)"; fi
}
refused cl-and-te 400 "POST http://127.0.0.1:$OA/s HTTP/1.1\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
refused te-and-cl 400 "POST http://127.0.0.1:$OA/s HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n0\r\n\r\n"
refused two-lengths 400 "POST http://127.0.0.1:$OA/s HTTP/1.1\r\nContent-Length: 4\r\nContent-Length: 5\r\n\r\nabcde"
refused te-not-chunked 400 "POST http://127.0.0.1:$OA/s HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n"
refused space-before-colon 400 "POST http://127.0.0.1:$OA/s HTTP/1.1\r\nTransfer-Encoding : chunked\r\n\r\n"
refused obs-fold 400 "GET http://127.0.0.1:$OA/s HTTP/1.1\r\nX: a\r\n b\r\n\r\n"
refused origin-form 400 "GET /s HTTP/1.1\r\nHost: 127.0.0.1:$OA\r\n\r\n"
refused https-uri 400 "GET https://127.0.0.1:$OA/s HTTP/1.1\r\n\r\n"
refused userinfo 400 "GET http://u:p@127.0.0.1:$OA/s HTTP/1.1\r\n\r\n"
refused trace-405 405 "TRACE http://127.0.0.1:$OA/s HTTP/1.1\r\n\r\n"
refused oversized-431 431 "GET http://127.0.0.1:$OA/s HTTP/1.1\r\nX: $(head -c 9000 /dev/zero | tr '\0' a)\r\n\r\n"
# A chunked body that goes wrong halfway: the connection is dropped, the origin sees no whole request.
o=$(python3 "$RAW" 127.0.0.1 "$PH" send "POST http://127.0.0.1:$OA/bad HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhelloXX" read 2>&1)
if grep -qE '^(closed|status 502)' <<<"$o"; then pass refused/bad-chunk-closes; else fail refused/bad-chunk-closes "$(tr '\n' '|' <<<"$o")"; fi
# An origin that is not there: 502.
dead=$(free_port)
expect_eq origin-down-502 "$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 -x "$P" "http://127.0.0.1:$dead/")" 502 "status"

stop_spliced
expect_eq sigterm-exit "$?" 0 "exit status"
expect_clean_log clean-log
# One access-log line per request, each with its own target.
n=$(grep -c "target=127.0.0.1:$OB " "$T_TMP/access.log")
expect_eq access-log/per-request "$n" 2 "lines for port $OB"
# The request for /five went through the socks5 upstream: its line names it, and microsocks'
# address is what spliced connected to.
if grep -q "target=127.0.0.1:$OC remote=127.0.0.1:$MS outbound=upstream .*result=ok" "$T_TMP/access.log" &&
	grep -q 'GET /five' "$T_TMP/origin-c.log"; then
	pass keep-alive/through-socks5-upstream
else
	fail keep-alive/through-socks5-upstream "$(grep "target=127.0.0.1:$OC" "$T_TMP/access.log")"
fi
finish
