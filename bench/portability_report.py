#!/usr/bin/env python3
"""The tables of bench/portability.sh, and the shipped-tuning split it runs with.

--split-shipped DB --model NAME --mine A --others B: copies of the shipped tuning with only NAME's
rows (A) and with every other model's rows only (B).
--dir DIR: reads DIR's CSVs (1d-SOURCE.csv and seg-SOURCE.csv of reduce_bench and
reduce_bench_segmented, seg-torch.csv of frameworks_segmented.py) and prints, per problem, each
tuning source's time against `tuned` (median, worst, the points past 1.25x) and against CUB and
torch, then the built-in defaults' targets: at most 1.25x tuned at every point, at most 1.1x at the
median, and at least torch's speed wherever the tuned choice has it.
Exit code: 0, 1 when a CSV holds a result that FAILED its check, 3 on missing input.
"""
import argparse
import csv
import os
import shutil
import sqlite3
import statistics
import sys

SOURCES = ("tuned", "shipped", "other", "defaults")


def split(shipped, model, mine, others):
    for path, keep_model in ((mine, True), (others, False)):
        if os.path.exists(path):
            os.remove(path)
        shutil.copyfile(shipped, path)
        db = sqlite3.connect(path)
        op = "!=" if keep_model else "="
        gone = [r[0] for r in db.execute(f"SELECT uuid FROM devices WHERE name {op} ?", (model,))]
        for uuid in gone:
            for table in ("best", "measurements", "runs"):
                db.execute(f"DELETE FROM {table} WHERE device_uuid = ?", (uuid,))
            db.execute("DELETE FROM devices WHERE uuid = ?", (uuid,))
        db.commit()
        left = [r[0] for r in db.execute("SELECT name FROM devices")]
        db.execute("VACUUM")
        db.close()
        print(f"{os.path.basename(path)}: {', '.join(left) or 'no GPU'}", file=sys.stderr)


def rows(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def key(r):
    if "problem" in r:
        return (r["problem"], r["dtype"], r["op"], int(r["count"]), int(r["length"]))
    return ("array", r["dtype"], r["op"], 1, int(r["n"]))


def shape_text(k):
    p, _, _, count, length = k
    def f(v):
        return f"2^{v.bit_length() - 1}" if v & (v - 1) == 0 else str(v)
    return f"n={f(length)}" if p == "array" else f"{f(count)} x {f(length)}"


def load(d):
    """{contestant or source: {point: median_us}}, and how many results failed."""
    times, failed = {}, 0
    for src in SOURCES:
        for part in ("1d", "seg"):
            for r in rows(os.path.join(d, f"{part}-{src}.csv")):
                if r.get("mode", "cold") != "cold":
                    continue
                if r["ok"] != "1":
                    failed += 1
                    continue
                who = r["contestant"]
                name = src if who == "reduce-tune" else who
                if who in ("reduce-tune", "cub"):
                    times.setdefault(name, {})[key(r)] = float(r["median_us"])
    for r in rows(os.path.join(d, "seg-torch.csv")):
        if r["ok"] != "1":
            failed += 1
            continue
        times.setdefault("torch", {})[key(r)] = float(r["median_us"])
    return times, failed


def report(d, model, tuned_from):
    times, failed = load(d)
    if "tuned" not in times:
        print(f"portability_report: no tuned results in {d}", file=sys.stderr)
        return 3
    base = times["tuned"]
    problems = sorted({k[0] for k in base}, key=["array", "rows", "columns", "segments"].index)
    print(f"## Where the tuning comes from: {model}\n")
    print(f"float32 sum, cold L2, median of the timed calls; `tuned`: {tuned_from}. Ratios are "
          "time / tuned time (below 1: faster than tuned); CUB and torch as tuned / theirs "
          "(above 1: reduce-tune faster).\n")
    print("| problem | points | shipped median / worst | other models median / worst | "
          "defaults median / worst | defaults > 1.25x | tuned vs CUB (min) | tuned vs torch (min) | "
          "defaults vs torch (min) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    verdict = []
    for p in problems:
        pts = sorted(k for k in base if k[0] == p)
        cells = [p, str(len(pts))]
        for src in ("shipped", "other", "defaults"):
            rs = [times.get(src, {}).get(k, float("nan")) / base[k] for k in pts]
            rs = [r for r in rs if r == r]
            cells.append(f"{statistics.median(rs):.3f} / {max(rs):.3f}" if rs else "-")
        dr = {k: times.get("defaults", {}).get(k, float("nan")) / base[k] for k in pts}
        over = [k for k, r in dr.items() if r > 1.25]
        cells.append(", ".join(f"{shape_text(k)} {dr[k]:.2f}x" for k in over[:6]) +
                     (f" and {len(over) - 6} more" if len(over) > 6 else "") if over else "none")
        for who, src in (("cub", "tuned"), ("torch", "tuned"), ("torch", "defaults")):
            rs = [times[who][k] / times[src][k] for k in pts if k in times.get(who, {}) and k in times.get(src, {})]
            cells.append(f"{min(rs):.2f}x" if rs else "-")
        print("| " + " | ".join(cells) + " |")
        rs = [r for r in dr.values() if r == r]
        if rs:
            torch_miss = [k for k in pts if k in times.get("torch", {}) and k in times.get("defaults", {})
                          and base[k] <= times["torch"][k] < times["defaults"][k]]
            verdict.append((p, statistics.median(rs), max(rs), len(torch_miss)))
    print("\n### The built-in defaults' targets (at most 1.25x tuned at every point, 1.1x at the median, "
          "not slower than torch where tuned is not)\n")
    print("| problem | median | worst | points slower than torch where tuned is not | met |")
    print("|---|---:|---:|---:|---|")
    for p, med, worst, miss in verdict:
        ok = med <= 1.1 and worst <= 1.25 and miss == 0
        print(f"| {p} | {med:.3f} | {worst:.3f} | {miss} | {'yes' if ok else 'no'} |")
    print(f"\nresults that FAILED their check: {failed}")
    return 1 if failed else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--split-shipped")
    ap.add_argument("--model", required=True)
    ap.add_argument("--mine")
    ap.add_argument("--others")
    ap.add_argument("--dir")
    ap.add_argument("--tuned-from", default="this GPU's own tuning")
    a = ap.parse_args()
    if a.split_shipped:
        if not (a.mine and a.others):
            ap.error("--split-shipped needs --mine and --others")
        split(a.split_shipped, a.model, a.mine, a.others)
        return 0
    if not a.dir:
        ap.error("--dir or --split-shipped")
    return report(a.dir, a.model, a.tuned_from)


if __name__ == "__main__":
    sys.exit(main())
