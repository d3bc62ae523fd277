#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Per-user routing, accounting and limits. Users log in on a socks5 inbound (inline users)
# and an http inbound (a users file): `rule = user NAME... -> OUTBOUND` sends each to its own
# outbound, told apart by the source address the target sees (bind-address); a user rule
# sits in file order among the others. [user bob] max-connections = 2 refuses bob's third
# connection at once (REP 02 / 403) and takes it again once one closes; [main]
# max-connections-per-user caps everyone else. At exit (and on SIGUSR1) one line per user
# gives connections, refusals and bytes each way, checked exactly against a 1 MiB echo and a
# UDP association's datagrams.
. "$(dirname "$0")/../lib.sh"
need_spliced
need curl python3
use_asan_spliced
UA=$T_TOP/tests/tools/udpassoc.py

HP=$(free_port)
python3 "$T_TOP/tests/tools/httpwho.py" 127.0.0.1 "$HP" 2>"$T_TMP/peer.err" &
on_cleanup_pid $!
wait_port 127.0.0.1 "$HP" 10 || { fail setup/server "$(cat "$T_TMP/peer.err")"; finish; }
xfer_server E -- 127.0.0.1 0 --echo || { fail setup/echo; finish; }
EP=$(free_port)
udp_echo "" 127.0.0.1 "$EP" || { fail setup/udp-echo; finish; }

printf 'alice pw-a\nbob pw-b\ncarol pw-c\n' >"$T_TMP/users"
chmod 600 "$T_TMP/users"
PS=$(free_port) PH=$(free_port)
start_spliced "
[main]
max-connections-per-user = 3
[inbound s]
type = socks5
listen = 127.0.0.1:$PS
user = alice:pw-a
user = bob:pw-b
user = carol:pw-c
user = dave:pw-d
user = erin:pw-e
udp = on
[inbound h]
type = http
listen = 127.0.0.1:$PH
users = $T_TMP/users
[user bob]
max-connections = 2
[outbound via2]
type = direct
bind-address = 127.0.0.2
[outbound via3]
type = direct
bind-address = 127.0.0.3
[route]
rule = port $((HP + 1)) -> block
rule = user alice bob -> via2
rule = user carol -> via3
rule = user dave -> block
" || { fail start "spliced did not start"; finish; }

seen() { curl -s --max-time 10 "$@" "http://127.0.0.1:$HP/"; }
expect_eq route/socks5/alice "$(seen -x "socks5h://alice:pw-a@127.0.0.1:$PS")" 127.0.0.2 "source seen"
expect_eq route/socks5/bob "$(seen -x "socks5h://bob:pw-b@127.0.0.1:$PS")" 127.0.0.2 "source seen"
expect_eq route/socks5/carol "$(seen -x "socks5h://carol:pw-c@127.0.0.1:$PS")" 127.0.0.3 "source seen"
expect_eq route/socks5/erin-default "$(seen -x "socks5h://erin:pw-e@127.0.0.1:$PS")" 127.0.0.1 "source seen"
expect_eq route/http/alice "$(seen -p -x "http://alice:pw-a@127.0.0.1:$PH")" 127.0.0.2 "source seen"
expect_eq route/http/carol "$(seen -p -x "http://carol:pw-c@127.0.0.1:$PH")" 127.0.0.3 "source seen"
"$XFER" connect --socks5 127.0.0.1:"$PS" --user dave --pass pw-d 127.0.0.1 "$HP" </dev/null >/dev/null 2>&1
expect_eq route/socks5/dave-blocked-rep-02 "$?" 12 "xfer exit (10 + REP)"

