#!/usr/bin/env python3
"""torch.sum and cupy.sum, timed the way reduce_bench times its contestants.

CUDA events around one call; 3 warm-up calls and R timed calls; cold = a fill of a 2 x L2 buffer
before each call; a spin kernel (torch.cuda._sleep) before the start event hides Python's
dispatch; median (and min) of the event times. Results are checked against a float64 / int64
reduction of the same data (float32: |got - ref| <= 1e-6 sum|x| + 1e-6 |ref|; bfloat16 and
float16, which torch sums in float32 and rounds once to the input's type: the same with 2^-8 or
2^-11 |ref|; int32: exact with wrap). Prints Markdown. Exit code: 0 all checks passed, 1 a check
FAILED, 4 torch not available.

With --csv (reduce_bench's CSV of the same run; repeatable) the table adds reduce-tune's cold
time and the ratios framework time / reduce-tune time (above 1: reduce-tune faster; the data
differ but are drawn from the same distribution).
"""
import argparse
import csv
import math
import re
import statistics
import sys

DEFAULT_SIZES = "2^10,2^12,2^14,2^16,2^18,2^20,3*2^20+17,2^22,2^24,2^26,2^28,2^30"


def parse_size(text):
    """2^24, 3*2^20+17, 16M -> int (the forms reduce_bench's --sizes takes)."""
    t = text.strip()
    if not re.fullmatch(r"[0-9KMG^*+ ]+", t):
        raise ValueError(f"not a size: {text!r}")
    t = re.sub(r"(\d+)([KMG])", lambda m: f"({m.group(1)}*2**{ {'K': 10, 'M': 20, 'G': 30}[m.group(2)] })", t)
    n = eval(t.replace("^", "**"), {"__builtins__": {}}, {})
    if not isinstance(n, int) or n <= 0:
        raise ValueError(f"not a size: {text!r}")
    return n


def fmt_size(n):
    return f"2^{n.bit_length() - 1}" if n > 0 and n & (n - 1) == 0 else str(n)


def fmt_us(us):
    return f"{us:.2f}" if us < 100 else f"{us:.1f}" if us < 1000 else f"{us:.0f}"


def read_csv(path):
    """(peak GB/s, {(dtype, n): reduce-tune cold median us}) from reduce_bench --csv."""
    peak, rt = None, {}
    with open(path) as f:
        first = f.readline()
        m = re.search(r"peak_gbps=([0-9.eE+-]+)", first)
        if m:
            peak = float(m.group(1))
        for row in csv.DictReader(f):
            if row["contestant"] == "reduce-tune" and row["mode"] == "cold" and row["op"] == "sum" \
                    and row["ok"] == "1":
                rt[(row["dtype"], int(row["n"]))] = float(row["median_us"])
    return peak, rt


def gpu_figures(torch, cupy):
    """(device properties, L2 bytes, SM clock kHz, peak GB/s or None) of the current device."""
    dev = torch.cuda.current_device()
    props = torch.cuda.get_device_properties(dev)
    l2 = getattr(props, "L2_cache_size", 0) or 0
    clock_khz, peak = 0, None
    if cupy is not None:
        try:
            rt_api = cupy.cuda.runtime
            if not l2:
                l2 = rt_api.deviceGetAttribute(38, dev)  # cudaDevAttrL2CacheSize
            clock_khz = rt_api.deviceGetAttribute(13, dev)  # cudaDevAttrClockRate
            mem_khz = rt_api.deviceGetAttribute(36, dev)  # cudaDevAttrMemoryClockRate
            bus = rt_api.deviceGetAttribute(37, dev)  # cudaDevAttrGlobalMemoryBusWidth
            peak = 2.0 * mem_khz * 1e3 * bus / 8 / 1e9
        except Exception:  # noqa: BLE001
            pass
    return props, l2 or 50 << 20, clock_khz or 2_000_000, peak


