#!/usr/bin/env python3
"""torch and CuPy on the segmented problems (rows, columns, offsets), timed the way reduce_bench_segmented times.

Shapes: the grid of reduce_bench_segmented (same flags, same defaults): rows and columns reduce a
dense rows x cols matrix (torch.sum / amin / amax(x, dim=-1) and dim=0; cupy.sum / min / max with
axis=-1 and axis=0), segments reduce an array given int64 offsets with a skewed (Pareto) length
distribution, the same offsets as the C++ bench (tuner/reference.cpp skewed_offsets, ported;
equal up to rare 1-ulp differences of pow on the GPU): torch.segment_reduce(x, op, offsets=...).

Method (bench/frameworks.py's Timer): a fill of a 2 x L2 buffer before each call (cold L2), a spin
kernel that hides Python's dispatch, CUDA events around the call, warm-up calls, the median of the
timed calls. Every result is checked: the reference is exact (float32 data in [-1, 1) lie on a
2^-23 grid, so their sums are exact in int64 after scaling by 2^24); float sums must be within
gamma(min(len, 17)) sum|x| + u |ref| (u = 2^-24), integers (wrapping int32 sums) and min/max exact.
Empty segments of min/max are not checked (the frameworks' identities differ).

Output: Markdown on stdout; with --csv the measurements in reduce_bench_segmented's CSV columns
(contestants torch and cupy; the call in the config column), so the two files can be joined on
problem, dtype, op, rows, cols, segments and n. With --rt-csv (reduce_bench_segmented's CSV of
the same run) the tables add reduce-tune's time and the ratios framework / reduce-tune.
Exit code: 0 all checks passed, 1 a check FAILED, 4 torch not available.
"""
import argparse
import csv
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from frameworks import Timer, fmt_size, fmt_us, gpu_figures, parse_size  # noqa: E402

CSV_HEADER = ("problem,dtype,op,rows,cols,segments,n,count,length,bytes_read,bytes_written,mode,"
              "contestant,median_us,min_us,all_median_us,calls,gbps,pct_peak,ok,config")
QUICK_TOTALS = "2^20,2^24"
QUICK_LENGTHS = "1,4,16,64,256,1024,4096,2^16,2^20,2^24"
TOTALS = "2^16,2^20,2^24,2^28"
LENGTHS = ",".join(f"2^{e}" for e in range(25))
U32 = 2.0 ** -24
M64 = 2 ** 64


def cases(problem, totals, lengths):
    """reduce_bench_segmented's grid: (n, rows, cols, segments), length <= total, no repeats."""
    out, seen = [], set()
    for total in totals:
        for length in lengths:
            if length == 0 or length > total:
                continue
            count = total // length
            if problem == "segments":
                c = (total, 0, 0, count)
            else:
                c = (count * length, count, length, 0)
            if (c[0], count) not in seen:
                seen.add((c[0], count))
                out.append(c)
    # By n, then the row length (cols) or the mean segment length, as the C++ bench.
    return sorted(out, key=lambda c: (c[0], c[0] / c[3] if problem == "segments" else c[2]))


def s64(c):
    """A 64-bit constant as the int64 with the same bits."""
    c %= M64
    return c - M64 if c >= 2 ** 63 else c


def lsr(x, k):
    """Logical right shift of int64 tensors (>> is arithmetic)."""
    return (x >> k) & ((1 << (64 - k)) - 1)


def mix(x):
    """tuner/reference.cpp's mix (splitmix64's finalizer) on int64 tensors (wrapping)."""
    x = x + s64(0x9e3779b97f4a7c15)
    x = (x ^ lsr(x, 30)) * s64(0xbf58476d1ce4e5b9)
    x = (x ^ lsr(x, 27)) * s64(0x94d049bb133111eb)
    return x ^ lsr(x, 31)


