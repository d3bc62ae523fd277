# SPDX-License-Identifier: MIT
# type = tun, UDP and DNS: a namespace N whose only route is spliced's TUN (netns mode), spliced
# and the servers in H. UDP echoed byte-exact (IPv4 and IPv6, up to 8000-byte datagrams) through
# direct, spliced's socks5 (UDP ASSOCIATE and UDP-in-TCP) and dante-server (UDP ASSOCIATE); block
# drops and counts; DNS to the TUN's DNS address answered through dnsmasq (1,000 queries through
# UDP ASSOCIATE), by IPv6 too, and over TCP when the upstream refuses UDP (microsocks: REP 07);
# dns-hijack takes a query to any resolver.
. "$(dirname "$0")/../lib.sh"
need_spliced
need python3 dnsmasq microsocks danted
need_root || finish
. "$T_TOP/tests/tun-lib.sh"
TUNPKT="python3 $T_TOP/tests/tools/tunpkt.py"

netns_new H && netns_new N || { fail setup "namespaces"; finish; }
ip -n "$H" addr add 203.0.113.1/32 dev lo && ip -n "$H" addr add 2001:db8::1/128 dev lo &&
	ip -n "$H" addr add 10.99.0.1/32 dev lo || { fail setup "addresses"; finish; }
T4=203.0.113.1 T6=2001:db8::1
EPORT=9999
udp_echo "$H" $T4 $EPORT && udp_echo "$H" $T6 $EPORT || { fail setup "udp echo"; finish; }
ip netns exec "$H" dnsmasq --no-daemon --no-resolv --no-hosts --user=root --pid-file= --bind-interfaces \
	--listen-address=$T4 --port=53 --address=/tun.test/192.0.2.55 --log-facility=- -q >"$T_TMP/dnsmasq.log" 2>&1 &
on_cleanup_pid $!
ip netns exec "$H" microsocks -i 10.99.0.1 -p 1082 >"$T_TMP/ms.log" 2>&1 &
on_cleanup_pid $!
cat >"$T_TMP/danted.conf" <<CONF
logoutput: stderr
internal: 10.99.0.1 port = 1083
external: lo
socksmethod: none
clientmethod: none
user.privileged: root
user.unprivileged: nobody
client pass {
	from: 0.0.0.0/0 to: 0.0.0.0/0
}
socks pass {
	from: 0.0.0.0/0 to: 0.0.0.0/0
	command: connect udpassociate
}
socks pass {
	from: 0.0.0.0/0 to: ::/0
	command: connect udpassociate
}
socks pass {
	from: 0.0.0.0/0 to: 0.0.0.0/0
	command: udpreply
}
socks pass {
	from: ::/0 to: 0.0.0.0/0
	command: udpreply
}
CONF
ip netns exec "$H" danted -f "$T_TMP/danted.conf" -p "$T_TMP/danted.pid" 2>"$T_TMP/danted.log" &
on_cleanup_pid $!
T_LOGS+=("$T_TMP/danted.log")
SPLICED_NETNS=$H start_spliced "[main]
workers = 2
[inbound s]
type = socks5
listen = 10.99.0.1:1080
udp = on
" || { fail setup "spliced socks5 server"; finish; }
wait_port 10.99.0.1 1082 10 "$H" && wait_port 10.99.0.1 1083 10 "$H" || { fail setup "microsocks or dante"; finish; }
use_asan_spliced # every tun instance below: sessions, replies, DNS over TCP under ASan

# echo_check FAMILIES [QUICK]: datagrams of 10, 1400 and 8000 bytes to the echo server of each
# family, each must come back unchanged from it; prints "ok N". QUICK (for the cases where
# nothing may come back): one 10-byte datagram, 1 s.
echo_check() {
	ip netns exec "$N" python3 -c '
import os, socket, sys
ok = 0
for fam, dst in ((socket.AF_INET, "'$T4'"), (socket.AF_INET6, "'$T6'")):
    if ("6" if fam == socket.AF_INET6 else "4") not in sys.argv[1]:
        continue
    s = socket.socket(fam, socket.SOCK_DGRAM)
    quick = len(sys.argv) > 2
    s.settimeout(1 if quick else 3)
    for size in ((10,) if quick else (10, 1400, 8000)):
        b = os.urandom(size)
        for attempt in range(1 if quick else 2):
            s.sendto(b, (dst, '$EPORT'))
            try:
                d, a = s.recvfrom(70000)
            except socket.timeout:
                continue
            if d == b and a[0] == dst and a[1] == '$EPORT':
                ok += 1
            break
print("ok", ok)
' "$@"
}

