#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# SIGHUP and [wireguard NAME]: the interface is brought in line like `wg syncconf`. A peer the
# file drops is removed, a new one added, the one that stays keeps its session (no new
# handshake: the same latest handshake, the same handshake count in /metrics) and takes its new
# AllowedIPs with their route, while a transfer over the tunnel runs on (sha256 both ends). An
# Address change is refused as needing a restart; an interface added by a reload comes up and
# one removed goes away. promtool accepts the per-peer metrics.
. "$(dirname "$0")/../lib.sh"
need ip wg python3 curl
need_spliced
need_root reload-wireguard || finish
. "$T_TOP/tests/wg-lib.sh"

metric() { K="$2" awk '$1 == ENVIRON["K"] { print $2; f = 1 } END { if (!f) print "none" }' "$1"; }
hup() {
	local before
	before=$(grep -cE 'SIGHUP: configuration (reloaded|not reloaded)' "$log")
	kill -HUP "$SPID"
	for _ in $(seq 200); do
		[ "$(grep -cE 'SIGHUP: configuration (reloaded|not reloaded)' "$log")" -gt "$before" ] && break
		sleep 0.05
	done
	grep -E 'SIGHUP: configuration (reloaded|not reloaded)' "$log" | tail -n 1 | grep -q 'reloaded (reload'
}

wg_keypair KA
wg_keypair KB
wg_keypair KC
wg_keypair KD
NA="rwa$$"; NA=${NA:0:15}
NB="rwb$$"; NB=${NB:0:15}
N2="rw2$$"; N2=${N2:0:15}
PA=$((40000 + RANDOM % 4000))
aconf() { # aconf ADDRESS PEERS...
	printf '[Interface]\nPrivateKey = %s\nListenPort = %s\nAddress = %s\n' "$KA_PRIV" "$PA" "$1"
	shift
	printf '%s\n' "$@"
}
PEER_B="[Peer]
PublicKey = $KB_PUB
AllowedIPs = 10.76.0.2/32"
PEER_B2="[Peer]
PublicKey = $KB_PUB
AllowedIPs = 10.76.0.2/32, 10.76.9.0/24"
PEER_C="[Peer]
PublicKey = $KC_PUB
AllowedIPs = 10.76.0.3/32"
PEER_D="[Peer]
PublicKey = $KD_PUB
AllowedIPs = 10.76.0.4/32"
aconf 10.76.0.1/24 "$PEER_B" "$PEER_C" >"$T_TMP/a.conf"
cat >"$T_TMP/b.conf" <<C
[Interface]
PrivateKey = $KB_PRIV
ListenPort = $((PA + 1))
Address = 10.76.0.2/24

[Peer]
PublicKey = $KA_PUB
AllowedIPs = 10.76.0.0/24
Endpoint = 192.168.241.1:$PA
C
printf '[Interface]\nPrivateKey = %s\nAddress = 10.75.0.1/24\n' "$KC_PRIV" >"$T_TMP/two.conf"
MP=$(free_port)
ini() { # ini [EXTRA-SECTIONS]
	printf '[main]\nlog-level = info\n[inbound s]\ntype = socks5\nlisten = 127.0.0.1:%s\n' "$(cat "$T_TMP/sp")"
	printf '[stats]\nlisten = 127.0.0.1:%s\n[wireguard %s]\nconfig = %s\n%s' "$MP" "$NA" "$T_TMP/a.conf" "${1:-}"
}
free_port >"$T_TMP/sp"
ini >"$T_TMP/a.ini"

netns_new A || { fail setup/netns; finish; }
netns_new B || { fail setup/netns; finish; }
netns_veth "$A" 192.168.241.1/24 "$B" 192.168.241.2/24 || { fail setup/veth; finish; }
start_swg DB "$B" "$T_TMP/b.conf" "$NB" || { fail setup/peer-b; finish; }

use_asan_spliced
log=$T_TMP/spliced.log
T_LOGS+=("$log")
ip netns exec "$A" "$SPLICED_BIN" -c "$T_TMP/a.ini" 2>"$log" &
SPID=$!
on_cleanup_pid "$SPID"
on_cleanup_file "/var/run/wireguard/$NA.sock" "/var/run/wireguard/$N2.sock"
wg_wait_sock "$NA" 10 || { fail setup/spliced "$(tail -n 5 "$log")"; finish; }
check tunnel/ping ip netns exec "$B" ping -c 2 -i 0.2 -W 2 10.76.0.1
scrape() { ip netns exec "$A" curl -sS -o "$1" "http://127.0.0.1:$MP/metrics"; }
scrape "$T_TMP/m1"
hs1=$(ip netns exec "$A" wg show "$NA" latest-handshakes | awk -v k="$KB_PUB" '$1 == k { print $2 }')
n1=$(metric "$T_TMP/m1" "spliced_wireguard_peer_handshakes_total{interface=\"$NA\",peer=\"$KB_PUB\"}")
echo "# peer B: latest handshake $hs1, handshakes $n1"
if [ "$n1" -ge 1 ] 2>/dev/null; then pass metrics/peer-handshakes; else fail metrics/peer-handshakes "$n1"; fi
rx=$(metric "$T_TMP/m1" "spliced_wireguard_peer_rx_bytes_total{interface=\"$NA\",peer=\"$KB_PUB\"}")
if [ "$rx" -gt 0 ] 2>/dev/null; then pass metrics/peer-bytes; else fail metrics/peer-bytes "$rx"; fi
if command -v promtool >/dev/null; then
	if out=$(promtool check metrics <"$T_TMP/m1" 2>&1); then pass metrics/promtool; else fail metrics/promtool "$out"; fi