def skewed_offsets(torch, segments, total, seed):
    """tuner/reference.cpp's skewed_offsets: Pareto (shape 1.2) lengths scaled to `total`."""
    i = torch.arange(segments, dtype=torch.int64, device="cuda")
    u = (lsr(mix(i + s64(seed * 0x2545f4914f6cdd1d)), 11) + 1).double() / 2.0 ** 53
    lens = u.pow(-1 / 1.2) - 1
    s = lens.cpu().cumsum(0)[-1].item()  # the C++ sums in order; the CPU's cumsum does too
    scale = total / s if s > 0 else 0.0
    at = (lens * scale).long().cumsum(0).clamp_(max=total)
    off = torch.cat([torch.zeros(1, dtype=torch.int64, device="cuda"), at])
    off[-1] = total
    return off


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help=f"totals {QUICK_TOTALS}, lengths {QUICK_LENGTHS}, 10 calls")
    ap.add_argument("--problems", default="rows,columns,segments")
    ap.add_argument("--dtypes", default="int32,float32")
    ap.add_argument("--ops", default="sum")
    ap.add_argument("--totals")
    ap.add_argument("--lengths")
    ap.add_argument("--reps", type=int)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--spin-us", type=float, default=100.0)
    ap.add_argument("--budget-s", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=20240601)
    ap.add_argument("--no-cupy", action="store_true")
    ap.add_argument("--csv", help="write the measurements here")
    ap.add_argument("--rt-csv", help="reduce_bench_segmented --csv output of the same run")
    args = ap.parse_args()
    totals = [parse_size(s) for s in (args.totals or (QUICK_TOTALS if args.quick else TOTALS)).split(",") if s]
    lengths = [parse_size(s) for s in (args.lengths or (QUICK_LENGTHS if args.quick else LENGTHS)).split(",") if s]
    reps = args.reps or (10 if args.quick else 30)

    try:
        import torch
        if not torch.cuda.is_available():
            raise RuntimeError("torch.cuda.is_available() is False")
    except Exception as e:  # noqa: BLE001 - any import or CUDA failure means: skip
        print(f"\n### Frameworks, segmented\n\ntorch not available ({e}): skipped.")
        return 4
    cupy, cupy_err = None, "--no-cupy"
    if not args.no_cupy:
        try:
            import cupy
        except Exception as e:  # noqa: BLE001
            cupy, cupy_err = None, e

    props, l2, clock_khz, peak = gpu_figures(torch, cupy)
    timer = Timer(torch, l2, clock_khz, args.spin_us, args.warmup, reps, args.budget_s, min_reps=8)
    rt = {}
    if args.rt_csv:
        with open(args.rt_csv) as f:
            for row in csv.DictReader(line for line in f if not line.startswith("#")):
                if row["contestant"] == "reduce-tune" and row["mode"] == "cold" and row["ok"] == "1":
                    key = (row["problem"], row["dtype"], row["op"], int(row["rows"]), int(row["cols"]),
                           int(row["segments"]), int(row["n"]))
                    rt[key] = float(row["median_us"])
    out = open(args.csv, "w") if args.csv else None
    if out:
        out.write(f"# device={props.name};peak_gbps={peak or 0};l2_bytes={l2};source=frameworks_segmented.py;"
                  f"torch={torch.__version__};cupy={cupy.__version__ if cupy is not None else 'none'}\n")
        out.write(CSV_HEADER + "\n")

    print("\n## torch / CuPy, segmented problems (cold L2, same method)\n")
    print(f"- torch {torch.__version__}, cupy {cupy.__version__ if cupy is not None else f'not available ({cupy_err})'}, "
          f"device {props.name}; {args.warmup} warm-up + {reps} timed calls (fewer, not below 8, where they "
          f"would take over {args.budget_s} s), median; flush {2 * l2 / 2**20:.0f} MiB; spin {args.spin_us:.0f} us.")
    print("- rows: `torch.sum/amin/amax(x, dim=-1)` (int32 sum: `dtype=torch.int32`, wrapping), "
          "`cupy.sum/min/max(x, axis=-1)`; columns: the same with dim=0 / axis=0; segments: "
          "`torch.segment_reduce(x, 'sum'|'min'|'max', offsets=offsets)`. GB/s = bytes read (elements, "
          "and the offsets for segments) / time; torch/rt = torch time / reduce-tune time (above 1: "
          "reduce-tune faster; other data of the same distribution).")

    failed = 0
    problems = [p for p in args.problems.split(",") if p]
    for dt in [d for d in args.dtypes.split(",") if d]:
        tdt = {"int32": torch.int32, "float32": torch.float32}.get(dt)
        if tdt is None:
            print(f"\n(dtype {dt}: not supported by this script, skipped)")
            continue
        max_n = max([c[0] for p in problems for c in cases(p, totals, lengths)] or [1])
        gen = torch.Generator(device="cuda")
        gen.manual_seed(args.seed)
        if dt == "float32":
            data = torch.rand(max_n, device="cuda", generator=gen).mul_(2).sub_(1)
            scaled = (data.double() * 2.0 ** 24).long()  # exact: the data lie on a 2^-23 grid
        else:
            data = torch.randint(-2 ** 31, 2 ** 31, (max_n,), dtype=torch.int32, device="cuda", generator=gen)
            scaled = data.long()
        for op in [o for o in args.ops.split(",") if o]:
            for problem in problems:
                failed += run_problem(torch, cupy, timer, out, peak, rt, problem, dt, op, data, scaled,
                                      cases(problem, totals, lengths), args.seed)
        del data, scaled
        torch.cuda.empty_cache()
    if out:
        out.close()
    print(f"\n**Frameworks (segmented) summary**: {failed} FAILED")
    return 1 if failed else 0


