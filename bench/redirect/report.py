#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench/redirect/report.py RESULTS.jsonl [DAT]: the markdown table of a bench/redirect/run.

With DAT, also the chart's data for bench/chart.py (throughput medians per redirector and mode).

Medians over the rounds with the range (min-max); CPU-seconds per GB are the redirector's
own (utime + stime of its process tree over each iperf3 run, per GB iperf3 moved). Then the
issue's targets: spliced's redirect inbound >= 1.5x redsocks' throughput at <= 0.5x its CPU
per GB, both through the same socks5 upstream, in the same run, against each redsocks row:
`redsocks` as Debian configures it (it splices) and `redsocks-copy` (splice = off, the
copying relay the issue's target was written against).

The second table is the whole machine (/proc/stat busy time over each iperf3 run, everything
the run did: both iperf3s, three TCP stacks, the upstream and the redirector): how busy it
was, its CPU-seconds per GB, and what a redirector that cost nothing could reach when the
machine is the bound: cpus / (machine CPU-s per GB - the redirector's), as Gbit/s. Where
the machine was saturated, no redirector can move the same bytes faster than that.
"""
import json, statistics as st, sys

rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
meta = next((r for r in rows if r.get("kind") == "meta"), {})
runs = [r for r in rows if r.get("kind") == "tput"]
targets = meta.get("targets", "").split() or sorted({r["target"] for r in runs})
modes = [(1, "up"), (1, "down"), (4, "up"), (4, "down")]


def pick(t, s, d):
    return [r for r in runs if r["target"] == t and r["streams"] == s and r["dir"] == d]


def per_gb(r, key="ticks"):
    """CPU-seconds per GB of r's ticks under key (the redirector's, the upstream's, the machine's)."""
    return (r[key] / r["hz"]) / (r["bytes"] / 1e9) if r["bytes"] else float("inf")


CPUS = meta.get("cpus", 2)


def free_gbps(r):
    """What a redirector that cost nothing could move, the machine being the bound."""
    return 8.0 * CPUS / max(per_gb(r, "machine_busy") - per_gb(r), 1e-9)


def med(xs, fmt):
    if not xs:
        return "-"
    m = st.median(xs)
    return (fmt % m) + (" (%s-%s)" % (fmt % min(xs), fmt % max(xs)) if len(xs) > 1 else "")


print("# bench/redirect: %s" % meta.get("date", "?"))
print()
print("Machine: %s. Client, router and server namespaces over veth (MTU %s); %s rounds of %s s, "
      "order rotated every round. Medians (min-max). CPU is the redirector's own; the socks5 "
      "upstream (spliced, in the server namespace) is not counted."
      % (meta.get("machine", "?"), meta.get("mtu"), meta.get("rounds"), meta.get("duration")))
print()
print("| streams, direction | " + " | ".join(targets) + " |")
print("|---|" + "---|" * len(targets))
for s, d in modes:
    cells = []
    for t in targets:
        rs = pick(t, s, d)
        g = med([r["gbps"] for r in rs], "%.2f")
        c = med([per_gb(r) for r in rs], "%.2f") if t != "none" else ""
        cells.append(g + " Gbit/s" + ("<br>%s CPU-s/GB" % c if c else ""))
    print("| %d, %s | %s |" % (s, d, " | ".join(cells)))
if runs and "machine_all" in runs[0]:
    print("The whole machine (%d CPUs; /proc/stat): busy %%, CPU-s per GB, the upstream's "
          "CPU-s per GB, and the ceiling with a free redirector (Gbit/s)." % CPUS)
    print()
    print("| streams, direction | " + " | ".join(targets) + " |")
    print("|---|" + "---|" * len(targets))

    for s, d in modes:
        cells = []
        for t in targets:
            rs = [r for r in pick(t, s, d) if r.get("machine_all")]
            if not rs:
                cells.append("-")
                continue
            busy = med([100.0 * r["machine_busy"] / r["machine_all"] for r in rs], "%.0f")
            mg = med([per_gb(r, "machine_busy") for r in rs], "%.2f")
            ug = med([per_gb(r, "up_ticks") for r in rs], "%.2f")
            free = med([free_gbps(r) for r in rs], "%.1f")
            cells.append("%s%% busy, %s<br>upstream %s, free %s" % (busy, mg, ug, free))
        print("| %d, %s | %s |" % (s, d, " | ".join(cells)))
    print()
print()
print("## Targets")
print()
for peer in ("redsocks", "redsocks-copy"):
    if "spliced" not in targets or peer not in targets:
        continue
    print("Against %s:" % peer)
    print()
    for s, d in modes:
        a, b = pick("spliced", s, d), pick(peer, s, d)
        if not a or not b:
            continue
        tq = st.median([r["gbps"] for r in a]) / st.median([r["gbps"] for r in b])
        cq = st.median([per_gb(r) for r in a]) / st.median([per_gb(r) for r in b])
        print("- %d stream%s %s: throughput spliced/%s **%.2fx** (target >= 1.5: %s), "
              "CPU per GB **%.2fx** (target <= 0.5: %s)"
              % (s, "" if s == 1 else "s", d, peer, tq, "met" if tq >= 1.5 else "NOT met", cq,
                 "met" if cq <= 0.5 else "NOT met"))
        if "machine_all" in a[0]:
            free = st.median([free_gbps(r) for r in a])
            need = 1.5 * st.median([r["gbps"] for r in b])
            print("  - 1.5x %s is %.2f Gbit/s; the machine's ceiling for spliced's path with a "
                  "redirector that cost nothing is %.2f Gbit/s (%s)"
                  % (peer, need, free, "above it: out of reach" if need > free else "below it"))
    print()

if len(sys.argv) > 2:
    with open(sys.argv[2], "w") as f:
        f.write("# bench/redirect/run, %s: %s\n" % (meta.get("date", "?"), meta.get("machine", "")))
        f.write("title: A router namespace REDIRECTing a client's TCP: iperf3 through it (veth, MTU %s, median of %s rounds)\n"
                % (meta.get("mtu"), meta.get("rounds")))
        f.write("unit: Gbit/s\n")
        f.write("series: " + " | ".join("%d stream%s %s" % (s, "" if s == 1 else "s", d) for s, d in modes) + "\n")
        names = {"none": "no proxy (kernel forwarding)", "spliced": "spliced redirect, socks5",
                 "redsocks": "redsocks, socks5 (splice)",
                 "redsocks-copy": "redsocks, socks5, splice = off", "spliced-direct": "spliced redirect, direct"}
        for t in targets:
            vals = []
            for s, d in modes:
                rs = pick(t, s, d)
                vals.append("%.2f" % st.median([r["gbps"] for r in rs]) if rs else "-")
            f.write("%s | %s\n" % (names.get(t, t), " | ".join(vals)))
