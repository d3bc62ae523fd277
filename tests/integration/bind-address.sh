#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# An outbound's source address, seen by the target: bind-address (one family; a target of
# the other family is refused), bind-address-v4 with bind-address-v6 (each family its own),
# and bind-address-v4 alone (IPv6 goes out unbound). The target is a small HTTP server on
# 127.0.0.1 and [::1] that answers with the address it was connected from.
. "$(dirname "$0")/../lib.sh"
need_spliced
need curl python3

HP=$(free_port)
for a in 127.0.0.1 ::1; do
	python3 "$T_TOP/tests/tools/httpwho.py" "$a" "$HP" 2>"$T_TMP/peer.err" &
	on_cleanup_pid $!
	wait_port "$a" "$HP" 10 || { fail setup/server "$(cat "$T_TMP/peer.err")"; finish; }
done

PL=$(free_port) PS=$(free_port) P4=$(free_port)
start_spliced "
[inbound legacy]
type = socks5
listen = 127.0.0.1:$PL
outbound = one
[inbound split]
type = socks5
listen = 127.0.0.1:$PS
outbound = both
[inbound v4only]
type = socks5
listen = 127.0.0.1:$P4
outbound = four
[outbound one]
type = direct
bind-address = 127.0.0.2
[outbound both]
type = direct
bind-address-v4 = 127.0.0.3
bind-address-v6 = ::1
[outbound four]
type = direct
bind-address-v4 = 127.0.0.4
" || { fail start "spliced did not start"; finish; }

peer() { curl -s --max-time 10 -x "socks5h://127.0.0.1:$1" "http://$2:$HP/"; }
expect_eq bind-address/ipv4 "$(peer "$PL" 127.0.0.1)" 127.0.0.2 "source seen"
curl -s -o /dev/null --max-time 10 -x "socks5h://127.0.0.1:$PL" "http://[::1]:$HP/"
e=$?
if [ "$e" -ne 0 ]; then pass bind-address/ipv6-refused; else fail bind-address/ipv6-refused "curl reached [::1] from an IPv4 source"; fi
expect_eq split/ipv4 "$(peer "$PS" 127.0.0.1)" 127.0.0.3 "source seen"
expect_eq split/ipv6 "$(peer "$PS" '[::1]')" ::1 "source seen"
expect_eq v4-only/ipv4 "$(peer "$P4" 127.0.0.1)" 127.0.0.4 "source seen"
expect_eq v4-only/ipv6-unbound "$(peer "$P4" '[::1]')" ::1 "source seen"
stop_spliced
expect_eq sigterm-exit "$?" 0 "exit status"

# One or the other, with file:line.
printf '[outbound o]\ntype = direct\nbind-address = 127.0.0.2\nbind-address-v4 = 127.0.0.3\n' >"$T_TMP/bad.ini"
o=$("$SPLICED_BIN" --check -c "$T_TMP/bad.ini" 2>&1)
expect_eq conflict/exit-2 "$?" 2 "exit status"
if grep -q "bad.ini:4: \[outbound o\] bind-address-v4: cannot be used with bind-address" <<<"$o"; then
	pass conflict/message
else
	fail conflict/message "$o"
fi
finish