def reference(torch, problem, op, dt, x, xs, rows, cols, off):
    """(reference float64/int64 tensor, sum|x| float64 tensor or None, lengths tensor, check mask)."""
    n = x.numel()
    if problem == "segments":
        lens = off[1:] - off[:-1]
        if op == "sum":
            pre = torch.cat([torch.zeros(1, dtype=torch.int64, device="cuda"), xs.cumsum(0)])
            ref = pre[off[1:]] - pre[off[:-1]]
            apre = torch.cat([torch.zeros(1, dtype=torch.int64, device="cuda"), xs.abs().cumsum(0)])
            asum = apre[off[1:]] - apre[off[:-1]]
        else:
            ids = torch.repeat_interleave(torch.arange(lens.numel(), device="cuda"), lens, output_size=n)
            fill = float("inf") if op == "min" else float("-inf")
            ref = torch.full((lens.numel(),), fill, dtype=torch.float64, device="cuda")
            ref.scatter_reduce_(0, ids, x.double(), "amin" if op == "min" else "amax", include_self=False)
            asum = None
        return ref, asum, lens, lens > 0
    dim = -1 if problem == "rows" else 0
    m = xs.view(rows, cols)
    count = rows if problem == "rows" else cols
    lens = torch.full((count,), cols if problem == "rows" else rows, dtype=torch.int64, device="cuda")
    if op == "sum":
        return m.sum(dim), m.abs().sum(dim), lens, None
    xd = x.view(rows, cols).double()
    return (xd.amin(dim) if op == "min" else xd.amax(dim)), None, lens, None


def check(torch, dt, op, got, ref, asum, lens, mask):
    """'' if every result is right, else what the first wrong one was."""
    if op == "sum" and dt == "float32":
        refd = ref.double() * U32  # back from the 2^24 scale: exact
        ad = asum.double() * U32
        k = lens.clamp(max=17).double() * U32
        bound = k / (1 - k) * ad + U32 * refd.abs()
        bad = ~((got.double() - refd).abs() <= bound)
    elif op == "sum":
        want = ((ref + 2 ** 31) % 2 ** 32) - 2 ** 31
        bad = got.long() != want
    else:
        bad = got.double() != ref.double()
    if mask is not None:
        bad &= mask
    if not bool(bad.any()):
        return ""
    i = int(bad.nonzero()[0, 0])
    want = ref[i].item() * (U32 if op == "sum" and dt == "float32" else 1)
    return f"result {i} of {got.numel()} ({int(lens[i])} elements): got {got[i].item()}, expected {want}"


