#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# SOCKS5 UDP ASSOCIATE (RFC 1928 section 7) on loopback, under ASan when it is built:
# datagrams of 1, 512, 1400 and 65,000 bytes echoed byte-exact to IPv4 and IPv6 targets and
# to names, with and without auth; datagrams from a foreign socket, FRAG != 0, malformed
# headers and blocked destinations dropped and counted; endpoint-independent filtering;
# udp-ports and udp-advertise; 10,000 DNS queries to a dnsmasq, all answered; UDP-in-TCP
# (hev-socks5's FWD UDP) with golden-format frames; udp-max-sessions evicts the idlest; the association ends with its TCP connection, at udp-timeout
# and at once on SIGTERM; udp = off (the default) still answers REP 07.
. "$(dirname "$0")/../lib.sh"
need_spliced
need python3 dnsmasq ss
UA=$T_TOP/tests/tools/udpassoc.py

# A UDP echo server on 127.0.0.1 and [::1], same port.
EP=$(free_port)
{ udp_echo "" 127.0.0.1 "$EP" && udp_echo "" ::1 "$EP"; } || { fail setup/echo "the echo server did not start"; finish; }
# A "reflector": takes datagrams on RP and answers each from another socket, port RP2.
RP=$(free_port) RP2=$(free_port)
python3 -c '
import socket, sys
a = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); a.bind(("127.0.0.1", int(sys.argv[1])))
b = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); b.bind(("127.0.0.1", int(sys.argv[2])))
print("ready", flush=True)
while True:
    d, src = a.recvfrom(70000)
    b.sendto(d, src)
' "$RP" "$RP2" >"$T_TMP/refl.out" 2>&1 &
on_cleanup_pid $!
for _ in $(seq 50); do grep -q ready "$T_TMP/refl.out" && break; sleep 0.1; done

P_UDP=$(free_port) P_AUTH=$(free_port) P_OFF=$(free_port) P_SHORT=$(free_port) P_V6=$(free_port)
P_BLOCKED=$(free_port) P_RANGE=$(free_port)
# Two relay ports for the udp-ports inbound: a third association at once finds none.
for _ in $(seq 20); do
	R_LO=$(free_port) R_HI=$((R_LO + 1))
	[ -z "$(ss -Huan "( sport = :$R_LO or sport = :$R_HI )")" ] && break
done
use_asan_spliced
start_spliced "
[main]
log-level = debug
udp-timeout = 5s
udp-dns-timeout = 1s

[inbound udp]
type = socks5
listen = 127.0.0.1:$P_UDP
udp = on

[inbound udp6]
type = socks5
listen = [::1]:$P_V6
udp = on

[inbound auth]
type = socks5
listen = 127.0.0.1:$P_AUTH
user = alice:secret
udp = on

[inbound off]
type = socks5
listen = 127.0.0.1:$P_OFF

[inbound range]
type = socks5
listen = 127.0.0.1:$P_RANGE
udp = on
udp-ports = $R_LO-$R_HI
udp-advertise = 192.0.2.10

[outbound nope]
type = block

[route]
rule = port $P_BLOCKED -> nope
default = direct
" || { fail start "spliced did not start"; finish; }

o=$(timeout 30 python3 "$UA" 127.0.0.1 "$P_UDP" echo 127.0.0.1 "$EP" 1 echo 127.0.0.1 "$EP" 512 \
	echo 127.0.0.1 "$EP" 1400 echo 127.0.0.1 "$EP" 65000 echo ::1 "$EP" 1400 echo ::1 "$EP" 65000 2>&1)
expect_lines echo/ipv4-and-ipv6-targets "$o" "assoc 127\.0\.0\.1 [0-9]+" \
	"echo 1 ok 127\.0\.0\.1:$EP" "echo 512 ok 127\.0\.0\.1:$EP" "echo 1400 ok 127\.0\.0\.1:$EP" \
	"echo 65000 ok 127\.0\.0\.1:$EP" "echo 1400 ok ::1:$EP" "echo 65000 ok ::1:$EP"
# A name (from /etc/hosts: no DNS server is asked) is looked up once and kept; "127.1"
# is the address it spells.
o=$(timeout 30 python3 "$UA" 127.0.0.1 "$P_UDP" echo localhost "$EP" 100 echo localhost "$EP" 200 \
	echo 127.1 "$EP" 300 2>&1)
expect_lines echo/names "$o" "echo 100 ok (127\.0\.0\.1|::1):$EP" "echo 200 ok (127\.0\.0\.1|::1):$EP" \
	"echo 300 ok 127\.0\.0\.1:$EP"
