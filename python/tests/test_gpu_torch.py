"""GPU tests through PyTorch: every dtype and op against NumPy (and torch) on odd sizes, NaN, n = 0,
rows/columns/segments, out=, streams, the protocols, CUDA graph capture. Skipped without a GPU or
torch."""
from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

import reduce_tune as rt

np = pytest.importorskip("numpy")
pytestmark = pytest.mark.gpu

SIZES = [1, 2, 3, 31, 1000, 4099, 65537, (1 << 20) + 3, 3_000_001]
OPS = ["sum", "min", "max"]
FUNCS = {"sum": rt.sum, "min": rt.min, "max": rt.max}
SEG_FUNCS = {"sum": rt.segment_sum, "min": rt.segment_min, "max": rt.segment_max}
NP_DTYPES = {"int32": np.int32, "uint32": np.uint32, "int64": np.int64, "float32": np.float32,
             "float64": np.float64}


def host_data(dtype, n, seed):
    g = np.random.default_rng(seed)
    if dtype.startswith("float"):
        return (g.random(n) * 2 - 1).astype(dtype)
    info = np.iinfo(dtype)
    return g.integers(info.min, info.max, n, dtype=dtype, endpoint=True)


def to_torch(torch, a):
    """A CUDA tensor of NumPy array a's dtype (uint32 through an int32 view where needed)."""
    if a.dtype == np.uint32:
        t = torch.from_numpy(a.view(np.int32)).cuda()
        return t.view(torch.uint32)
    return torch.from_numpy(a).cuda()


def to_numpy(torch, t):
    if str(t.dtype) == "torch.uint32":
        return t.view(torch.int32).cpu().numpy().view(np.uint32)
    return t.cpu().numpy()


def reference(a, op, axis=None):
    """NumPy: integer sums wrap in the dtype, float sums in float64 (and its |x| sum for the
    bound), min/max propagating NaN (IEEE 754-2019 minimum/maximum, as the library)."""
    if op == "sum":
        if a.dtype.kind in "iu":
            return np.sum(a, axis=axis, dtype=a.dtype), None
        return np.sum(a.astype(np.float64), axis=axis), np.sum(np.abs(a.astype(np.float64)), axis=axis)
    with np.errstate(invalid="ignore"):
        if a.size == 0 or (a.ndim and a.shape[axis or 0] == 0):
            raise AssertionError("empty reference")
        f = np.minimum if op == "min" else np.maximum
        return f.reduce(a, axis=axis), None


def check(got, ref, abs_sum, dtype):
    got = np.asarray(got)
    ref = np.asarray(ref)
    if np.dtype(dtype).kind in "iu" or abs_sum is None:
        np.testing.assert_array_equal(got, ref.astype(got.dtype))
        return
    eps = 1e-6 if dtype == "float32" else 1e-14
    tol = eps * (np.asarray(abs_sum) + np.abs(ref)) + 1e-30
    err = np.abs(got.astype(np.float64) - ref)
    assert np.all(err <= tol), f"max error {err.max():.3g}, tolerance {np.min(tol):.3g}"


def supported_torch_dtypes(torch):
    return [d for d in rt.dtypes() if d in NP_DTYPES and (d != "uint32" or hasattr(torch, "uint32"))]


# ---- the whole array ------------------------------------------------------------------------

@pytest.mark.parametrize("op", OPS)
def test_every_dtype_and_size_against_numpy(torch, op):
    f = FUNCS[op]
    for dtype in supported_torch_dtypes(torch):
        for i, n in enumerate(SIZES):
            a = host_data(dtype, n, seed=1000 + i)
            x = to_torch(torch, a)
            r = f(x)
            assert isinstance(r, torch.Tensor) and r.shape == () and r.dtype == x.dtype
            assert r.device == x.device
            ref, abs_sum = reference(a, op)
            check(to_numpy(torch, r), ref, abs_sum, dtype)


@pytest.mark.parametrize("op", OPS)
def test_against_torch(torch, op):
    x = torch.randn(3 * (1 << 20) + 17, device="cuda")
    got = FUNCS[op](x)
    want = {"sum": lambda: x.double().sum(), "min": x.amin, "max": x.amax}[op]()
    assert abs(got.item() - want.item()) <= 1e-6 * x.abs().double().sum().item() + 1e-7


