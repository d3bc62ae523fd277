#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# wg-bench topology: two network namespaces joined by a veth, a WireGuard interface in each,
# iperf3 -t SECS across (forward and -R), for spliced and Debian's wireguard-go in the same run.
# Reports Gbit/s, CPU% and CPU-seconds per GB of the two WireGuard processes, peak RSS, and
# draws the throughput chart (bench/results/wireguard-<date>.svg, from .dat by bench/chart.py).
#
# Usage: bench/wireguard/run.sh [SECS] [spliced-binary]   (root; wireguard-go, wg, iperf3)
#   WG_BENCH_ROUNDS=N   N rounds (default 1); each round measures every implementation in both
#                       directions, interleaved so that load from other work on the machine
#                       hits all of them alike; prints every run, then median [min-max]
#   WG_BENCH_IMPLS=...  which to run: "spliced wireguard-go" (default), or one of them
#   WG_BENCH_PERF=DIR   record `perf record -g` of both spliced processes during round 1
#                       (DIR/spliced-fwd.data, DIR/spliced-R.data)
#   WG_BENCH_ARGS=...   extra arguments for `spliced wg up` (e.g. "--workers 1")
#   WG_BENCH_BASE_BIN=  another spliced binary measured alongside as "spliced-base"
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
SECS=${1:-10}
SPLICED_BIN=${2:-${SPLICED_BIN:-$top/build/app/spliced}}
ROUNDS=${WG_BENCH_ROUNDS:-1}
IMPLS=${WG_BENCH_IMPLS:-spliced wireguard-go}
PERF_DIR=${WG_BENCH_PERF:-}
export SPLICED_TOP=$top T_NAME=bench/wireguard
. "$top/tests/lib.sh"
. "$top/tests/wg-lib.sh"
HZ=$(getconf CLK_TCK)
RESULTS=$T_TMP/results

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

