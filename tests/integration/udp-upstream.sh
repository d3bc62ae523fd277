#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# UDP through a socks5 upstream, spliced to spliced on loopback (both under ASan when it is
# built): spliced A takes the client's association and opens one of its own with spliced B,
# by UDP ASSOCIATE with RFC 1929 credentials (udp = udp, the default) or by hev-socks5's FWD
# UDP (udp = tcp); datagrams of 1, 512, 1400 and 65,000 bytes echo byte-exact to IPv4 and
# IPv6 targets and to a name B resolves, from a UDP client and from a UDP-in-TCP client.
# An upstream that refuses (REP 07, a wrong password, nobody listening) or that ends its
# association ends the client's too: its control connection closes.
. "$(dirname "$0")/../lib.sh"
need_spliced
need python3
UA=$T_TOP/tests/tools/udpassoc.py

EP=$(free_port)
{ udp_echo "" 127.0.0.1 "$EP" && udp_echo "" ::1 "$EP"; } || { fail setup/echo "the echo server did not start"; finish; }

B_OPEN=$(free_port) B_AUTH=$(free_port) B_OFF=$(free_port) B_SHORT=$(free_port) DEAD=$(free_port)
use_asan_spliced
start_spliced "
[main]
log-level = debug

[inbound open]
type = socks5
listen = 127.0.0.1:$B_OPEN
udp = on

[inbound auth]
type = socks5
listen = 127.0.0.1:$B_AUTH
user = alice:secret
udp = on

[inbound off]
type = socks5
listen = 127.0.0.1:$B_OFF
" || { fail start/b "spliced B did not start"; finish; }
B_PID=$SPLICED_PID B_LOG=$SPLICED_LOG
# A second B whose associations end after 2 s of quiet: its leg's end must end A's.
start_spliced "
[main]
udp-timeout = 2s
[inbound short]
type = socks5
listen = 127.0.0.1:$B_SHORT
udp = on
" || { fail start/b-short "spliced B (short) did not start"; finish; }
S_PID=$SPLICED_PID

A_UDP=$(free_port) A_TCP=$(free_port) A_REFUSED=$(free_port) A_WRONG=$(free_port)
A_DEAD=$(free_port) A_SHORT=$(free_port)
inb() { printf '[inbound %s]\ntype = socks5\nlisten = 127.0.0.1:%s\nudp = on\noutbound = %s\n\n' "$@"; }
outb() { printf '[outbound %s]\ntype = socks5\nserver = 127.0.0.1:%s\n%s\n\n' "$1" "$2" "${3:-}"; }
start_spliced "
[main]
log-level = debug

$(inb a-udp "$A_UDP" up-udp)
$(inb a-tcp "$A_TCP" up-tcp)
$(inb a-refused "$A_REFUSED" up-refused)
$(inb a-wrong "$A_WRONG" up-wrong)
$(inb a-dead "$A_DEAD" up-dead)
$(inb a-short "$A_SHORT" up-short)
$(outb up-udp "$B_AUTH" "username = alice
password = secret")
$(outb up-tcp "$B_OPEN" "udp = tcp")
$(outb up-refused "$B_OFF")
$(outb up-wrong "$B_AUTH" "username = alice
password = wrong")
$(outb up-dead "$DEAD")
$(outb up-short "$B_SHORT")
" || { fail start/a "spliced A did not start"; finish; }
A_PID=$SPLICED_PID A_LOG=$SPLICED_LOG

sizes() { # HOST: echo commands for 1, 512, 1400 and 65,000 bytes to HOST:EP
	local n
	for n in 1 512 1400 65000; do printf 'echo %s %s %s ' "$1" "$EP" "$n"; done
}
want() { # HOST-RE: the lines sizes() should bring back
	local n
	for n in 1 512 1400 65000; do printf 'echo %s ok %s:%s\n' "$n" "$1" "$EP"; done
}
for mode in udp tcp; do
	port=$A_UDP
	[ $mode = tcp ] && port=$A_TCP
	# shellcheck disable=SC2046 # sizes() is meant to split into words
	o=$(timeout 60 python3 "$UA" 127.0.0.1 "$port" $(sizes 127.0.0.1) $(sizes ::1) \
		echo localhost "$EP" 100 2>&1)
	mapfile -t w < <(want '127\.0\.0\.1'; want ::1)
	expect_lines "upstream-$mode/udp-client" "$o" "assoc 127\.0\.0\.1 [0-9]+" "${w[@]}" \
		"echo 100 ok (127\.0\.0\.1|::1):$EP"
	# shellcheck disable=SC2046
	o=$(timeout 60 python3 "$UA" 127.0.0.1 "$port" --fwd $(sizes 127.0.0.1) echo ::1 "$EP" 512 2>&1)
	mapfile -t w < <(want '127\.0\.0\.1')
	expect_lines "upstream-$mode/udp-in-tcp-client" "$o" "${w[@]}" "echo 512 ok ::1:$EP"
done

# Refused, a wrong password, nobody listening: A answered the client already (its own
# association), so the failure comes as the end of the control connection, and nothing echoes.
for a in refused:$A_REFUSED wrong:$A_WRONG dead:$A_DEAD; do
	o=$(timeout 30 python3 "$UA" 127.0.0.1 "${a#*:}" echo 127.0.0.1 "$EP" 10 tcp-eof 5 2>&1)
	expect_lines "fails/${a%%:*}-ends-association" "$o" "echo 10 lost" "tcp-eof"
done
# B ends its association after 2 s of quiet: A's ends with it.
o=$(timeout 30 python3 "$UA" 127.0.0.1 "$A_SHORT" echo 127.0.0.1 "$EP" 10 tcp-eof 6 2>&1)
expect_lines upstream-ended/ends-association "$o" "echo 10 ok 127\.0\.0\.1:$EP" "tcp-eof"

stop_spliced "$A_PID"
expect_eq a/sigterm-exit "$?" 0 "exit status"
stop_spliced "$B_PID"
expect_eq b/sigterm-exit "$?" 0 "exit status"
stop_spliced "$S_PID"
# A: 4 working associations + 3 failing + 1 ended = 8, each with one upstream leg; 4 failed.
# 2 x (9 + 5) datagrams each way, and 1 for the ended one; B saw 4 of them (2 udp, 2 tcp).
expect_counters a-counts "$A_LOG" udp_assocs=8 udp_upstreams=8 udp_upstream_failed=4 udp_up=29 \
	udp_down=29
expect_counters b-counts "$B_LOG" udp_assocs=4 udp_up=28 udp_down=28
# The log says why (rate-limited per cause: the first of each).
for w in "refused|upstream up-refused: handshake failed \(error [0-9]+, REP 7\)" \
	"dead|upstream up-dead: Connection refused" "ended|upstream up-short: the upstream closed its association"; do
	if grep -qE "${w#*|}" "$A_LOG"; then pass "a-log/${w%%|*}"; else fail "a-log/${w%%|*}" "no '${w#*|}' in the log"; fi
done
expect_clean_log a/sanitizers "$A_LOG"
expect_clean_log b/sanitizers "$B_LOG"
finish
