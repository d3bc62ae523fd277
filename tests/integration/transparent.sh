#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The transparent inbounds on a router, as OpenWrt sets them up: client namespace C routes
# through router namespace R to server namespace S. In R, nftables sends C's TCP either to a
# redirect inbound (REDIRECT: the destination is rewritten, SO_ORIGINAL_DST reads it back) or
# to a tproxy inbound (TPROXY with a fwmark and a "local" policy route: the destination is
# kept). C's curl and a byte-exact 16 MiB echo reach S over IPv4 and IPv6, and S sees them
# come from R's own address: spliced relayed them, the kernel did not forward them. A
# connection made to the listener itself is refused as a loop, one with no original
# destination is closed and counted, and spliced's own outbound connections (fwmark) pass
# the redirect rule untouched.
. "$(dirname "$0")/../lib.sh"
need_spliced
need curl python3 ip nft openssl
need_root transparent || { finish; }
use_asan_spliced

netns_new C || { fail setup/netns; finish; }
netns_new R || { fail setup/netns; finish; }
netns_veth "$C" 10.81.0.2/24 "$R" 10.81.0.1/24 || { fail setup/veth; finish; }
# netns_veth names the pair after the namespace count: C's side, and R's (the rules match it).
CCIF=v${T_NS_SEQ}a$$ CIF=v${T_NS_SEQ}b$$
netns_new S || { fail setup/netns; finish; }
netns_veth "$R" 10.82.0.2/24 "$S" 10.82.0.1/24 || { fail setup/veth; finish; }
RSIF=v${T_NS_SEQ}a$$ SIF=v${T_NS_SEQ}b$$
CCIF=${CCIF:0:15} CIF=${CIF:0:15} RSIF=${RSIF:0:15} SIF=${SIF:0:15}
ok=1
ip -n "$C" addr add fd81::2/64 dev "$CCIF" nodad || ok=0
ip -n "$R" addr add fd81::1/64 dev "$CIF" nodad || ok=0
ip -n "$R" addr add fd82::2/64 dev "$RSIF" nodad || ok=0
ip -n "$S" addr add fd82::1/64 dev "$SIF" nodad || ok=0
ip -n "$C" route add default via 10.81.0.1 || ok=0
ip -n "$C" -6 route add default via fd81::1 || ok=0
ip -n "$S" route add default via 10.82.0.2 || ok=0
ip -n "$S" -6 route add default via fd82::2 || ok=0
ip netns exec "$R" sysctl -qw net.ipv4.ip_forward=1 net.ipv6.conf.all.forwarding=1 || ok=0
[ $ok = 1 ] || { fail setup "addresses, routes and forwarding"; finish; }

www=$T_TMP/www
mkdir -p "$www" && head -c $((4 << 20)) /dev/urandom >"$www/blob"
http_server H4 "$www" 10.82.0.1 8080 "$S" || { fail setup/http4; finish; }
http_server H6 "$www" fd82::1 8080 "$S" || { fail setup/http6; finish; }
xfer_server E4 "$S" -- 10.82.0.1 9000 --echo || { fail setup/echo4; finish; }
xfer_server E6 "$S" -- fd82::1 9000 --echo || { fail setup/echo6; finish; }
openssl rand -out "$T_TMP/in.bin" $((16 << 20)) 2>/dev/null
want=$(sha "$T_TMP/in.bin")

# fetch NAME URL: curl from C, byte for byte.
fetch() {
	local e
	rm -f "$T_TMP/got"
	if e=$(ip netns exec "$C" curl -sS --max-time 30 --noproxy '*' -o "$T_TMP/got" "$2" 2>&1) &&
		cmp -s "$T_TMP/got" "$www/blob"; then
		pass "$1"
	else
		fail "$1" "curl $2: ${e:-content differs ($(stat -c %s "$T_TMP/got" 2>/dev/null) bytes)}"
	fi
}
# echo16 NAME HOST: 16 MiB through S's echo server from C, hashed on the way back.
echo16() {
	local got
	got=$(ip netns exec "$C" "$XFER" connect "$2" 9000 --timeout 60 <"$T_TMP/in.bin" | sha256sum | cut -d' ' -f1)
	expect_eq "$1" "$got" "$want" "sha256 of the echo"
}
# seen_from NAME LOG ADDR: S's http.server logged the last request from ADDR (R, not C).
seen_from() {
	local last
	last=$(grep -E '"GET /blob' "$2" | tail -n 1 | cut -d' ' -f1)
	expect_eq "$1" "$last" "$3" "client address S saw"
}

