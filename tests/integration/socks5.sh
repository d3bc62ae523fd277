# SPDX-License-Identifier: MIT
# SOCKS5 inbound: curl through it (IPv4/IPv6/domain), auth, users file + SIGHUP, REP codes, BND.
. "$(dirname "$0")/../lib.sh"
need_spliced
need curl python3 sha256sum

# --- peers: one HTTP server on 127.0.0.1 and [::1] (same port, so "localhost" works
# whichever address spliced resolves it to), serving a small and a 1 MiB file.
www=$T_TMP/www
mkdir -p "$www"
printf 'hello through spliced\n' >"$www/small.txt"
head -c $((1024 * 1024)) /dev/urandom >"$www/blob"
http_server H4 "$www" 127.0.0.1 || { fail setup "http server"; finish; }
http_server H6 "$www" ::1 "$H4_PORT" || { fail setup "http server [::1]"; finish; }
H=$H4_PORT

P_OPEN=$(free_port)
P_OPEN6=$(free_port)
P_AUTH=$(free_port)
P_FILE=$(free_port)
P_BLOCKED=$(free_port) # the route sends this destination port to `block`
P_CLOSED=$(free_port)  # nothing listens here
users=$T_TMP/users
printf '# users for the file inbound\ncarol pw-carol\n' >"$users"

start_spliced "
[main]
workers = 2
log-level = info

[inbound open]
type = socks5
listen = 127.0.0.1:$P_OPEN

[inbound open6]
type = socks5
listen = [::1]:$P_OPEN6

[inbound auth]
type = socks5
listen = 127.0.0.1:$P_AUTH
user = alice:wonder land

[inbound file]
type = socks5
listen = 127.0.0.1:$P_FILE
users = $users

[outbound nope]
type = block

[route]
rule = port $P_BLOCKED -> nope
rule = domain blocked.test -> nope
default = direct
" || { fail start "spliced did not start"; finish; }
MAIN_PID=$SPLICED_PID

# curl_get CASE URL FILE CURL-ARGS...: fetch through the proxy, compare byte for byte.
curl_get() {
	local name=$1 url=$2 want=$3 got=$T_TMP/got.$1
	shift 3
	local e
	if e=$(curl -sS --max-time 20 "$@" -o "$got" "$url" 2>&1) && cmp -s "$got" "$want"; then
		pass "$name"
	else
		fail "$name" "curl $* $url: ${e:-content differs ($(stat -c %s "$got" 2>/dev/null) bytes)}"
	fi
}

curl_get socks5h-domain "http://localhost:$H/blob" "$www/blob" --socks5-hostname "127.0.0.1:$P_OPEN"
curl_get socks5h-url "http://localhost:$H/small.txt" "$www/small.txt" --proxy "socks5h://127.0.0.1:$P_OPEN"
curl_get socks5-ipv4 "http://127.0.0.1:$H/blob" "$www/blob" --socks5 "127.0.0.1:$P_OPEN"
curl_get ipv6-listener "http://127.0.0.1:$H/blob" "$www/blob" --socks5-hostname "[::1]:$P_OPEN6"
curl_get ipv6-target "http://[::1]:$H/blob" "$www/blob" --socks5 "127.0.0.1:$P_OPEN"

# --- authentication
curl_get auth-ok "http://127.0.0.1:$H/blob" "$www/blob" --socks5 "127.0.0.1:$P_AUTH" \
	--proxy-user "alice:wonder land"
curl_get auth-ok-url "http://localhost:$H/small.txt" "$www/small.txt" \
	--proxy "socks5h://alice:wonder%20land@127.0.0.1:$P_AUTH"

