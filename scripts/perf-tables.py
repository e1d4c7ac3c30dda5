#!/usr/bin/env python3
"""The segmented tables of docs/PERFORMANCE.md from the benchmarks' CSV output.

Reads the CSVs that bench/reduce_bench_segmented (--csv) and bench/frameworks_segmented.py (--csv)
write (plain or gzipped; same columns) and prints Markdown:

  summary  per problem, dtype and element count: the shapes, reduce-tune against the faster CUB
           variant (min, median, max of CUB time / reduce-tune time), against torch and CuPy
           where they ran, and the % of the read ceiling (ceiling time / reduce-tune time);
  detail   one problem, dtype and element count, shape by shape: times, GB/s, ratios and the
           configuration the library chose.

Only cold-L2 results count. A result whose check failed is left out and counted. When several
files hold the same point and contestant, the later file wins (so a newer run of some shapes
can follow an older full run).

usage: scripts/perf-tables.py summary CSV... [--op sum]
       scripts/perf-tables.py detail CSV... --problem rows --dtype float32 --n 2^24 [--op sum]
"""
from __future__ import annotations

import argparse
import csv
import gzip
import statistics
import sys
from collections import defaultdict

CUB = ("cub", "cub-iter")  # rows run CUB twice (fixed-size or offsets; iterator offsets): the faster counts
PROBLEMS = ("rows", "columns", "segments")
NAMES = {"rows": "rows", "columns": "columns", "segments": "offsets"}


def parse_n(text: str) -> int:
    if "^" in text:
        base, exp = text.split("^")
        return int(base) ** int(exp)
    return int(text)


def pow2(v: int) -> str:
    if v > 0 and v & (v - 1) == 0:
        return f"2^{v.bit_length() - 1}"
    return str(v)


def load(paths):
    """{(problem, dtype, op, n, count, length): {contestant: row}}, the device name, failures."""
    points: dict = defaultdict(dict)
    device, failed = "", 0
    for p in paths:
        opener = gzip.open if p.endswith(".gz") else open
        with opener(p, "rt", newline="") as f:
            lines = []
            for line in f:
                if line.startswith("#"):
                    if not device and "device=" in line:
                        device = line.split("device=", 1)[1].split(";", 1)[0].strip()
                    continue
                lines.append(line)
        for r in csv.DictReader(lines):
            if r["mode"] != "cold":
                continue
            if r["ok"] != "1":
                failed += 1
                continue
            key = (r["problem"], r["dtype"], r["op"], int(r["n"]), int(r["count"]), int(r["length"]))
            points[key][r["contestant"]] = r
    return points, device, failed


def us(row) -> float:
    return float(row["median_us"])


def ratios(c: dict):
    """(rt/CUB, rt/torch, rt/CuPy, % of ceiling) of one point; None where a contestant is missing."""
    rt = c.get("reduce-tune")
    if rt is None:
        return None
    t = us(rt)
    cubs = [us(c[k]) for k in CUB if k in c]
    out = {
        "cub": min(cubs) / t if cubs else None,
        "torch": us(c["torch"]) / t if "torch" in c else None,
        "cupy": us(c["cupy"]) / t if "cupy" in c else None,
        "ceiling": 100 * us(c["ceiling"]) / t if "ceiling" in c else None,
    }
    return out


def span(values, fmt, median=True) -> str:
    v = [x for x in values if x is not None]
    if not v:
        return "–"
    if median and len(v) > 2:
        return f"{fmt(min(v))} / {fmt(statistics.median(v))} / {fmt(max(v))}"
    return f"{fmt(min(v))} – {fmt(max(v))}"


def x(v: float) -> str:
    return f"{v:.2f}x" if v < 10 else f"{v:.1f}x" if v < 100 else f"{v:.0f}x"


def pct(v: float) -> str:
    return f"{v:.0f} %"


def summary(points, op: str) -> None:
    groups = defaultdict(list)
    for (problem, dtype, o, n, count, length), c in points.items():
        if o == op:
            r = ratios(c)
            if r is not None:
                groups[(problem, dtype, n)].append(r)
    print("| problem | dtype | elements | shapes | x CUB: min / median / max | x torch | x CuPy | % of the read ceiling |")
    print("|---|---|---:|---:|---|---|---|---|")
    order = {p: i for i, p in enumerate(PROBLEMS)}
    for (problem, dtype, n) in sorted(groups, key=lambda k: (order.get(k[0], 9), k[1] != "float32", k[2])):
        rs = groups[(problem, dtype, n)]
        print(f"| {NAMES.get(problem, problem)} | {dtype} | {pow2(n)} | {len(rs)} "
              f"| {span([r['cub'] for r in rs], x)} | {span([r['torch'] for r in rs], x)} "
              f"| {span([r['cupy'] for r in rs], x)} | {span([r['ceiling'] for r in rs], pct, median=False)} |")


def detail(points, problem: str, dtype: str, n: int, op: str) -> None:
    rows = [(count, length, c) for (p, d, o, nn, count, length), c in points.items()
            if p == problem and d == dtype and o == op and nn == n and "reduce-tune" in c]
    if not rows:
        sys.exit(f"perf-tables.py: no {problem} {dtype} {op} results at n = {n}")
    have_torch = any("torch" in c for _, _, c in rows)
    have_cupy = any("cupy" in c for _, _, c in rows)
    shape = "segments x mean length" if problem == "segments" else "rows x columns"
    head = [shape, "reduce-tune us", "GB/s", "% of ceiling", "x CUB"]
    head += ["x torch"] * have_torch + ["x CuPy"] * have_cupy + ["configuration"]
    print("| " + " | ".join(head) + " |")
    print("|---|" + "---:|" * (len(head) - 2) + "---|")
    # By the length of what one result reduces: row length, column length (rows), mean segment length.
    for count, length, c in sorted(rows, key=lambda r: r[1]):
        r = ratios(c)
        rt = c["reduce-tune"]
        if problem == "segments":
            label = f"{pow2(count)} x {pow2(length)}"
        else:
            label = f"{pow2(int(rt['rows']))} x {pow2(int(rt['cols']))}"
        cells = [label, f"{us(rt):.1f}", f"{float(rt['gbps']):.0f}",
                 pct(r["ceiling"]) if r["ceiling"] is not None else "–",
                 x(r["cub"]) if r["cub"] is not None else "–"]
        if have_torch:
            cells.append(x(r["torch"]) if r["torch"] is not None else "–")
        if have_cupy:
            cells.append(x(r["cupy"]) if r["cupy"] is not None else "–")
        config = rt.get("config", "")
        cells.append(f"`{config}`" if config else "")
        print("| " + " | ".join(cells) + " |")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("table", choices=["summary", "detail"])
    ap.add_argument("csv", nargs="+", help="CSV files of reduce_bench_segmented / frameworks_segmented.py")
    ap.add_argument("--op", default="sum")
    ap.add_argument("--problem", choices=PROBLEMS, default="rows")
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--n", default="2^24", help="element count, e.g. 2^24 or 16777216")
    a = ap.parse_args()
    points, device, failed = load(a.csv)
    if not points:
        print("perf-tables.py: no cold results in the files given", file=sys.stderr)
        return 1
    if a.table == "summary":
        summary(points, a.op)
    else:
        detail(points, a.problem, a.dtype, parse_n(a.n), a.op)
    print(f"\n{device or 'unknown GPU'}: {len(points)} points"
          + (f"; {failed} results left out (check failed)" if failed else "; every result passed its check"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
