#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Userspace WireGuard between two spliced devices in two namespaces: key helpers, config errors,
# handshake, ping v4/v6, byte-exact transfers, iperf3, wg show/set, AllowedIPs source filter,
# handshake flood, bad packets, rekey under a running stream (test-only clock), roaming.
. "$(dirname "$0")/../lib.sh"
need ip wg iperf3 python3 sha256sum
need_root wireguard || { finish; }
. "$T_TOP/tests/wg-lib.sh"

if ! "$SPLICED_BIN" wg --help >/dev/null 2>&1; then
	fail cli/wg-help "$SPLICED_BIN has no 'wg' command"
	finish
fi

# --- key helpers agree with wg(8) ---
priv=$("$SPLICED_BIN" wg genkey 2>/dev/null)
expect_eq keys/pubkey-matches-wg "$(printf '%s\n' "$priv" | "$SPLICED_BIN" wg pubkey)" "$(printf '%s\n' "$priv" | wg pubkey)"
wp=$(wg genkey)
expect_eq keys/pubkey-of-wg-key "$(printf '%s\n' "$wp" | "$SPLICED_BIN" wg pubkey)" "$(printf '%s\n' "$wp" | wg pubkey)"
psk=$("$SPLICED_BIN" wg genpsk 2>/dev/null)
expect_eq keys/genpsk-32-bytes "$(printf '%s' "$psk" | base64 -d 2>/dev/null | wc -c)" 32
if printf 'not-a-key\n' | "$SPLICED_BIN" wg pubkey >/dev/null 2>&1; then fail keys/pubkey-rejects-garbage; else pass keys/pubkey-rejects-garbage; fi

# --- malformed configs: file:line, the key named, non-zero exit ---
bad=$T_TMP/bad1.conf
printf '[Interface]\nPrivateKey = %s\nListenPort = 1\n\n[Peer]\nPublicKey = abcd\n' "$priv" >"$bad"
out=$("$SPLICED_BIN" wg up "$bad" --foreground 2>&1); rc=$?
if [ $rc -ne 0 ] && grep -q "bad1.conf:6: PublicKey" <<<"$out"; then pass config/bad-key-file-line; else fail config/bad-key-file-line "rc=$rc out=$out"; fi
printf '[Interface]\nPrivateKey = %s\nBogus = 1\n' "$priv" >"$bad"
out=$("$SPLICED_BIN" wg up "$bad" --foreground 2>&1); rc=$?
if [ $rc -ne 0 ] && grep -q "bad1.conf:3:.*Bogus" <<<"$out"; then pass config/unknown-key; else fail config/unknown-key "rc=$rc out=$out"; fi
printf '[Interface]\nPrivateKey = %sAA\n' "${priv%=}" >"$bad"
out=$("$SPLICED_BIN" wg up "$bad" --foreground 2>&1); rc=$?
if [ $rc -ne 0 ] && grep -q "bad1.conf:2: PrivateKey" <<<"$out"; then pass config/long-key; else fail config/long-key "rc=$rc out=$out"; fi
if SPLICED_WG_ALLOW_TEST_KNOBS= "$SPLICED_BIN" wg up "$bad" --unsafe-test-time-scale 10 >/dev/null 2>&1; then
	fail config/test-knob-guarded
else pass config/test-knob-guarded; fi

# --- topology: A <-veth-> B, a spliced WireGuard device in each ---
netns_new A || { fail setup/netns; finish; }
netns_new B || { fail setup/netns; finish; }
netns_veth "$A" 192.168.241.1/24 "$B" 192.168.241.2/24 || { fail setup/veth; finish; }
ip -n "$A" addr add fd41::1/64 dev "$(ip -n "$A" -o link show type veth | awk -F'[ :@]+' '{print $2}')" nodad
ip -n "$B" addr add fd41::2/64 dev "$(ip -n "$B" -o link show type veth | awk -F'[ :@]+' '{print $2}')" nodad
wg_keypair KA
wg_keypair KB
PSK=$(wg genpsk)
NA="swa$$"; NA=${NA:0:15}
NB="swb$$"; NB=${NB:0:15}
cat >"$T_TMP/a.conf" <<C
[Interface]
PrivateKey = $KA_PRIV
ListenPort = 51820
Address = 10.77.0.1/24, fd77::1/64