# measure LABEL PID1 PID2 ADDR DIR [PERF_OUT]: one iperf3 run, one table row (also kept in RESULTS)
measure() {
	local label=$1 p1=$2 p2=$3 addr=$4 dir=$5 perf_out=${6:-} c0 c1 t0 t1 bps hwm perf_pid=
	if [ -n "$perf_out" ]; then
		perf record -q -g -o "$perf_out" -p "$p1,$p2" -- sleep "$SECS" >/dev/null 2>&1 &
		perf_pid=$!
	fi
	c0=$(($(cpu_ticks "$p1") + $(cpu_ticks "$p2")))
	t0=$(date +%s.%N)
	bps=$(iperf_run "$CLI" "$addr" ${dir#fwd})
	t1=$(date +%s.%N)
	c1=$(($(cpu_ticks "$p1") + $(cpu_ticks "$p2")))
	[ -n "$perf_pid" ] && wait "$perf_pid"
	hwm=$(($(hwm_kb "$p1") > $(hwm_kb "$p2") ? $(hwm_kb "$p1") : $(hwm_kb "$p2")))
	python3 - "$label" "$dir" "$bps" "$c0" "$c1" "$t0" "$t1" "$HZ" "$SECS" "$hwm" "$RESULTS" <<'PY'
import sys
label, d, bps, c0, c1, t0, t1, hz, secs, hwm, results = sys.argv[1:]
cpu_s = (int(c1) - int(c0)) / int(hz)
wall = float(t1) - float(t0)
gb = int(bps) * float(secs) / 8 / 1e9
row = (int(bps) / 1e9, 100 * cpu_s / wall, cpu_s / gb if gb else 0, int(hwm) / 1024)
print(f"| {label} | {d} | {row[0]:.2f} | {row[1]:.0f}% | {row[2]:.1f} | {row[3]:.1f} |", flush=True)
with open(results, "a") as f:
    f.write("\t".join([label, d] + [repr(x) for x in row]) + "\n")
PY
}

# summary: median [min-max] per implementation and direction, and spliced / wireguard-go
summary() {
	python3 - "$RESULTS" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    label, d, *vals = line.rstrip("\n").split("\t")
    rows.setdefault((label, d), []).append([float(v) for v in vals])
print("| implementation | direction | runs | Gbit/s median [min-max] | CPU% median | CPU-s/GB median [min-max] | peak RSS MiB |")
print("| --- | --- | --- | --- | --- | --- | --- |")
med = {}
for (label, d), rs in rows.items():
    col = lambda i: [r[i] for r in rs]
    m = statistics.median(col(0))
    med[(label.split()[0], d)] = m
    print(f"| {label} | {d} | {len(rs)} | {m:.2f} [{min(col(0)):.2f}-{max(col(0)):.2f}] | "
          f"{statistics.median(col(1)):.0f}% | {statistics.median(col(2)):.1f} "
          f"[{min(col(2)):.1f}-{max(col(2)):.1f}] | {max(col(3)):.1f} |")
for d in ("fwd", "-R"):
    s, g = med.get(("spliced", d)), med.get(("wireguard-go", d))
    b = med.get(("spliced-base", d))
    if s and g:
        print(f"# {d}: spliced / wireguard-go = {s / g:.2f}x (medians)")
    if s and b:
        print(f"# {d}: spliced / spliced-base = {s / b:.2f}x (medians)")
PY
}

has_impl() { [[ " $IMPLS " == *" $1 "* ]]; }

netns_new CLI || exit 1
netns_new SRV || exit 1
netns_veth "$CLI" 192.168.250.1/24 "$SRV" 192.168.250.2/24 || exit 1

echo "# wg-bench topology, iperf3 -t $SECS, single stream, $ROUNDS round(s); $(nproc) CPUs, kernel $(uname -r)"
echo "# command: WG_BENCH_ROUNDS=$ROUNDS bench/wireguard/run.sh $SECS; $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "# CPU% and CPU-s/GB: both WireGuard processes together (utime+stime from /proc/PID/stat);"
echo "# RSS: the larger VmHWM of the two. Load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# $("$SPLICED_BIN" wg speed 2>/dev/null)"
echo
echo "| implementation | direction | Gbit/s | CPU% | CPU-s/GB | peak RSS MiB |"
echo "| --- | --- | --- | --- | --- | --- |"
bare=$(iperf_run "$CLI" 192.168.250.2)
bareR=$(iperf_run "$CLI" 192.168.250.2 -R)
printf '| bare veth | fwd | %.2f | - | - | - |\n| bare veth | -R | %.2f | - | - | - |\n' \
	"$(python3 -c "print($bare/1e9)")" "$(python3 -c "print($bareR/1e9)")"

wg_keypair K1
wg_keypair K2
WGGO_UP=0
# spliced_pair VAR BIN NET PORT: a spliced device in each namespace (10.NET.0.1 and .2), VAR_UP=1
spliced_pair() {
	local var=$1 bin=$2 net=$3 port=$4 SPLICED_BIN=$2
	printf '[Interface]\nPrivateKey = %s\nListenPort = %s\nAddress = 10.%s.0.1/24\n[Peer]\nPublicKey = %s\nAllowedIPs = 10.%s.0.2/32\nEndpoint = 192.168.250.2:%s\n' \
		"$K1_PRIV" "$port" "$net" "$K2_PUB" "$net" $((port + 1)) >"$T_TMP/$var-c.conf"
	printf '[Interface]\nPrivateKey = %s\nListenPort = %s\nAddress = 10.%s.0.2/24\n[Peer]\nPublicKey = %s\nAllowedIPs = 10.%s.0.1/32\n' \
		"$K2_PRIV" $((port + 1)) "$net" "$K1_PUB" "$net" >"$T_TMP/$var-s.conf"
	# shellcheck disable=SC2086 # WG_BENCH_ARGS is a list of arguments
	if start_swg "${var}1" "$CLI" "$T_TMP/$var-c.conf" "${var,,}c$$" ${WG_BENCH_ARGS:-} &&
		start_swg "${var}2" "$SRV" "$T_TMP/$var-s.conf" "${var,,}s$$" ${WG_BENCH_ARGS:-}; then
		ip netns exec "$CLI" ping -c 2 -w 10 "10.$net.0.2" >/dev/null
		printf -v "${var}_UP" 1
	else
		echo "| $bin | - | failed to start | | | |"
	fi
}

SB_UP=0
# --- spliced ---
has_impl spliced && spliced_pair B "$SPLICED_BIN" 88 51801
# --- an older spliced binary to compare against (WG_BENCH_BASE_BIN) ---
[ -n "${WG_BENCH_BASE_BIN:-}" ] && spliced_pair SB "$WG_BENCH_BASE_BIN" 87 51821
SPL_UP=${B_UP:-0}

# --- wireguard-go ---
if has_impl wireguard-go; then
	G1="gwc$$"
	G2="gws$$"
	if start_wggo W1 "$CLI" "$G1" && start_wggo W2 "$SRV" "$G2"; then
		printf '%s\n' "$K1_PRIV" >"$T_TMP/k1"
		printf '%s\n' "$K2_PRIV" >"$T_TMP/k2"
		ip netns exec "$CLI" wg set "$G1" private-key "$T_TMP/k1" listen-port 51811 peer "$K2_PUB" allowed-ips 10.89.0.2/32 endpoint 192.168.250.2:51812
		ip netns exec "$SRV" wg set "$G2" private-key "$T_TMP/k2" listen-port 51812 peer "$K1_PUB" allowed-ips 10.89.0.1/32
		ip -n "$CLI" addr add 10.89.0.1/24 dev "$G1"
		ip -n "$SRV" addr add 10.89.0.2/24 dev "$G2"
		ip -n "$CLI" link set "$G1" mtu 1420 up
		ip -n "$SRV" link set "$G2" mtu 1420 up
		ip netns exec "$CLI" ping -c 2 -w 10 10.89.0.2 >/dev/null
		WGGO_UP=1
		WGGO_LABEL="wireguard-go $(dpkg-query -W -f '${Version}' wireguard-go 2>/dev/null)"
	else
		echo "| wireguard-go | - | failed to start | | | |"
	fi
fi

for round in $(seq "$ROUNDS"); do
	for dir in fwd -R; do
		perf_out=
		[ -n "$PERF_DIR" ] && [ "$round" = 1 ] && perf_out=$PERF_DIR/spliced-${dir#-}.data
		[ "$SPL_UP" = 1 ] && measure spliced "$B1_PID" "$B2_PID" 10.88.0.2 "$dir" "$perf_out"
		[ "$SB_UP" = 1 ] && measure spliced-base "$SB1_PID" "$SB2_PID" 10.87.0.2 "$dir"
		[ "$WGGO_UP" = 1 ] && measure "$WGGO_LABEL" "$W1_PID" "$W2_PID" 10.89.0.2 "$dir"
	done
done
[ "$SPL_UP" = 1 ] && { stop_spliced "$B1_PID" >/dev/null; stop_spliced "$B2_PID" >/dev/null; }
[ "$SB_UP" = 1 ] && { stop_spliced "$SB1_PID" >/dev/null; stop_spliced "$SB2_PID" >/dev/null; }
if [ "$ROUNDS" -gt 1 ]; then
	echo
	summary
fi
# The chart: medians per implementation and direction, drawn by bench/chart.py.
if [ -s "$RESULTS" ]; then
	mkdir -p "$top/bench/results"
	chart=$top/bench/results/wireguard-$(date +%Y-%m-%dT%H%M)
	python3 - "$RESULTS" "$ROUNDS" "$SECS" >"$chart.dat" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    label, d, *vals = line.rstrip("\n").split("\t")
    rows.setdefault(label, {}).setdefault(d, []).append(float(vals[0]))
print("title: WireGuard between two namespaces over veth: one iperf3 stream for %s s (median of %s rounds)"
      % (sys.argv[3], sys.argv[2]))
print("unit: Gbit/s")
print("series: forward | reverse (-R)")
for label, by in rows.items():
    cell = lambda d: "%.2f" % statistics.median(by[d]) if d in by else "-"
    print("%s | %s | %s" % (label, cell("fwd"), cell("-R")))
PY
	python3 "$top/bench/chart.py" "$chart.dat" -o "$chart.svg" && echo "# chart: $chart.svg"
fi
