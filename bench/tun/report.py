#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench/tun/report.py RESULTS.jsonl [DAT]: the Markdown report of a bench/tun/run.

With DAT, also the chart's data for bench/chart.py (1-stream throughput medians per tunnel
of the first phase, and of every phase's spliced and hev rows).

Medians over the rounds with the range (min-max). Tunnel CPU is the tunnel process tree's
own (utime + stime); machine CPU is /proc/stat's busy time over the run (iperf3 at both
ends, the SOCKS5 server, softirq: everything), both per GB iperf3 moved. Then the issue's
targets, each with its figures.
"""
import json
import statistics as st
import sys

rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
meta = next((r for r in rows if r.get("kind") == "meta"), {})
runs = [r for r in rows if r.get("kind") == "tput"]
rss = [r for r in rows if r.get("kind") == "rss"]
tunnels = meta.get("tunnels", "").split()
phases = meta.get("phases", "").split()
modes = [(1, "up"), (1, "down"), (4, "up"), (4, "down")]
NAMES = {"none": "no tunnel (ceiling)", "spliced": "spliced tun", "redsocks": "redsocks",
         "hev": "hev-socks5-tunnel", "spliced-b": "spliced tun (SPLICED_B)"}
ARROW = {"up": "↑", "down": "↓"}


def pick(ph, t, s=None, d=None):
    return [r for r in runs if r["phase"] == ph and r["tunnel"] == t and
            (s is None or r["streams"] == s) and (d is None or r["dir"] == d)]


def gb(r):
    return r["bytes"] / 1e9


def tun_cpu_gb(r):
    return (r["ticks"] / r["hz"]) / gb(r) if r["bytes"] else float("inf")


def tun_cpu_pct(r):
    return 100.0 * (r["ticks"] / r["hz"]) / r["secs"]


def mach_cpu_gb(r):
    return (r["machine_ticks"] / r["hz"]) / gb(r) if r["bytes"] else float("inf")


def med(xs):
    return st.median(xs) if xs else None


def cell(xs, fmt="%.2f"):
    if not xs:
        return "-"
    m = st.median(xs)
    return (fmt % m) + (" (%s–%s)" % (fmt % min(xs), fmt % max(xs)) if len(xs) > 1 else "")


def mode_name(s, d):
    return "%d stream%s %s" % (s, "" if s == 1 else "s", ARROW[d])


print("# bench/tun: %s" % meta.get("date", "?"))
print()
print("Machine: %s. Guest and host namespaces over veth (MTU 1500); the TUN's MTU by phase; "
      "iperf3 -t %s, %s rounds, the tunnels' order rotated every round. Medians (min–max)."
      % (meta.get("machine", "?"), meta.get("duration"), meta.get("rounds")))
bad = [r for r in runs if r.get("path") != "ok"]
print()
print("Path check: %d of %d runs took the intended path%s." % (
    len(runs) - len(bad), len(runs),
    "" if not bad else " (NOT: " + ", ".join("%s %s %s" % (r["phase"], r["tunnel"], r["path"])
                                           for r in bad[:5]) + ")"))

for ph in phases:
    mtu, server = ph.split(":")
    print()
    print("## TUN MTU %s, SOCKS5 server: %s" % (mtu, "hev-socks5-server" if server == "hev"
                                                  else "spliced"))
    print()
    print("| | " + " | ".join(mode_name(s, d) for s, d in modes) + " |")
    print("|---|" + "---|" * len(modes))
    for t in tunnels:
        print("| %s, Gbit/s | %s |" % (NAMES.get(t, t), " | ".join(
            cell([r["gbps"] for r in pick(ph, t, s, d)]) for s, d in modes)))
    for t in tunnels:
        if t == "none":
            continue
        print("| %s, tunnel CPU %% / CPU-s/GB | %s |" % (NAMES.get(t, t), " | ".join(
            "%s / %s" % (cell([tun_cpu_pct(r) for r in pick(ph, t, s, d)], "%.0f"),
                         cell([tun_cpu_gb(r) for r in pick(ph, t, s, d)]))
            for s, d in modes)))
    for t in tunnels:
        print("| %s, machine CPU-s/GB | %s |" % (NAMES.get(t, t), " | ".join(
            cell([mach_cpu_gb(r) for r in pick(ph, t, s, d)]) for s, d in modes)))
    line = []
    for t in tunnels:
        rs = [r for r in rss if r["phase"] == ph and r["tunnel"] == t]
        if rs:
            line.append("%s %.1f MiB" % (NAMES.get(t, t), rs[0]["kib"] / 1024))
    if line:
        print()
        print("Peak RSS over the phase: " + ", ".join(line) + ".")
    sp = pick(ph, "spliced")
    if sp:
        dr = sum(r["data_reads"] for r in sp)
        drb = sum(r["data_read_bytes"] for r in sp)
        rd = sum(r["reads"] for r in sp)
        rdb = sum(r["read_bytes"] for r in sp)
        print()
        print("spliced's TUN reads: %d bytes per read of bulk data (%d reads), %d per read "
              "of any packet, ACKs included (%d reads); the TUN's ring dropped %d packets "
              "(tx_dropped)."
              % (drb // dr if dr else 0, dr, rdb // rd if rd else 0, rd,
                 sum(r.get("tx_dropped", 0) for r in sp)))
    hv = pick(ph, "hev")
    if hv:
        print("hev-socks5-tunnel's TUN ring dropped %d packets (tx_dropped)."
              % sum(r.get("tx_dropped", 0) for r in hv))


def ratio(ph, a, b, s, d, f=lambda r: r["gbps"]):
    x, y = pick(ph, a, s, d), pick(ph, b, s, d)
    if not x or not y:
        return None
    return st.median([f(r) for r in x]) / st.median([f(r) for r in y])


def verdict(ok):
    return "met" if ok else "NOT met"


print()
print("## Targets (issue 12)")
print()
main = next((p for p in phases if p.startswith("8500:hev")), phases[0] if phases else None)
if main:
    mtu, server = main.split(":")
    print("Phase TUN MTU %s, server %s, unless said otherwise." % (mtu, server))
    print()
    for d, want in (("up", 1.5), ("down", 1.8)):
        q = ratio(main, "spliced", "hev", 1, d)
        if q is not None:
            print("- 1 stream %s: spliced / hev-socks5-tunnel **%.2fx** (target >= %.1f: %s)"
                  % (ARROW[d], q, want, verdict(q >= want)))
    for d in ("up", "down"):
        q = ratio(main, "spliced", "redsocks", 1, d)
        if q is not None:
            print("- 1 stream %s: spliced / redsocks **%.2fx** (target >= 0.85: %s)"
                  % (ARROW[d], q, verdict(q >= 0.85)))
    for s, d in modes:
        q = ratio(main, "spliced", "hev", s, d, tun_cpu_gb)
        if q is not None:
            print("- %s: tunnel CPU-s/GB spliced / hev **%.2fx** (target <= 0.5: %s)"
                  % (mode_name(s, d), q, verdict(q <= 0.5)))
    for s, d in modes:
        a, h, n = (med([mach_cpu_gb(r) for r in pick(main, t, s, d)])
                   for t in ("spliced", "hev", "none"))
        if a is not None and h is not None:
            extra = ""
            if n is not None:
                extra = ", less the no-tunnel row: %.2f vs %.2f" % (a - n, h - n)
            print("- %s: machine CPU-s/GB spliced %.2f, hev %.2f%s (target: below hev: %s)"
                  % (mode_name(s, d), a, h, extra, verdict(a < h)))
    for d in ("up", "down"):
        q = ratio(main, "spliced", "spliced", 4, d)
        x, y = pick(main, "spliced", 4, d), pick(main, "spliced", 1, d)
        if x and y:
            q = st.median([r["gbps"] for r in x]) / st.median([r["gbps"] for r in y])
            print("- spliced %s: 4 streams / 1 stream **%.2fx** (target >= 0.95: %s)"
                  % (ARROW[d], q, verdict(q >= 0.95)))
    for d in ("up", "down"):
        q = ratio(main, "spliced", "none", 1, d)
        if q is not None:
            print("- 1 stream %s: spliced / no tunnel **%.2fx** of the ceiling" % (ARROW[d], q))
    for p15 in phases:
        m, srv = p15.split(":")
        p85 = "8500:" + srv
        if m != "1500" or p85 not in phases:
            continue
        for t in ("spliced", "hev"):
            for d in ("up", "down"):
                x, y = pick(p15, t, 1, d), pick(p85, t, 1, d)
                if x and y:
                    q = st.median([r["gbps"] for r in x]) / st.median([r["gbps"] for r in y])
                    tgt = " (target >= 0.7: %s)" % verdict(q >= 0.7) if t == "spliced" else ""
                    print("- %s 1 stream %s, server %s: MTU 1500 / MTU 8500 **%.2fx**%s"
                          % (NAMES[t], ARROW[d], srv, q, tgt))
    sp = [r for r in runs if r["tunnel"] == "spliced"]
    dr = sum(r["data_reads"] for r in sp)
    if dr:
        b = sum(r["data_read_bytes"] for r in sp) / dr
        print("- spliced's bulk TUN reads average **%.0f bytes** (target >= 32768: %s)"
              % (b, verdict(b >= 32768)))

if len(sys.argv) > 2:
    with open(sys.argv[2], "w") as f:
        f.write("# bench/tun/run, %s: %s\n" % (meta.get("date", "?"), meta.get("machine", "")))
        f.write("title: tun2socks, guest namespace to SOCKS5 server over veth: iperf3 through "
                "each tunnel (median of %s rounds)\n" % meta.get("rounds"))
        f.write("unit: Gbit/s\n")
        f.write("series: " + " | ".join(mode_name(s, d) for s, d in modes) + "\n")
        for ph in phases:
            mtu, server = ph.split(":")
            for t in tunnels:
                if t == "none" and ph != phases[0]:
                    continue
                vals = []
                for s, d in modes:
                    rs = pick(ph, t, s, d)
                    vals.append("%.2f" % st.median([r["gbps"] for r in rs]) if rs else "-")
                label = NAMES.get(t, t) if t == "none" else "%s (MTU %s, %s server)" % (
                    NAMES.get(t, t), mtu, "hev" if server == "hev" else "spliced")
                f.write("%s | %s\n" % (label, " | ".join(vals)))