class Timer:
    """reduce_bench's method in Python: per call a fill of a 2 x L2 buffer (cold), a spin kernel
    (torch.cuda._sleep) that hides Python's dispatch, CUDA events around the call; warm-up calls,
    then `reps` timed calls (fewer, not below `min_reps`, where they would take over budget_s)."""

    def __init__(self, torch, l2_bytes, clock_khz, spin_us, warmup, reps, budget_s, min_reps=10):
        self.flush = torch.empty(2 * l2_bytes, dtype=torch.uint8, device="cuda")
        self.spin_cycles = int(spin_us * clock_khz / 1000)
        self.start = torch.cuda.Event(enable_timing=True)
        self.stop = torch.cuda.Event(enable_timing=True)
        self.torch, self.warmup, self.reps, self.budget_s, self.min_reps = torch, warmup, reps, budget_s, min_reps

    def time(self, fn, cold=True):
        """(median us, min us, timed calls, last output)."""
        times, out, reps, r = [], None, self.reps, 0
        while r < self.warmup + reps:
            if cold:
                self.flush.fill_(r & 0xFF)
            self.torch.cuda._sleep(self.spin_cycles)
            self.start.record()
            out = fn()
            self.stop.record()
            self.stop.synchronize()
            t = self.start.elapsed_time(self.stop) * 1e3
            if r >= self.warmup:
                times.append(t)
            elif r == self.warmup - 1 and t * 1e-6 * reps > self.budget_s:
                reps = max(min(self.min_reps, self.reps), int(self.budget_s / (t * 1e-6)))
            r += 1
        return statistics.median(times), min(times), len(times), out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default=DEFAULT_SIZES)
    ap.add_argument("--dtypes", default="int32,float32")
    ap.add_argument("--reps", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--spin-us", type=float, default=100.0)
    ap.add_argument("--budget-s", type=float, default=2.0,
                    help="timed calls are cut (to no fewer than 10) where R calls would take longer")
    ap.add_argument("--csv", action="append", default=[],
                    help="reduce_bench --csv output of the same run (repeatable)")
    args = ap.parse_args()

    try:
        import torch
        if not torch.cuda.is_available():
            raise RuntimeError("torch.cuda.is_available() is False")
    except Exception as e:  # noqa: BLE001 - any import or CUDA failure means: skip
        print(f"\n### Frameworks\n\ntorch not available ({e}): torch.sum / cupy.sum skipped.")
        return 4
    try:
        import cupy
        cupy_err = None
    except Exception as e:  # noqa: BLE001
        cupy, cupy_err = None, e

    props, l2, clock_khz, peak_here = gpu_figures(torch, cupy)
    peak, rt_times = (None, {})
    for path in args.csv:
        try:
            p, times = read_csv(path)
            peak = peak or p
            for k, v in times.items():
                rt_times.setdefault(k, v)  # the first file that has a size wins
        except OSError as e:
            print(f"(cannot read {path}: {e})", file=sys.stderr)
    if peak is None:
        peak = peak_here

    sizes = [parse_size(s) for s in args.sizes.split(",") if s]
    dtypes = [d for d in args.dtypes.split(",") if d]
    timer = Timer(torch, l2, clock_khz, args.spin_us, args.warmup, args.reps, args.budget_s)
    time_it = timer.time
    free_bytes, _ = torch.cuda.mem_get_info()

    print(f"\n## torch.sum / cupy.sum (cold L2, same method)\n")
    print(f"- torch {torch.__version__}, cupy {cupy.__version__ if cupy is not None else f'not available ({cupy_err})'}, "
          f"device {props.name}; {args.warmup} warm-up + {args.reps} timed calls, median; flush "
          f"{2 * l2 / 2**20:.0f} MiB; spin {args.spin_us:.0f} us (torch.cuda._sleep) before the start event.")
    print("- int32: `torch.sum(x, dtype=torch.int32)`, `cupy.sum(x, dtype=cupy.int32)` (result int32, "
          "wrapping); float32, bfloat16, float16: `torch.sum(x)` (for bfloat16/float16 a float32 "
          "accumulation, the result of the input's type), `cupy.sum(x)` (zero-copy view of the same "
          "tensor; float32 and int32 only: cupy has no bfloat16, and its float16 sum is not as accurate "
          "as a float32 accumulation rounded once (on an H100: 482.0 for a sum of 460.3 at 2^28, "
          "-222.5 for -223.5 at 2^26), so it is no like-for-like contestant there).")
    print("- rt us = reduce-tune's cold median from reduce_bench in this run (other random data of the "
          "same distribution); torch/rt = torch time / reduce-tune time (above 1: reduce-tune faster).")

    failed = 0
    for dt in dtypes:
        tdt = {"int32": torch.int32, "float32": torch.float32, "bfloat16": torch.bfloat16,
               "float16": torch.float16}.get(dt)
        if tdt is None:
            print(f"\n(unknown dtype {dt}: skipped)")
            continue
        print(f"\n### {dt} sum, cold L2\n")
        print("| n | torch us | GB/s | % peak | cupy us | GB/s | % peak | rt us | torch/rt | cupy/rt | check |")
        print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
        gen = torch.Generator(device="cuda")
        gen.manual_seed(12345)
        for n in sizes:
            # The input, its float64/int64 copy for the reference, and the flush buffer.
            if n * 12 + (512 << 20) > free_bytes:
                print(f"| {fmt_size(n)} | skipped: needs {n * 12 / 2**30:.1f} GiB | | | | | | | | | |")
                continue
            is_float = dt != "int32"
            esize = torch.tensor([], dtype=tdt).element_size()
            # The one rounding of the result: float32's own eps, or that of the 2-byte type.
            result_eps = {"bfloat16": 2.0**-8, "float16": 2.0**-11}.get(dt, 1e-6)
            if is_float:
                x = torch.rand(n, device="cuda", generator=gen).mul_(2).sub_(1).to(tdt)
                xd = x.double()
                ref, abs_sum = xd.sum().item(), xd.abs().sum().item()
                del xd
            else:
                x = torch.randint(-2**31, 2**31, (n,), dtype=torch.int32, device="cuda", generator=gen)
                s = x.long().sum().item()
                ref, abs_sum = (s + 2**31) % 2**32 - 2**31, 0.0
            torch.cuda.synchronize()

            def check(out):
                got = out.item()
                if is_float:
                    err = abs(got - ref)
                    # The result must be of the input's type (torch.bfloat16 / cupy float16 alike).
                    ok = str(out.dtype).split(".")[-1] == dt and err <= 1e-6 * abs_sum + result_eps * abs(ref)  # NaN: False
                    return ok, f"{err / abs_sum:.1e}" if abs_sum else f"{err:.1e}", got
                return got == ref, "exact", got

            cells, checks, times = [], [], {}
            contestants = [("torch", (lambda: torch.sum(x)) if is_float
                            else (lambda: torch.sum(x, dtype=torch.int32)))]
            xc = None
            if cupy is not None and dt in ("int32", "float32"):
                xc = cupy.from_dlpack(x)
                contestants.append(("cupy", (lambda: cupy.sum(xc)) if is_float
                                    else (lambda: cupy.sum(xc, dtype=cupy.int32))))
            for name, fn in contestants:
                try:
                    med, _mn, reps, out = time_it(fn)
                    ok, err, got = check(out)
                    times[name] = med
                    gbps = n * esize / (med * 1e-6) / 1e9
                    pct = f"{100 * gbps / peak:.1f}" if peak else "-"
                    cells.append(f"{fmt_us(med)} | {gbps:.0f} | {pct}")
                    if ok:
                        checks.append(f"{name} ok ({err}" + (f", {reps} calls)" if reps != args.reps else ")"))
                    else:
                        failed += 1
                        checks.append(f"FAILED: {name} got {got}, expected {ref}")
                except Exception as e:  # noqa: BLE001 - report and go on
                    failed += 1
                    cells.append("error | - | -")
                    checks.append(f"FAILED: {name}: {type(e).__name__}: {str(e).splitlines()[0][:120]}")
            if xc is None:
                cells.append("- | - | -")
            rt = rt_times.get((dt, n))
            ratio = lambda k: f"{times[k] / rt:.2f}" if rt and k in times else "-"  # noqa: E731
            print(f"| {fmt_size(n)} | {' | '.join(cells)} | {fmt_us(rt) if rt else '-'} | "
                  f"{ratio('torch')} | {ratio('cupy')} | {'; '.join(checks)} |")
            sys.stdout.flush()
            del x
            if xc is not None:
                del xc
                cupy.get_default_memory_pool().free_all_blocks()
            torch.cuda.empty_cache()
    print(f"\n**Frameworks summary**: {failed} FAILED")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
