#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Who may use an inbound: allow lists refuse other clients before a byte is read; a source (IPv4 address, IPv6 /64) that fails max-auth-failures logins in a minute is refused, logged with its address; an inbound open to anyone is warned about at start; max-connections-per-source refuses a source's connections past the cap, and no other source's.
. "$(dirname "$0")/../lib.sh"
need_spliced
need curl python3
need_root || finish
use_asan_spliced

netns_new NS || { fail setup "netns"; finish; }
# Sources to tell apart: 127.0.0.1 and 127.0.0.2 (lo has all of 127/8), and three IPv6
# addresses in two /64s.
for a in fd00:1::1/64 fd00:1::2/64 fd00:2::1/64; do ip -n "$NS" addr add "$a" dev lo nodad; done

www=$T_TMP/www
mkdir -p "$www"
head -c 100000 /dev/urandom >"$www/blob"
http_server H "$www" 127.0.0.1 "" "$NS" || { fail setup "http server"; finish; }
in_curl() { ip netns exec "$NS" curl -sS --max-time 10 "$@"; }

# get NAME WANT(ok|refused) CURL-ARGS...: fetch the blob, byte for byte, or expect a refusal.
get() {
	local name=$1 want=$2 got=$T_TMP/got.$1 e
	shift 2
	rm -f "$got"
	if e=$(in_curl "$@" -o "$got" "http://127.0.0.1:$H_PORT/blob" 2>&1) && cmp -s "$got" "$www/blob"; then
		[ "$want" = ok ] && pass "$name" || fail "$name" "fetched, though it should have been refused"
	else
		[ "$want" = refused ] && pass "$name" || fail "$name" "curl $*: $e"
	fi
}

P1=$(free_port) P2=$(free_port) P3=$(free_port) P4=$(free_port) P5=$(free_port)
SPLICED_NETNS=$NS start_spliced "[main]
workers = 2
max-auth-failures = 3
[inbound only2]
type = socks5
listen = 127.0.0.1:$P1
allow = 127.0.0.2/32, fd00:2::/64
[inbound only2v6]
type = socks5
listen = [::]:$P2
allow = fd00:2::/64
allow = 10.0.0.0/8
[inbound auth]
type = socks5
listen = [::]:$P3
user = alice:s3cret
[inbound auth4]
type = socks5
listen = 127.0.0.1:$P5
user = alice:s3cret
[inbound web]
type = http
listen = 127.0.0.1:$P4
user = alice:s3cret" || { fail setup "spliced did not start"; finish; }
LOG=$SPLICED_LOG

# 1. allow
get allow-refuses-other-source refused --socks5 127.0.0.1:"$P1"
get allow-admits-listed-source ok --interface 127.0.0.2 --socks5 127.0.0.1:"$P1"
get allow-v6-admits-listed-prefix ok --interface fd00:2::1 --socks5 "[fd00:2::1]:$P2"
get allow-v6-refuses-other-prefix refused --interface fd00:1::1 --socks5 "[fd00:1::1]:$P2"
# Refused before any byte is read or sent: the client gets no SOCKS5 method reply at all.
out=$(ip netns exec "$NS" python3 -c "
import socket
s = socket.create_connection(('127.0.0.1', $P1))
s.sendall(b'\x05\x01\x00')
try:
    print(len(s.recv(16)))
except OSError as e:
    print(e.strerror)
")
case "$out" in 0 | *reset*) pass allow-refused-before-handshake ;; *) fail allow-refused-before-handshake "got '$out'" ;; esac

