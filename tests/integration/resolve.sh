#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Name resolution that a slow DNS server cannot stall: with 500 lookups pending on a zone that never answers, another name resolves at once; the pending ones fail at resolve-timeout; a client that leaves frees its slot at once; max-resolving refuses the excess; a name's addresses are tried staggered (RFC 8305), not one connect-timeout after another.
. "$(dirname "$0")/../lib.sh"
need_spliced
need python3 curl nft
need_root || finish

SLOW=${RESOLVE_SLOW:-500}
RTIMEOUT_MS=2000

netns_new NS || { fail setup "netns"; finish; }
# The namespace's resolver: ip netns exec bind-mounts /etc/netns/NS/* over /etc.
mkdir -p "/etc/netns/$NS"
on_cleanup_file "/etc/netns/$NS"
printf 'nameserver 127.0.0.53\n' >"/etc/netns/$NS/resolv.conf"
printf '127.0.0.1 localhost\n::1 localhost\n' >"/etc/netns/$NS/hosts"

# A DNS server: *.good.test and two.test answer, *.slow.test never does, the rest NXDOMAIN.
cat >"$T_TMP/dns.py" <<'PY'
import socket, struct
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("127.0.0.53", 53))
A = {"two.test": ["127.0.0.2", "127.0.0.1"]}
while True:
    q, peer = s.recvfrom(512)
    qid, flags, qd = struct.unpack(">HHH", q[:6])
    i, labels = 12, []
    while q[i]:
        labels.append(q[i + 1:i + 1 + q[i]].decode(errors="replace"))
        i += 1 + q[i]
    qtype = struct.unpack(">H", q[i + 1:i + 3])[0]
    question = q[12:i + 5]
    name = ".".join(labels).lower()
    if name.endswith("slow.test"):
        continue  # never answered
    addrs = A.get(name, ["127.0.0.1"] if name.endswith("good.test") else None)
    if addrs is None:
        s.sendto(struct.pack(">HHHHHH", qid, 0x8183, 1, 0, 0, 0) + question, peer)  # NXDOMAIN
        continue
    answers = b""
    if qtype == 1:
        for a in addrs:
            answers += struct.pack(">HHHLH", 0xC00C, 1, 1, 60, 4) + socket.inet_aton(a)
    n = len(addrs) if qtype == 1 else 0
    s.sendto(struct.pack(">HHHHHH", qid, 0x8180, 1, n, 0, 0) + question + answers, peer)
PY
ip netns exec "$NS" python3 "$T_TMP/dns.py" 2>"$T_TMP/dns.err" &
on_cleanup_pid $!

www=$T_TMP/www
mkdir -p "$www"
echo hello >"$www/hello"
http_server H "$www" 127.0.0.1 "" "$NS" || { fail setup "http server"; finish; }
# two.test's first address never answers a SYN: its connect can only time out.
cat >"$T_TMP/drop.nft" <<NFT
table inet spl_resolve {
	chain output {
		type filter hook output priority 0; policy accept;
		ip daddr 127.0.0.2 tcp dport $H_PORT drop
	}
}
NFT
ip netns exec "$NS" nft -f "$T_TMP/drop.nft" || { fail setup "nft"; finish; }

SP=$(free_port)
SPLICED_NETNS=$NS start_spliced "[main]
workers = 2
max-connections = 4000
resolve-timeout = ${RTIMEOUT_MS}ms
[inbound socks]
type = socks5
listen = 127.0.0.1:$SP" || { fail setup "spliced did not start"; finish; }
PID=$SPLICED_PID

# burst.py N PROXY HOST-FMT PORT [hold]: N SOCKS5 CONNECTs at once to HOST-FMT % i; prints,
# per request, "rep SECONDS" (time from request to reply), or with hold, closes all
# after 0.3 s and prints nothing.
cat >"$T_TMP/burst.py" <<'PY'
import selectors, socket, struct, sys, time
n, proxy, fmt, port = int(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
hold = len(sys.argv) > 5
h, p = proxy.rsplit(":", 1)
sel = selectors.DefaultSelector()
socks = []
for i in range(n):
    s = socket.create_connection((h, int(p)))
    host = (fmt % i if "%" in fmt else fmt).encode()
    s.sendall(b"\x05\x01\x00" + b"\x05\x01\x00\x03" + bytes([len(host)]) + host + struct.pack(">H", port))
    socks.append([s, time.time(), b""])
    s.setblocking(False)
    sel.register(s, selectors.EVENT_READ, len(socks) - 1)
if hold:
    time.sleep(0.3)
    for s, _, _ in socks:
        s.close()
    sys.exit(0)
left, deadline = n, time.time() + 30
while left and time.time() < deadline:
    for key, _ in sel.select(1):
        i = key.data
        s, t0, buf = socks[i]
        try:
            b = s.recv(64)
        except OSError:
            b = b""
        buf += b
        socks[i][2] = buf
        if len(buf) >= 4 or not b:
            rep = buf[3] if len(buf) >= 4 else -1
            print(rep, "%.3f" % (time.time() - t0))
            sel.unregister(s)
            left -= 1
for _ in range(left):
    print(-2, "-1")
PY
burst() { ip netns exec "$NS" python3 "$T_TMP/burst.py" "$@"; }

# 1. 500 lookups pending on the zone that never answers, then one good name.
burst "$SLOW" 127.0.0.1:"$SP" "x%d.slow.test" "$H_PORT" >"$T_TMP/slow.out" &
BURST=$!
on_cleanup_pid $BURST
sleep 0.5
good=$(burst 1 127.0.0.1:"$SP" "a.good.test" "$H_PORT" 2>&1)
read -r rep secs <<<"$good"
ms=$(python3 -c "print(int(float('$secs') * 1000))")
echo "# with $SLOW lookups pending on slow.test: a.good.test answered REP $rep in $ms ms"
if [ "$rep" = 0 ] && [ "$ms" -lt 100 ]; then pass good-name-under-100ms
else fail good-name-under-100ms "REP $rep after $ms ms"; fi
wait_pid $BURST 30
lo=$((RTIMEOUT_MS * 9 / 10)) hi=$((RTIMEOUT_MS * 11 / 10))
read -r n_ok n_bad min max <<<"$(awk -v lo=$lo -v hi=$hi '{ ms = $2 * 1000; if ($1 == 4 && ms >= lo && ms <= hi) ok++; else bad++;
	if (min == "" || ms < min) min = ms; if (ms > max) max = ms } END { print ok + 0, bad + 0, int(min), int(max) }' "$T_TMP/slow.out")"