# curl_refused CASE CURL-ARGS...: curl must fail and write nothing.
curl_refused() {
	local name=$1 got=$T_TMP/got.$1
	shift
	rm -f "$got"
	if curl -sS --max-time 10 "$@" -o "$got" "http://127.0.0.1:$H/small.txt" 2>/dev/null; then
		fail "$name" "curl $* succeeded"
	elif [ -s "$got" ]; then
		fail "$name" "curl $* failed but received data"
	else
		pass "$name"
	fi
}
curl_refused auth-wrong-password --socks5 "127.0.0.1:$P_AUTH" --proxy-user "alice:wonderland"
curl_refused auth-wrong-user --socks5 "127.0.0.1:$P_AUTH" --proxy-user "mallory:wonder land"
curl_refused auth-missing --socks5 "127.0.0.1:$P_AUTH"

# raw CASE PORT HEX WANT-PREFIX [NS]: send raw bytes, the reply must start with WANT-PREFIX.
raw() {
	local name=$1 port=$2 hex=$3 want=$4 ns=${5:-} o
	o=$(in_ns "$ns" "$XFER" connect --raw-handshake "$hex" --timeout 5 127.0.0.1 "$port" 2>&1)
	local got
	got=$(sed -n 's/^RECV=//p' <<<"$o")
	if [[ $got == "$want"* ]]; then
		pass "$name"
	else
		fail "$name" "sent $hex, got '$got' ($(grep END= <<<"$o")), want prefix $want"
	fi
	RAW_OUT=$o
}
hexstr() { printf '%s' "$1" | od -An -tx1 | tr -d ' \n'; }
# RFC 1929: 01 ULEN UNAME PLEN PASSWD; a wrong password is answered 01 01 and closed.
raw auth-wrong-raw "$P_AUTH" "050102 01 05$(hexstr alice) 0a$(hexstr wonderland)" 05020101
if grep -q 'END=eof\|END=reset' <<<"$RAW_OUT"; then pass auth-wrong-closes
else fail auth-wrong-closes "connection not closed after 01 01: $(grep END= <<<"$RAW_OUT")"; fi
raw auth-no-method "$P_AUTH" 050100 05ff

# --- users file and SIGHUP: the open connection of carol must survive a reload that
# removes her; dave (added) works afterwards; carol's new connections are refused.
xfer_server ECHO -- 127.0.0.1 0 --echo || fail setup "echo server"
fifo=$T_TMP/fifo
mkfifo "$fifo"
"$XFER" connect --socks5 "127.0.0.1:$P_FILE" --user carol --pass pw-carol 127.0.0.1 "$ECHO_PORT" \
	<"$fifo" >"$T_TMP/carol.out" 2>"$T_TMP/carol.err" &
carol=$!
on_cleanup_pid $carol
exec 7<>"$fifo" # read-write: never blocks, never SIGPIPE if the client died
printf 'before-reload;' >&7
curl_get users-file "http://127.0.0.1:$H/small.txt" "$www/small.txt" --socks5 "127.0.0.1:$P_FILE" \
	--proxy-user carol:pw-carol
curl_refused users-file-unknown --socks5 "127.0.0.1:$P_FILE" --proxy-user dave:pw-dave
printf 'dave pw-dave\n' >"$users.new"
mv "$users.new" "$users"
kill -HUP "$MAIN_PID"
sleep 1
curl_get sighup-added-user "http://127.0.0.1:$H/small.txt" "$www/small.txt" \
	--socks5 "127.0.0.1:$P_FILE" --proxy-user dave:pw-dave
curl_refused sighup-removed-user --socks5 "127.0.0.1:$P_FILE" --proxy-user carol:pw-carol
printf 'after-reload' >&7
exec 7>&-
if wait_pid $carol 10 && [ "$(cat "$T_TMP/carol.out")" = "before-reload;after-reload" ]; then
	pass sighup-old-connection-unaffected
else
	fail sighup-old-connection-unaffected "echo got '$(cat "$T_TMP/carol.out")'; $(tr '\n' ' ' <"$T_TMP/carol.err")"