[Peer]
PublicKey = $KB_PUB
PresharedKey = $PSK
AllowedIPs = 10.77.0.2/32, fd77::2/128
C
cat >"$T_TMP/b.conf" <<C
[Interface]
PrivateKey = $KB_PRIV
ListenPort = 51821
Address = 10.77.0.2/24, fd77::2/64, 10.66.0.9/32

[Peer]
PublicKey = $KA_PUB
PresharedKey = $PSK
AllowedIPs = 10.77.0.0/24, fd77::1/128
Endpoint = 192.168.241.1:51820
PersistentKeepalive = 25
C
start_swg DA "$A" "$T_TMP/a.conf" "$NA" || { fail setup/spliced-a; finish; }
start_swg DB "$B" "$T_TMP/b.conf" "$NB" || { fail setup/spliced-b; finish; }

# netlink did the job of ip/wg-quick: address, MTU 1420, up, routes
mtu=$(ip -n "$A" -o link show "$NA" | sed -n 's/.* mtu \([0-9]*\).*/\1/p')
expect_eq device/mtu-default-1420 "$mtu" 1420
# (grep captured output: under pipefail, `cmd | grep -q` fails when grep exits before cmd wrote all)
addrs=$(ip -n "$A" -o addr show dev "$NA")
if grep -q "10.77.0.1/24" <<<"$addrs" && grep -q "fd77::1/64" <<<"$addrs"; then
	pass device/addresses; else fail device/addresses "$(ip -n "$A" -o addr show dev "$NA")"; fi
if grep -q "dev $NB" <<<"$(ip -n "$B" route show 10.77.0.0/24)"; then pass device/route-per-allowedip; else fail device/route-per-allowedip "$(ip -n "$B" route)"; fi

# handshake + ping, both families (B knows A's endpoint and keepalive starts the handshake)
check ping/v4 ip netns exec "$B" ping -c 3 -i 0.2 -W 2 10.77.0.1
check ping/v6 ip netns exec "$B" ping -6 -c 3 -i 0.2 -W 2 fd77::1
# A learned B's endpoint from the handshake (roaming) and can reach it
check ping/v4-reverse ip netns exec "$A" ping -c 2 -i 0.2 -W 2 10.77.0.2

# wg show through the UAPI socket
show=$(ip netns exec "$A" wg show "$NA" dump)
peerline=$(grep "^$KB_PUB" <<<"$show")
hs=$(cut -f5 <<<"$peerline"); rx=$(cut -f6 <<<"$peerline"); tx=$(cut -f7 <<<"$peerline")
now=$(date +%s)
if [ -n "$peerline" ] && [ "${hs:-0}" -gt $((now - 60)) ] && [ "${rx:-0}" -gt 0 ] && [ "${tx:-0}" -gt 0 ]; then
	pass uapi/wg-show-handshake-and-transfer
else fail uapi/wg-show-handshake-and-transfer "dump: $show"; fi
expect_eq uapi/wg-show-listen-port "$(ip netns exec "$A" wg show "$NA" listen-port)" 51820
if grep -q "192.168.241.2:51821" <<<"$(cut -f3 <<<"$peerline")"; then pass uapi/endpoint-learned; else fail uapi/endpoint-learned "$peerline"; fi
if [ "$(cut -f2 <<<"$peerline")" == "$PSK" ]; then pass uapi/psk-shown; else fail uapi/psk-shown; fi
ip netns exec "$A" wg set "$NA" peer "$KB_PUB" persistent-keepalive 7 allowed-ips 10.77.0.2/32,fd77::2/128,10.99.0.0/16
expect_eq uapi/wg-set-keepalive "$(ip netns exec "$A" wg show "$NA" persistent-keepalive | cut -f2)" 7
if grep -q "10.99.0.0/16" <<<"$(ip netns exec "$A" wg show "$NA" allowed-ips)"; then pass uapi/wg-set-allowed-ips; else fail uapi/wg-set-allowed-ips; fi
check uapi/wg-set-same-listen-port ip netns exec "$A" wg set "$NA" listen-port 51820