def test_empty_gives_the_identity(torch):
    for dtype in supported_torch_dtypes(torch):
        x = to_torch(torch, np.zeros(0, dtype=dtype))
        for op in OPS:
            got = to_numpy(torch, FUNCS[op](x))
            if op == "sum":
                assert got == 0
            elif dtype.startswith("float"):
                assert got == (math.inf if op == "min" else -math.inf)
            else:
                info = np.iinfo(dtype)
                assert got == (info.max if op == "min" else info.min)


def test_nan(torch):
    a = host_data("float32", 100_003, seed=7)
    a[12345] = np.nan
    x = torch.from_numpy(a).cuda()
    assert math.isnan(rt.sum(x).item())
    assert math.isnan(rt.min(x).item()) and math.isnan(rt.max(x).item())  # as torch.amin/amax
    y = torch.full((1001,), float("nan"), device="cuda")
    assert math.isnan(rt.min(y).item()) and math.isnan(rt.max(y).item())
    a[12345] = 0.5
    x = torch.from_numpy(a).cuda()
    assert rt.min(x).item() == a.min() and rt.max(x).item() == a.max()


def test_integer_sum_wraps(torch):
    x = torch.full((1 << 16,), 2**31 - 1, dtype=torch.int32, device="cuda")
    want = (2**31 - 1) * (1 << 16)
    want = (want + 2**31) % 2**32 - 2**31
    assert rt.sum(x).item() == want


def test_strided_vector_and_matrix(torch):
    base = torch.randn(3001, 70, device="cuda", dtype=torch.float64)
    for x in (base[:, 5], base[::3, 2:40], base.t(), base[:, :33].t()):
        assert not x.is_contiguous()
        assert abs(rt.sum(x).item() - x.sum().item()) <= 1e-12 * x.abs().sum().item()
        assert rt.max(x).item() == x.max().item()


def test_out_argument(torch):
    x = torch.arange(1000, dtype=torch.int64, device="cuda")
    out = torch.empty((), dtype=torch.int64, device="cuda")
    assert rt.sum(x, out=out) is out and out.item() == 999 * 1000 // 2
    with pytest.raises(TypeError):
        rt.sum(x, out=torch.empty((), dtype=torch.int32, device="cuda"))
    with pytest.raises(ValueError):
        rt.sum(x, out=torch.empty(2, dtype=torch.int64, device="cuda"))


@pytest.mark.parametrize("op", OPS)
def test_float32_result_of_half_arrays(torch, op):
    # dtype=float32: the unrounded float32 accumulator of a bf16/float16 reduction, as
    # torch.sum(x, dtype=torch.float32); min/max the exact element widened.
    for tdt in (torch.bfloat16, torch.float16):
        for n in (1, 1000, (1 << 20) + 3, 3_000_001):
            g = torch.Generator(device="cuda").manual_seed(n)
            x = (torch.rand(n, device="cuda", generator=g) * 2 - 1).to(tdt)
            r = FUNCS[op](x, dtype=torch.float32)
            assert r.dtype == torch.float32 and r.shape == () and r.device == x.device
            x64 = x.double()
            o = torch.empty((), dtype=torch.float32, device="cuda")
            assert FUNCS[op](x, out=o, dtype="float32") is o
            if op == "sum":
                want = x64.sum().item()
                # float32's tolerance (the bench's): no term for a rounding to x's dtype. Two
                # calls may differ in the last bits: an atomic finish combines in any order.
                bound = 1e-6 * x64.abs().sum().item() + 2.0 ** -24 * abs(want)
                for got in (r.item(), o.item()):
                    assert abs(got - want) <= bound, (tdt, n, got, want)
            else:
                want = (x64.min() if op == "min" else x64.max()).item()
                assert r.item() == want and o.item() == want
    x = torch.ones(10, dtype=torch.bfloat16, device="cuda")
    assert rt.sum(x[:0], dtype=torch.float32).item() == 0.0
    with pytest.raises(TypeError, match="out has dtype bfloat16"):
        rt.sum(x, out=torch.empty((), dtype=torch.bfloat16, device="cuda"), dtype=torch.float32)
    assert rt.sum(x, dtype=torch.bfloat16).dtype == torch.bfloat16