fi
# A users file that does not parse (a name without a password) keeps the old table whole:
# dave still works, erin from the bad file does not.
printf 'erin pw-erin\nlonelyname\n' >"$users"
kill -HUP "$MAIN_PID"
sleep 1
if kill -0 "$MAIN_PID" 2>/dev/null; then
	curl_get sighup-bad-file-keeps-table "http://127.0.0.1:$H/small.txt" "$www/small.txt" \
		--socks5 "127.0.0.1:$P_FILE" --proxy-user dave:pw-dave
	curl_refused sighup-bad-file-not-applied --socks5 "127.0.0.1:$P_FILE" --proxy-user erin:pw-erin
else
	fail sighup-bad-file-keeps-table "spliced exited after SIGHUP with a bad users file"
fi

# --- REP codes. expect_rep CASE REP NS XFER-CONNECT-ARGS...
expect_rep() {
	local name=$1 want=$2 ns=$3 o rc
	shift 3
	o=$(in_ns "$ns" timeout 30 "$XFER" connect --timeout 20 "$@" </dev/null 2>&1)
	rc=$?
	if grep -q "^REP=$want\$" <<<"$o" && [ $rc -eq $((10 + want)) -o "$want" = 0x00 ]; then
		pass "$name"
	else
		fail "$name" "xfer connect $*: exit $rc, want REP=$want; got: $(tr '\n' ' ' <<<"$o")"
	fi
}
expect_rep rep-05-refused 0x05 "" --socks5 "127.0.0.1:$P_OPEN" 127.0.0.1 "$P_CLOSED"
expect_rep rep-02-blocked-port 0x02 "" --socks5 "127.0.0.1:$P_OPEN" 127.0.0.1 "$P_BLOCKED"
expect_rep rep-02-blocked-domain 0x02 "" --socks5 "127.0.0.1:$P_OPEN" www.blocked.test 80
port_hex=$(printf '%04x' "$H")
raw rep-07-bind "$P_OPEN" "050100 05020001 7f000001 $port_hex" 05000507
raw rep-07-udp-associate "$P_OPEN" "050100 05030001 00000000 0000" 05000507
raw rep-08-atyp "$P_OPEN" "050100 05010005 7f000001 $port_hex" 05000508

# BND.ADDR/BND.PORT: the outbound socket's local address, i.e. what the target sees as peer.
xfer_server BT -- 127.0.0.1 0 --once || fail setup "bnd target"
o=$("$XFER" connect --socks5 "127.0.0.1:$P_OPEN" 127.0.0.1 "$BT_PORT" </dev/null 2>&1)
wait_pid "$BT_PID" 5
bnd=$(sed -n 's/^BND=//p' <<<"$o")
peer=$(sed -n 's/^PEER=//p' "$BT_ERR")
if [ -n "$bnd" ] && [ "$bnd" = "$peer" ]; then
	pass bnd-is-outbound-address
else
	fail bnd-is-outbound-address "BND=$bnd, target saw peer $peer"
fi

# A DNS server answering NXDOMAIN (RFC 1035 §4.1.1: QR=1, RD copied, RA=1, RCODE=3) to every
# query on 127.0.0.1:53 (UDP and TCP are both tried by some resolvers; UDP suffices here).
nxdomain_stub='
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("127.0.0.1", 53))
while True:
    q, a = s.recvfrom(512)
    if len(q) < 12:
        continue
    flags = 0x8083 | (q[2] & 1) << 8
    s.sendto(q[:2] + flags.to_bytes(2, "big") + q[4:6] + bytes(6) + q[12:], a)
'

# --- unreachable, host unreachable, timeout: spliced runs in namespace A, which has only
# lo and a veth to namespace B (10.200.0.0/24); nothing leaves these namespaces.
if need_root rep-03-04-06; then
	if netns_new A && netns_new B && netns_veth "$A" 10.200.0.1/24 "$B" 10.200.0.2/24 &&
		netns_drop_port "$B" 9; then
		PA=$(free_port)
		PT=$(free_port)
		# Name resolution inside A: "ip netns exec" bind-mounts /etc/netns/A/resolv.conf,
		# which points at a DNS stub in A answering NXDOMAIN to everything.
		mkdir -p "/etc/netns/$A"
		on_cleanup_file "/etc/netns/$A"
		printf 'nameserver 127.0.0.1\noptions attempts:1 timeout:2\n' >"/etc/netns/$A/resolv.conf"
		ip netns exec "$A" python3 -c "$nxdomain_stub" &
		stub_pid=$!
		on_cleanup_pid "$stub_pid"
		SPLICED_NETNS=$A
		start_spliced "
