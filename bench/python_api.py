#!/usr/bin/env python3
"""reduce_tune.sum from Python against torch.sum and cupy.sum, timed like reduce_bench.

Device time: CUDA events around one call; W warm-up and R timed calls; cold L2 (a fill of a
2 x L2 buffer before each call); a spin kernel (torch.cuda._sleep) before the start event hides
Python's dispatch; the median. Whole arrays 2^10..2^28 (float32, and int32 with --dtypes), and the
row problem (rows of a 2^24-element float32 matrix, row length 1..2^24; dim=-1 and dim=0).
Every result is checked (float32 within 1e-6 of sum |x|, int32 exact with wrap).

Host time per call: K back-to-back calls, then one synchronisation: the time until the last call
returned / K ("enqueue") and until the stream finished / K ("total"), for the C++ call
(Reducer::reduce_async, through the extension's timing loop: bench/overhead.cpp's library_us),
reduce_tune.sum(x, out=o), reduce_tune.sum(x) (allocates the 0-d result), torch.sum(x), and
reduce_tune.sum(x, out=o, stream=s) (the general path: protocols, plan, stream checks). Then
reduce_tune against torch.sum at 2^10 float32 elements, whole (a vector) and dim=-1 (a 32 x 32
matrix), measured side by side (the two alternate within each trial), with their ratio (the
package's aim: at most 0.8), and where the package's time goes: the C++ call in a C++ loop, the
same call from Python (the entries that take a result and that make a pooled one, and nanobind's),
a pooled result alone, the eager path itself (the public function's frame aside), a torch result
tensor (as the package makes results too large to pool, and two other ways), the
driver queries the call path may make, one call at a time on an idle GPU (the host's own cost,
which back-to-back calls hide where the GPU is the slower), and how many warm calls took the
library's full path.

Prints Markdown. Exit code: 0 all checks passed, 1 a check failed, 4 torch or a GPU not available.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from frameworks import fmt_size, fmt_us, parse_size  # noqa: E402  (the sizes reduce_bench takes)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default=",".join(f"2^{k}" for k in range(10, 29)))
    ap.add_argument("--dtypes", default="float32")
    ap.add_argument("--row-total", default="2^24", help="elements of the row-problem matrix")
    ap.add_argument("--row-lengths", default="1,4,16,64,256,1024,4096,2^16,2^20,2^22,2^24")
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--spin-us", type=float, default=100.0)
    ap.add_argument("--host-calls", type=int, default=2000)
    ap.add_argument("--host-sizes", default="2^10,2^20")
    args = ap.parse_args()

    try:
        import torch
        if not torch.cuda.is_available():
            raise RuntimeError("torch.cuda.is_available() is False")
    except Exception as e:  # noqa: BLE001
        print(f"torch not available ({e}): nothing measured")
        return 4
    import reduce_tune as rt
    from reduce_tune import _dtypes, _ext
    try:
        import cupy
        cupy_err = None
    except Exception as e:  # noqa: BLE001
        cupy, cupy_err = None, e

    dev = torch.cuda.current_device()
    info = rt.devices()[dev]
    l2 = info["l2_bytes"] or 50 << 20
    peak = info["peak_gbps"]
    flush = torch.empty(2 * l2, dtype=torch.uint8, device="cuda")
    spin = int(args.spin_us * 1.98e3)  # cycles at ~1.98 GHz (the H100's clock; a spin only hides dispatch)
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

    def time_it(fn):
        times, out = [], None
        for r in range(args.warmup + args.reps):
            flush.fill_(r & 0xFF)
            torch.cuda._sleep(spin)
            start.record()
            out = fn()
            stop.record()
            stop.synchronize()
            if r >= args.warmup:
                times.append(start.elapsed_time(stop) * 1e3)
        return statistics.median(times), out

    failed = 0

    def checked(name, got, ref, abs_sum, exact):
        nonlocal failed
        g = got.double() if hasattr(got, "double") else torch.as_tensor(got, device="cuda").double()
        r = ref.double()
        ok = torch.equal(g, r) if exact else bool(((g - r).abs() <= 1e-6 * abs_sum + 1e-6 * r.abs()).all())
        if not ok:
            failed += 1
            print(f"FAILED: {name}: max error {(g - r).abs().max().item():.3g}", file=sys.stderr)
        return "ok" if ok else "FAILED"

    print(f"## reduce_tune from Python: {info['name']}\n")
    print(f"- torch {torch.__version__}, cupy {cupy.__version__ if cupy else f'not available ({cupy_err})'}, "
          f"reduce_tune {rt.__version__}; store: {rt.config_for('float32', 'sum', 1 << 20)['match']} "
          f"match at 2^20 ({'REDUCE_TUNE_DB set' if __import__('os').environ.get('REDUCE_TUNE_DB') else 'default store'})")
    print(f"- device time: CUDA events, {args.warmup} warm-up + {args.reps} timed calls, median; cold L2 "
          f"({2 * l2 >> 20} MiB fill before each call); {args.spin_us:.0f} us spin before the start event. "
          f"Peak {peak:.0f} GB/s. x/rt: that contestant's time over reduce_tune's (above 1: reduce_tune faster).")

    # ---- whole arrays ---------------------------------------------------------------------
    for dt in args.dtypes.split(","):
        tdt = getattr(torch, dt)
        print(f"\n### {dt} sum, whole array, cold L2\n")
        print("| n | rt us | GB/s | % peak | torch us | torch/rt | cupy us | cupy/rt | config | check |")
        print("|---:|---:|---:|---:|---:|---:|---:|---:|---|---|")
        gen = torch.Generator(device="cuda").manual_seed(1)
        for n in (parse_size(s) for s in args.sizes.split(",")):
            if dt.startswith("float"):
                x = torch.rand(n, device="cuda", generator=gen, dtype=tdt).mul_(2).sub_(1)
                ref, abs_sum, exact = x.double().sum(), x.double().abs().sum(), False
                tfn = lambda: torch.sum(x)  # noqa: E731
            else:
                x = torch.randint(-2**31, 2**31, (n,), device="cuda", generator=gen, dtype=tdt)
                ref, abs_sum, exact = (x.long().sum() + 2**31) % 2**32 - 2**31, 0.0, True
                tfn = lambda: torch.sum(x, dtype=tdt)  # noqa: E731
            rt_us, r = time_it(lambda: rt.sum(x))
            checks = [checked(f"rt {fmt_size(n)}", r, ref, abs_sum, exact)]
            t_us, tr = time_it(tfn)
            checks.append(checked(f"torch {fmt_size(n)}", tr, ref, abs_sum, exact))
            c_cell = "- | -"
            if cupy is not None:
                xc = cupy.from_dlpack(x)
                c_us, cr = time_it(lambda: cupy.sum(xc) if not exact else cupy.sum(xc, dtype=xc.dtype))
                checks.append(checked(f"cupy {fmt_size(n)}", torch.from_dlpack(cr), ref, abs_sum, exact))
                c_cell = f"{fmt_us(c_us)} | {c_us / rt_us:.2f}"
            gbps = n * x.element_size() / (rt_us * 1e-6) / 1e9
            cfg = rt.config_for(dt, "sum", n)
            print(f"| {fmt_size(n)} | {fmt_us(rt_us)} | {gbps:.0f} | {100 * gbps / peak:.1f} | {fmt_us(t_us)} | "
                  f"{t_us / rt_us:.2f} | {c_cell} | {cfg['key']} ({cfg['match']}) | {', '.join(checks)} |")
            sys.stdout.flush()
            del x
            torch.cuda.empty_cache()

    # ---- rows and columns -----------------------------------------------------------------------
    total = parse_size(args.row_total)
    for dim, label in ((-1, "rows (dim=-1)"), (0, "columns (dim=0)")):
        print(f"\n### float32 sum of a {fmt_size(total)}-element matrix, {label}, cold L2\n")
        print("| row length | rows | rt us | GB/s | torch us | torch/rt | cupy us | cupy/rt | check |")
        print("|---:|---:|---:|---:|---:|---:|---:|---:|---|")
        x = torch.rand(total, device="cuda").mul_(2).sub_(1)
        for cols in (parse_size(s) for s in args.row_lengths.split(",")):
            rows = total // cols
            m = x[: rows * cols].view(rows, cols)
            ref, abs_sum = m.double().sum(dim), m.double().abs().sum(dim)
            try:
                rt_us, r = time_it(lambda: rt.sum(m, dim))
            except NotImplementedError as e:
                print(f"| {cols} | {rows} | not implemented: {e} | | | | | | |")
                continue
            checks = [checked(f"rt rows {cols}", r, ref, abs_sum, False)]
            t_us, tr = time_it(lambda: torch.sum(m, dim))
            checks.append(checked(f"torch rows {cols}", tr, ref, abs_sum, False))
            c_cell = "- | -"
            if cupy is not None:
                mc = cupy.from_dlpack(m)
                c_us, _ = time_it(lambda: cupy.sum(mc, axis=dim))
                c_cell = f"{fmt_us(c_us)} | {c_us / rt_us:.2f}"
            gbps = total * 4 / (rt_us * 1e-6) / 1e9
            print(f"| {cols} | {rows} | {fmt_us(rt_us)} | {gbps:.0f} | {fmt_us(t_us)} | {t_us / rt_us:.2f} | "
                  f"{c_cell} | {', '.join(checks)} |")
            sys.stdout.flush()
        del x
        torch.cuda.empty_cache()

    # ---- host time per call -----------------------------------------------------------------------
    print(f"\n### Host time per call (float32 sum, {args.host_calls} back-to-back calls, median of 5 trials)\n")
    print("- enqueue: until the last call returned / K; total: until the stream finished them / K.")
    print("- C++: Reducer::reduce_async in a C++ loop (the extension's time_calls, like bench/overhead.cpp).\n")
    print("| n | C++ enqueue | C++ total | rt.sum(x, out=o) enqueue | total | rt.sum(x) enqueue | total | "
          "torch.sum(x) enqueue | total | general path enqueue | total | rt(out=) - C++ |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    f32 = _dtypes.BY_NAME["float32"].value
    op_sum = _dtypes.OPS["sum"]
    stream = torch.cuda.current_stream().cuda_stream
    for n in (parse_size(s) for s in args.host_sizes.split(",")):
        x = torch.rand(n, device="cuda")
        o = torch.empty((), device="cuda")
        K = args.host_calls

        def py_loop(fn):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(K):
                fn()
            t1 = time.perf_counter()
            torch.cuda.synchronize()
            t2 = time.perf_counter()
            return (t1 - t0) / K * 1e6, (t2 - t0) / K * 1e6

        rows = {k: [] for k in ("cpp", "out", "alloc", "torch", "general")}
        cur = torch.cuda.current_stream()
        for _ in range(5):
            rows["cpp"].append(_ext.time_calls(dev, f32, op_sum, x.data_ptr(), n, o.data_ptr(), stream, K))
            rows["out"].append(py_loop(lambda: rt.sum(x, out=o)))
            rows["alloc"].append(py_loop(lambda: rt.sum(x)))
            rows["torch"].append(py_loop(lambda: torch.sum(x)))
            rows["general"].append(py_loop(lambda: rt.sum(x, out=o, stream=cur)))
        med = {k: (statistics.median(a for a, _ in v), statistics.median(b for _, b in v)) for k, v in rows.items()}
        cells = " | ".join(f"{med[k][0]:.2f} | {med[k][1]:.2f}" for k in ("cpp", "out", "alloc", "torch", "general"))
        print(f"| {fmt_size(n)} | {cells} | {med['out'][0] - med['cpp'][0]:+.2f} |")
        if abs(o.item() - x.double().sum().item()) > 1e-6 * x.abs().sum().item() + 1e-6:
            failed += 1
            print("FAILED: host-time result", file=sys.stderr)
    failed += host_vs_torch(torch, rt, _ext, dev, f32, op_sum, args.host_calls)
    print(f"\n**python_api summary**: {failed} FAILED")
    return 1 if failed else 0


def host_vs_torch(torch, rt, _ext, dev, f32, op_sum, K, trials=15):
    """reduce_tune.sum against torch.sum at 2^10 elements, host time per call (enqueue, K
    back-to-back calls), side by side; returns the number of failed result checks."""
    from reduce_tune import _torch_fast
    x = torch.rand(1 << 10, device="cuda")
    m = torch.rand(32, 32, device="cuda")
    cases = {"whole (2^10 vector)": (lambda: rt.sum(x), lambda: torch.sum(x)),
             "dim=-1 (32 x 32)": (lambda: rt.sum(m, -1), lambda: torch.sum(m, -1))}
    o = torch.empty((), device="cuda")
    stream = torch.cuda.current_stream().cuda_stream
    xp, op_ = x.data_ptr(), o.data_ptr()
    rt.sum(x)
    plan = _torch_fast._plans.get((op_sum, x.dtype, x.shape, None, False, dev))
    pool = plan[8] if plan else None
    parts = {"C++ reduce_async (C++ loop; the warm path)": None,
             "_ext.hot from Python (the eager torch call's entry, METH_FASTCALL)":
                 lambda: _ext.hot(0, dev, f32, op_sum, xp, 1 << 10, 0, op_, stream),
             "_ext.reduce from Python (the same call through nanobind's dispatch)":
                 lambda: _ext.reduce(dev, f32, op_sum, xp, 1 << 10, op_, stream),
             "_ext.hot_pooled from Python (the same call into a new pooled result, the eager "
             "path's entry)": (lambda: _ext.hot_pooled(0, dev, f32, op_sum, xp, 1 << 10, 0, pool, stream))
             if pool is not None else None,
             "ResultPool.take (a pooled result alone: torch's DLPack import)":
                 (lambda: pool.take(stream)) if pool is not None else None,
             "_torch_fast.fast (the eager path, without the public function's frame)":
                 lambda: _torch_fast.fast(op_sum, x, None, None, False),
             "torch.empty_like(o) (the result tensor, made as the package makes it)":
                 lambda: torch.empty_like(o),
             "torch.empty((), dtype=, device=) (the same with the kwargs preset)":
                 lambda: torch.empty((), dtype=torch.float32, device=o.device),
             "x.new_empty(()) (the same, the usual way)": lambda: x.new_empty(())}

    def enqueue_us(fn):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(K):
            fn()
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        return (t1 - t0) / K * 1e6

    for rfn, tfn in cases.values():  # warm: compiled, looked up, the result pools filled
        rfn(), tfn()
    times = {k: ([], []) for k in cases}
    ptimes = {k: [] for k in parts}
    for t in range(trials):
        for k, (rfn, tfn) in cases.items():
            first, second = (rfn, tfn) if t % 2 == 0 else (tfn, rfn)
            a, b = enqueue_us(first), enqueue_us(second)
            times[k][0].append(a if t % 2 == 0 else b)
            times[k][1].append(b if t % 2 == 0 else a)
        for k, fn in parts.items():
            if fn is None and not k.startswith("C++"):
                continue  # (no pooled results: an old torch)
            ptimes[k].append(_ext.time_calls(dev, f32, op_sum, x.data_ptr(), 1 << 10, o.data_ptr(), stream,
                                             K)[0] if fn is None else enqueue_us(fn))
    print(f"\n### Host time per call, reduce_tune against torch.sum (float32, 2^10 elements, {K} "
          f"back-to-back calls, median of {trials} trials, side by side)\n")
    print("| call | reduce_tune us | torch.sum us | rt/torch | rt/torch of each trial, min - max |")
    print("|---|---:|---:|---:|---:|")
    for k, (r, t) in times.items():
        rm, tm = statistics.median(r), statistics.median(t)
        each = [a / b for a, b in zip(r, t)]
        print(f"| {k} | {rm:.2f} | {tm:.2f} | {rm / tm:.2f} | {min(each):.2f} - {max(each):.2f} |")
    print("\nWhere reduce_tune.sum(x)'s time goes (the same loop, per call):\n")
    for k, v in ptimes.items():
        if v:
            print(f"- {k}: {statistics.median(v):.2f} us")
    # The driver's answers that the warm path no longer asks for (the pointers) or still does.
    q = [_ext.time_queries(dev, xp, stream, K) for _ in range(trials)]
    print("\nDriver queries, per query (C++ loop): a pointer's attributes (twice per call where the "
          "pointers were not checked before) "
          f"{statistics.median(d['pointer_query_us'] for d in q):.3f} us; the stream's capture state "
          f"(every call) {statistics.median(d['capture_query_us'] for d in q):.3f} us; the current "
          f"context (every call) {statistics.median(d['context_query_us'] for d in q):.3f} us")
    # One call at a time on an idle GPU: back-to-back calls wait for room in the stream's queue
    # where the GPU takes longer per kernel than the host per call, which hides the host's cost.
    def idle_us(fn):
        each = []
        for i in range(K // 4 + 10):
            torch.cuda.synchronize()
            t0 = time.perf_counter_ns()
            fn()
            t1 = time.perf_counter_ns()
            if i >= 10:
                each.append((t1 - t0) / 1e3)
        return statistics.median(each)

    print(f"\nOne call on an idle GPU (the stream drained before each, outside the timing; median of "
          f"{K // 4} calls):\n")
    idle = {"C++ reduce_async (C++ loop)":
                lambda: _ext.time_calls_idle(dev, f32, op_sum, xp, 1 << 10, op_, stream, K // 4),
            "_ext.hot from Python": lambda: _ext.hot(0, dev, f32, op_sum, xp, 1 << 10, 0, op_, stream),
            "reduce_tune.sum(x)": lambda: rt.sum(x), "torch.sum(x)": lambda: torch.sum(x),
            "torch.empty_like(o)": lambda: torch.empty_like(o),
            "the timer alone (an empty lambda)": lambda: None}
    for k, fn in idle.items():
        us = fn() if k.startswith("C++") else idle_us(fn)
        print(f"- {k}: {us:.2f} us")
    before = _ext.stats()
    for _ in range(K):
        rt.sum(x)
    after = _ext.stats()
    print(f"- {K} calls of reduce_tune.sum(x) after the first: "
          f"{after['cold_calls'] - before['cold_calls']} took the library's full path, "
          f"{after['pointer_queries'] - before['pointer_queries']} pointer queries, "
          f"{after['result_blocks'] - before['result_blocks']} blocks of results allocated")
    failed = 0
    r, rr = rt.sum(x), rt.sum(m, -1)
    if abs(r.item() - x.double().sum().item()) > 1e-6 * x.abs().sum().item() + 1e-6 or \
            not torch.allclose(rr, m.sum(-1), rtol=1e-5, atol=1e-5):
        failed += 1
        print("FAILED: host-time results", file=sys.stderr)
    return failed


if __name__ == "__main__":
    sys.exit(main())
