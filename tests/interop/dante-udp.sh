#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Debian's dante-client (socksify, its LD_PRELOAD SOCKS library) as a UDP ASSOCIATE client of
# spliced: a plain sendto/recvfrom program in namespace A, spliced in A with udp = on, a UDP
# echo server in namespace B on 10.88.0.1 (a network A reaches through a route, so socksify
# does not send it direct). Datagrams of 1, 512, 1400 and 60,000 bytes come back byte-exact,
# and spliced counts one association each.
. "$(dirname "$0")/../lib.sh"
need_spliced
need python3 socksify ip
need_root dante-udp || { finish; }

netns_new A || { fail setup/netns; finish; }
netns_new B || { fail setup/netns; finish; }
netns_veth "$A" 10.99.0.1/24 "$B" 10.99.0.2/24 || { fail setup/veth; finish; }
ip -n "$B" addr add 10.88.0.1/32 dev lo && ip -n "$A" route add 10.88.0.0/24 via 10.99.0.2 ||
	{ fail setup/route; finish; }

EP=10991 PS=10977
udp_echo "$B" 10.88.0.1 "$EP" || { fail setup/echo "the echo server did not start"; finish; }

SPLICED_NETNS=$A
start_spliced "
[inbound s]
type = socks5
listen = 127.0.0.1:$PS
udp = on
" || { fail start "spliced did not start"; finish; }

cat >"$T_TMP/socks.conf" <<C
route {
	from: 0.0.0.0/0 to: 0.0.0.0/0 via: 127.0.0.1 port = $PS
	proxyprotocol: socks_v5
	protocol: tcp udp
	method: none
}
C
# The client (tests/tools/udpping.py): one datagram of SIZE random bytes a run, the echo
# compared byte for byte, one association each.
for n in 1 512 1400 60000; do
	o=$(SOCKS_CONF=$T_TMP/socks.conf ip netns exec "$A" timeout 20 socksify python3 "$T_TOP/tests/tools/udpping.py" 10.88.0.1 "$EP" "$n" 2>"$T_TMP/socksify.err")
	expect_eq "socksify/echo-$n" "$o" "echo $n ok" "client says"
done
stop_spliced
expect_eq sigterm-exit "$?" 0 "exit status"
# Through spliced, not around it: four associations, four datagrams each way.
expect_counters through-spliced "$SPLICED_LOG" udp_assocs=4 udp_up=4 udp_down=4
finish