PR=12345 PT=12346
MARK=0x2a
# Both rules see only C's traffic (iifname), so R's own connections (spliced's outbound legs)
# never meet them; the output-hook rule below checks the fwmark way of avoiding a loop, which a
# router needs when it also redirects its own traffic.
ip netns exec "$R" nft -f - <<NFT || { fail setup/nft "nft refused the rules"; finish; }
table inet spliced_test {
	chain pre_nat {
		type nat hook prerouting priority dstnat;
		iifname "$CIF" tcp dport { 8080, 9000 } ip daddr 10.82.0.0/24 redirect to :$PR
		iifname "$CIF" tcp dport { 8080, 9000 } ip6 daddr fd82::/64 redirect to :$PR
	}
	chain out_nat {
		type nat hook output priority -100;
		meta mark $MARK return
		ip daddr 10.82.0.0/24 tcp dport 8080 redirect to :$PR
	}
}
NFT

SPLICED_NETNS=$R
start_spliced "
[main]
access-log = $T_TMP/access.log
[inbound redir4]
type = redirect
listen = 0.0.0.0:$PR
[inbound redir6]
type = redirect
listen = [::]:$PR
[outbound direct]
type = direct
fwmark = $MARK
" || { fail start "spliced did not start"; finish; }

fetch redirect/ipv4/curl "http://10.82.0.1:8080/blob"
seen_from redirect/ipv4/relayed-by-router "$T_TMP/H4.log" 10.82.0.2
fetch redirect/ipv6/curl "http://[fd82::1]:8080/blob"
seen_from redirect/ipv6/relayed-by-router "$T_TMP/H6.log" fd82::2
echo16 redirect/ipv4/echo-16MiB 10.82.0.1
echo16 redirect/ipv6/echo-16MiB fd82::1
# R's own curl is redirected too (output hook), and spliced's marked leg is not: no loop.
if o=$(ip netns exec "$R" curl -sS --max-time 20 --noproxy '*' -o "$T_TMP/got.own" "http://10.82.0.1:8080/blob" 2>&1) &&
	cmp -s "$T_TMP/got.own" "$www/blob"; then
	pass redirect/router-own-traffic
else
	fail redirect/router-own-traffic "${o:-content differs}"
fi
# Straight to the listener: conntrack reads back the listener itself, a loop refused.
ip netns exec "$C" curl -s --max-time 10 -o /dev/null "http://10.81.0.1:$PR/" && fail redirect/direct-refused "curl got an answer" || pass redirect/direct-refused
stop_spliced
expect_eq redirect/sigterm-exit "$?" 0 "exit status"
expect_clean_log redirect/clean-log
# start_spliced's probe of each listener is a connection to the listener itself, like the last.
expect_counters redirect "$SPLICED_LOG" accepted=8 egress_self=3 completed=5
# One line per connection, the original destination as the target.
lines=$(grep -c ' inbound=redir[46] ' "$T_TMP/access.log")
expect_eq redirect/access-log-lines "$lines" 8 "lines"
lines=$(grep -c ' inbound=redir[46] .*remote=10.82.0.1:8080 .* result=ok$' "$T_TMP/access.log")
expect_eq redirect/access-log-ok "$lines" 2 "lines for the curls (C's and R's own)"
if grep -q 'inbound=redir6 .*target=\[fd82::1\]:9000 ' "$T_TMP/access.log"; then pass redirect/access-log-target; else fail redirect/access-log-target "$(head -c 600 "$T_TMP/access.log")"; fi