def test_errors(torch):
    with pytest.raises(TypeError, match="not on a GPU"):
        rt.sum(torch.ones(4))
    for dt in (torch.int16, torch.complex64, torch.bool):
        with pytest.raises(TypeError, match="unsupported dtype"):
            rt.sum(torch.ones(4, device="cuda", dtype=dt))
    with pytest.raises(ValueError, match="contiguous"):
        rt.sum(torch.ones(8, 8, device="cuda")[::2, ::2], dim=-1)


# ---- rows, columns, segments ----------------------------------------------------------------

MATRICES = [(1, 1), (3, 5), (1000, 33), (7, 4099), (4096, 1), (1, 4096), (257, 1024)]


@pytest.mark.parametrize("op", OPS)
def test_rows_and_columns(torch, op):
    f = FUNCS[op]
    for dtype in ("float32", "int32", "float64", "int64"):
        for i, (r, c) in enumerate(MATRICES):
            a = host_data(dtype, r * c, seed=i).reshape(r, c)
            x = to_torch(torch, a)
            for dim, axis in ((-1, 1), (1, 1), (0, 0)):
                got = f(x, dim)
                assert got.shape == (a.shape[0] if axis == 1 else a.shape[1],)
                ref, abs_sum = reference(a, op, axis)
                check(to_numpy(torch, got), ref, abs_sum, dtype)


@pytest.mark.parametrize("op", OPS)
def test_strided_rows_and_transposes(torch, op):
    f = FUNCS[op]
    base = host_data("float32", 600 * 130, seed=3).reshape(600, 130)
    t = torch.from_numpy(base).cuda()
    for view, host in ((t[:, 7:100], base[:, 7:100]), (t.t(), base.T), (t[10:500, :64].t(), base[10:500, :64].T)):
        for dim, axis in ((-1, 1), (0, 0)):
            ref, abs_sum = reference(np.ascontiguousarray(host), op, axis)
            check(to_numpy(torch, f(view, dim)), ref, abs_sum, "float32")


def test_nd_and_empty_rows(torch):
    x = torch.randn(4, 5, 6, device="cuda", dtype=torch.float64)
    assert torch.allclose(rt.sum(x, -1), x.sum(-1)) and torch.allclose(rt.sum(x, 0), x.sum(0))
    e = torch.empty(3, 0, device="cuda")
    assert rt.sum(e, -1).tolist() == [0, 0, 0]
    assert rt.min(e, -1).tolist() == [math.inf] * 3
    assert rt.sum(torch.empty(0, 4, device="cuda"), -1).shape == (0,)


@pytest.mark.parametrize("op", OPS)
def test_segments(torch, op):
    g = np.random.default_rng(5)
    lengths = np.concatenate([g.integers(0, 5, 3000), [0, 0, 100_000, 1, 70_001, 0]])
    g.shuffle(lengths)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    for dtype in ("float32", "int32", "int64"):
        a = host_data(dtype, int(offsets[-1]), seed=11)
        got = to_numpy(torch, SEG_FUNCS[op](to_torch(torch, a), torch.from_numpy(offsets).cuda()))
        assert got.shape == (len(lengths),)
        for s in range(len(lengths)):
            seg = a[offsets[s]:offsets[s + 1]]
            if seg.size == 0:
                want = 0 if op == "sum" else (
                    (math.inf if op == "min" else -math.inf) if dtype.startswith("float")
                    else (np.iinfo(dtype).max if op == "min" else np.iinfo(dtype).min))
                assert got[s] == want
                continue
            ref, abs_sum = reference(seg, op)
            check(got[s], ref, abs_sum, dtype)


# ---- streams, protocols, graphs ---------------------------------------------------------------

