#!/usr/bin/env python3
"""A user-defined sum of squares: reduce_tune.Reduction beside CuPy's ReductionKernel, float32.

The same reduction both ways: reduce_tune.Reduction(map="x * x", combine="a + b", identity="0")
and cupy.ReductionKernel("T x", "T y", "x * x", "a + b", "y = a", "0"), over the whole array at
2^14..2^28 elements and along axis 0 (dim=0) of a 4096 x 4096 matrix. Both take CuPy arrays and
return CuPy arrays.

Method: bench/frameworks.py's Timer (a fill of 2 x L2 before each call: cold; a spin kernel hiding
Python's dispatch; CUDA events around the call; warm-up calls, then the median of the timed
calls). Every result of both is checked against NumPy's float64 sum of squares of the same data,
to a relative 1e-5 (each result is a sum of non-negative terms: a float32 sum's rounding stays far
inside it). Data: uniform in [-1, 1).

reduce_tune runs the reduction with what the tuning store holds for it: its own rows where
`reduce-tune tune --reduction FILE` tuned it on this GPU (--write-description FILE writes its
description in that command's format), else the rows of the built-in sum (related), else the
built-in defaults (`reduce-tune query --lookup --op user:<hash>` says which; the header names the
hash). The ratio is CuPy's time over reduce_tune's (above 1:
reduce_tune faster); the target is 1.2 or more at every size from 2^14.

Output: Markdown on stdout. Exit code: 0 all checks passed, 1 a check FAILED, 4 torch, CuPy or a
GPU not available.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from frameworks import Timer, fmt_size, fmt_us, gpu_figures, parse_size  # noqa: E402

TARGET = 1.2
MAP, COMBINE, IDENTITY = "x * x", "a + b", "0"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default=",".join(f"2^{k}" for k in range(14, 29)))
    ap.add_argument("--matrix", default="4096x4096", help="ROWSxCOLS reduced along axis 0")
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--spin-us", type=float, default=100.0)
    ap.add_argument("--write-description", metavar="FILE",
                    help="write the reduction for `reduce-tune tune --reduction FILE` and exit")
    a = ap.parse_args()
    if a.write_description:
        with open(a.write_description, "w") as f:
            f.write(f"# a sum of squares (bench/user_cupy.py)\nmap = {MAP}\ncombine = {COMBINE}\n"
                    f"identity = {IDENTITY}\n")
        return 0
    try:
        import torch
        if not torch.cuda.is_available():
            raise RuntimeError("no CUDA device")
        import cupy
        import numpy as np
    except Exception as e:  # noqa: BLE001
        print(f"user_cupy.py: torch, CuPy and a GPU are needed ({e}): nothing measured", file=sys.stderr)
        return 4
    import reduce_tune as rt

    props, l2, clock_khz, peak = gpu_figures(torch, cupy)
    timer = Timer(torch, l2, clock_khz or 1_700_000, a.spin_us, a.warmup, a.reps, 2.0)
    mine = rt.Reduction(map=MAP, combine=COMBINE, identity=IDENTITY)
    theirs = cupy.ReductionKernel("T x", "T y", "x * x", "a + b", "y = a", "0", "rt_bench_sumsq")
    rows, cols = (int(v) for v in a.matrix.lower().split("x"))
    print(f"# A user-defined sum of squares: reduce_tune against CuPy's ReductionKernel\n\n"
          f"- **Device**: {props.name}, peak {peak or float('nan'):.0f} GB/s\n"
          f"- **cupy** {cupy.__version__}, **torch** {torch.__version__}, **reduce_tune** {rt.__version__}; "
          f"the reduction {mine.name} (what it runs with: `reduce-tune query --lookup --device 0 --op "
          f"{mine.name} --n 2^24`)\n"
          f"- **Method**: float32, cold L2 (a {2 * l2 >> 20} MiB fill before each call), CUDA events, "
          f"{a.warmup} warm-up and the median of up to {a.reps} timed calls; every result checked "
          f"against NumPy (float64); ratio = CuPy time / reduce_tune time (target >= {TARGET})\n")

    rng = np.random.default_rng(14)
    failed, ratios = 0, []

    def check(got, want):
        g = np.asarray(cupy.asnumpy(got), dtype=np.float64)
        return bool(np.all(np.abs(g - want) <= 1e-5 * np.abs(want) + 1e-30))

    def row(label, n_read, x, axis, want):
        nonlocal failed
        t_rt, _, _, got_rt = timer.time(lambda: mine(x, axis))
        t_cp, _, _, got_cp = timer.time(lambda: theirs(x, axis=axis))
        ok_rt, ok_cp = check(got_rt, want), check(got_cp, want)
        failed += (not ok_rt) + (not ok_cp)
        gbps = n_read * 4 / (t_rt * 1e-6) / 1e9
        pct = f"{100 * gbps / peak:.1f}" if peak else "-"
        ratios.append((label, t_cp / t_rt))
        print(f"| {label} | {fmt_us(t_rt)} | {gbps:.0f} | {pct} | {fmt_us(t_cp)} | {t_cp / t_rt:.2f} | "
              f"{'ok' if ok_rt else 'FAILED'} / {'ok' if ok_cp else 'FAILED'} |")

    print("| problem | reduce_tune us | GB/s | % of peak | CuPy us | CuPy / reduce_tune | check (rt / CuPy) |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for n in (parse_size(s) for s in a.sizes.split(",")):
        host = rng.uniform(-1, 1, n).astype(np.float32)
        x = cupy.asarray(host)
        h64 = host.astype(np.float64)
        row(f"whole array, n = {fmt_size(n)}", n, x, None, np.array(np.dot(h64, h64)))
        del x
    host = rng.uniform(-1, 1, (rows, cols)).astype(np.float32)
    x = cupy.asarray(host)
    h64 = host.astype(np.float64)
    row(f"axis 0 of {rows} x {cols}", rows * cols, x, 0, (h64 * h64).sum(axis=0))

    below = [(label, r) for label, r in ratios if r < TARGET]
    worst = min(ratios, key=lambda p: p[1])
    print(f"\n**user_cupy summary**: {failed} FAILED; CuPy / reduce_tune {worst[1]:.2f}x at worst "
          f"({worst[0]}); {len(below)} of {len(ratios)} below the {TARGET}x target"
          + (": " + ", ".join(f"{label} {r:.2f}x" for label, r in below) if below else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