# 2. failed logins: three from 127.0.0.1, then even the right password from it is refused,
# while 127.0.0.2 still logs in.
for i in 1 2 3; do get "wrong-password-$i" refused --socks5 alice:wrong@127.0.0.1:"$P5"; done
get throttled-source-refused refused --socks5 alice:s3cret@127.0.0.1:"$P5"
get other-source-still-logs-in ok --interface 127.0.0.2 --socks5 alice:s3cret@127.0.0.1:"$P5"
# The HTTP inbound shares the count: 127.0.0.1 is refused there too (407), 127.0.0.2 is not.
code=$(in_curl -o /dev/null -w '%{http_connect}' -p -x http://alice:s3cret@127.0.0.1:"$P4" "http://127.0.0.1:$H_PORT/blob" 2>/dev/null)
expect_eq throttled-source-refused-http "$code" 407 "CONNECT status"
get http-other-source-logs-in ok --interface 127.0.0.2 -p -x http://alice:s3cret@127.0.0.1:"$P4"
# IPv6: a source is a /64.
for i in 1 2 3; do get "v6-wrong-password-$i" refused --interface fd00:1::1 --socks5 "alice:wrong@[fd00:1::1]:$P3"; done
get v6-same-64-refused refused --interface fd00:1::2 --socks5 "alice:s3cret@[fd00:1::2]:$P3"
get v6-other-64-logs-in ok --interface fd00:2::1 --socks5 "alice:s3cret@[fd00:2::1]:$P3"
grep -q "3 failed logins from 127.0.0.1 this minute" "$LOG" && pass logged-with-address-v4 ||
	fail logged-with-address-v4 "no log line naming 127.0.0.1"
grep -q "3 failed logins from fd00:1::/64 this minute" "$LOG" && pass logged-with-prefix-v6 ||
	fail logged-with-prefix-v6 "no log line naming fd00:1::/64"
n=$(grep -c "failed logins from 127.0.0.1" "$LOG")
expect_eq logged-once-per-minute "$n" 1 "log lines for 127.0.0.1"

# 3. an inbound anyone can use is warned about; the others are not.
grep -q "inbound only2" "$LOG" && grep -q "without users or allow" "$LOG" &&
	fail warn-only-open "warned about an inbound with allow" || true
stop_spliced
expect_eq sigterm-exit $? 0 "exit status"
for c in refused_allow auth_throttled; do
	grep -qE " $c=[1-9]" "$LOG" && pass "$c-counted" || fail "$c-counted" "$(grep -o " $c=[0-9]*" "$LOG")"
done
expect_clean_log no-sanitizer-report "$LOG"

SO=$(free_port)
SPLICED_NETNS=$NS start_spliced "[inbound open]
type = socks5
listen = 0.0.0.0:$SO
[inbound local]
type = socks5
listen = 127.0.0.1:$(free_port)" || { fail setup "spliced did not start"; finish; }
stop_spliced
grep -q "inbound open listens on 0.0.0.0:$SO without users or allow" "$SPLICED_LOG" &&
	pass warn-open-inbound || fail warn-open-inbound "no warning for 0.0.0.0 without users"
grep -q "inbound local listens" "$SPLICED_LOG" && fail no-warn-loopback "warned about a loopback inbound" ||
	pass no-warn-loopback
# 4. max-connections-per-source: three held from 127.0.0.1 (and from fd00:1::/64), then one
# more from that source is closed unread while 127.0.0.2 (and fd00:2::/64) still get through;
# one closed lets one more in.
SM=$(free_port) SM6=$(free_port)
SPLICED_NETNS=$NS start_spliced "[main]
workers = 2
max-connections-per-source = 3
[inbound s]
type = socks5
listen = 0.0.0.0:$SM
[inbound s6]
type = socks5
listen = [::]:$SM6" || { fail setup "spliced did not start"; finish; }
cat >"$T_TMP/hold.py" <<'PY'
import os, socket, sys, time
port, src, sig = int(sys.argv[1]), sys.argv[2], sys.argv[3]
fam = socket.AF_INET6 if ":" in src else socket.AF_INET
# To the source's own address (lo carries them all), from it.
def greet():
    s = socket.socket(fam, socket.SOCK_STREAM)
    s.bind((src, 0))
    s.settimeout(3)
    s.connect((src, port))
    try:
        s.sendall(b"\x05\x01\x00")
        return s, s.recv(2)  # b"": closed; unread bytes make it a reset
    except (ConnectionResetError, BrokenPipeError):
        return s, b""
    except socket.timeout:
        return s, b"timeout"
held = [greet() for _ in range(3)]
print("held", " ".join(r.hex() for _, r in held), flush=True)
s4, r4 = greet()
print("fourth", r4.hex() or "closed", flush=True)
open(sig + ".held", "w").close()
while not os.path.exists(sig + ".go"):
    time.sleep(0.05)
held[0][0].close()
time.sleep(0.3)
print("after-close", greet()[1].hex(), flush=True)
PY
for src in 127.0.0.1 fd00:1::1; do
	sig=$T_TMP/sig.${src//:/_}
	port=$SM
	[ "$src" = 127.0.0.1 ] || port=$SM6
	ip netns exec "$NS" python3 "$T_TMP/hold.py" "$port" "$src" "$sig" >"$sig.out" 2>&1 &
	HOLD=$!
	on_cleanup_pid $HOLD
	for i in $(seq 100); do [ -e "$sig.held" ] && break; sleep 0.05; done
	if [ "$src" = 127.0.0.1 ]; then
		get per-source-same-refused refused --socks5 127.0.0.1:"$SM"
		get per-source-other-ok ok --interface 127.0.0.2 --socks5 127.0.0.1:"$SM"
	else
		get per-source-v6-same-64-refused refused --interface fd00:1::2 --socks5 "[fd00:1::2]:$SM6"
		get per-source-v6-other-64-ok ok --interface fd00:2::1 --socks5 "[fd00:2::1]:$SM6"
	fi
	touch "$sig.go"
	wait_pid $HOLD 10
	out=$(tr '\n' ';' <"$sig.out")
	expect_eq "per-source-$src" "$out" "held 0500 0500 0500;fourth closed;after-close 0500;" "hold.py from $src"
done
grep -q "inbound s: 127.0.0.1 has max-connections-per-source (3) open" "$SPLICED_LOG" &&
	pass per-source-logged || fail per-source-logged "no warn line naming 127.0.0.1"
n=$(grep -c "127.0.0.1 has max-connections-per-source" "$SPLICED_LOG")
expect_eq per-source-logged-once "$n" 1 "log lines for 127.0.0.1"
grep -q "fd00:1::/64 has max-connections-per-source" "$SPLICED_LOG" &&
	pass per-source-logged-v6 || fail per-source-logged-v6 "no warn line naming fd00:1::/64"
stop_spliced
expect_eq per-source-sigterm-exit $? 0 "exit status"
grep -qE " refused_source=[1-9]" "$SPLICED_LOG" && pass refused_source-counted ||
	fail refused_source-counted "$(grep -o " refused_source=[0-9]*" "$SPLICED_LOG")"
expect_clean_log per-source-no-sanitizer-report "$SPLICED_LOG"
finish
