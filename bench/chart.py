#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Render a horizontal bar chart as SVG (python3 standard library only).

Usage:
  bench/chart.py DATA_FILE [-o OUT.svg]
  bench/chart.py --title T [--unit U] [--series "A|B"] "label=1.5" "other=2|3" [-o OUT.svg]

A data file holds optional header lines, then one row per group of bars:

  # comment
  title: SOCKS5 relay on loopback, median of 5 rounds
  unit: Gbit/s
  series: 1 stream up | 4 streams up
  no proxy | 19.0 | 22.8
  spliced  | 15.6 | 15.6

Each row is a label and one value per series ("-" for none). With more than
one series the bars of a row are grouped and a legend names them. Without -o
the SVG goes to stdout. The README's charts are docs/img/NAME.dat rendered to
docs/img/NAME.svg (docs/benchmarks.md has the command).
"""
import argparse
import math
import sys
from xml.sax.saxutils import escape

PALETTE = ["#2b6cb0", "#dd6b20", "#38a169", "#805ad5", "#c53030", "#718096"]
FONT = 13  # px
CHAR_W = 0.6 * FONT  # rough width of one character of a sans-serif font
BAR_H = 16
BAR_GAP = 3
GROUP_GAP = 12
PLOT_W = 420
PAD = 12


def parse_value(s):
    """(number, text as written) or None; the bar's label keeps the data's precision."""
    s = s.strip()
    if s in ("", "-", "—"):
        return None
    try:
        v = float(s.replace(",", "").replace("_", ""))
    except ValueError:
        raise ValueError("%r is not a number" % s)
    return v, (fmt(v) if v >= 1000 else s)


def parse_row(line):
    if "|" in line:
        parts = line.split("|")
    else:  # command-line form: label=v1|v2
        label, _, rest = line.rpartition("=")
        parts = [label] + rest.split("|")
    label = parts[0].strip()
    if not label:
        raise ValueError("row without a label: %r" % line)
    return label, [parse_value(v) for v in parts[1:]]


def read_data(path):
    meta, rows = {}, []
    with open(path, encoding="utf-8") as f:
        for n, raw in enumerate(f, 1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            key, sep, rest = line.partition(":")
            if sep and key.strip() in ("title", "unit", "series") and "|" not in key:
                meta[key.strip()] = rest.strip()
                continue
            try:
                rows.append(parse_row(line))
            except ValueError as e:
                raise SystemExit("%s:%d: %s" % (path, n, e))
    return meta, rows


def nice_step(vmax, ticks=5):
    """A 1, 2 or 5 times a power of ten that cuts 0..vmax into about `ticks` parts."""
    if vmax <= 0:
        return 1.0
    raw = vmax / ticks
    mag = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 5, 10):
        if m * mag >= raw:
            return m * mag
    return 10 * mag


def fmt(v):
    if v == int(v) and abs(v) >= 100:
        return "{:,}".format(int(v))
    if abs(v) >= 100:
        return "{:,.0f}".format(v)
    return ("%.2f" % v).rstrip("0").rstrip(".")


def text_w(s):
    return len(s) * CHAR_W


def render(title, unit, series, rows):
    n_series = max([len(v) for _, v in rows] + [1])
    series = (series + ["series %d" % (i + 1) for i in range(len(series), n_series)])[:n_series]
    values = [v[0] for _, vals in rows for v in vals if v is not None]
    if not values:
        raise SystemExit("chart: no values")
    vmax = max(values)
    step = nice_step(vmax)
    axis_max = step * math.ceil(vmax / step)
    if axis_max <= 0:
        axis_max = 1.0

    label_w = max(text_w(label) for label, _ in rows) + PAD
    value_w = max(text_w(v[1]) for _, vals in rows for v in vals if v is not None) + 8
    legend = n_series > 1
    x0 = PAD + label_w
    width = int(max(x0 + PLOT_W + value_w + PAD, 2 * PAD + text_w(title) * 1.1))
    y = PAD + FONT + 4  # title baseline
    out = []
    out.append('<text x="%d" y="%d" font-weight="bold">%s</text>' % (PAD, y, escape(title)))
    y += 8
    if legend:
        lx = PAD
        y += FONT + 2
        for i, s in enumerate(series):
            w = 14 + 6 + text_w(s) + 18
            if lx + w > width - PAD and lx > PAD:
                lx = PAD
                y += FONT + 6
            out.append('<rect x="%d" y="%d" width="14" height="10" fill="%s"/>' %
                       (lx, y - 10, PALETTE[i % len(PALETTE)]))
            out.append('<text x="%d" y="%d">%s</text>' % (lx + 20, y, escape(s)))
            lx += w
        y += 6
    y += 8
    plot_top = y
    group_h = n_series * BAR_H + (n_series - 1) * BAR_GAP
    plot_h = len(rows) * group_h + (len(rows) - 1) * GROUP_GAP
    scale = PLOT_W / axis_max

    # grid and axis labels
    t = 0.0
    while t <= axis_max + step / 1000:
        gx = x0 + t * scale
        out.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#e2e8f0"/>' %
                   (gx, plot_top - 4, gx, plot_top + plot_h + 4))
        out.append('<text x="%.1f" y="%d" text-anchor="middle" fill="#4a5568">%s</text>' %
                   (gx, plot_top + plot_h + 4 + FONT + 2, fmt(t)))
        t += step
    axis_y = plot_top + plot_h + 4 + FONT + 2
    if unit:
        axis_y += FONT + 4
        out.append('<text x="%.1f" y="%d" text-anchor="middle" fill="#4a5568">%s</text>' %
                   (x0 + PLOT_W / 2, axis_y, escape(unit)))

    gy = plot_top
    for label, vals in rows:
        out.append('<text x="%.1f" y="%.1f" text-anchor="end" dominant-baseline="middle">%s</text>' %
                   (x0 - 8, gy + group_h / 2, escape(label)))
        for i in range(n_series):
            v = vals[i] if i < len(vals) else None
            by = gy + i * (BAR_H + BAR_GAP)
            if v is not None:
                v, shown = v
                w = max(v * scale, 1)
                out.append('<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="%s">'
                           '<title>%s, %s: %s</title></rect>' %
                           (x0, by, w, BAR_H, PALETTE[i % len(PALETTE)], escape(label),
                            escape(series[i]), escape(shown)))
                out.append('<text x="%.1f" y="%.1f" dominant-baseline="middle">%s</text>' %
                           (x0 + w + 4, by + BAR_H / 2, escape(shown)))
        gy += group_h + GROUP_GAP
    out.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#4a5568"/>' %
               (x0, plot_top - 4, x0, plot_top + plot_h + 4))
    height = axis_y + PAD
    head = ('<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" '
            'font-family="DejaVu Sans, Helvetica, Arial, sans-serif" font-size="%d">\n'
            '<rect width="100%%" height="100%%" fill="#ffffff"/>\n' % (width, height, width, height, FONT))
    return head + "\n".join(out) + "\n</svg>\n"


def main():
    ap = argparse.ArgumentParser(description="Horizontal bar chart as SVG.")
    ap.add_argument("input", nargs="*", help="a data file, or label=value[|value...] rows")
    ap.add_argument("-o", "--output", help="SVG file to write (default: stdout)")
    ap.add_argument("--title", help="chart title (overrides the file's)")
    ap.add_argument("--unit", help="axis label (overrides the file's)")
    ap.add_argument("--series", help='series names, "A|B" (overrides the file\'s)')
    a = ap.parse_args()

    if len(a.input) == 1 and "=" not in a.input[0]:
        meta, rows = read_data(a.input[0])
    else:
        meta, rows = {}, [parse_row(r) for r in a.input]
    if not rows:
        ap.error("no rows: give a data file or label=value arguments")
    title = a.title if a.title is not None else meta.get("title", "")
    unit = a.unit if a.unit is not None else meta.get("unit", "")
    series_s = a.series if a.series is not None else meta.get("series", "")
    series = [s.strip() for s in series_s.split("|")] if series_s else []
    svg = render(title, unit, series, rows)
    if a.output:
        with open(a.output, "w", encoding="utf-8") as f:
            f.write(svg)
    else:
        sys.stdout.write(svg)


if __name__ == "__main__":
    main()