# listen-port rebinding: B moves to another port; its next authenticated packet tells A (roaming)
if ip netns exec "$B" wg set "$NB" listen-port 51831; then
	expect_eq uapi/wg-set-listen-port "$(ip netns exec "$B" wg show "$NB" listen-port)" 51831
	if grep -q . <<<"$(ip netns exec "$B" ss -Huan "( sport = :51821 )")"; then fail uapi/rebind-old-port-released "$(ip netns exec "$B" ss -Huan)"; else pass uapi/rebind-old-port-released; fi
	check uapi/rebind-ping-b-to-a ip netns exec "$B" ping -c 3 -i 0.2 -W 2 10.77.0.1
	check uapi/rebind-ping-a-to-b ip netns exec "$A" ping -c 2 -i 0.2 -W 2 10.77.0.2
	if grep -q "192.168.241.2:51831" <<<"$(ip netns exec "$A" wg show "$NA" endpoints)"; then pass uapi/rebind-endpoint-followed; else fail uapi/rebind-endpoint-followed "$(ip netns exec "$A" wg show "$NA" endpoints)"; fi
else
	fail uapi/wg-set-listen-port "wg set listen-port 51831 failed"
fi
# a port somebody else holds is refused and nothing changes
ip netns exec "$B" python3 -c 'import socket,time; s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM); s.bind(("0.0.0.0",51841)); open("'"$T_TMP"'/held","w").write("1"); time.sleep(20)' &
holder=$!
on_cleanup_pid "$holder"
wait_file "$T_TMP/held" 5
if ip netns exec "$B" wg set "$NB" listen-port 51841 2>/dev/null; then fail uapi/rebind-port-in-use-refused; else pass uapi/rebind-port-in-use-refused; fi
kill "$holder" 2>/dev/null
# back to the configured port, and A follows again
ip netns exec "$B" wg set "$NB" listen-port 51821
check uapi/rebind-back ip netns exec "$B" ping -c 2 -i 0.2 -W 2 10.77.0.1
expect_eq uapi/rebind-back-port "$(ip netns exec "$B" wg show "$NB" listen-port)" 51821

# byte-exact transfers both ways, over v4 and v6
head -c 32M /dev/urandom >"$T_TMP/blob"
wg_transfer xfer/b-to-a-v4 "$B" "$A" 10.77.0.1 5001 "$T_TMP/blob"
wg_transfer xfer/a-to-b-v4 "$A" "$B" 10.77.0.2 5002 "$T_TMP/blob"
wg_transfer xfer/b-to-a-v6 "$B" "$A" fd77::1 5003 "$T_TMP/blob"

# iperf3 across the tunnel
ip netns exec "$A" iperf3 -s -1 -p 5201 -B 10.77.0.1 >/dev/null 2>&1 &
on_cleanup_pid $!
wg_wait_listen "$A" 5201
if out=$(ip netns exec "$B" timeout 20 iperf3 -c 10.77.0.1 -p 5201 -t 3 -J 2>&1); then
	bps=$(python3 -c 'import json,sys; print(int(json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"]))' <<<"$out" 2>/dev/null)
	if [ "${bps:-0}" -gt 10000000 ]; then pass "iperf3/b-to-a ($((bps / 1000000)) Mbit/s)"; else fail iperf3/b-to-a "bps=$bps"; fi
else fail iperf3/b-to-a "$(tail -n 3 <<<"$out")"; fi

# a source address outside AllowedIPs is dropped by the receiver (B sends from 10.66.0.9)
before=$(wg_stat "$DA_PID" "$DA_LOG" src_not_allowed)
if ip netns exec "$B" ping -c 2 -i 0.2 -W 1 -I 10.66.0.9 10.77.0.1 >/dev/null 2>&1; then
	fail allowedips/foreign-source-dropped "ping from 10.66.0.9 got through"
else
	after=$(wg_stat "$DA_PID" "$DA_LOG" src_not_allowed)
	if [ "${after:-0}" -gt "${before:-0}" ]; then pass allowedips/foreign-source-dropped; else fail allowedips/foreign-source-dropped "counter $before -> $after"; fi
fi
# and A does not route to a destination no peer owns
if ip netns exec "$A" ping -c 1 -W 1 10.77.0.3 >/dev/null 2>&1; then fail allowedips/no-peer-no-route; else pass allowedips/no-peer-no-route; fi

# bad input: truncated, wrong type, unauthenticated data are dropped and counted, device lives on
bi=$(wg_stat "$DA_PID" "$DA_LOG" invalid_message)
ip netns exec "$B" python3 "$WG_PY" flood 192.168.241.1 51820 200 short
ip netns exec "$B" python3 "$WG_PY" flood 192.168.241.1 51820 200 type
ip netns exec "$B" python3 "$WG_PY" flood 192.168.241.1 51820 200 long
ai=$(wg_stat "$DA_PID" "$DA_LOG" invalid_message)
ui=$(wg_stat "$DA_PID" "$DA_LOG" unknown_index)
ip netns exec "$B" python3 "$WG_PY" flood 192.168.241.1 51820 200 data
ui2=$(wg_stat "$DA_PID" "$DA_LOG" unknown_index)
if [ "$((ai - bi))" -ge 500 ] && [ "$((ui2 - ui))" -ge 150 ]; then pass badinput/dropped-and-counted; else
	fail badinput/dropped-and-counted "invalid_message +$((ai - bi)), unknown_index +$((ui2 - ui))"; fi
