#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Compare one-core crypto throughput of the wolfSSL spliced links (bundled
# assembly build by default) with the distribution's, in the same run.
#
# Usage: bench/crypto/run.sh [BUILD_DIR] [-r ROUNDS] [-t SECONDS]
#   BUILD_DIR defaults to the release build (scripts/build release).
#   The two binaries alternate for ROUNDS rounds (default 3) on the same
#   pinned core and each figure is the best seen, so a burst of load from
#   elsewhere hits both builds alike and is mostly filtered out.
# Prints a markdown table (as in docs/benchmarks.md) and whether the issue-4 targets hold:
# AES-128-GCM >= 10x and ChaCha20-Poly1305 >= 3x the system build (16 KiB).
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
dir= rounds=3 secs=0.3
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then dir=$1; shift; fi
while getopts r:t: o; do
	case $o in
	r) rounds=$OPTARG ;;
	t) secs=$OPTARG ;;
	*) echo "usage: bench/crypto/run.sh [BUILD_DIR] [-r ROUNDS] [-t SECONDS]" >&2; exit 2 ;;
	esac
done
[ -n "$dir" ] || dir=$("$top/scripts/build" release)
fast=$dir/bench/crypto/bench_crypto
sys=$dir/bench/crypto/bench_crypto_system
for b in "$fast" "$sys"; do
	[ -x "$b" ] || { echo "bench/crypto: $b not built" >&2; exit 1; }
done
cpu=$(($(nproc) - 1))
a=$(mktemp) b=$(mktemp)
trap 'rm -f "$a" "$b"' EXIT
for _ in $(seq "$rounds"); do
	"$fast" -c "$cpu" -t "$secs" >>"$a"
	"$sys" -c "$cpu" -t "$secs" >>"$b"
done
head -n 2 "$a" | sed 's/^# /# linked: /'
head -n 2 "$b" | sed 's/^# /# system: /'
echo "# $rounds rounds alternating the two builds, best figure of each; load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| primitive | bytes | linked | system | ratio |"
echo "|---|---:|---:|---:|---:|"
# best per (primitive, bytes) over the rounds, in first-seen order
awk 'FNR == 1 { f++ }
     /^#/ || $1 == "primitive" { next }
     { k = $1 " " $2; if (!(k in seen)) { seen[k] = 1; order[++n] = k; unit[k] = $4 }
       if ($3 > best[f, k]) best[f, k] = $3 }
     END { for (i = 1; i <= n; i++) { k = order[i]; split(k, p, " ")
             r = best[2, k] > 0 ? best[1, k] / best[2, k] : 0
             printf "| %s | %s | %s %s | %s %s | %.1fx |\n", p[1], p[2], best[1, k], unit[k], best[2, k], unit[k], r
             if (k == "AES-128-GCM 16384") aes = r
             if (k == "ChaCha20-Poly1305 16384") chacha = r }
           printf "\ntarget AES-128-GCM >= 10x: %.1fx %s; ChaCha20-Poly1305 >= 3x: %.1fx %s\n",
             aes, (aes >= 10 ? "met" : "NOT met"), chacha, (chacha >= 3 ? "met" : "NOT met") }' "$a" "$b"
# The chart: every primitive measured in Gbit/s at 16 KiB, linked against system, by bench/chart.py.
mkdir -p "$top/bench/results"
chart=$top/bench/results/crypto-$(date +%Y-%m-%dT%H%M)
{
	echo "title: One core, 16 KiB messages: the wolfSSL spliced links against Debian's (best of $rounds rounds)"
	echo "unit: Gbit/s"
	echo "series: linked (assembly) | system"
	awk 'FNR == 1 { f++ }
	     /^#/ || $1 == "primitive" { next }
	     $2 == 16384 && $4 == "Gbit/s" { k = $1; if (!(k in seen)) { seen[k] = 1; order[++n] = k }
	       if ($3 > best[f, k]) best[f, k] = $3 }
	     END { for (i = 1; i <= n; i++) printf "%s | %s | %s\n", order[i], best[1, order[i]], best[2, order[i]] }' "$a" "$b"
} >"$chart.dat"
python3 "$top/bench/chart.py" "$chart.dat" -o "$chart.svg" && echo "# chart: $chart.svg"
