# SPDX-License-Identifier: MIT
# Egress policy (issue 17.2, review H2/M7): cidr block rules hold for every spelling and every
# resolved address, deny-private, no connects to spliced's own listeners; socks5 and http inbounds.
. "$(dirname "$0")/../lib.sh"
need_spliced
need curl python3
need_root netns || finish
use_asan_spliced

# --- the namespaces. A runs spliced, its clients and the local servers; it has lo (with two
# public-range addresses of its own), a local (AnyIP) route, and a veth to B. Nothing else:
# 198.51.100.7 has no route in A. "ip netns exec A" bind-mounts /etc/netns/A/hosts.
#   A: lo: 127.0.0.1 ::1 192.0.2.5/32 2001:db8:5::5/128, local 198.18.0.0/24 dev lo
#   A–B veth: 10.202.0.1 fd00:202::1 203.0.113.1  ↔  10.202.0.2 fd00:202::2 203.0.113.2
netns_new A && netns_new B || { fail setup "namespaces"; finish; }
netns_veth "$A" 10.202.0.1/24 "$B" 10.202.0.2/24 || { fail setup "veth"; finish; }
va=$(ip -n "$A" -o link show type veth | awk -F': ' '{ print $2 }' | cut -d@ -f1)
vb=$(ip -n "$B" -o link show type veth | awk -F': ' '{ print $2 }' | cut -d@ -f1)
ok=1
ip -n "$A" addr add 203.0.113.1/24 dev "$va" && ip -n "$B" addr add 203.0.113.2/24 dev "$vb" &&
	ip -n "$A" addr add fd00:202::1/64 dev "$va" nodad &&
	ip -n "$B" addr add fd00:202::2/64 dev "$vb" nodad &&
	ip -n "$A" addr add 192.0.2.5/32 dev lo && ip -n "$A" addr add 2001:db8:5::5/128 dev lo nodad &&
	ip -n "$A" route add local 198.18.0.0/24 dev lo || ok=0
[ $ok = 1 ] || { fail setup "addresses and routes in $A"; finish; }
mkdir -p "/etc/netns/$A"
on_cleanup_file "/etc/netns/$A"
cat >"/etc/netns/$A/hosts" <<'HOSTS'
127.0.0.1 localhost localhost.
::1 localhost localhost.
198.51.100.7 twoaddr.test
127.0.0.1 twoaddr.test
10.202.0.2 private.test
127.0.0.1 fwdloop.test
HOSTS
# No DNS: a name missing from the hosts file fails at once (nothing listens on 53 in A).
printf 'nameserver 127.0.0.1\noptions attempts:1 timeout:1\n' >"/etc/netns/$A/resolv.conf"

# --- servers. H: python http.server on 127.0.0.1 and ::1 (the same port) in A. HO: one
# dual-stack server in A on every address A owns. HB: the same in B. HC: counts accepts.
www=$T_TMP/www
mkdir -p "$www"
printf 'hello through spliced\n' >"$www/small.txt"
http_server H4 "$www" 127.0.0.1 "" "$A" || { fail setup "http 127.0.0.1"; finish; }
http_server H6 "$www" ::1 "$H4_PORT" "$A" || { fail setup "http ::1"; finish; }
http_server HO "$www" :: "" "$A" || { fail setup "http [::] in A"; finish; }
http_server HB "$www" :: "" "$B" || { fail setup "http [::] in B"; finish; }
H=$H4_PORT
HO=$HO_PORT
HB=$HB_PORT
HC=$(free_port)
accepts=$T_TMP/accepts
: >"$accepts"
ip netns exec "$A" python3 -c '
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen(16)
while True:
    c, _ = s.accept()
    with open(sys.argv[2], "a") as f:
        f.write("accept\n")
    c.settimeout(2)
    try:
        c.recv(4096)
        c.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: 22\r\n\r\nhello through spliced\n")
    except OSError:
        pass
    c.close()
' "$HC" "$accepts" &
on_cleanup_pid $!
wait_port 127.0.0.1 "$HC" 10 "$A" && wait_file "$accepts" 5 || { fail setup "accept counter"; finish; }
: >"$accepts" # wait_port's probe was one