# bob may hold two connections; the third is refused, and taken again once one ends.
HOLDS=()
hold() { # USER PASS: a connection through the socks5 inbound to the echo server, held open
	local f=$T_TMP/hold.$((${#HOLDS[@]} + T_SPLICED_SEQ * 100 + RANDOM)) fd
	mkfifo "$f"
	"$XFER" connect --socks5 127.0.0.1:"$PS" --user "$1" --pass "$2" 127.0.0.1 "$E_PORT" <"$f" >/dev/null 2>&1 &
	on_cleanup_pid $!
	exec {fd}>"$f" # its stdin stays open until release_holds
	HOLDS+=("$fd")
}
release_holds() { # EOF on each hold's stdin: xfer half-closes, the echo server closes, it exits
	local fd
	for fd in "${HOLDS[@]}"; do exec {fd}>&-; done
	HOLDS=()
	for _ in $(seq 100); do [ "$(relayed_to_echo)" -eq 0 ] && return 0; sleep 0.05; done
	return 1
}
relayed_to_echo() { ss -Htn state established "( dport = :$E_PORT )" | wc -l; }
wait_relayed() { # N
	for _ in $(seq 100); do [ "$(relayed_to_echo)" -ge "$1" ] && return 0; sleep 0.05; done
	return 1
}
hold bob pw-b
hold bob pw-b
wait_relayed 2 || fail limit/setup "bob's two connections did not come up"
echo x | "$XFER" connect --socks5 127.0.0.1:"$PS" --user bob --pass pw-b 127.0.0.1 "$E_PORT" >/dev/null 2>&1
expect_eq limit/bob-third-rep-02 "$?" 12 "xfer exit (10 + REP)"
code=$(curl -s -o /dev/null -w '%{http_connect}' --max-time 10 -p -x "http://bob:pw-b@127.0.0.1:$PH" "http://127.0.0.1:$HP/")
expect_eq limit/bob-third-over-http-403 "$code" 403 "HTTP status"
expect_eq limit/others-unaffected "$(seen -x "socks5h://alice:pw-a@127.0.0.1:$PS")" 127.0.0.2 "source seen"
release_holds || fail limit/setup "bob's connections did not end"
expect_eq limit/bob-again-after-close "$(seen -x "socks5h://bob:pw-b@127.0.0.1:$PS")" 127.0.0.2 "source seen"
# [main] max-connections-per-user = 3 applies to carol (no [user carol] section)
hold carol pw-c
hold carol pw-c
hold carol pw-c
wait_relayed 3 || fail limit/setup "carol's three connections did not come up"
echo x | "$XFER" connect --socks5 127.0.0.1:"$PS" --user carol --pass pw-c 127.0.0.1 "$E_PORT" >/dev/null 2>&1
expect_eq limit/main-default-carol-fourth-rep-02 "$?" 12 "xfer exit (10 + REP)"
release_holds || fail limit/setup "carol's connections did not end"

# Exact bytes: erin moves 1 MiB each way over TCP, and one 1400-byte UDP datagram each way.
head -c $((1 << 20)) /dev/urandom >"$T_TMP/mib"
got=$("$XFER" connect --socks5 127.0.0.1:"$PS" --user erin --pass pw-e 127.0.0.1 "$E_PORT" <"$T_TMP/mib" | sha256sum | cut -d' ' -f1)
expect_eq accounting/erin-echo "$got" "$(sha "$T_TMP/mib")" "sha256"
o=$(timeout 20 python3 "$UA" 127.0.0.1 "$PS" echo 127.0.0.1 "$EP" 1400 close --user erin --pass pw-e 2>&1)
case "$o" in *"echo 1400 ok"*) pass accounting/erin-udp ;; *) fail accounting/erin-udp "$o" ;; esac
sleep 0.5 # the association ends when its TCP connection does

kill -USR1 "$SPLICED_PID"
for _ in $(seq 50); do grep -q 'stats: user erin:' "$SPLICED_LOG" && break; sleep 0.1; done
if grep -q 'stats: user bob: conns=4 active=0 refused_limit=2 ' "$SPLICED_LOG"; then pass sigusr1/bob-line; else fail sigusr1/bob-line "$(grep 'stats: user' "$SPLICED_LOG")"; fi
stop_spliced
expect_eq sigterm-exit "$?" 0 "exit status"
expect_clean_log clean-log
# erin: curl once (tiny), the 1 MiB echo, the association: bytes are the curl's plus 1 MiB + 1400.
line=$(grep 'stats: user erin:' "$SPLICED_LOG" | tail -n 1)
read -r up down < <(sed -E 's/.*bytes_up=([0-9]+) bytes_down=([0-9]+).*/\1 \2/' <<<"$line")
curl_up=$((up - 1048576 - 1400)) curl_down=$((down - 1048576 - 1400))
if [[ $line == *"conns=3 active=0 refused_limit=0 "* ]] && [ "$curl_up" -gt 40 ] && [ "$curl_up" -lt 200 ] &&
	[ "$curl_down" -gt 40 ] && [ "$curl_down" -lt 300 ]; then
	pass accounting/erin-bytes
else
	fail accounting/erin-bytes "$line (curl's share: $curl_up up, $curl_down down)"
fi
if grep -q 'stats: user carol: conns=5 active=0 refused_limit=1 ' "$SPLICED_LOG"; then pass accounting/carol; else fail accounting/carol "$(grep 'stats: user carol' "$SPLICED_LOG")"; fi
if grep -q 'stats: user dave: conns=1 active=0 refused_limit=0 bytes_up=0 bytes_down=0' "$SPLICED_LOG"; then pass accounting/dave-blocked; else fail accounting/dave-blocked "$(grep 'stats: user dave' "$SPLICED_LOG")"; fi
expect_counters counters "$SPLICED_LOG" refused_user=3
finish