def test_ordered_after_the_current_streams_work(torch):
    n = 1 << 22
    x = torch.zeros(n, device="cuda")
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        torch.cuda._sleep(20_000_000)  # ~10 ms of spinning ahead of the write
        x.fill_(1.0)
        r = rt.sum(x)  # on s, after the fill
    s.synchronize()
    assert r.item() == n


def test_stream_argument_waits_for_the_producer(torch):
    n = 1 << 22
    x = torch.zeros(n, device="cuda")
    other = torch.cuda.Stream()
    torch.cuda._sleep(20_000_000)
    x.fill_(2.0)  # on the current stream: the producer
    r = rt.sum(x, stream=other)  # runs on `other`, which must wait for the fill
    other.synchronize()
    assert r.item() == 2 * n
    r2 = rt.sum(x, stream=other.cuda_stream)  # an int handle
    other.synchronize()
    assert r2.item() == 2 * n


class CAIOnly:
    def __init__(self, t):
        self._t = t
        self.__cuda_array_interface__ = t.__cuda_array_interface__


class DLPackOnly:
    def __init__(self, t):
        self._t = t

    def __dlpack__(self, stream=None):
        return self._t.__dlpack__(stream=stream)

    def __dlpack_device__(self):
        return self._t.__dlpack_device__()


def test_array_interface_and_dlpack(torch):
    x = torch.randn(123_457, device="cuda", dtype=torch.float64)
    want = x.sum().item()
    for wrapped in (CAIOnly(x), DLPackOnly(x)):
        r = rt.sum(wrapped)
        assert isinstance(r, rt.DeviceArray) and r.shape == () and r.dtype == "float64"
        assert abs(r.item() - want) <= 1e-12 * x.abs().sum().item()
        back = torch.as_tensor(r, device="cuda")  # through __cuda_array_interface__
        assert abs(back.item() - want) <= 1e-12 * x.abs().sum().item()
    m = torch.randn(300, 70, device="cuda")
    rows = rt.max(CAIOnly(m), dim=-1)
    assert np.array_equal(rows.get(), m.amax(-1).cpu().numpy())


class RecordingDLPack:
    """A tensor seen only through __dlpack__, noting the stream each call names."""

    def __init__(self, t, streams):
        self._t, self._streams = t, streams

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        self._streams.append(stream)
        try:
            return self._t.__dlpack__(stream=stream, max_version=max_version)
        except TypeError:  # an older torch
            return self._t.__dlpack__(stream=stream)

    def __dlpack_device__(self):
        return self._t.__dlpack_device__()


def test_dlpack_producers_are_handed_the_calls_stream(torch):
    n = 1 << 22
    x = torch.zeros(n, device="cuda")
    streams = []
    r = rt.sum(RecordingDLPack(x.fill_(1.0), streams))  # no stream: the legacy default stream
    assert streams == [1] and r.item() == n
    side = torch.cuda.Stream()
    streams.clear()
    torch.cuda._sleep(20_000_000)
    x.fill_(2.0)  # late, on the current stream: torch's __dlpack__ orders it before `side`
    r = rt.sum(RecordingDLPack(x, streams), stream=side)
    side.synchronize()
    assert streams == [side.cuda_stream] and r.item() == 2 * n
    # x a tensor on torch's current stream (a side stream here), offsets and out only DLPack:
    # their producers are handed that stream, not the legacy default one.
    offsets = torch.zeros(3, dtype=torch.int64, device="cuda")
    out = torch.zeros(2, device="cuda")
    with torch.cuda.stream(side):
        streams.clear()
        torch.cuda._sleep(20_000_000)
        offsets.copy_(torch.tensor([0, 1000, n], device="cuda"))  # late, on `side`
        x.fill_(3.0)
        res = rt.segment_sum(x, RecordingDLPack(offsets, streams), out=RecordingDLPack(out, streams))
        assert streams == [side.cuda_stream, side.cuda_stream]
    side.synchronize()
    assert res._t is out and out.tolist() == [3000.0, 3.0 * (n - 1000)]