[main]
workers = 1
connect-timeout = 10s
[inbound s]
type = socks5
listen = 127.0.0.1:$PA
" || fail start-netns "spliced did not start in $A"
		start_spliced "
[main]
workers = 1
connect-timeout = 1s
[inbound s]
type = socks5
listen = 127.0.0.1:$PT
" || fail start-netns "spliced (connect-timeout 1s) did not start in $A"
		SPLICED_NETNS=
		expect_rep rep-03-network-unreachable 0x03 "$A" --socks5 "127.0.0.1:$PA" 198.51.100.1 80
		expect_rep rep-04-host-unreachable 0x04 "$A" --socks5 "127.0.0.1:$PA" 10.200.0.99 80
		expect_rep rep-04-name-nxdomain 0x04 "$A" --socks5 "127.0.0.1:$PA" nonexistent.invalid 80
		# With the stub gone the resolver cannot reach any DNS server (EAI_AGAIN): still a
		# name resolution failure, REP 04 by the spec.
		kill "$stub_pid" 2>/dev/null
		expect_rep rep-04-name-dns-unreachable 0x04 "$A" --socks5 "127.0.0.1:$PA" nonexistent.invalid 80
		expect_rep rep-05-refused-remote 0x05 "$A" --socks5 "127.0.0.1:$PA" 10.200.0.2 7
		t0=$(date +%s%N)
		expect_rep rep-06-connect-timeout 0x06 "$A" --socks5 "127.0.0.1:$PT" 10.200.0.2 9
		ms=$((($(date +%s%N) - t0) / 1000000))
		if [ $ms -ge 900 ] && [ $ms -lt 5000 ]; then
			pass connect-timeout-honoured
		else
			fail connect-timeout-honoured "REP after ${ms} ms, connect-timeout = 1s"
		fi
	else
		fail netns-setup "could not build namespaces A/B"
	fi
fi

# --- TCP_NODELAY on both legs of a relayed connection (the inbound leg inherits it
# from the listener; read back from spliced's own descriptors with pidfd_getfd).
CONNHOLD=$T_BUILD/tests/tools/connhold
SOCKOPTS=$T_BUILD/tests/tools/sockopts
EP=$(free_port)
"$CONNHOLD" serve -q 127.0.0.1:"$EP" 2>"$T_TMP/echo.err" &
on_cleanup_pid $!
if wait_port 127.0.0.1 "$EP" 10; then
	holder nd -s 127.0.0.1:"$P_OPEN" -t 127.0.0.1:"$EP" -w 5000
	hask nd "open 3"
	expect_eq nodelay-open "$r" "opened 3 failed 0" "connhold"
	hask nd ping
	expect_eq nodelay-ping "$r" "ping ok 3 bad 0" "connhold"
	r=$("$SOCKOPTS" "$MAIN_PID" 2>&1)
	rc=$?
	# 4 listeners (open, open6, auth, file) x 2 workers; 3 connections x 2 legs
	if [ $rc -eq 3 ]; then
		skip tcp-nodelay-both-legs "this kernel has no per-thread pidfds (PIDFD_THREAD, Linux 6.9): $r"
	elif [[ $r =~ ^listen\ ([0-9]+)\ listen_nodelay\ ([0-9]+)\ established\ ([0-9]+)\ established_nodelay\ ([0-9]+)\ established_keepalive\ ([0-9]+) ]] &&
		[ "${BASH_REMATCH[1]}" -eq 8 ] && [ "${BASH_REMATCH[2]}" -eq 8 ] &&
		[ "${BASH_REMATCH[3]}" -eq 6 ] && [ "${BASH_REMATCH[4]}" -eq 6 ] && [ "${BASH_REMATCH[5]}" -eq 0 ]; then
		pass tcp-nodelay-both-legs
	else
		fail tcp-nodelay-both-legs "sockopts: $r (want 8 listeners and 6 relayed legs, all with TCP_NODELAY, none with keepalive)"
	fi
	hquit nd
	# keepalive = 45s: both legs of every relayed connection probe an idle peer.
	KP=$(free_port)
	MAIN_SPLICED_PID=$SPLICED_PID MAIN_SPLICED_LOG=$SPLICED_LOG
	if start_spliced "[main]