o=$(timeout 30 python3 "$UA" ::1 "$P_V6" echo ::1 "$EP" 1400 echo 127.0.0.1 "$EP" 512 2>&1)
expect_lines echo/over-ipv6-inbound "$o" "assoc ::1 [0-9]+" "echo 1400 ok ::1:$EP" "echo 512 ok 127\.0\.0\.1:$EP"
o=$(timeout 30 python3 "$UA" 127.0.0.1 "$P_AUTH" --user alice --pass secret echo 127.0.0.1 "$EP" 1400 2>&1)
expect_lines echo/with-auth "$o" "echo 1400 ok 127\.0\.0\.1:$EP"
o=$(timeout 30 python3 "$UA" 127.0.0.1 "$P_AUTH" --user alice --pass wrong echo 127.0.0.1 "$EP" 1 2>&1)
expect_lines auth/wrong-password-refused "$o" "auth refused"
o=$(timeout 30 python3 "$UA" 127.0.0.1 "$P_OFF" echo 127.0.0.1 "$EP" 1 2>&1)
expect_lines off/rep-07 "$o" "rep 7"

# Drops: a foreign socket (another port on the client's address); FRAG 1; a short header,
# an unknown ATYP; a blocked port. The association keeps working after each of them.
# Declared port: the foreign socket is refused even before the client's first datagram.
frag=$(printf '000001017f000001%04x41' "$EP")
bad_atyp=$(printf '000000097f000001%04x41' "$EP")
o=$(timeout 30 python3 "$UA" 127.0.0.1 "$P_UDP" --declare foreign 127.0.0.1 "$EP" raw "$frag" \
	quiet 0.5 raw 0000 raw "$bad_atyp" quiet 0.5 echo 127.0.0.1 "$P_BLOCKED" 1 \
	echo 127.0.0.1 "$EP" 100 2>&1)
expect_lines drops/foreign-frag-malformed-blocked "$o" "foreign ok" "quiet ok" "echo 1 lost" \
	"echo 100 ok 127\.0\.0\.1:$EP"
# Undeclared port (0.0.0.0:0): the client's first datagram fixes it; a foreign port after it is refused.
o=$(timeout 30 python3 "$UA" 127.0.0.1 "$P_UDP" echo 127.0.0.1 "$EP" 10 foreign 127.0.0.1 "$EP" \
	echo 127.0.0.1 "$EP" 20 2>&1)
expect_lines drops/foreign-after-first-datagram "$o" "echo 10 ok 127\.0\.0\.1:$EP" "foreign ok" \
	"echo 20 ok 127\.0\.0\.1:$EP"

# Endpoint-independent filtering: a reply from another port of the destination's host is
# passed on, with that port in the header.
o=$(timeout 30 python3 "$UA" 127.0.0.1 "$P_UDP" echo 127.0.0.1 "$RP" 64 2>&1)
expect_lines filtering/endpoint-independent "$o" "echo 64 ok 127\.0\.0\.1:$RP2"

# udp-ports and udp-advertise: BND is the advertised address with a port of the range; a third
# association while two hold both ports is refused with REP 01.
for i in 1 2; do
	timeout 30 python3 "$UA" 127.0.0.1 "$P_RANGE" quiet 4 >"$T_TMP/range$i.out" 2>&1 &
	on_cleanup_pid $!
done
for _ in $(seq 50); do [ "$(cat "$T_TMP"/range[12].out 2>/dev/null | grep -c '^assoc')" = 2 ] && break; sleep 0.1; done
ports=$(cat "$T_TMP"/range[12].out | awk '/^assoc/ { print $3 }' | sort | tr '\n' ' ')
addrs=$(cat "$T_TMP"/range[12].out | awk '/^assoc/ { print $2 }' | sort -u | tr '\n' ' ')
expect_eq udp-ports/both-ports-used "$ports" "$R_LO $R_HI " "relay ports"
expect_eq udp-advertise/bnd-address "$addrs" "192.0.2.10 " "BND.ADDR"
o=$(timeout 30 python3 "$UA" 127.0.0.1 "$P_RANGE" echo 127.0.0.1 "$EP" 1 2>&1)
expect_lines udp-ports/none-free-rep-01 "$o" "rep 1"

# 10,000 DNS queries through one association to a dnsmasq we start (32 in flight at a time),
# every one answered with the address dnsmasq was told to give.
DP=$(free_port)
dnsmasq --no-daemon --no-resolv --no-hosts --user=root --pid-file= --bind-interfaces \
	--listen-address=127.0.0.1 --port="$DP" --address=/example.test/10.1.2.3 --cache-size=0 \
	>"$T_TMP/dnsmasq.log" 2>&1 &
