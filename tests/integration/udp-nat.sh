#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# udp-advertise behind a NAT: namespace S runs spliced on an internal address (10.66.0.1) that
# the client in namespace C cannot reach; an nft DNAT rule in S forwards the public address
# 10.77.0.1 (TCP port and the udp-ports range) to it. With udp-advertise = 10.77.0.1 the
# UDP ASSOCIATE reply names an address the client can reach and datagrams flow; without it
# the reply names 10.66.0.1 and none arrive.
. "$(dirname "$0")/../lib.sh"
need_spliced
need python3 ip nft
need_root udp-nat || { finish; }
UA=$T_TOP/tests/tools/udpassoc.py

netns_new C || { fail setup/netns; finish; }
netns_new S || { fail setup/netns; finish; }
netns_veth "$C" 10.77.0.2/24 "$S" 10.77.0.1/24 || { fail setup/veth; finish; }
ip -n "$S" addr add 10.66.0.1/32 dev lo || { fail setup/addr; finish; }

PA=10800 PB=10801 EP=10990
ip netns exec "$S" nft -f - <<NFT || { fail setup/nft "nft refused the rules"; finish; }
table ip nat {
	chain prerouting {
		type nat hook prerouting priority dstnat;
		ip daddr 10.77.0.1 tcp dport { $PA, $PB } dnat to 10.66.0.1
		ip daddr 10.77.0.1 udp dport 40000-40019 dnat to 10.66.0.1
	}
}
NFT
udp_echo "$S" 10.66.0.1 "$EP" || { fail setup/echo "the echo server did not start"; finish; }

SPLICED_NETNS=$S
start_spliced "
[inbound advertised]
type = socks5
listen = 10.66.0.1:$PA
udp = on
udp-ports = 40000-40009
udp-advertise = 10.77.0.1

[inbound plain]
type = socks5
listen = 10.66.0.1:$PB
udp = on
udp-ports = 40010-40019
" || { fail start "spliced did not start"; finish; }

o=$(ip netns exec "$C" timeout 30 python3 "$UA" 10.77.0.1 "$PA" echo 10.66.0.1 "$EP" 1400 2>&1)
case "$o" in
*"assoc 10.77.0.1 4000"[0-9]*"echo 1400 ok 10.66.0.1:$EP"*) pass advertise/through-dnat ;;
*) fail advertise/through-dnat "$(tr '\n' '|' <<<"$o")" ;;
esac
o=$(ip netns exec "$C" timeout 30 python3 "$UA" 10.77.0.1 "$PB" echo 10.66.0.1 "$EP" 1400 2>&1)
case "$o" in
*"assoc 10.66.0.1 4001"[0-9]*"echo 1400 lost"*) pass no-advertise/internal-address-unreachable ;;
*) fail no-advertise/internal-address-unreachable "$(tr '\n' '|' <<<"$o")" ;;
esac
stop_spliced
expect_eq sigterm-exit "$?" 0 "exit status"
finish