def test_cuda_graph_capture_and_replay(torch):
    x = torch.randn(1 << 20, device="cuda")
    m = torch.randn(512, 300, device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up, as torch asks before capture
        for _ in range(3):
            rt.sum(x), rt.max(m, dim=-1), rt.min(torch.empty(0, device="cuda"))
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    empty = torch.empty(0, device="cuda")
    with torch.cuda.graph(g):
        total = rt.sum(x)
        row_max = rt.max(m, dim=-1)
        ident = rt.min(empty)
    for k in range(3):
        x.copy_(torch.randn(1 << 20, device="cuda"))
        m.copy_(torch.randn(512, 300, device="cuda"))
        g.replay()
        torch.cuda.synchronize()
        assert abs(total.item() - x.double().sum().item()) <= 1e-5 * x.abs().sum().item()
        assert torch.equal(row_max, m.amax(-1))
        assert ident.item() == math.inf
    # eager calls after the capture, on other streams, still work
    with torch.cuda.stream(side):
        r = rt.sum(x)
    side.synchronize()
    assert abs(r.item() - x.double().sum().item()) <= 1e-5 * x.abs().sum().item()


def test_config_for_and_devices(torch):
    c = rt.config_for("float32", "sum", 1 << 24)
    matches = ("exact", "nearest_size", "shipped", "same_arch", "carried", "related", "builtin")
    assert c["key"] and c["match"] in matches
    assert c["dtype"] == "float32" and c["op"] == "sum"
    c = rt.config_for(torch.float32, "max", (4096, 1024), problem="rows")
    assert c["key"] and c["problem"] == "rows"
    ds = rt.devices()
    assert len(ds) == torch.cuda.device_count()
    assert ds[0]["name"] == torch.cuda.get_device_name(0)


def test_wrong_gpu(torch):
    if torch.cuda.device_count() < 2:
        pytest.skip("needs two GPUs")
    x = torch.ones(10, device="cuda:0")
    s1 = torch.cuda.Stream(device=1)
    with pytest.raises(ValueError, match="GPU"):
        rt.sum(x, stream=s1)
    with pytest.raises(ValueError, match="GPU"):
        rt.sum(x, stream=s1.cuda_stream)
    with pytest.raises(ValueError, match="GPU"):
        rt.sum(x, out=torch.empty((), device="cuda:1"))


def test_fast_and_general_paths_agree(torch):
    x = torch.randn(100_003, device="cuda", dtype=torch.float64)
    bound = 1e-12 * x.abs().sum().item()
    rt.sum(x)
    a = rt.sum(x)  # the fast path (a plain contiguous tensor, torch seen before)
    b = rt.sum(x, stream=torch.cuda.current_stream())  # the general path
    c = rt.sum(torch.nn.Parameter(x, requires_grad=False))  # a subclass: the general path
    o = torch.empty((), dtype=torch.float64, device="cuda")
    assert rt.sum(x, out=o) is o
    for r in (b, c, o):
        assert abs(a.item() - r.item()) <= bound
    assert abs(a.item() - x.sum().item()) <= bound
    assert rt.max(x[::2]).item() == x[::2].max().item()  # not contiguous: the general path


def test_a_fresh_install_uses_the_shipped_tuning(torch, tmp_path):
    """With no store of its own, a GPU model the package ships tuning for gets it (match
    "shipped"); another GPU falls back to the same architecture, a carried GPU or the built-in default. In a
    fresh process: the store and the shipped tuning are read when a GPU's reducer is created."""
    import sqlite3
    shipped = Path(__file__).resolve().parents[2] / "share" / "reduce-tune" / "tuning.db"  # built in
    models = {r[0] for r in sqlite3.connect(f"file:{shipped}?mode=ro", uri=True).execute("select name from devices")}
    env = {k: v for k, v in os.environ.items() if k != "REDUCE_TUNE_SHIPPED_DB"}
    env["REDUCE_TUNE_DB"] = str(tmp_path / "absent.db")
    code = "import reduce_tune as rt; print(rt.config_for('float32', 'sum', 1 << 24)['match'])"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    match = out.stdout.strip()
    if torch.cuda.get_device_name(0) in models:
        assert match == "shipped"
    else:
        assert match in ("same_arch", "carried", "builtin")