check badinput/still-works ip netns exec "$B" ping -c 2 -i 0.2 -W 2 10.77.0.1

# a bounded flood of bogus initiations does not stop a transfer
bm=$(wg_stat "$DA_PID" "$DA_LOG" bad_mac1)
ip netns exec "$B" python3 "$WG_PY" flood 192.168.241.1 51820 30000 init &
fpid=$!
on_cleanup_pid $fpid
wg_transfer flood/transfer-during-flood "$B" "$A" 10.77.0.1 5004 "$T_TMP/blob"
wait_pid $fpid 60 >/dev/null
am=$(wg_stat "$DA_PID" "$DA_LOG" bad_mac1)
if [ "$((am - bm))" -ge 1000 ]; then pass "flood/bogus-initiations-counted (+$((am - bm)))"; else fail flood/bogus-initiations-counted "bad_mac1 $bm -> $am"; fi

# roaming: B moves to a new outer address; A follows the authenticated source
vb=$(ip -n "$B" -o link show type veth | awk -F'[ :@]+' '{print $2}')
# promote_secondaries: deleting the first address must not take the new one with it
ip netns exec "$B" sysctl -qw "net.ipv4.conf.$vb.promote_secondaries=1"
ip -n "$B" addr add 192.168.241.77/24 dev "$vb"
ip -n "$B" addr del 192.168.241.2/24 dev "$vb"
ip netns exec "$B" ping -c 3 -i 0.3 -W 2 10.77.0.1 >/dev/null 2>&1
if grep -q "192.168.241.77:51821" <<<"$(ip netns exec "$A" wg show "$NA" endpoints)"; then pass roaming/endpoint-follows; else
	fail roaming/endpoint-follows "$(ip netns exec "$A" wg show "$NA" endpoints)"; fi
check roaming/a-reaches-b ip netns exec "$A" ping -c 2 -i 0.2 -W 2 10.77.0.2

# spliced wg down removes the interface and the process exits
ip netns exec "$B" "$SPLICED_BIN" wg down "$NB"
if wait_pid "$DB_PID" 5 >/dev/null && ! ip -n "$B" link show "$NB" >/dev/null 2>&1; then pass device/down; else fail device/down; fi

# --- rekey under a running stream: both clocks 40x faster, REKEY_AFTER_TIME = 3 s ---
stop_spliced "$DA_PID" >/dev/null
sed -i 's/^ListenPort = 51821/ListenPort = 51822/; s/^Endpoint = .*/Endpoint = 192.168.241.1:51830/' "$T_TMP/b.conf"
sed -i 's/^ListenPort = 51820/ListenPort = 51830/' "$T_TMP/a.conf"
export SPLICED_WG_ALLOW_TEST_KNOBS=1
start_swg RA "$A" "$T_TMP/a.conf" "$NA" --unsafe-test-time-scale 40 || { fail rekey/setup; finish; }
start_swg RB "$B" "$T_TMP/b.conf" "$NB" --unsafe-test-time-scale 40 || { fail rekey/setup; finish; }
unset SPLICED_WG_ALLOW_TEST_KNOBS
ip netns exec "$B" ping -c 1 -W 2 10.77.0.1 >/dev/null 2>&1
h0=$(wg_stat "$RA_PID" "$RA_LOG" rx_handshakes)
head -c 24M /dev/urandom >"$T_TMP/blob2"
# ~12 s at 16 Mbit/s: four or more REKEY_AFTER_TIME periods and REJECT_AFTER_TIME (4.5 s) passes
wg_transfer rekey/stream-survives-rekeys "$B" "$A" 10.77.0.1 5005 "$T_TMP/blob2" 16 60
h1=$(wg_stat "$RA_PID" "$RA_LOG" rx_handshakes)
if [ "$((h1 - h0))" -ge 2 ]; then pass "rekey/handshakes-happened (+$((h1 - h0)))"; else fail rekey/handshakes-happened "rx_handshakes $h0 -> $h1"; fi

finish
