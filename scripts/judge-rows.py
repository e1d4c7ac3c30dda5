#!/usr/bin/env python3
"""Judges, on a GPU's full default sweeps, what the lookup would give it from the shipped tuning of
other GPUs against what the built-in defaults give it.

For each GPU of the sweeps (a model and its SM count) and each swept point (problem, dtype, shape
of the float32 and int32 sums): the ratio to the point's best of
  * model: the fastest shipped row of the same model name at the shape (what the `shipped` grade
    takes), where the shipped tuning's rows of that model were measured with another SM count;
  * arch: the fastest shipped row of any GPU of the same compute capability (`same_arch`);
  * defaults: the fast configuration of the built-in table derived from every other GPU's sweeps
    (leave one out) and of the table derived from every GPU (runtime/defaults_table.inc).
A configuration's time is its own or its evict-first twin's (scripts/derive-defaults.py,
twin_of); where the sweeps measured neither, it is counted apart ("not measured").

Usage: judge-rows.py [--on '32 SMs' ...] [--shipped tuning.db] [--stores sweeps.db.gz ...]
Python 3 standard library only.
"""
import argparse
import importlib.util
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location("derive", os.path.join(HERE, "derive-defaults.py"))
derive = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(derive)


def sweeps(path):
    """{(gpu label, cc): {(problem, dtype, count, n): {raw key: fastest median}}}"""
    db = derive.open_store(path)
    rows = db.execute(
        "SELECT d.name, d.sm_count, d.cc_major, d.cc_minor, m.problem, m.dtype, m.count, m.n, "
        "m.key, m.median_us FROM measurements m JOIN devices d ON d.uuid = m.device_uuid "
        "WHERE m.valid = 1 AND m.median_us > 0 AND m.op = 'sum'").fetchall()
    db.close()
    out = {}
    for name, sm, ccx, ccy, problem, dtype, count, n, key, us in rows:
        if problem not in derive.PROBLEMS or key.startswith("neighbored_gmem"):
            continue  # in-place variants serve no call by default
        pts = out.setdefault((name, sm, ccx * 10 + ccy), {})
        t = pts.setdefault((problem, dtype, count, n), {})
        t[key] = min(t.get(key, float("inf")), us)
    return out


def ratio(times, key):
    if key is None:
        return None
    best = min(times.values())
    for k in (key, derive.twin_of(key)):
        if k in times:
            return times[k] / best
    return None


def fastest(shipped, gpus, point):
    """The fastest row of those GPUs' shipped tuning at the point's shape, or None."""
    rows = [(t, k) for g in gpus for k, t in shipped[g].get(point, {}).items()]
    return min(rows)[1] if rows else None


def cells(rs):
    got = [r for r in rs if r is not None]
    if not got:
        return ["-", "-", "%d" % len(rs)]
    return ["%.3f" % statistics.median(got), "%.3f" % max(got), "%d" % (len(rs) - len(got))]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shipped", default=derive.SHIPPED)
    ap.add_argument("--stores", nargs="+", default=derive.EXHAUSTIVE)
    ap.add_argument("--on", nargs="+", default=[],
                    help="judge on these GPUs only (parts of 'model, N SMs'); default: every GPU "
                         "whose model the shipped tuning holds with another SM count")
    a = ap.parse_args()
    shipped = sweeps(a.shipped)
    swept = {}
    for s in a.stores:
        for g, pts in sweeps(s).items():
            swept.setdefault(g, {}).update(pts)
    points = derive.load([a.shipped] + a.stores, [])
    full = derive.tables(derive.clone(points))
    out = ["| judged on | problem | points | model rows: median | worst | not measured "
           "| arch rows: median | worst | not measured | defaults, left out: median | worst "
           "| not measured | defaults, all: median | worst | not measured |",
           "|---|---|---:|" + "---:|" * 12]
    for g in sorted(swept):
        name, sm, cc = g
        label = derive.gpu_label(name, sm)
        same = [s for s in shipped if s[0] == name]
        if a.on:
            if not any(x.lower() in label.lower() for x in a.on):
                continue
        elif not same or any(s[1] == sm for s in same):
            continue
        arch = [s for s in shipped if s[2] == cc]
        held = derive.tables(derive.clone([p for p in points if p.device != label]))
        for problem in derive.PROBLEMS:
            pts = sorted(p for p in swept[g] if p[0] == problem)
            cols = {c: [] for c in ("model", "arch", "held", "full")}
            for pt in pts:
                times = swept[g][pt]
                cols["model"].append(ratio(times, fastest(shipped, same, pt)))
                cols["arch"].append(ratio(times, fastest(shipped, arch, pt)))
                probe = derive.Point(label, sm, problem, pt[1], "sum", pt[2], pt[3])
                for c, t in (("held", held), ("full", full)):
                    cols[c].append(ratio(times, derive.find(t[problem], problem, probe)["fast"]))
            out.append("| %s | %s | %d | %s |" % (
                label, derive.TABLE_NAMES[problem], len(pts),
                " | ".join(sum((cells(cols[c]) for c in ("model", "arch", "held", "full")), []))))
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