on_cleanup_pid $!
for _ in $(seq 50); do [ -n "$(ss -Huln "( sport = :$DP )")" ] && break; sleep 0.1; done
o=$(timeout 120 python3 - 127.0.0.1 "$P_UDP" "$DP" <<'PY' 2>&1
import socket, struct, sys
proxy, pport, dport = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
t = socket.create_connection((proxy, pport), timeout=10)
t.sendall(b"\x05\x01\x00"); t.recv(2)
t.sendall(b"\x05\x03\x00\x01\x00\x00\x00\x00\x00\x00")
r = t.recv(10)
relay = (socket.inet_ntoa(r[4:8]), struct.unpack(">H", r[8:10])[0])
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
u.settimeout(5)
hdr = b"\x00\x00\x00\x01" + socket.inet_aton("127.0.0.1") + struct.pack(">H", dport)
def query(i):
    name = b"".join(bytes([len(l)]) + l for l in (b"q%d" % i, b"example", b"test")) + b"\x00"
    return hdr + struct.pack(">HHHHHH", i, 0x0100, 1, 0, 0, 0) + name + struct.pack(">HH", 1, 1)
N, W = 10000, 32
sent = answered = good = 0
seen = set()
while answered < N:
    while sent < N and sent - answered < W:
        u.sendto(query(sent), relay); sent += 1
    try:
        d, _ = u.recvfrom(4096)
    except socket.timeout:
        break
    m = d[10:]
    qid, flags, qd, an = struct.unpack(">HHHH", m[:8])
    if qid in seen:
        continue
    seen.add(qid)
    answered += 1
    if flags & 0xf == 0 and an == 1 and m[-4:] == socket.inet_aton("10.1.2.3"):
        good += 1
print("dns sent %d answered %d good %d" % (sent, answered, good))
PY
)
expect_eq dns/10000-queries-answered "$o" "dns sent 10000 answered 10000 good 10000" "client says"

# UDP-in-TCP (hev-socks5's FWD UDP, CMD 5): the same echoes as frames on the TCP connection.
o=$(timeout 30 python3 "$UA" 127.0.0.1 "$P_UDP" --fwd echo 127.0.0.1 "$EP" 1 echo 127.0.0.1 "$EP" 1400 \
	echo 127.0.0.1 "$EP" 65000 echo ::1 "$EP" 512 echo localhost "$EP" 100 2>&1)
expect_lines udp-in-tcp/echo "$o" "echo 1 ok 127\.0\.0\.1:$EP" "echo 1400 ok 127\.0\.0\.1:$EP" \
	"echo 65000 ok 127\.0\.0\.1:$EP" "echo 512 ok ::1:$EP" "echo 100 ok (127\.0\.0\.1|::1):$EP"
# A frame whose HDRLEN disagrees with its address puts the stream out of step: the connection ends.
o=$(timeout 30 python3 "$UA" 127.0.0.1 "$P_UDP" --fwd raw "$(printf '00010b017f000001%04x41' "$EP")" eof 2>&1)
expect_lines udp-in-tcp/bad-frame-closes "$o" "raw sent" "eof"
# A frame sent right behind the request, in the same segment, is not lost.
o=$(timeout 30 python3 - 127.0.0.1 "$P_UDP" "$EP" <<'PY' 2>&1
import socket, struct, sys
t = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5)
t.sendall(b"\x05\x01\x00"); t.recv(2)
frame = struct.pack(">HB", 5, 10) + b"\x01" + socket.inet_aton("127.0.0.1") + struct.pack(">H", int(sys.argv[3])) + b"early"
t.sendall(b"\x05\x05\x00\x01\x00\x00\x00\x00\x00\x00" + frame)
rep = t.recv(10)
got = b""
while len(got) < len(frame):
    got += t.recv(len(frame) - len(got))
print("rep %d" % rep[1], "early ok" if got == frame else "early differs")
PY
)
expect_eq udp-in-tcp/pipelined-frame "$o" "rep 0 early ok" "client says"

# The association ends with its TCP connection.
o=$(timeout 30 python3 "$UA" 127.0.0.1 "$P_UDP" echo 127.0.0.1 "$EP" 10 close quiet 0.3 \
	after-close 127.0.0.1 "$EP" 2>&1)
expect_lines lifetime/ends-with-tcp "$o" "echo 10 ok 127\.0\.0\.1:$EP" "closed" "after-close lost"

# udp-timeout (5 s here): an association without datagrams ends, and so does its connection.
python3 - 127.0.0.1 "$P_UDP" >"$T_TMP/idle.out" 2>&1 <<'PY' &
import socket, sys, time
t = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=10)
t.sendall(b"\x05\x01\x00"); t.recv(2)
t.sendall(b"\x05\x03\x00\x01\x00\x00\x00\x00\x00\x00"); t.recv(10)
t0 = time.time()
print("eof" if t.recv(1) == b"" else "data", "%.1f" % (time.time() - t0), flush=True)
PY
IDLE=$!
wait "$IDLE"
o=$(cat "$T_TMP/idle.out")
case "$o" in
eof\ [56].*) pass "lifetime/udp-timeout-closes-connection"; echo "# idle association: $o s" ;;
*) fail "lifetime/udp-timeout-closes-connection" "$o" ;;
esac

