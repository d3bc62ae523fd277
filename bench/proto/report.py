#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The report of bench/proto/run.

  report.py table FILE     Markdown report (and issue 13's targets) from the JSON lines run wrote
  report.py dat FILE       the throughput chart's data (bench/chart.py's format), medians
"""
import json
import statistics
import sys

MODES = [("1", "up"), ("1", "down"), ("4", "up"), ("4", "down")]
MODE_NAME = {("1", "up"): "1 stream ↑", ("1", "down"): "1 stream ↓",
             ("4", "up"): "4 streams ↑", ("4", "down"): "4 streams ↓"}
LABEL = {"none": "no proxy (ceiling)", "socks5": "spliced SOCKS5 → direct (no crypto)",
         "chain": "spliced SOCKS5 → spliced SOCKS5 → direct (two hops, no crypto)"}


def load(path):
    meta, tput, cps, hwm = {}, [], [], {}
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
            elif k == "hwm":
                hwm[r["target"]] = r["kib"]
    return meta, tput, cps, hwm


def label(t):
    if t in LABEL:
        return LABEL[t]
    pair, _, m = t.partition("/")
    pair = pair.replace(">", " → ")
    if pair in ("spliced", "ss-libev", "v2ray"):
        pair += " ↔ " + pair
    return f"{pair}, {m}"


def fmt_range(vals, digits=2):
    if not vals:
        return "—"
    m = statistics.median(vals)
    if len(vals) == 1:
        return f"{m:.{digits}f}"
    return f"{m:.{digits}f} ({min(vals):.{digits}f}–{max(vals):.{digits}f})"


def verdict(ok):
    return "met" if ok else "NOT met"


def table(path):
    meta, tput, cps, hwm = load(path)
    targets = meta.get("targets", [])

    def gb(t, s, d):
        return [r["gbps"] for r in tput if r["target"] == t and r["streams"] == s
                and r["dir"] == d and "gbps" in r]

    def med(t, s, d):
        v = gb(t, s, d)
        return statistics.median(v) if v else None

    def cpu(t, key):
        rs = [r for r in tput if r["target"] == t and "gbps" in r]
        gbytes = sum(r["bytes"] for r in rs) / 1e9
        if not rs or not gbytes:
            return None
        if key == "both":
            return sum((r["cticks"] + r["sticks"]) / r["hz"] for r in rs) / gbytes
        return sum(r[key] / r["hz"] for r in rs) / gbytes

    out = [f"Encrypted proxies on loopback, {meta.get('date', '?')}: {meta.get('machine', '')}.",
           f"Peers: {meta.get('peers', '')}.",
           f"Command: `flock -x /work/wt/cpu.lock {meta.get('command', 'bench/proto/run')}` "
           f"({meta.get('rounds')} rounds, iperf3 -t {meta.get('duration')} through proxychains4 "
           "into the pair's SOCKS5 front; short connections: tests/tools/cps, "
           f"{meta.get('cps_threads')} threads × 4 in flight × {meta.get('cps_seconds')} s).",
           "A pair is a client with a SOCKS5 front and a server going out direct; "
           "\"A → B\" is A's client with B's server.", ""]
    out.append("Throughput, Gbit/s, median (min–max) over rounds:")
    out.append("")
    out.append("| | " + " | ".join(MODE_NAME[m] for m in MODES) + " |")
    out.append("|---|" + "---|" * len(MODES))
    for t in targets:
        cells = []
        for s, d in MODES:
            c = fmt_range(gb(t, s, d))
            errs = sum(1 for r in tput if r["target"] == t and r["streams"] == s
                       and r["dir"] == d and "error" in r)
            if errs:
                c += f" ({errs} failed)"
            cells.append(c)
        out.append(f"| {label(t)} | " + " | ".join(cells) + " |")
    out.append("")
    out.append("CPU-seconds per GB moved (all throughput runs; each process tree, all threads):")
    out.append("")
    out.append("| | client | server | both |")
    out.append("|---|---|---|---|")
    for t in targets:
        if t == "none":
            continue
        vals = [cpu(t, k) for k in ("cticks", "sticks", "both")]
        out.append(f"| {label(t)} | " + " | ".join("—" if v is None else f"{v:.2f}" for v in vals) + " |")
    out.append("")
    out.append("Short connections per second through the front, and the CPU per connection of the "
               "client and the server:")
    out.append("")
    out.append("| | conn/s | client µs/conn | server µs/conn |")
    out.append("|---|---|---|---|")
    seen = []
    for r in cps:
        if r["target"] not in seen:
            seen.append(r["target"])
    for t in seen:
        rs = [r for r in cps if r["target"] == t and "cps" in r]
        errs = sum(r.get("errors", 0) for r in rs)
        cu = [1e6 * r["cticks"] / r["hz"] / r["conns"] for r in rs if r["conns"]]
        su = [1e6 * r["sticks"] / r["hz"] / r["conns"] for r in rs if r["conns"]]
        out.append(f"| {label(t)} | {fmt_range([r['cps'] for r in rs], 0)}"
                   f"{f' ({errs} errors)' if errs else ''} | "
                   f"{fmt_range(cu, 0) if t != 'none' else '—'} | "
                   f"{fmt_range(su, 0) if t not in ('none', 'socks5') else '—'} |")
    out.append("")
    if hwm:
        out.append("Peak RSS over the whole run: " + ", ".join(
            f"{k} {v / 1024:.1f} MiB" for k, v in hwm.items()) + ".")
        out.append("")

    # --- issue 13's targets, one stream, same run ---
    ciphers = meta.get("ciphers", "").split()
    lines = []
    for m in ciphers:
        for d in ("up", "down"):
            sp = med(f"spliced/{m}", "1", d)
            peers = {p: med(f"{p}/{m}", "1", d) for p in ("ss-libev", "v2ray")}
            best = max((v for v in peers.values() if v), default=None)
            if sp and best:
                r = sp / best
                lines.append(f"{m} 1 stream {d}: spliced ↔ spliced {sp:.2f} Gbit/s = {r:.2f}× the "
                             f"faster peer pair ({', '.join(f'{p} {v:.2f}' for p, v in peers.items() if v)}); "
                             f"≥ 1.5×: {verdict(r >= 1.5)}")
    for m in ("aes-256-gcm", "chacha20-ietf-poly1305"):
        a, b = cpu(f"spliced/{m}", "both"), cpu(f"ss-libev/{m}", "both")
        if a and b:
            lines.append(f"{m} CPU-s/GB client + server: spliced {a:.2f} vs ss-libev {b:.2f} = "
                         f"{a / b:.2f}× (≤ 0.5×: {verdict(a / b <= 0.5)})")
    for m in ciphers:
        base = {d: med(f"ss-libev/{m}", "1", d) for d in ("up", "down")}
        for pair in ("ss-local>spliced", "spliced>ss-server", "v2ray>spliced", "spliced>v2ray"):
            for d in ("up", "down"):
                v = med(f"{pair}/{m}", "1", d)
                if v and base[d]:
                    lines.append(f"{m} mixed {pair.replace('>', ' → ')} 1 stream {d}: {v:.2f} vs "
                                 f"ss-libev pair {base[d]:.2f} Gbit/s (≥: {verdict(v >= base[d])})")
    for m22, m in (("2022-blake3-aes-128-gcm", "aes-128-gcm"), ("2022-blake3-aes-256-gcm", "aes-256-gcm"),
                   ("2022-blake3-chacha20-poly1305", "chacha20-ietf-poly1305")):
        for d in ("up", "down"):
            a, b = med(f"spliced/{m22}", "1", d), med(f"spliced/{m}", "1", d)
            if a and b:
                lines.append(f"{m22} 1 stream {d}: {a:.2f} vs {m} {b:.2f} Gbit/s = {a / b:.2f}× "
                             f"(≥ 0.95×: {verdict(a / b >= 0.95)})")
    c22 = [r["cps"] for r in cps if r["target"] == "spliced/2022-blake3-aes-128-gcm" and "cps" in r]
    cpl = [r["cps"] for r in cps if r["target"] == "socks5" and "cps" in r]
    if c22 and cpl:
        r = statistics.median(c22) / statistics.median(cpl)
        lines.append(f"conn/s over SS-2022 (2022-blake3-aes-128-gcm): {statistics.median(c22):.0f} vs "
                     f"plain SOCKS5 → direct {statistics.median(cpl):.0f} = {r:.2f}× (≥ 0.8×: {verdict(r >= 0.8)})")
    cch = [r["cps"] for r in cps if r["target"] == "chain" and "cps" in r]
    if c22 and cch:
        r = statistics.median(c22) / statistics.median(cch)
        lines.append(f"reference: SS-2022 conn/s {statistics.median(c22):.0f} vs the plain two-hop chain "
                     f"(spliced SOCKS5 → spliced SOCKS5 → direct) {statistics.median(cch):.0f} = {r:.2f}×; "
                     f"the chain against one hop: "
                     f"{statistics.median(cch) / statistics.median(cpl):.2f}×" if cpl else "")
    for d in ("up", "down"):
        v = med("spliced/aes-128-gcm", "1", d)
        if v:
            lines.append(f"indicative: aes-128-gcm spliced ↔ spliced 1 stream {d} {v:.2f} Gbit/s "
                         f"(≥ 5: {verdict(v >= 5)})")
    if lines:
        out.append("Targets of issue 13 (medians, same run):")
        out.append("")
        out.extend(f"- {x}" for x in lines)
    print("\n".join(out))


def dat(path):
    meta, tput, _, _ = load(path)
    print(f"# bench/proto/run, {meta.get('date', '?')}: {meta.get('machine', '')}")
    print(f"title: Shadowsocks pairs on loopback: iperf3 through a SOCKS5 front, one stream "
          f"(median of {meta.get('rounds')} rounds)")
    print("unit: Gbit/s")
    print("series: 1 stream ↑ | 1 stream ↓")
    for t in meta.get("targets", []):
        vals = []
        for s, d in MODES[:2]:
            v = [r["gbps"] for r in tput if r["target"] == t and r["streams"] == s and r["dir"] == d
                 and "gbps" in r]
            vals.append(f"{statistics.median(v):.2f}" if v else "-")
        print(f"{label(t)} | " + " | ".join(vals))


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("table", "dat"):
        print(__doc__, file=sys.stderr)
        return 2
    (table if sys.argv[1] == "table" else dat)(sys.argv[2])
    return 0


if __name__ == "__main__":
    sys.exit(main())