fi

# A transfer over the tunnel (B -> A, paced at 16 Mbit/s: ~5 s) across the reloads below.
head -c $((10 * 1024 * 1024)) /dev/urandom >"$T_TMP/blob"
wg_transfer across/tunnel-transfer "$B" "$A" 10.76.0.1 18091 "$T_TMP/blob" 16 60 &
XFER_JOB=$!
sleep 1

# 1. syncconf: C goes, D comes, B stays with a wider AllowedIPs.
aconf 10.76.0.1/24 "$PEER_B2" "$PEER_D" >"$T_TMP/a.conf"
if hup; then pass sync/applied; else fail sync/applied "$(tail -n 3 "$log")"; fi
grep -q "wireguard $NA: peers 1 added, 1 removed, 1 kept (no new handshake)" "$log" && pass sync/logged ||
	fail sync/logged "$(grep "wireguard $NA" "$log" | tail -n 2)"
peers=$(ip netns exec "$A" wg show "$NA" peers | sort | tr '\n' ' ')
expect_eq sync/peers "$peers" "$(printf '%s\n%s\n' "$KB_PUB" "$KD_PUB" | sort | tr '\n' ' ')"
aips=$(ip netns exec "$A" wg show "$NA" allowed-ips | awk -v k="$KB_PUB" '$1 == k { $1 = ""; print }')
expect_eq sync/allowed-ips-updated "$(echo $aips)" "10.76.0.2/32 10.76.9.0/24"
routes=$(ip -n "$A" route show dev "$NA" | awk '{ print $1 }' | sort | tr '\n' ' ')
if [[ $routes == *10.76.9.0/24* && $routes == *10.76.0.4* && $routes != *10.76.0.3* ]]; then pass sync/routes
else fail sync/routes "$routes"; fi
check sync/ping-still ip netns exec "$B" ping -c 2 -i 0.2 -W 2 10.76.0.1
hs2=$(ip netns exec "$A" wg show "$NA" latest-handshakes | awk -v k="$KB_PUB" '$1 == k { print $2 }')
scrape "$T_TMP/m2"
n2=$(metric "$T_TMP/m2" "spliced_wireguard_peer_handshakes_total{interface=\"$NA\",peer=\"$KB_PUB\"}")
expect_eq sync/no-new-handshake "$hs2/$n2" "$hs1/$n1" "latest handshake/handshakes of the kept peer"

# 2. Address is not something syncconf changes: a restart is needed, and nothing changes.
aconf 10.76.0.9/24 "$PEER_B2" "$PEER_D" >"$T_TMP/a.conf"
if hup; then fail restart/refused "applied"; else pass restart/refused; fi
grep -q "\[wireguard $NA\]: Address changed in $T_TMP/a.conf, which needs a restart" "$log" && pass restart/logged ||
	fail restart/logged "$(tail -n 3 "$log")"
aconf 10.76.0.1/24 "$PEER_B2" "$PEER_D" >"$T_TMP/a.conf"

# 3. An interface added by a reload comes up; removed by the next, it goes.
ini "[wireguard $N2]
config = $T_TMP/two.conf
" >"$T_TMP/a.ini"
if hup; then pass add/applied; else fail add/applied "$(tail -n 3 "$log")"; fi
if wg_wait_sock "$N2" 5 && ip -n "$A" addr show "$N2" | grep -q 10.75.0.1/24; then pass add/interface-up
else fail add/interface-up "$(ip -n "$A" link | grep "$N2")"; fi
ini >"$T_TMP/a.ini"
if hup; then pass remove/applied; else fail remove/applied "$(tail -n 3 "$log")"; fi
if ip -n "$A" link show "$N2" >/dev/null 2>&1; then fail remove/interface-gone; else pass remove/interface-gone; fi

wait $XFER_JOB
check after/ping ip netns exec "$B" ping -c 1 -W 2 10.76.0.1
kill -TERM "$SPID"
wait_pid "$SPID" 10
expect_eq stop/exit "$?" 0
if ip -n "$A" link show "$NA" >/dev/null 2>&1; then fail stop/interface-removed; else pass stop/interface-removed; fi
expect_clean_log stop/asan-clean "$log"
finish