echo "# the $SLOW pending lookups: $n_ok REP 04 within resolve-timeout $RTIMEOUT_MS ms +-10%, $n_bad otherwise; replies after $min..$max ms"
expect_eq slow-lookups-fail-at-resolve-timeout "$n_ok" "$SLOW" "REP 04 in $lo..$hi ms"

# 2. A client that leaves while its name is being resolved frees its slot at once.
# The client closed: spliced's side of each connection waits in CLOSE-WAIT until
# spliced closes it too.
close_wait() { ip netns exec "$NS" ss -Htn state close-wait "( sport = :$SP )" | wc -l; }
burst 50 127.0.0.1:"$SP" "y%d.slow.test" "$H_PORT" hold
t0=$(now_ms)
for i in $(seq 20); do [ "$(close_wait)" -eq 0 ] && break; sleep 0.05; done
n=$(close_wait)
echo "# 50 clients that left while resolving: $n of their connections still open in spliced after $(($(now_ms) - t0)) ms"
expect_eq client-gone-frees-slot "$n" 0 "connections in CLOSE-WAIT 1 s after the clients left"

# 3. A name with two addresses whose first never answers: the second is tried 250 ms later,
# not after connect-timeout (10 s).
t0=$(now_ms)
out=$(ip netns exec "$NS" curl -sS --max-time 20 --socks5-hostname 127.0.0.1:"$SP" "http://two.test:$H_PORT/hello" 2>&1)
ms=$(($(now_ms) - t0))
echo "# two.test (127.0.0.2 silent, then 127.0.0.1): '$out' after $ms ms"
if [ "$out" = hello ] && [ "$ms" -ge 200 ] && [ "$ms" -lt 2000 ]; then pass staggered-connect
else fail staggered-connect "got '$out' after $ms ms; want hello after 250 ms or so"; fi
stop_spliced
expect_eq sigterm-exit $? 0 "exit status"
grep -q "resolve_timeouts=$SLOW " "$SPLICED_LOG" && pass resolve-timeouts-counted ||
	fail resolve-timeouts-counted "$(grep -o 'resolve_timeouts=[0-9]*' "$SPLICED_LOG")"
grep -q "client_gone=50 " "$SPLICED_LOG" && pass client-gone-counted ||
	fail client-gone-counted "$(grep -o 'client_gone=[0-9]*' "$SPLICED_LOG")"

# 4. max-resolving bounds the lookups in flight: the excess is refused at once (REP 01).
SPLICED_NETNS=$NS start_spliced "[main]
workers = 2
max-resolving = 20
resolve-timeout = ${RTIMEOUT_MS}ms
[inbound socks]
type = socks5
listen = 127.0.0.1:$SP" || { fail setup "spliced did not start"; finish; }
burst 60 127.0.0.1:"$SP" "z%d.slow.test" "$H_PORT" >"$T_TMP/full.out"
refused=$(awk '$1 == 1 && $2 < 0.5' "$T_TMP/full.out" | wc -l)
timedout=$(awk '$1 == 4' "$T_TMP/full.out" | wc -l)
echo "# 60 lookups with max-resolving = 20: $refused refused at once, $timedout failed at resolve-timeout"
if [ "$refused" -ge 40 ] && [ "$timedout" -le 20 ] && [ $((refused + timedout)) -eq 60 ]; then
	pass max-resolving-refuses-excess
else
	fail max-resolving-refuses-excess "$refused refused, $timedout timed out: $(sort | uniq -c <"$T_TMP/full.out" | head -5)"
fi
stop_spliced
grep -q "resolve_full=$refused " "$SPLICED_LOG" && pass resolve-full-counted ||
	fail resolve-full-counted "$(grep -o 'resolve_full=[0-9]*' "$SPLICED_LOG")"

# 5. A stop does not wait for lookups (review L8: it used to join resolver threads stuck in
# getaddrinfo): with 100 lookups pending and resolve-timeout 30 s, SIGTERM ends the process
# within drain-timeout (1 s) and a little.
SPLICED_NETNS=$NS start_spliced "[main]
workers = 2
resolve-timeout = 30s
drain-timeout = 1s
[inbound socks]
type = socks5
listen = 127.0.0.1:$SP" || { fail setup "spliced did not start"; finish; }
burst 100 127.0.0.1:"$SP" "w%d.slow.test" "$H_PORT" >/dev/null &
BURST=$!
on_cleanup_pid $BURST
sleep 0.5
t0=$(now_ms)
stop_spliced
rc=$?
ms=$(($(now_ms) - t0))
echo "# SIGTERM with 100 lookups pending: exit status $rc after $ms ms"
if [ "$rc" = 0 ] && [ "$ms" -lt 3000 ]; then pass stop-with-lookups-pending
else fail stop-with-lookups-pending "exit status $rc after $ms ms; want 0 within 3 s"; fi
wait_pid $BURST 30
finish