# udp-dns-timeout (1 s here): an association whose datagrams all went to port 53 ends sooner;
# one that sent anywhere else as well keeps udp-timeout.
dns=$(printf '000000017f0000010035%s' 41)
other=$(printf '000000017f000001%04x41' "$EP")
o=$(timeout 30 python3 "$UA" 127.0.0.1 "$P_UDP" raw "$dns" tcp-eof 3 2>&1)
expect_lines lifetime/dns-only-ends-sooner "$o" "raw sent" "tcp-eof"
o=$(timeout 30 python3 "$UA" 127.0.0.1 "$P_UDP" raw "$dns" raw "$other" tcp-eof 2.5 2>&1)
expect_lines lifetime/not-only-dns-keeps-udp-timeout "$o" "raw sent" "tcp-open"

# udp-max-sessions (2 here, one worker): a third association ends the one idle longest, and
# its TCP connection with it.
MAIN_PID=$SPLICED_PID MAIN_LOG=$SPLICED_LOG
P_CAP=$(free_port)
start_spliced "
[main]
workers = 1
udp-max-sessions = 2
[inbound cap]
type = socks5
listen = 127.0.0.1:$P_CAP
udp = on
" || { fail start-cap "spliced did not start"; finish; }
timeout 30 python3 "$UA" 127.0.0.1 "$P_CAP" echo 127.0.0.1 "$EP" 1 tcp-eof 20 >"$T_TMP/cap1.out" 2>&1 &
on_cleanup_pid $!
for _ in $(seq 200); do grep -q "echo 1 ok" "$T_TMP/cap1.out" && break; sleep 0.1; done
sleep 1.2 # the second is busier than the first by more than loop_timer_touch()'s second
timeout 30 python3 "$UA" 127.0.0.1 "$P_CAP" echo 127.0.0.1 "$EP" 2 tcp-eof 15 >"$T_TMP/cap2.out" 2>&1 &
on_cleanup_pid $!
for _ in $(seq 200); do grep -q "echo 2 ok" "$T_TMP/cap2.out" && break; sleep 0.1; done
o=$(timeout 30 python3 "$UA" 127.0.0.1 "$P_CAP" echo 127.0.0.1 "$EP" 3 2>&1)
for _ in $(seq 100); do grep -q "tcp-" "$T_TMP/cap1.out" && break; sleep 0.1; done
expect_lines udp-max-sessions/third-works "$o" "echo 3 ok 127\.0\.0\.1:$EP"
expect_lines udp-max-sessions/idlest-evicted "$(cat "$T_TMP/cap1.out")" "tcp-eof"
stop_spliced
grep -q "udp_evicted=1 " "$SPLICED_LOG" && pass udp-max-sessions/counted ||
	fail udp-max-sessions/counted "$(grep -o 'udp_evicted=[0-9]*' "$SPLICED_LOG")"
SPLICED_PID=$MAIN_PID SPLICED_LOG=$MAIN_LOG

if kill -0 "$SPLICED_PID" 2>/dev/null; then pass alive; else fail alive "spliced exited"; fi
# A stop does not wait drain-timeout (5 s) for an open association: it ends at once.
timeout 30 python3 "$UA" 127.0.0.1 "$P_UDP" echo 127.0.0.1 "$EP" 10 quiet 20 >"$T_TMP/held.out" 2>&1 &
on_cleanup_pid $!
for _ in $(seq 50); do grep -q "echo 10 ok" "$T_TMP/held.out" && break; sleep 0.1; done
t0=$(now_ms)
stop_spliced
rc=$?
ms=$(($(now_ms) - t0))
expect_eq sigterm-exit "$rc" 0 "exit status"
if [ "$ms" -lt 2000 ]; then pass "stop/open-association-ends-at-once"; echo "# SIGTERM with an association open: exit after $ms ms"
else fail "stop/open-association-ends-at-once" "exit after $ms ms (drain-timeout 5 s)"; fi
stats=$(grep -o 'stats: relay: .*' "$SPLICED_LOG" | tail -n 1)
echo "# ${stats//stats: relay: /}" | tr ' ' '\n' | grep -E '^udp_' | tr '\n' ' '; echo
for want in "udp_foreign=[1-9]" "udp_frag=1 " "udp_malformed=3 " "udp_blocked=1 " "udp_timeouts=[1-9]" "udp_up=[1-9]" "udp_down=[1-9]"; do
	if grep -qE "$want" <<<"$stats "; then pass "counted/${want%%=*}"; else fail "counted/${want%%=*}" "$stats"; fi
done
expect_clean_log clean-log
finish