workers = 2
keepalive = 45s
[inbound k]
type = socks5
listen = 127.0.0.1:$KP"; then
		holder ka -s 127.0.0.1:"$KP" -t 127.0.0.1:"$EP" -w 5000
		hask ka "open 3"
		expect_eq keepalive-open "$r" "opened 3 failed 0" "connhold"
		r=$("$SOCKOPTS" "$SPLICED_PID" 2>&1)
		if [ $? -eq 3 ]; then
			skip tcp-keepalive-both-legs "no per-thread pidfds: $r"
		elif [[ $r =~ established\ 6\ established_nodelay\ 6\ established_keepalive\ 6\ keepidle\ 45$ ]]; then
			pass tcp-keepalive-both-legs
		else
			fail tcp-keepalive-both-legs "sockopts: $r (want 6 relayed legs with keepalive after 45 s)"
		fi
		hquit ka
		stop_spliced
	else
		fail keepalive-start "spliced did not start"
	fi
	# Per inbound and per outbound: keepalive and user-timeout (TCP_USER_TIMEOUT) over [main]'s.
	K2=$(free_port) K3=$(free_port)
	if start_spliced "[main]
keepalive = 45s
[inbound k2]
type = socks5
listen = 127.0.0.1:$K2
keepalive = 30s
user-timeout = 20s
outbound = o
[inbound k3]
type = socks5
listen = 127.0.0.1:$K3
keepalive = 0
[outbound o]
type = direct
keepalive = 50s
user-timeout = 10s"; then
		holder k2 -s 127.0.0.1:"$K2" -t 127.0.0.1:"$EP" -w 5000
		hask k2 "open 2"
		holder k3 -s 127.0.0.1:"$K3" -t 127.0.0.1:"$EP" -w 5000
		hask k3 "open 1"
		r=$("$SOCKOPTS" "$SPLICED_PID" each 2>&1)
		if [ $? -eq 3 ]; then
			skip tcp-options-per-leg "no per-thread pidfds: $r"
		else
			# client legs of k2: 30 s, 20 s; of k3: off; outbound legs: o's 50 s, 10 s (k2), [main]'s 45 s (k3)
			got=$(awk -v k2="$K2" -v k3="$K3" -v ep="$EP" '$1 == "sock" {
				leg = $2 == k2 ? "k2-in" : $2 == k3 ? "k3-in" : $3 == ep ? "out" : "other"
				print leg, $5, $7 }' <<<"$r" | sort | uniq -c | awk '{ printf "%s:%s/%s/%s ", $1, $2, $3, $4 }')
			expect_eq tcp-options-per-leg "$got" "2:k2-in/30/20000 1:k3-in/0/0 1:out/45/0 2:out/50/10000 " "legs"
		fi
		hquit k2
		hquit k3
		stop_spliced
	else
		fail tcp-options-start "spliced did not start"
	fi
	SPLICED_PID=$MAIN_SPLICED_PID SPLICED_LOG=$MAIN_SPLICED_LOG
else
	fail nodelay-setup "echo server did not start: $(cat "$T_TMP/echo.err")"
fi

if kill -0 "$MAIN_PID" 2>/dev/null; then pass still-running; else fail still-running "spliced died"; fi
stop_spliced "$MAIN_PID"
rc=$?
if [ $rc -eq 0 ]; then pass sigterm-exit-0; else fail sigterm-exit-0 "exit status $rc after SIGTERM"; fi
finish