# --- spliced: POLICY blocks loopback with cidr rules; OPEN has no rules (the control, and the
# self-connect cases: it also listens on wildcard ports); GUARD's outbound has deny-private.
PS1=$(free_port) PH1=$(free_port) PS2=$(free_port) PH2=$(free_port) PW4=$(free_port)
PW6=$(free_port) PS3=$(free_port) PH3=$(free_port) PF=$(free_port)
SPLICED_NETNS=$A
start_spliced "
[main]
workers = 2
log-level = debug
[inbound s]
type = socks5
listen = 127.0.0.1:$PS1
[inbound h]
type = http
listen = 127.0.0.1:$PH1
[outbound blocked]
type = block
[route]
rule = cidr 127.0.0.0/8 -> blocked
rule = cidr ::1/128 -> blocked
" || { fail start "POLICY spliced"; finish; }
POLICY=$SPLICED_PID POLICY_LOG=$SPLICED_LOG
start_spliced "
[main]
workers = 2
log-level = debug
[inbound s]
type = socks5
listen = 127.0.0.1:$PS2
[inbound h]
type = http
listen = 127.0.0.1:$PH2
[inbound any4]
type = socks5
listen = 0.0.0.0:$PW4
[inbound any6]
type = socks5
listen = [::]:$PW6
" || { fail start "OPEN spliced"; finish; }
OPEN=$SPLICED_PID OPEN_LOG=$SPLICED_LOG
# A forward inbound whose target is a name for its own listener (no config check can see it).
start_spliced "
[main]
workers = 1
log-level = debug
max-connections = 50 ; bounds the loop of a spliced without the self check
[inbound fwd]
type = forward
listen = 127.0.0.1:$PF
target = fwdloop.test:$PF
" || { fail start "LOOP spliced"; finish; }
LOOP=$SPLICED_PID LOOP_LOG=$SPLICED_LOG
start_spliced "
[main]
workers = 1
log-level = debug
[inbound s]
type = socks5
listen = 127.0.0.1:$PS3
[inbound h]
type = http
listen = 127.0.0.1:$PH3
[outbound guarded]
type = direct
deny-private = yes
[route]
default = guarded
" || fail start "GUARD spliced" # (its cases fail below)
GUARD=$SPLICED_PID GUARD_LOG=$SPLICED_LOG
SPLICED_NETNS=

# A relayed connection that must live through every refusal below.
xfer_server ECHO "$A" -- 127.0.0.5 0 --echo || { fail setup "echo server"; finish; }
fifo=$T_TMP/fifo
mkfifo "$fifo"
ip netns exec "$A" "$XFER" connect --socks5 "127.0.0.1:$PS2" 127.0.0.5 "$ECHO_PORT" \
	<"$fifo" >"$T_TMP/long.out" 2>"$T_TMP/long.err" &
long=$!
on_cleanup_pid $long
exec 7<>"$fifo"
printf 'before;' >&7
sleep 0.3

# Refused connections per spliced; start_spliced's probe of the forward port was one.
declare -A REFUSED=([$POLICY]=0 [$OPEN]=0 [$GUARD]=0 [$LOOP]=1)
pid_of() {
	case $1 in
	$PS1 | $PH1) echo "$POLICY" ;;
	$PS2 | $PH2) echo "$OPEN" ;;
	$PF) echo "$LOOP" ;;
	*) echo "$GUARD" ;;
	esac
}
refused() { local p; p=$(pid_of "$1"); REFUSED[$p]=$((REFUSED[$p] + 1)); }
is_http() { [ "$1" = "$PH1" ] || [ "$1" = "$PH2" ] || [ "$1" = "$PH3" ]; }

# url_host HOST: HOST as curl wants it in a URL (IPv6 in brackets).
url_host() { if [[ $1 == *:* ]]; then echo "[$1]"; else echo "$1"; fi; }

