#!/usr/bin/env python3
"""reduce_tune's ops beside torch's, float32, cold L2, in one run.

The ops the package has beside sum (mean, sum of squares, the 1- and 2-norms, count_nonzero, any,
all, argmax, argmin, logsumexp, var, std, dot) on three shapes of 2^24 elements: the whole array,
rows (dim=-1) of 2^20 x 16 and columns (dim=0) of 65536 x 256; torch's counterpart for each:
torch.mean, (x * x).sum(dim), torch.linalg.vector_norm(ord=1, 2), torch.count_nonzero, torch.any,
torch.all (of x != 0 for a float array, as a caller writes it), torch.argmax, torch.argmin,
torch.logsumexp, torch.var, torch.std, torch.dot of the whole arrays and (x * y).sum(dim) along a
dimension (dot reads two arrays: its % of peak counts both). A plain read of the same bytes (a streaming-read ceiling:
torch.sum of the whole array at 2^24 is not one, so the ceiling is the bytes over the GPU's peak
bandwidth) gives "% of peak".

Method: bench/frameworks.py's Timer (a fill of 2 x L2 before each call, a spin kernel hiding the
dispatch, CUDA events around the call, warm-up, the median of the timed calls). Every
reduce_tune result is checked against torch's on the same data (float results to a relative
1e-4 of the largest |result|, counts and booleans exactly). Data: uniform in [-1, 1) with a
quarter of the elements set to zero (so the counts and any/all mean something; all() is false).
Output: Markdown on stdout. Exit code: 0 all checks passed, 1 a check FAILED, 4 torch or a GPU
not available. `--ops` and `--shapes` pick some of them (e.g. `--ops argmax,var,logsumexp --shapes
columns`); reduce_tune reads the store `$REDUCE_TUNE_DB` names, so one run can time a store that a
`reduce-tune tune --db` run filled against another.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from frameworks import Timer, gpu_figures  # noqa: E402

SHAPES = (("whole array", (1 << 24,), None), ("rows, 2^20 x 16", (1 << 20, 16), -1),
          ("columns, 65536 x 256", (65536, 256), 0))
SHAPE_NAMES = ("array", "rows", "columns")  # --shapes' names of SHAPES, in order


def ops(torch, rt):
    """(name, reduce_tune call, torch call, inputs read): the calls of (x, y, dim); y is read by
    dot alone."""
    vn = torch.linalg.vector_norm

    def tsum(x, d):
        return (x * x).sum() if d is None else (x * x).sum(d)

    def tred(f):
        return lambda x, d: f(x) if d is None else f(x, d)
    def one(f):  # a call of x and dim, y unread
        return lambda x, y, d: f(x, d)

    def tdot(x, y, d):
        return torch.dot(x, y) if d is None else (x * y).sum(d)
    return (
        ("mean", one(lambda x, d: rt.mean(x, d)), one(tred(torch.mean)), 1),
        ("sumsq", one(lambda x, d: rt.sumsq(x, d)), one(tsum), 1),
        ("norm1", one(lambda x, d: rt.norm(x, 1, d)), one(lambda x, d: vn(x, 1, d)), 1),
        ("norm2", one(lambda x, d: rt.norm(x, 2, d)), one(lambda x, d: vn(x, 2, d)), 1),
        ("count_nonzero", one(lambda x, d: rt.count_nonzero(x, d)), one(tred(torch.count_nonzero)), 1),
        ("any", one(lambda x, d: rt.any(x, d)), one(lambda x, d: tred(torch.any)(x != 0, d)), 1),
        ("all", one(lambda x, d: rt.all(x, d)), one(lambda x, d: tred(torch.all)(x != 0, d)), 1),
        ("argmax", one(lambda x, d: rt.argmax(x, d)), one(tred(torch.argmax)), 1),
        ("argmin", one(lambda x, d: rt.argmin(x, d)), one(tred(torch.argmin)), 1),
        ("logsumexp", one(lambda x, d: rt.logsumexp(x, d)),
         one(lambda x, d: torch.logsumexp(x, 0 if d is None else d)), 1),
        ("var", one(lambda x, d: rt.var(x, d)), one(tred(torch.var)), 1),
        ("std", one(lambda x, d: rt.std(x, d)), one(tred(torch.std)), 1),
        ("dot", lambda x, y, d: rt.dot(x, y, d), tdot, 2),
        ("sum", one(lambda x, d: rt.sum(x, d)), one(tred(torch.sum)), 1),
    )


def agree(torch, got, want):
    if got.shape != want.shape:
        return False
    if want.dtype.is_floating_point:
        scale = max(float(want.abs().max()), 1e-30) if want.numel() else 1.0
        return bool(((got.double() - want.double()).abs() <= 1e-4 * scale).all())
    return bool(torch.equal(got.to(want.dtype), want))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--spin-us", type=float, default=100.0)
    ap.add_argument("--ops", default="", help="comma-separated ops to time (default: all)")
    ap.add_argument("--shapes", default="",
                    help="comma-separated shapes to time: array, rows, columns (default: all)")
    a = ap.parse_args()
    only_ops = set(filter(None, a.ops.split(",")))
    only_shapes = set(filter(None, a.shapes.split(",")))
    unknown = only_shapes - set(SHAPE_NAMES)
    if unknown:
        print(f"ops_torch.py: unknown shape(s) {', '.join(sorted(unknown))}; "
              f"expected {', '.join(SHAPE_NAMES)}", file=sys.stderr)
        return 2
    try:
        import torch
    except ImportError:
        print("ops_torch.py: no torch", file=sys.stderr)
        return 4
    if not torch.cuda.is_available():
        print("ops_torch.py: no CUDA device", file=sys.stderr)
        return 4
    try:
        import cupy
    except ImportError:
        cupy = None
    import reduce_tune as rt
    props, l2, clock_khz, peak = gpu_figures(torch, cupy)
    timer = Timer(torch, l2, clock_khz or 1_700_000, a.spin_us, a.warmup, a.reps, 2.0)
    g = torch.Generator(device="cuda").manual_seed(7)
    print(f"# reduce_tune ops against torch\n\n- **Device**: {props.name}, peak "
          f"{peak:.0f} GB/s\n- **torch**: {torch.__version__}\n- **Method**: cold L2, median of "
          f"{a.reps} timed calls; float32; ratio = torch time / reduce_tune time (above 1: "
          "reduce_tune faster); % of peak = bytes read / time / peak bandwidth\n")
    failed = 0
    print("| op | shape | reduce_tune us | % of peak | torch us | torch / reduce_tune | check |")
    print("|---|---|---:|---:|---:|---:|---|")
    known = {name for name, _, _, _ in ops(torch, rt)}
    if only_ops - known:
        print(f"ops_torch.py: unknown op(s) {', '.join(sorted(only_ops - known))}", file=sys.stderr)
        return 2
    for (label, shape, dim), short in zip(SHAPES, SHAPE_NAMES):
        if only_shapes and short not in only_shapes:
            continue
        x = torch.rand(shape, device="cuda", generator=g) * 2 - 1
        x[torch.rand(shape, device="cuda", generator=g) < 0.25] = 0
        y = torch.rand(shape, device="cuda", generator=g) * 2 - 1
        for name, mine, theirs, inputs in ops(torch, rt):
            if only_ops and name not in only_ops:
                continue
            t_rt, _, _, got = timer.time(lambda: mine(x, y, dim))
            t_th, _, _, want = timer.time(lambda: theirs(x, y, dim))
            ok = agree(torch, got, want)
            failed += not ok
            read = inputs * x.numel() * 4
            pct = 100.0 * read / (t_rt * 1e-6) / (peak * 1e9) if peak else float("nan")
            print(f"| {name} | {label} | {t_rt:.2f} | {pct:.1f} | {t_th:.2f} | {t_th / t_rt:.2f} | "
                  f"{'ok' if ok else 'FAILED'} |")
    print(f"\n**ops_torch summary**: {failed} FAILED")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