# TPROXY: the packets keep their destination; a mark sends them to the local table.
ip netns exec "$R" nft delete table inet spliced_test
ip netns exec "$R" nft -f - <<NFT || { fail setup/nft-tproxy "nft refused the rules"; finish; }
table inet spliced_test {
	chain pre {
		type filter hook prerouting priority mangle;
		iifname "$CIF" meta nfproto ipv4 tcp dport { 8080, 9000 } tproxy ip to :$PT meta mark set 1 accept
		iifname "$CIF" meta nfproto ipv6 tcp dport { 8080, 9000 } tproxy ip6 to :$PT meta mark set 1 accept
		iifname "$CIF" meta nfproto ipv4 udp dport { 9053, 9054 } tproxy ip to :$PT meta mark set 1 accept
		iifname "$CIF" meta nfproto ipv6 udp dport { 9053, 9054 } tproxy ip6 to :$PT meta mark set 1 accept
	}
}
NFT
ok=1
ip -n "$R" rule add fwmark 1 lookup 100 || ok=0
ip -n "$R" route add local 0.0.0.0/0 dev lo table 100 || ok=0
ip -n "$R" -6 rule add fwmark 1 lookup 100 || ok=0
ip -n "$R" -6 route add local ::/0 dev lo table 100 || ok=0
[ $ok = 1 ] || { fail setup/tproxy-routes; finish; }

# UDP echo servers in S that log who sent each datagram.
for a in 10.82.0.1 fd82::1; do
	for port in 9053 9054; do
		ip netns exec "$S" python3 -c '
import socket, sys
s = socket.socket(socket.AF_INET6 if ":" in sys.argv[1] else socket.AF_INET, socket.SOCK_DGRAM)
s.bind((sys.argv[1], int(sys.argv[2])))
print("ready", flush=True)
while True:
    d, a = s.recvfrom(70000)
    print("from", a[0], flush=True)
    s.sendto(d, a)' "$a" "$port" >"$T_TMP/uecho-$a-$port" 2>&1 &
		on_cleanup_pid $!
	done
done
for a in 10.82.0.1 fd82::1; do
	for port in 9053 9054; do
		for _ in $(seq 50); do grep -q ready "$T_TMP/uecho-$a-$port" 2>/dev/null && break; sleep 0.1; done
		grep -q ready "$T_TMP/uecho-$a-$port" || { fail setup/udp-echo "$a $port"; finish; }
	done
done
# A SOCKS5 server in S with UDP: datagrams to port 9054 reach their echo through it.
SPLICED_NETNS=$S
start_spliced "
[inbound up]
type = socks5
listen = 10.82.0.1:1080
udp = on
" || { fail start/upstream "the upstream did not start"; finish; }
UP_PID=$SPLICED_PID UP_LOG=$SPLICED_LOG
SPLICED_NETNS=$R
start_spliced "
[inbound tp4]
type = tproxy
listen = 0.0.0.0:$PT
udp = on
[inbound tp6]
type = tproxy
listen = [::]:$PT
udp = on
[outbound up]
type = socks5
server = 10.82.0.1:1080
[route]
rule = port 9054 -> up
" || { fail start/tproxy "spliced did not start"; finish; }
fetch tproxy/ipv4/curl "http://10.82.0.1:8080/blob"
seen_from tproxy/ipv4/relayed-by-router "$T_TMP/H4.log" 10.82.0.2
fetch tproxy/ipv6/curl "http://[fd82::1]:8080/blob"
seen_from tproxy/ipv6/relayed-by-router "$T_TMP/H6.log" fd82::2
echo16 tproxy/ipv4/echo-16MiB 10.82.0.1
echo16 tproxy/ipv6/echo-16MiB fd82::1
ip netns exec "$C" curl -s --max-time 10 -o /dev/null "http://10.81.0.1:$PT/" && fail tproxy/direct-refused "curl got an answer" || pass tproxy/direct-refused
# UDP: each datagram goes to its original destination, and the echo comes back from it.
for a in 10.82.0.1 fd82::1; do
	o=$(ip netns exec "$C" timeout 30 python3 "$T_TOP/tests/tools/udpping.py" "$a" 9053 1 512 1400 8000 2>&1)
	expect_eq "tproxy/udp/$a/echo" "$(grep -c ' ok$' <<<"$o")" 4 "echoes from $a ($(tr '\n' ' ' <<<"$o"))"