def run_problem(torch, cupy, timer, out, peak, rt, problem, dt, op, data, scaled, grid, seed):
    """Times and checks torch (and CuPy) on every shape of one problem; returns the FAILED count."""
    es = 4
    print(f"\n### {problem}: {dt} {op}, cold L2\n")
    head = "segments | mean length" if problem == "segments" else "rows | cols"
    print(f"| n | {head} | torch us | GB/s | cupy us | GB/s | rt us | torch/rt | cupy/rt | check |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    failed = 0
    for n, rows, cols, segs in grid:
        x, xs = data[:n], scaled[:n]
        off = skewed_offsets(torch, segs, n, seed) if problem == "segments" else None
        count = segs if problem == "segments" else (rows if problem == "rows" else cols)
        bytes_read = n * es + ((segs + 1) * 8 if problem == "segments" else 0)
        ref, asum, lens, mask = reference(torch, problem, op, dt, x, xs, rows, cols, off)
        torch.cuda.synchronize()
        contestants = []
        tname = {"sum": "sum", "min": "amin", "max": "amax"}[op]
        if problem == "segments":
            contestants.append(("torch", f"torch.segment_reduce(x, '{op}', offsets=offsets)",
                                lambda x=x, op=op, off=off: torch.segment_reduce(x, op, offsets=off)))
        else:
            dim = -1 if problem == "rows" else 0
            m = x.view(rows, cols)
            kw = {"dtype": torch.int32} if op == "sum" and dt == "int32" else {}
            # Default arguments bind the values now (a closure would see the loop's later ones).
            contestants.append(("torch", f"torch.{tname}(x, dim={dim}{', dtype=torch.int32' if kw else ''})",
                                lambda f=getattr(torch, tname), m=m, dim=dim, kw=kw: f(m, dim=dim, **kw)))
            if cupy is not None:
                ckw = {"dtype": cupy.int32} if kw else {}
                contestants.append(("cupy", f"cupy.{op}(x, axis={dim}{', dtype=cupy.int32' if ckw else ''})",
                                    lambda f=getattr(cupy, op), mc=cupy.from_dlpack(m), dim=dim, kw=ckw:
                                    f(mc, axis=dim, **kw)))
        cells, checks, times = {}, [], {}
        for name, call, run in contestants:
            try:
                med, mn, calls, res = timer.time(run)
            except NotImplementedError as e:  # a dtype the call does not support (segment_reduce: int)
                checks.append(f"{name}: n/a ({str(e).splitlines()[0][:80]})")
                continue
            except Exception as e:  # noqa: BLE001 - report and go on
                failed += 1
                checks.append(f"FAILED: {name}: {type(e).__name__}: {str(e).splitlines()[0][:120]}")
                continue
            got = torch.from_dlpack(res) if name == "cupy" else res
            why = check(torch, dt, op, got.reshape(-1), ref, asum, lens, mask)
            ok = not why
            failed += not ok
            checks.append(f"{name} ok" if ok else f"FAILED: {name}: {why}")
            gbps = bytes_read / (med * 1e-6) / 1e9
            times[name] = med
            cells[name] = f"{fmt_us(med)} | {gbps:.0f}"
            if out:
                out.write(f"{problem},{dt},{op},{rows},{cols},{segs},{n},{count},{n / count:.10g},{bytes_read},"
                          f"{count * es},cold,{name},{med},{mn},{med},{calls},{gbps},"
                          f"{100 * gbps / peak if peak else 0},{int(ok)},\"{call}\"\n")
        r = rt.get((problem, dt, op, rows, cols, segs, n))
        ratio = lambda k: f"{times[k] / r:.2f}" if r and k in times else "-"  # noqa: E731
        shape = f"{fmt_size(segs)} | {n / segs:.10g}" if problem == "segments" else f"{fmt_size(rows)} | {fmt_size(cols)}"
        print(f"| {fmt_size(n)} | {shape} | {cells.get('torch', '- | -')} | {cells.get('cupy', '- | -')} | "
              f"{fmt_us(r) if r else '-'} | {ratio('torch')} | {ratio('cupy')} | {'; '.join(checks)} |")
        sys.stdout.flush()
        del ref, asum, lens, mask, off
        if cupy is not None:
            cupy.get_default_memory_pool().free_all_blocks()
    return failed


if __name__ == "__main__":
    sys.exit(main())