# run_case NAME OUTBOUND-SECTIONS DEFAULT [EXTRA-TUN-KEYS]: spliced with the TUN in N, started
# afresh (each case sees a new set of sessions).
run_case() {
	SPLICED_NETNS=$H start_spliced "[main]
workers = 2
[inbound t]
type = tun
netns = $N
auto-route = on
dns-server = $T4
${4:-}
$2
[route]
default = $3
" || return 1
	wait_tun "$N" tun0
}

socks_sections="[outbound assoc]
type = socks5
server = 10.99.0.1:1080
[outbound fwd]
type = socks5
server = 10.99.0.1:1080
udp = tcp
[outbound dante]
type = socks5
server = 10.99.0.1:1083
[outbound micro]
type = socks5
server = 10.99.0.1:1082"

for ob in direct assoc fwd dante; do
	run_case "$ob" "$socks_sections" "$ob" || { fail "$ob/start"; continue; }
	fams=46
	[ $ob = dante ] && fams=4 # dante's UDP relay answers IPv6 targets only from an IPv6 client
	expect_eq "$ob/udp-echo" "$(echo_check $fams)" "ok $((${#fams} * 3))"
	n=100
	[ $ob = assoc ] && n=1000
	out=$(ip netns exec "$N" $TUNPKT dns 198.18.0.2 tun.test $n 192.0.2.55 32)
	expect_eq "$ob/dns-$n" "$out" "answered $n of $n"
	if [ $ob = direct ]; then
		out=$(ip netns exec "$N" $TUNPKT dns fdfe:5370::2 tun.test 20 192.0.2.55)
		expect_eq "$ob/dns-over-ipv6" "$out" "answered 20 of 20"
	fi
	stop_spliced
	expect_clean_log "$ob/clean-log"
	stats=$(grep -o 'stats: relay: .*' "$SPLICED_LOG" | tail -n 1)
	up=$(grep -o ' udp_up=[0-9]*' <<<"$stats" | cut -d= -f2)
	down=$(grep -o ' udp_down=[0-9]*' <<<"$stats" | cut -d= -f2)
	if [ "${up:-0}" -ge $((n + 3 * ${#fams})) ] && [ "${down:-0}" -ge $((n + 3 * ${#fams})) ]; then pass "$ob/counted"
	else fail "$ob/counted" "udp_up=$up udp_down=$down"; fi
done

# microsocks answers UDP ASSOCIATE with REP 07: UDP is lost, DNS goes over TCP through it.
run_case micro "$socks_sections" micro || fail micro/start
expect_eq micro/udp-refused "$(echo_check 4 quick)" "ok 0"
out=$(ip netns exec "$N" $TUNPKT dns 198.18.0.2 tun.test 50 192.0.2.55)
expect_eq micro/dns-over-tcp "$out" "answered 50 of 50"
s=$(tun_stats "$SPLICED_PID" "$SPLICED_LOG")
n=$(tun_field dns_tcp "$s")
if [ "${n:-0}" -ge 50 ]; then pass micro/dns-tcp-counted; else fail micro/dns-tcp-counted "$s"; fi
if grep -q "outbound micro has no UDP (REP 07): DNS goes over TCP" "$SPLICED_LOG"; then pass micro/logged
else fail micro/logged; fi
stop_spliced
expect_clean_log micro/clean-log

# block: nothing leaves, every datagram counted.
run_case block "" block || fail block/start
expect_eq block/udp-echo "$(echo_check 4 quick)" "ok 0"
stop_spliced
b=$(grep -o 'stats: relay: .*' "$SPLICED_LOG" | tail -n 1 | grep -o ' udp_blocked=[0-9]*' | cut -d= -f2)
if [ "${b:-0}" -ge 1 ]; then pass block/counted; else fail block/counted "udp_blocked=$b"; fi

# dns-hijack: a query to any resolver (192.0.2.1, which does not exist) is answered by dns-server,
# as from 192.0.2.1.
run_case hijack "" direct "dns-hijack = on" || fail hijack/start
out=$(ip netns exec "$N" $TUNPKT dns 192.0.2.1 tun.test 20 192.0.2.55)
expect_eq hijack/answered "$out" "answered 20 of 20"
stop_spliced
expect_clean_log clean-log "$SPLICED_LOG"

# mapped-dns: A and AAAA for a name answered from the prefix's upper half at once; TCP and UDP
# to those addresses go to the name (routed by it, resolved by the outbound: "localhost" here,
# so H's loopback servers answer), and UDP replies come back as from the mapped address.
mkdir -p "$T_TMP/www"
echo "mapped-hello" >"$T_TMP/www/index.html"
http_server HTTPL "$T_TMP/www" 127.0.0.1 "" "$H" || fail mapped/http-server
udp_echo "$H" 127.0.0.1 $EPORT || fail mapped/udp-echo-server
SPLICED_NETNS=$H start_spliced "[main]
workers = 2
access-log = stderr
[inbound t]
type = tun
netns = $N
auto-route = on
mapped-dns = on
" || fail mapped/start
wait_tun "$N" tun0
out=$(ip netns exec "$N" python3 -c '
import socket, struct, sys
def q(name, qt, server):
    fam = socket.AF_INET6 if ":" in server else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_DGRAM); s.settimeout(2)
    m = struct.pack("!HHHHHH", 9, 0x0100, 1, 0, 0, 0) + b"".join(bytes([len(l)]) + l.encode() for l in name.split(".")) + b"\0" + struct.pack("!HH", qt, 1)
    s.sendto(m, (server, 53)); d, a = s.recvfrom(600)
    if a[0] != server or struct.unpack("!H", d[6:8])[0] != 1: return "-"
    return socket.inet_ntop(socket.AF_INET if qt == 1 else socket.AF_INET6, d[-4:] if qt == 1 else d[-16:])
a4 = q("localhost", 1, "198.18.0.2"); a6 = q("LOCALHOST", 28, "fdfe:5370::2")
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.settimeout(3); u.connect((a4, '$EPORT')); u.send(b"via-name")
print(a4, a6, u.recv(100).decode())
')
read -r m4 m6 echoed <<<"$out"
case "$m4" in 198.19.*) pass mapped/a-answer ;; *) fail mapped/a-answer "$out" ;; esac
case "$m6" in fdfe:5370::8000:*) pass mapped/aaaa-answer ;; *) fail mapped/aaaa-answer "$out" ;; esac
expect_eq mapped/udp-through-name "$echoed" via-name
expect_eq mapped/tcp-v4-through-name "$(ip netns exec "$N" curl -s -m 5 "http://$m4:$HTTPL_PORT/index.html")" mapped-hello
expect_eq mapped/tcp-v6-through-name "$(ip netns exec "$N" curl -s -m 5 "http://[$m6]:$HTTPL_PORT/index.html")" mapped-hello
stop_spliced
if grep -q "target=localhost:$HTTPL_PORT" "$SPLICED_LOG"; then pass mapped/routed-by-name
else fail mapped/routed-by-name "$(grep 'inbound=t' "$SPLICED_LOG" | head -n 2)"; fi
# the access log names the app (198.18.0.1, the TUN's address it sent from), not its fake source
if grep -q "inbound=t client=198.18.0.1:[0-9]* .*target=localhost" "$SPLICED_LOG" &&
	grep -q "inbound=t client=\[fdfe:5370::1\]:[0-9]* .*target=localhost" "$SPLICED_LOG"; then
	pass access-log-shows-the-app
else fail access-log-shows-the-app "$(grep 'inbound=t' "$SPLICED_LOG" | head -n 2)"; fi
expect_clean_log mapped/clean-log "$SPLICED_LOG"
finish