done
expect_eq tproxy/udp/ipv4/relayed-by-router "$(sort -u "$T_TMP/uecho-10.82.0.1-9053")" "$(printf 'from 10.82.0.2\nready')" "senders the echo saw"
expect_eq tproxy/udp/ipv6/relayed-by-router "$(sort -u "$T_TMP/uecho-fd82::1-9053")" "$(printf 'from fd82::2\nready')" "senders the echo saw"
# One client socket, two destinations: each reply comes from the address and port it went to.
o=$(ip netns exec "$C" timeout 20 python3 -c '
import os, socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(5)
for round in range(3):
    for port in (9053, 9054):
        d = os.urandom(100)
        s.sendto(d, ("10.82.0.1", port))
        r, a = s.recvfrom(2000)
        print("reply", a[0], a[1], "ok" if r == d else "differs")' 2>&1)
expect_eq tproxy/udp/two-destinations-one-socket "$(tr '\n' ' ' <<<"$o")" "reply 10.82.0.1 9053 ok reply 10.82.0.1 9054 ok reply 10.82.0.1 9053 ok reply 10.82.0.1 9054 ok reply 10.82.0.1 9053 ok reply 10.82.0.1 9054 ok " "replies"
# Port 9054 went through the socks5 upstream, whose relay socket is S's own address.
expect_eq tproxy/udp/through-socks5-upstream "$(sort -u "$T_TMP/uecho-10.82.0.1-9054")" "$(printf 'from 10.82.0.1\nready')" "senders the 9054 echo saw"
# Twenty more clients of the same server: a session each, with its own direct socket, and one
# reply socket per worker shared by all of them (at most two new: the workers may not have one).
before=$(sock_count "$SPLICED_PID")
o=$(ip netns exec "$C" timeout 30 python3 -c '
import os, socket
ok = 0
for i in range(20):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(5)
    d = os.urandom(64)
    s.sendto(d, ("10.82.0.1", 9053))
    r, a = s.recvfrom(2000)
    ok += r == d and a == ("10.82.0.1", 9053)
print(ok)' 2>&1)
after=$(sock_count "$SPLICED_PID")
if [ "$o" = 20 ] && [ $((after - before)) -ge 20 ] && [ $((after - before)) -le 22 ]; then
	pass tproxy/udp/reply-sockets-shared
else
	fail tproxy/udp/reply-sockets-shared "$o echoes; sockets $before -> $after (20 sessions: 20 direct sockets, at most 2 reply sockets)"
fi
stop_spliced
expect_eq tproxy/sigterm-exit "$?" 0 "exit status"
expect_clean_log tproxy/clean-log
expect_counters tproxy "$SPLICED_LOG" accepted=7 egress_self=3 completed=4 udp_assocs=23 udp_up=34 udp_down=34 udp_upstreams=1
stop_spliced "$UP_PID"
expect_eq tproxy/upstream-exit "$?" 0 "the upstream's exit status"
expect_counters tproxy/upstream "$UP_LOG" udp_assocs=1 udp_up=3 udp_down=3

# No translation at all (no nat rule in this namespace, so no conntrack entry): closed, counted.
netns_new N || { fail setup/netns; finish; }
SPLICED_NETNS=$N
P=$(free_port)
start_spliced "
[inbound r]
type = redirect
listen = 127.0.0.1:$P
" || { fail start/plain "spliced did not start"; finish; }
ip netns exec "$N" curl -s --max-time 10 -o /dev/null "http://127.0.0.1:$P/" && fail no-original-dst/closed "curl got an answer" || pass no-original-dst/closed
stop_spliced
expect_counters no-original-dst "$SPLICED_LOG" accepted=2 no_original_dst=2 # and the probe

# Keys that make no sense without a handshake are refused with file:line; so is udp on redirect.
printf '[inbound r]\ntype = redirect\nlisten = 0.0.0.0:1\nudp = on\n' >"$T_TMP/bad2.ini"
o=$("$SPLICED_BIN" --check -c "$T_TMP/bad2.ini" 2>&1)
if grep -q 'bad2.ini:4: \[inbound r\] udp: not valid with type = redirect' <<<"$o"; then pass bad/udp-on-redirect; else fail bad/udp-on-redirect "$o"; fi
printf '[inbound t]\ntype = tproxy\nlisten = 0.0.0.0:1\nuser = a:b\n' >"$T_TMP/bad.ini"
o=$("$SPLICED_BIN" --check -c "$T_TMP/bad.ini" 2>&1)
expect_eq bad/user-exit "$?" 2 "exit status"
if grep -q 'bad.ini:4: \[inbound t\] user: not valid with type = tproxy' <<<"$o"; then pass bad/user-message; else fail bad/user-message "$o"; fi
finish