# deny CASE PROXYPORT HOST PORT [WANT]: curl and xfer through the proxy must both get the
# "not allowed" answer (SOCKS5 REP WANT, default 02; HTTP 403, or 502 for REP 03).
deny() {
	local name=$1 pp=$2 host=$3 port=$4 rep=${5:-02} o rc code want
	if is_http "$pp"; then
		code=403 && [ "$rep" = 03 ] && code=502
		o=$(ip netns exec "$A" curl -sS --max-time 10 -p -x "http://127.0.0.1:$pp" \
			-o /dev/null "http://$(url_host "$host"):$port/small.txt" 2>&1)
		rc=$?
		want="curl exit 56, response $code"
		[ $rc -eq 56 ] && [[ $o == *"response $code"* ]] && pass "$name-curl" ||
			fail "$name-curl" "want $want; got exit $rc: $o"
		o=$(ip netns exec "$A" timeout 20 "$XFER" connect --timeout 10 --http "127.0.0.1:$pp" \
			"$host" "$port" </dev/null 2>&1)
		rc=$?
		grep -q "^HTTP=$code\$" <<<"$o" && [ $rc -eq 30 ] && pass "$name-xfer" ||
			fail "$name-xfer" "want HTTP=$code; got exit $rc: $(tr '\n' ' ' <<<"$o")"
	else
		o=$(ip netns exec "$A" curl -sS --max-time 10 --socks5-hostname "127.0.0.1:$pp" \
			-o /dev/null "http://$(url_host "$host"):$port/small.txt" 2>&1)
		rc=$?
		[ $rc -eq 97 ] && [[ $o == *"($((10#$rep)))"* ]] && pass "$name-curl" ||
			fail "$name-curl" "want curl exit 97 with SOCKS5 REP $rep; got exit $rc: $o"
		o=$(ip netns exec "$A" timeout 20 "$XFER" connect --timeout 10 --socks5 "127.0.0.1:$pp" \
			"$host" "$port" </dev/null 2>&1)
		rc=$?
		grep -q "^REP=0x$rep\$" <<<"$o" && [ $rc -eq $((10 + 10#$rep)) ] && pass "$name-xfer" ||
			fail "$name-xfer" "want REP=0x$rep; got exit $rc: $(tr '\n' ' ' <<<"$o")"
	fi
	if [ "$rep" = 02 ]; then refused "$pp" && refused "$pp"; fi
}

# allow CASE PROXYPORT HOST PORT: curl and xfer through the proxy fetch small.txt intact.
allow() {
	local name=$1 pp=$2 host=$3 port=$4 o rc mode=--socks5
	if is_http "$pp"; then
		o=$(ip netns exec "$A" curl -sS --max-time 10 -p -x "http://127.0.0.1:$pp" \
			"http://$(url_host "$host"):$port/small.txt" 2>&1)
		mode=--http
	else
		o=$(ip netns exec "$A" curl -sS --max-time 10 --socks5-hostname "127.0.0.1:$pp" \
			"http://$(url_host "$host"):$port/small.txt" 2>&1)
	fi
	rc=$?
	[ $rc -eq 0 ] && [ "$o" = "$(cat "$www/small.txt")" ] && pass "$name-curl" ||
		fail "$name-curl" "want small.txt; got exit $rc: $o"
	o=$(printf 'GET /small.txt HTTP/1.0\r\n\r\n' | ip netns exec "$A" timeout 20 "$XFER" connect \
		--timeout 10 "$mode" "127.0.0.1:$pp" "$host" "$port" 2>&1)
	rc=$?
	[ $rc -eq 0 ] && [[ $o == *"hello through spliced"* ]] && pass "$name-xfer" ||
		fail "$name-xfer" "want small.txt; got exit $rc: $(tr '\n' ' ' <<<"$o" | head -c 300)"
}

# --- every spelling of the loopback, v4 and v6, through both inbounds: refused under the
# cidr rules, fetched without them. curl rewrites some numeric hosts itself (127.1 becomes
# 127.0.0.1), xfer sends each one as written (SOCKS5 ATYP 3, or the CONNECT authority).
for h in 127.0.0.1 127.1 2130706433 0x7f000001 017700000001 0 0.0.0.0 localhost localhost. \
	::1 :: ::ffff:127.0.0.1; do
	deny "cidr-socks5-$h" "$PS1" "$h" "$H"
	deny "cidr-http-$h" "$PH1" "$h" "$H"
	allow "open-socks5-$h" "$PS2" "$h" "$H"
	allow "open-http-$h" "$PH2" "$h" "$H"
done

# --- a name with two addresses, one public (no route in A) and 127.0.0.1: the loopback one is
# never connected to; the public one fails (REP 03, 502); without rules the server is reached.
deny twoaddr-socks5 "$PS1" twoaddr.test "$HC" 03
deny twoaddr-http "$PH1" twoaddr.test "$HC" 03
expect_eq twoaddr-loopback-never-connected "$(wc -l <"$accepts")" 0 "accepts on 127.0.0.1:$HC"
ip netns exec "$A" curl -sS --max-time 10 --socks5-hostname "127.0.0.1:$PS2" \
	-o /dev/null "http://twoaddr.test:$HC/" && [ "$(wc -l <"$accepts")" -ge 1 ] &&
	pass twoaddr-open-reaches-loopback || fail twoaddr-open-reaches-loopback "accepts: $(wc -l <"$accepts")"

# --- deny-private: loopback, RFC 1918, ULA, this host's own public addresses (an interface's,
# and a local route's that no interface lists), names resolving to any of them; a public
# address of another host passes. OPEN reaches each of them.
for c in "loop4 127.0.0.1 $H" "loop6 ::1 $H" "rfc1918 10.202.0.2 $HB" "ula fd00:202::2 $HB" \
	"owned4 192.0.2.5 $HO" "owned6 2001:db8:5::5 $HO" "anyip 198.18.0.9 $HO" \
	"veth-own 10.202.0.1 $HO" "name-loop localhost $H" "name-rfc1918 private.test $HB" \
	"mapped ::ffff:10.202.0.2 $HB" "unspecified 0.0.0.0 $H"; do
	read -r n h p <<<"$c"
	deny "private-socks5-$n" "$PS3" "$h" "$p"
	deny "private-http-$n" "$PH3" "$h" "$p"
	allow "private-open-socks5-$n" "$PS2" "$h" "$p"
done
allow private-socks5-public-other-host "$PS3" 203.0.113.2 "$HB"
allow private-http-public-other-host "$PH3" 203.0.113.2 "$HB"
deny private-twoaddr "$PS3" twoaddr.test "$HC" 03
expect_eq private-twoaddr-loopback-never-connected "$(wc -l <"$accepts")" 1 "accepts on 127.0.0.1:$HC"

# --- spliced never connects to its own listeners (review M7), whatever the spelling; wildcard
# listeners take every address of the host on their port. A foreign address on such a port
# is not ours: the connect is made (and refused by B: REP 05).
for c in "own 127.0.0.1 $PS2" "other-inbound 127.0.0.1 $PH2" "name fwdloop.test $PS2" \
	"unspecified 0.0.0.0 $PS2" "mapped ::ffff:127.0.0.1 $PS2" "wild4-loop 127.0.0.7 $PW4" \
	"wild4-owned 192.0.2.5 $PW4" "wild4-veth 10.202.0.1 $PW4" "wild4-anyip 198.18.0.9 $PW4" \
	"wild6-loop ::1 $PW6" "wild6-owned 2001:db8:5::5 $PW6" "wild6-unspecified :: $PW6"; do
	read -r n h p <<<"$c"
	deny "self-socks5-$n" "$PS2" "$h" "$p"
	deny "self-http-$n" "$PH2" "$h" "$p"
done
o=$(ip netns exec "$A" "$XFER" connect --timeout 5 --socks5 "127.0.0.1:$PS2" 10.202.0.2 "$PW4" </dev/null 2>&1)
grep -q '^REP=0x05$' <<<"$o" && pass self-foreign-address-on-wildcard-port ||
	fail self-foreign-address-on-wildcard-port "want REP=0x05: $(tr '\n' ' ' <<<"$o")"
# A forward inbound whose target name resolves to itself: closed at once, counted, no loop.
# (At rest spliced holds its listeners and each worker's reload socketpair.)
n0=$(sock_count "$LOOP")
o=$(ip netns exec "$A" timeout 10 "$XFER" connect --timeout 5 127.0.0.1 "$PF" </dev/null 2>&1)
rc=$?
refused "$PF"
sleep 0.5
n=$(sock_count "$LOOP")
[ $rc -eq 0 ] && [[ $o == *"RECV=0 END=eof"* ]] && [ "$n" -le "$n0" ] && pass self-forward-to-itself ||
	fail self-forward-to-itself "exit $rc, $n sockets in spliced ($n0 at rest): $(tr '\n' ' ' <<<"$o")"

# --- a forward target that is a listen address of the same file is a config error.
P=$(free_port) Q=$(free_port)
bad=$T_TMP/loop.ini
printf '[inbound f]\ntype = forward\nlisten = 127.0.0.1:%s\ntarget = 127.0.0.1:%s\n' "$P" "$P" >"$bad"
o=$("$SPLICED_BIN" -c "$bad" --check 2>&1)
rc=$?
[ $rc -eq 2 ] && [[ $o == *"$bad:4: [inbound f] target:"* ]] && pass config-forward-to-itself ||
	fail config-forward-to-itself "exit $rc (want 2 and $bad:4): $o"
printf '[inbound f]\ntype = forward\nlisten = 127.0.0.1:%s\ntarget = 0x7f000001:%s\n[inbound s]\ntype = socks5\nlisten = 0.0.0.0:%s\n' \
	"$P" "$Q" "$Q" >"$bad"
o=$("$SPLICED_BIN" -c "$bad" --check 2>&1)
rc=$?
[ $rc -eq 2 ] && [[ $o == *"$bad:7: [inbound s] listen:"*"[inbound f]"* ]] && pass config-forward-to-later-wildcard ||
	fail config-forward-to-later-wildcard "exit $rc (want 2 and $bad:7): $o"

# --- nothing else disturbed: another round of every kind of refusal leaves each spliced with
# the sockets it had (the first round opened what is opened once: a netlink socket per worker).
socks_now() { echo "$(sock_count "$POLICY") $(sock_count "$OPEN") $(sock_count "$GUARD")"; }
before=$(socks_now)
for i in $(seq 10); do
	for c in "$PS1 0x7f000001 $H" "$PS1 localhost. $H" "$PS1 :: $H" "$PS2 127.0.0.1 $PS2" \
		"$PS2 192.0.2.5 $PW4" "$PS3 10.202.0.2 $HB" "$PS3 198.18.0.9 $HO"; do
		read -r pp h p <<<"$c"
		ip netns exec "$A" "$XFER" connect --timeout 5 --socks5 "127.0.0.1:$pp" "$h" "$p" \
			</dev/null >/dev/null 2>&1
		[ $? -eq 12 ] && refused "$pp" || fail "repeat-$pp-$h" "not refused with REP 02"
	done
done
for i in $(seq 50); do [ "$(socks_now)" = "$before" ] && break; sleep 0.1; done
expect_eq no-socket-growth "$(socks_now)" "$before" "sockets of POLICY OPEN GUARD"
printf 'after' >&7
exec 7>&-
if wait_pid $long 10 && [ "$(cat "$T_TMP/long.out")" = "before;after" ]; then
	pass relay-survives-refusals
else
	fail relay-survives-refusals "echo got '$(cat "$T_TMP/long.out")'; $(tr '\n' ' ' <"$T_TMP/long.err")"
fi
grep -q "refused: .*sends it to \[outbound blocked\]" "$POLICY_LOG" && pass log-rule ||
	fail log-rule "no 'egress: ... refused ... [outbound blocked]' line"
grep -q "refused: one of spliced's own listeners" "$OPEN_LOG" && pass log-self ||
	fail log-self "no 'own listeners' line"
grep -q "refused by \[outbound guarded\] deny-private: 127.0.0.0/8" "$GUARD_LOG" &&
	grep -q "refused by \[outbound guarded\] deny-private: an address of this host" "$GUARD_LOG" &&
	pass log-private || fail log-private "no deny-private lines"
for v in POLICY OPEN GUARD LOOP; do
	pid=${!v} log=${v}_LOG
	stop_spliced "$pid"
	expect_eq "exit-$v" $? 0 "exit status"
	b=$(grep -o ' blocked=[0-9]*' "${!log}" | tail -n 1)
	expect_eq "blocked-counted-$v" "${b# blocked=}" "${REFUSED[$pid]}" "stats: blocked"
	# and the refused addresses under their reasons (per address: a name can have several;
	# an IP target a rule sends to block is refused by the route, no address looked at)
	e=$(grep -o ' egress_[a-z]*=[0-9]*' "${!log}" | awk -F= '{ n += $2 } END { print n + 0 }')
	[ "$e" -ge 1 ] && pass "egress-reasons-counted-$v" ||
		fail "egress-reasons-counted-$v" "no egress_* counter moved for ${REFUSED[$pid]} refusals"
	expect_clean_log "clean-log-$v" "${!log}"
done
# Without the self check every connection to the forward port loops until max-connections.
a=$(grep -o 'stats: relay: accepted=[0-9]*' "$LOOP_LOG" | tail -n 1)
expect_eq loop-accepted-once-per-client "${a#stats: relay: accepted=}" 2 "LOOP accepted (start probe + xfer)"
finish
