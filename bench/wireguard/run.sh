#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# wg-bench topology: two network namespaces joined by a veth, a WireGuard interface in each,
# iperf3 -t SECS across (forward and -R), for spliced and Debian's wireguard-go in the same run.
# Reports Gbit/s, CPU% and CPU-seconds per GB of the two WireGuard processes, peak RSS.
# Usage: bench/wireguard/run.sh [SECS] [spliced-binary]   (root; wireguard-go, wg, iperf3)
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
SECS=${1:-10}
SPLICED_BIN=${2:-${SPLICED_BIN:-$top/build/relay/spliced}}
export SPLICED_TOP=$top T_NAME=bench/wireguard
. "$top/tests/lib.sh"
. "$top/tests/wg-lib.sh"
HZ=$(getconf CLK_TCK)

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
hwm_kb() { awk '/VmHWM/ {print $2}' "/proc/$1/status"; }

# iperf_run NS_CLIENT ADDR [-R]: prints bits/s received
iperf_run() {
	ip netns exec "$SRV" iperf3 -s -1 -p 5201 -B "$2" >/dev/null 2>&1 &
	local sp=$!
	wg_wait_listen "$SRV" 5201
	ip netns exec "$1" iperf3 -c "$2" -p 5201 -t "$SECS" ${3:-} -J 2>/dev/null |
		python3 -c 'import json,sys; print(int(json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"]))' 2>/dev/null || echo 0
	wait $sp 2>/dev/null
}

# measure LABEL PID1 PID2 ADDR: one forward and one reverse run, a table row each
measure() {
	local label=$1 p1=$2 p2=$3 addr=$4 dir c0 c1 t0 t1 bps cpu gb hwm
	for dir in "" -R; do
		c0=$(( $(cpu_ticks "$p1") + $(cpu_ticks "$p2") ))
		t0=$(date +%s.%N)
		bps=$(iperf_run "$CLI" "$addr" $dir)
		t1=$(date +%s.%N)
		c1=$(( $(cpu_ticks "$p1") + $(cpu_ticks "$p2") ))
		hwm=$(( $(hwm_kb "$p1") > $(hwm_kb "$p2") ? $(hwm_kb "$p1") : $(hwm_kb "$p2") ))
		python3 - "$label" "${dir:-fwd}" "$bps" "$c0" "$c1" "$t0" "$t1" "$HZ" "$SECS" "$hwm" <<'PY'
import sys
label, d, bps, c0, c1, t0, t1, hz, secs, hwm = sys.argv[1:]
cpu_s = (int(c1) - int(c0)) / int(hz)
wall = float(t1) - float(t0)
gb = int(bps) * float(secs) / 8 / 1e9
print(f"| {label} | {d} | {int(bps)/1e9:.2f} | {100*cpu_s/wall:.0f}% | {cpu_s/gb if gb else 0:.1f} | {int(hwm)/1024:.1f} |")
PY
	done
}

netns_new CLI || exit 1
netns_new SRV || exit 1
netns_veth "$CLI" 192.168.250.1/24 "$SRV" 192.168.250.2/24 || exit 1

echo "# wg-bench topology, iperf3 -t $SECS, single stream; $(nproc) CPUs, kernel $(uname -r)"
echo "# CPU% and CPU-s/GB: both WireGuard processes together (utime+stime from /proc/PID/stat);"
echo "# RSS: the larger VmHWM of the two."
echo "$("$SPLICED_BIN" wg speed 2>/dev/null)"
echo
echo "| implementation | direction | Gbit/s | CPU% | CPU-s/GB | peak RSS MiB |"
echo "| --- | --- | --- | --- | --- | --- |"
bare=$(iperf_run "$CLI" 192.168.250.2)
bareR=$(iperf_run "$CLI" 192.168.250.2 -R)
printf '| bare veth | fwd | %.2f | - | - | - |\n| bare veth | -R | %.2f | - | - | - |\n' \
	"$(python3 -c "print($bare/1e9)")" "$(python3 -c "print($bareR/1e9)")"

# --- spliced ---
wg_keypair K1
wg_keypair K2
printf '[Interface]\nPrivateKey = %s\nListenPort = 51801\nAddress = 10.88.0.1/24\n[Peer]\nPublicKey = %s\nAllowedIPs = 10.88.0.2/32\nEndpoint = 192.168.250.2:51802\n' \
	"$K1_PRIV" "$K2_PUB" >"$T_TMP/c.conf"
printf '[Interface]\nPrivateKey = %s\nListenPort = 51802\nAddress = 10.88.0.2/24\n[Peer]\nPublicKey = %s\nAllowedIPs = 10.88.0.1/32\n' \
	"$K2_PRIV" "$K1_PUB" >"$T_TMP/s.conf"
N1="bwc$$"; N2="bws$$"
if start_swg B1 "$CLI" "$T_TMP/c.conf" "$N1" && start_swg B2 "$SRV" "$T_TMP/s.conf" "$N2"; then
	ip netns exec "$CLI" ping -c 2 -w 10 10.88.0.2 >/dev/null
	measure spliced "$B1_PID" "$B2_PID" 10.88.0.2
	stop_spliced "$B1_PID" >/dev/null
	stop_spliced "$B2_PID" >/dev/null
else
	echo "| spliced | - | failed to start | | | |"
fi

# --- wireguard-go ---
G1="gwc$$"; G2="gws$$"
start_wggo W1 "$CLI" "$G1" && start_wggo W2 "$SRV" "$G2" || { echo "wireguard-go failed"; exit 1; }
printf '%s\n' "$K1_PRIV" >"$T_TMP/k1"
printf '%s\n' "$K2_PRIV" >"$T_TMP/k2"
ip netns exec "$CLI" wg set "$G1" private-key "$T_TMP/k1" listen-port 51811 peer "$K2_PUB" allowed-ips 10.89.0.2/32 endpoint 192.168.250.2:51812
ip netns exec "$SRV" wg set "$G2" private-key "$T_TMP/k2" listen-port 51812 peer "$K1_PUB" allowed-ips 10.89.0.1/32
ip -n "$CLI" addr add 10.89.0.1/24 dev "$G1"
ip -n "$SRV" addr add 10.89.0.2/24 dev "$G2"
ip -n "$CLI" link set "$G1" mtu 1420 up
ip -n "$SRV" link set "$G2" mtu 1420 up
ip netns exec "$CLI" ping -c 2 -w 10 10.89.0.2 >/dev/null
measure "wireguard-go $(dpkg-query -W -f '${Version}' wireguard-go 2>/dev/null)" "$W1_PID" "$W2_PID" 10.89.0.2
