#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Debian's v2ray as a UDP ASSOCIATE client of spliced: a dokodemo-door UDP inbound whose
# socks outbound is spliced (udp = on), in front of a UDP echo server on 127.0.0.2. v2ray
# puts the destination, not its own address, in the UDP ASSOCIATE request; spliced must then
# learn the client's port from its first datagram. Datagrams of 1, 512, 1400 and 2000 bytes
# come back byte-exact (v2ray itself cuts datagrams at 2038 bytes, before they reach us).
. "$(dirname "$0")/../lib.sh"
need_spliced
need python3 v2ray

EP=$(free_port) PS=$(free_port) DP=$(free_port)
udp_echo "" 127.0.0.2 "$EP" || { fail setup/echo "the echo server did not start"; finish; }

start_spliced "
[inbound s]
type = socks5
listen = 127.0.0.1:$PS
udp = on
" || { fail start "spliced did not start"; finish; }

cat >"$T_TMP/v2ray.json" <<C
{
  "log": {"loglevel": "warning"},
  "inbounds": [{"listen": "127.0.0.1", "port": $DP, "protocol": "dokodemo-door",
                "settings": {"address": "127.0.0.2", "port": $EP, "network": "udp"}}],
  "outbounds": [{"protocol": "socks",
                 "settings": {"servers": [{"address": "127.0.0.1", "port": $PS}]}}]
}
C
v2ray -config "$T_TMP/v2ray.json" >"$T_TMP/v2ray.log" 2>&1 &
V2=$!
on_cleanup_pid $V2
T_LOGS+=("$T_TMP/v2ray.log")
for _ in $(seq 100); do [ -n "$(ss -Huln "( sport = :$DP )")" ] && break; sleep 0.1; done

o=$(timeout 30 python3 "$T_TOP/tests/tools/udpping.py" 127.0.0.1 "$DP" 1 512 1400 2000 2>&1)
for n in 1 512 1400 2000; do
	if grep -qx "echo $n ok" <<<"$o"; then pass "v2ray/echo-$n"; else fail "v2ray/echo-$n" "$(tr '\n' '|' <<<"$o")"; fi
done
kill "$V2" 2>/dev/null
stop_spliced
expect_eq sigterm-exit "$?" 0 "exit status"
stats=$(grep -o 'stats: relay: .*' "$SPLICED_LOG" | tail -n 1)
for want in "udp_assocs=[1-9]" "udp_up=4 " "udp_down=4 " "udp_foreign=0 "; do
	if grep -qE "$want" <<<"$stats "; then pass "through-spliced/${want%% }"; else fail "through-spliced/${want%% }" "$stats"; fi
done
finish
