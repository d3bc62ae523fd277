#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Helpers for bench/socks/run: process-tree CPU/RSS sampling and the Markdown report.

  report.py ticks PID      utime+stime (+ reaped children) of PID and all its descendants, in ticks
  report.py hwm PID        "KIB NPROC": sum of VmHWM over PID and its descendants, and how many
  report.py iperf FILE     "GBPS BYTES" from an iperf3 -J result (receiver side), or "error MSG"
  report.py table FILE     Markdown report from the JSON lines run wrote
  report.py dat FILE       the throughput chart's data (bench/chart.py's format), medians per mode
"""
import json
import os
import statistics
import sys


def children_map():
    kids = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                s = f.read()
        except OSError:
            continue
        # comm may hold spaces and parentheses: fields start after the last ')'
        fields = s[s.rindex(")") + 2:].split()
        kids.setdefault(int(fields[1]), []).append(int(d))
    return kids


def tree(pid):
    kids = children_map()
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(kids.get(p, []))
    return out


def ticks(pid):
    total = 0
    for p in tree(pid):
        try:
            with open(f"/proc/{p}/stat") as f:
                s = f.read()
        except OSError:
            continue
        fields = s[s.rindex(")") + 2:].split()
        # fields[11..14] = utime stime cutime cstime (stat fields 14..17)
        total += sum(int(x) for x in fields[11:15])
    return total


def hwm(pid):
    kib, n = 0, 0
    for p in tree(pid):
        try:
            with open(f"/proc/{p}/status") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        kib += int(line.split()[1])
                        n += 1
        except OSError:
            continue
    return kib, n


def iperf(path):
    try:
        with open(path) as f:
            d = json.load(f)
    except (OSError, ValueError) as e:
        return f"error no-json:{type(e).__name__}"
    if d.get("error"):
        return "error " + d["error"].replace(" ", "_")[:80]
    r = d["end"]["sum_received"]
    return f"{r['bits_per_second'] / 1e9:.3f} {int(r['bytes'])}"


MODES = [("1", "up"), ("1", "down"), ("4", "up"), ("4", "down")]
MODE_NAME = {("1", "up"): "1 stream ↑", ("1", "down"): "1 stream ↓",
             ("4", "up"): "4 streams ↑", ("4", "down"): "4 streams ↓"}


def fmt_range(vals, digits=1):
    if not vals:
        return "—"
    m = statistics.median(vals)
    if len(vals) == 1:
        return f"{m:.{digits}f}"
    return f"{m:.{digits}f} ({min(vals):.{digits}f}–{max(vals):.{digits}f})"


def table(path):
    meta, tput, cps, rss, scrapes = {}, [], [], {}, {}
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            k = r.pop("kind")
            if k == "meta":
                meta = r
            elif k == "tput":
                tput.append(r)
            elif k == "cps":
                cps.append(r)
            elif k in ("hwm", "idle100"):
                rss.setdefault(r["target"], {})[k] = r
            elif k == "scrapes":
                scrapes[r["target"]] = r
    targets = meta.get("targets", [])
    proxies = [t for t in targets if t != "none"]
    label = {"none": "no proxy (ceiling)"}
    out = []
    out.append(f"SOCKS5 relay on loopback, {meta.get('date', '?')}: {meta.get('machine', '')}.")
    out.append(f"Command: `{meta.get('command', 'bench/socks/run')}` "
               f"({meta.get('rounds')} rounds, iperf3 -t {meta.get('duration')} through proxychains4; "
               f"short connections: {meta.get('cps_threads')} client threads × {meta.get('cps_seconds')} s).")
    if meta.get("spliced_steering"):
        out.append(f"spliced runs with `accept-steering = {meta['spliced_steering']}` "
                   "(docs/configuration.md, `[main]`); the others with their defaults.")
    if meta.get("note"):
        out.append(meta["note"])
    out.append("")

    def gb(t, s, d):
        return [r["gbps"] for r in tput if r["target"] == t and r["streams"] == s
                and r["dir"] == d and "gbps" in r]

    def sorted_rounds(t, s, d):
        # one value per round, in round order, so two targets pair up round by round
        rs = sorted((r for r in tput if r["target"] == t and r["streams"] == s and r["dir"] == d
                     and "gbps" in r), key=lambda r: r["round"])
        return [r["gbps"] for r in rs]

    out.append("Throughput, Gbit/s, median (min–max) over rounds; ×ceiling in brackets:")
    out.append("")
    out.append("| | " + " | ".join(MODE_NAME[m] for m in MODES) + " |")
    out.append("|---|" + "---|" * len(MODES))
    for t in targets:
        cells = []
        for s, d in MODES:
            v = gb(t, s, d)
            c = fmt_range(v)
            ceil = gb("none", s, d)
            if t != "none" and v and ceil:
                c += f" [{statistics.median(v) / statistics.median(ceil):.2f}×]"
            errs = sum(1 for r in tput if r["target"] == t and r["streams"] == s
                       and r["dir"] == d and "error" in r)
            if errs:
                c += f" ({errs} failed)"
            cells.append(c)
        out.append(f"| {label.get(t, t)} | " + " | ".join(cells) + " |")
    out.append("")

    def cpu(t):
        rs = [r for r in tput if r["target"] == t and "gbps" in r]
        if not rs:
            return None, None
        sec = sum(r["ticks"] / r["hz"] for r in rs)
        wall = sum(r["secs"] for r in rs)
        gbytes = sum(r["bytes"] for r in rs) / 1e9
        return 100 * sec / wall, sec / gbytes if gbytes else None

    modes = sorted({r.get("per_thread", 0) for r in cps}, key=lambda m: (m == 0, m))

    def cps_rows(t, m):
        return [r for r in cps if r["target"] == t and r.get("per_thread", 0) == m]

    def cps_of(t, m):
        return [r["cps"] for r in cps_rows(t, m) if "cps" in r]

    def us_per_conn(t, m, key="ticks"):
        # CPU per connection: the proxy's own (its whole tree, kernel time
        # included), or with key="machine_ticks" the whole machine's
        return [1e6 * r[key] / r["hz"] / r["conns"] for r in cps_rows(t, m)
                if r.get("conns") and key in r]

    def mode_name(m):
        threads = meta.get("cps_threads", "?")
        if m == 0:
            return f"{threads} threads, one connection at a time each"
        return f"{threads} threads × {m} connections in flight each"

    out.append("Cost and memory (CPU counted over the proxy's process tree, all threads, during "
               "the throughput runs; CPU % is of one core):")
    out.append("")
    out.append("| | CPU % | CPU-s per GB | peak RSS | RSS, 100 idle conns |")
    out.append("|---|---|---|---|---|")
    for t in targets:
        pct, spg = cpu(t) if t != "none" else (None, None)
        h = rss.get(t, {})

        def mib(r):
            if not r:
                return "—"
            s = f"{r['kib'] / 1024:.1f} MiB"
            if r.get("nproc", 1) > 1:
                s += f" ({r['nproc']} procs)"
            return s
        out.append(f"| {label.get(t, t)} | "
                   f"{'—' if pct is None else f'{pct:.0f}'} | "
                   f"{'—' if spg is None else f'{spg:.2f}'} | "
                   f"{mib(h.get('hwm'))} | {mib(h.get('idle100'))} |")
    out.append("")

    for m in modes:
        out.append(f"Short connections per second, {mode_name(m)}; CPU per connection of the proxy "
                   "and of the whole machine (client and echo server included):")
        out.append("")
        out.append("| | conn/s | proxy CPU µs per conn | machine CPU µs per conn |")
        out.append("|---|---|---|---|")
        for t in targets:
            rows = cps_rows(t, m)
            cerr = sum(r.get("errors", 0) for r in rows)
            out.append(f"| {label.get(t, t)} | "
                       f"{fmt_range(cps_of(t, m), 0)}{f' ({cerr} errors)' if cerr else ''} | "
                       f"{fmt_range(us_per_conn(t, m), 0) if t != 'none' else '—'} | "
                       f"{fmt_range(us_per_conn(t, m, 'machine_ticks'), 0)} |")
        out.append("")

    def compare(new, base, title, bar):
        """new / base, medians of the same interleaved run; bar: the least ratio that passes."""
        out.append(f"{title} (same run, interleaved; medians): {new} / {base}")
        out.append("")
        lines = []
        for s, d in MODES:
            a, b = gb(new, s, d), gb(base, s, d)
            if a and b:
                r = statistics.median(a) / statistics.median(b)
                per = [x / y for x, y in zip(sorted_rounds(new, s, d), sorted_rounds(base, s, d))]
                lines.append(f"throughput {MODE_NAME[s, d]}: {r:.3f} (per round "
                             f"{fmt_range(per, 2)}; ≥ {bar}: {'met' if r >= bar else 'NOT met'})")
        (_, a_spg), (_, b_spg) = cpu(new), cpu(base)
        if a_spg and b_spg:
            r = a_spg / b_spg
            lines.append(f"CPU-s/GB {a_spg:.3f} vs {b_spg:.3f}: {r:.3f}× (≤ {2 - bar:.2f}: "
                         f"{'met' if r <= 2 - bar else 'NOT met'})")
        for m in modes:
            a, b = cps_of(new, m), cps_of(base, m)
            if a and b:
                r = statistics.median(a) / statistics.median(b)
                lines.append(f"conn/s with {mode_name(m)}: {statistics.median(a):.0f} vs "
                             f"{statistics.median(b):.0f}/s, {r:.3f} (≥ {bar}: "
                             f"{'met' if r >= bar else 'NOT met'})")
        if new in scrapes:
            lines.append(f"/metrics scrapes during the run: {scrapes[new]['ok']} answered, "
                         f"{scrapes[new]['failed']} failed")
        out.extend(f"- {x}" for x in lines)
        out.append("")

    if "spliced" in proxies and "spliced-epoll" in proxies:
        out.append("spliced on its epoll backend against io_uring (same build, same run, "
                   "interleaved; medians): epoll / io_uring")
        out.append("")
        lines = []
        for s, d in MODES:
            a, b = gb("spliced-epoll", s, d), gb("spliced", s, d)
            if a and b:
                r = statistics.median(a) / statistics.median(b)
                per = [x / y for x, y in zip(sorted_rounds("spliced-epoll", s, d),
                                             sorted_rounds("spliced", s, d))]
                lines.append(f"throughput {MODE_NAME[s, d]}: {r:.3f} (per round "
                             f"{fmt_range(per, 2)}; ≥ 0.9: {'met' if r >= 0.9 else 'NOT met'})")
        (_, a_spg), (_, b_spg) = cpu("spliced-epoll"), cpu("spliced")
        if a_spg and b_spg:
            lines.append(f"CPU-s/GB {a_spg:.3f} vs {b_spg:.3f}: {a_spg / b_spg:.3f}×")
        for m in modes:
            a, b = cps_of("spliced-epoll", m), cps_of("spliced", m)
            if a and b:
                lines.append(f"conn/s with {mode_name(m)}: {statistics.median(a):.0f} vs "
                             f"{statistics.median(b):.0f}/s, "
                             f"{statistics.median(a) / statistics.median(b):.3f}")
        out.extend(f"- {x}" for x in lines)
        out.append("")
    if "spliced" in proxies and "spliced-base" in proxies:
        compare("spliced", "spliced-base", "spliced against spliced-base", 0.95)
    if "spliced" in proxies and "spliced-scraped" in proxies:
        compare("spliced-scraped", "spliced",
                "The metrics endpoint's cost: spliced scraped once a second against spliced", 0.97)

    if "spliced" in proxies:
        out.append("Targets of issue 2 (spliced):")
        out.append("")
        lines = []
        for s, d in MODES:
            sp, ce, da = gb("spliced", s, d), gb("none", s, d), gb("dante", s, d)
            if sp and ce:
                r1 = statistics.median(sp) / statistics.median(ce)
                part = f"{MODE_NAME[s, d]}: {r1:.2f}× ceiling (≥ 0.7: {'met' if r1 >= 0.7 else 'NOT met'})"
                if da:
                    r2 = statistics.median(sp) / statistics.median(da)
                    part += f", {r2:.2f}× dante (≥ 1.5: {'met' if r2 >= 1.5 else 'NOT met'})"
                lines.append(part)
        _, s_spg = cpu("spliced")
        peers = {p: cpu(p)[1] for p in proxies if p != "spliced"}
        if s_spg is not None and peers:
            below = all(v is not None and s_spg < v for v in peers.values())
            lines.append(f"CPU-s/GB {s_spg:.2f} vs " +
                         ", ".join(f"{p} {v:.2f}" if v is not None else f"{p} —" for p, v in peers.items()) +
                         f" (below both: {'met' if below else 'NOT met'})")
        for m in modes:
            sc, mc = cps_of("spliced", m), cps_of("microsocks", m)
            if sc and mc:
                r = statistics.median(sc) / statistics.median(mc)
                line = (f"conn/s {r:.2f}× microsocks with {mode_name(m)} "
                        f"(≥ 1.5: {'met' if r >= 1.5 else 'NOT met'})")
                su, mu = us_per_conn("spliced", m), us_per_conn("microsocks", m)
                if su and mu:
                    # The client and echo server share the cores: this ratio is what
                    # the proxy itself is responsible for.
                    line += (f"; proxy CPU per connection {statistics.median(su):.0f} vs "
                             f"{statistics.median(mu):.0f} µs, "
                             f"{statistics.median(mu) / statistics.median(su):.2f}× less")
                lines.append(line)
        i = rss.get("spliced", {}).get("idle100")
        if i:
            lines.append(f"peak RSS with 100 idle connections {i['kib'] / 1024:.1f} MiB "
                         f"(≤ 4 MiB: {'met' if i['kib'] <= 4096 else 'NOT met'})")
        out.extend(f"- {x}" for x in lines)
    print("\n".join(out))


def dat(path):
    meta, tput = {}, []
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            if r["kind"] == "meta":
                meta = r
            elif r["kind"] == "tput" and "gbps" in r:
                tput.append(r)
    print(f"# bench/socks/run, {meta.get('date', '?')}: {meta.get('machine', '')}")
    print(f"title: SOCKS5 relay on loopback: iperf3 through proxychains4 (median of "
          f"{meta.get('rounds')} rounds)")
    print("unit: Gbit/s")
    print("series: " + " | ".join(MODE_NAME[m] for m in MODES))
    for t in meta.get("targets", []):
        vals = []
        for s, d in MODES:
            v = [r["gbps"] for r in tput if r["target"] == t and r["streams"] == s and r["dir"] == d]
            vals.append(f"{statistics.median(v):.2f}" if v else "-")
        print(f"{'no proxy (ceiling)' if t == 'none' else t} | " + " | ".join(vals))


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    cmd, arg = sys.argv[1], sys.argv[2]
    if cmd == "ticks":
        print(ticks(int(arg)))
    elif cmd == "hwm":
        kib, n = hwm(int(arg))
        print(kib, n)
    elif cmd == "iperf":
        print(iperf(arg))
    elif cmd == "table":
        table(arg)
    elif cmd == "dat":
        dat(arg)
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
