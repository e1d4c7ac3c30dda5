"""GPU tests through CuPy: results are CuPy arrays on CuPy's current stream; every dtype and op
against cupy on odd sizes. Skipped without a GPU or CuPy."""
from __future__ import annotations

import math

import pytest

import reduce_tune as rt
from reduce_tune import _dtypes, _ext

np = pytest.importorskip("numpy")
pytestmark = pytest.mark.gpu

FUNCS = {"sum": rt.sum, "min": rt.min, "max": rt.max}


@pytest.mark.parametrize("op", ["sum", "min", "max"])
def test_every_dtype_against_cupy(cupy, op):
    for dtype in [d for d in rt.dtypes() if d in ("int32", "uint32", "int64", "float32", "float64")]:
        for n in (1, 5, 1023, 100_003, (1 << 21) + 1):
            g = np.random.default_rng(n)
            if dtype.startswith("float"):
                a = (g.random(n) * 2 - 1).astype(dtype)
            else:
                info = np.iinfo(dtype)
                a = g.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
            x = cupy.asarray(a)
            r = FUNCS[op](x)
            assert isinstance(r, cupy.ndarray) and r.shape == () and r.dtype == x.dtype
            if op == "sum" and dtype.startswith("float"):
                want = float(np.sum(a.astype(np.float64)))
                bound = (1e-6 if dtype == "float32" else 1e-14) * float(np.sum(np.abs(a.astype(np.float64))))
                assert abs(float(r) - want) <= bound + 1e-30
            elif op == "sum":
                assert int(r) == int(np.sum(a, dtype=a.dtype))
            else:
                want = {"min": cupy.min, "max": cupy.max}[op](x)
                assert r.item() == want.item()


def test_rows_columns_and_segments(cupy):
    m = cupy.random.standard_normal((777, 129), dtype=cupy.float32)
    assert cupy.allclose(rt.sum(m, -1), m.sum(-1), rtol=1e-5, atol=1e-4)
    assert cupy.array_equal(rt.max(m, 0), m.max(0))
    assert cupy.array_equal(rt.min(m[:, 3:50], -1), m[:, 3:50].min(-1))
    offsets = cupy.asarray([0, 0, 10, 500, 777 * 129], dtype=cupy.int64)
    seg = rt.segment_sum(m.ravel(), offsets)
    assert isinstance(seg, cupy.ndarray) and seg.shape == (4,)
    flat = m.ravel()
    for s in range(4):
        want = float(flat[int(offsets[s]):int(offsets[s + 1])].astype(cupy.float64).sum())
        assert abs(float(seg[s]) - want) <= 1e-5 * (abs(want) + 1) + 1e-3


def test_current_stream(cupy):
    n = 1 << 22
    x = cupy.zeros(n, dtype=cupy.float32)
    s = cupy.cuda.Stream(non_blocking=True)
    with s:
        x.fill(3.0)  # on s, CuPy's current stream here
        r = rt.sum(x)  # on s too: ordered after the fill
    s.synchronize()
    assert float(r) == 3.0 * n
    assert rt.sum(cupy.zeros(0, dtype=cupy.float64)).item() == 0
    assert rt.max(cupy.zeros(0, dtype=cupy.float64)).item() == -math.inf


# ---- streams, graphs, DLPack ------------------------------------------------------------------

SPIN = r'''
extern "C" __global__ void spin(long long cycles) {
    const long long start = clock64();
    while (clock64() - start < cycles) {}
}
'''


def test_runs_on_cupys_current_stream(cupy):
    # A non-blocking stream whose write comes late: a call on any other stream would read zeros.
    spin = cupy.RawKernel(SPIN, "spin")
    n = 1 << 22
    x = cupy.zeros(n, dtype=cupy.float32)
    cupy.cuda.Device().synchronize()
    s = cupy.cuda.Stream(non_blocking=True)
    with s:
        spin((1,), (1,), (cupy.int64(100_000_000),))  # tens of ms ahead of the write
        x.fill(5.0)
        total = rt.sum(x)
        rows = rt.max(x.reshape(1024, -1), -1)
        cols = rt.min(x.reshape(1024, -1), 0)
        seg = rt.segment_sum(x, cupy.asarray([0, 10, n], dtype=cupy.int64))
    s.synchronize()
    assert float(total) == 5.0 * n
    assert bool((rows == 5.0).all()) and bool((cols == 5.0).all())
    assert seg.tolist() == [50.0, 5.0 * (n - 10)]


def test_graph_capture_and_replay(cupy):
    n = 1 << 20
    x = cupy.empty(n, dtype=cupy.float32)
    m = cupy.empty((700, 300), dtype=cupy.float32)
    offsets = cupy.asarray([0, 1000, 1000, 70_000, n], dtype=cupy.int64)
    empty_rows = cupy.empty((5, 0), dtype=cupy.float32)

    def calls():
        return (rt.sum(x), rt.max(m, -1), rt.min(m, 0), rt.sum(m[:, 3:50]),
                rt.segment_max(x, offsets), rt.min(empty_rows, -1), rt.max(m.T, -1))

    s = cupy.cuda.Stream(non_blocking=True)
    with s:
        x[...] = cupy.random.rand(n, dtype=cupy.float32)
        m[...] = cupy.random.rand(700, 300, dtype=cupy.float32)
        calls()  # warm-up, as for any capture (the kernels of these sizes compiled and loaded)
        s.synchronize()
        s.begin_capture()
        try:
            got = calls()
        finally:  # a failed call must not leave the stream capturing for the tests after this one
            graph = s.end_capture()
        # Memory of the strided sum's partial results, freed during the capture, must stay the
        # graph's: arrays allocated now on the same stream must never be written by a replay.
        others = [cupy.full(k, 7.0, dtype=cupy.float32) for k in (700, 768, 1024, 4096)]
    for _ in range(3):
        with s:
            x[...] = cupy.random.rand(n, dtype=cupy.float32)
            m[...] = cupy.random.rand(700, 300, dtype=cupy.float32)
            graph.launch(s)
        s.synchronize()
        total, row_max, col_min, strided, seg_max, ident, t_max = got
        want = float(x.astype(cupy.float64).sum())
        assert abs(float(total) - want) <= 1e-5 * want
        assert bool((row_max == m.max(-1)).all()) and bool((col_min == m.min(0)).all())
        want = float(m[:, 3:50].astype(cupy.float64).sum())
        assert abs(float(strided) - want) <= 1e-5 * want
        bounds = offsets.tolist()
        for k in range(4):
            a, b = bounds[k], bounds[k + 1]
            assert float(seg_max[k]) == (float(x[a:b].max()) if b > a else -math.inf)
        assert ident.tolist() == [math.inf] * 5
        assert bool((t_max == m.max(0)).all())
        for o in others:
            assert bool((o == 7.0).all())


def test_capture_accepts_the_captures_own_memory(cupy):
    # Memory allocated during the capture (stream-ordered, MemoryAsyncPool) is a node of the graph,
    # unknown to the driver's pointer queries until the graph runs: a captured call may use it.
    x = cupy.arange(1000, dtype=cupy.float32)
    got = cupy.zeros((), dtype=cupy.float32)
    s = cupy.cuda.Stream(non_blocking=True)
    pool = cupy.cuda.MemoryAsyncPool()
    with s:
        rt.sum(x, out=got)  # warm: compiled, and the same call made outside the capture
        got[...] = cupy.zeros((), dtype=cupy.float32)  # CuPy's copy kernel compiled too
        s.synchronize()
        s.begin_capture()
        try:
            mem = pool.malloc(4)
            o = cupy.ndarray((), dtype=cupy.float32, memptr=mem)
            rt.sum(x, out=o)
            got[...] = o
            del o, mem  # freed in the graph
        finally:
            graph = s.end_capture()
        got.fill(0)
        graph.launch(s)
    s.synchronize()
    assert float(got) == 999 * 1000 / 2
    # Outside a capture, the library refuses memory CUDA does not know as ever, also for the call
    # just made warm (the package refuses host arrays before; the library is asked directly).
    host = np.ones(1000, dtype=np.float32)
    f32, op, dev = _dtypes.BY_NAME["float32"].value, _dtypes.OPS["sum"], x.device.id
    for call in (lambda: _ext.reduce(dev, f32, op, host.ctypes.data, 1000, got.data.ptr, s.ptr),
                 lambda: _ext.reduce(dev, f32, op, x.data.ptr, 1000, host.ctypes.data, s.ptr),
                 lambda: _ext.hot(0, dev, f32, op, host.ctypes.data, 1000, 0, got.data.ptr, s.ptr)):
        with pytest.raises(ValueError, match="not memory CUDA knows"):
            call()


class RecordingDLPack:
    """An array seen only through __dlpack__, noting the stream each call names."""

    def __init__(self, a, streams):
        self._a, self._streams = a, streams

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        self._streams.append(stream)
        try:
            return self._a.__dlpack__(stream=stream, max_version=max_version)
        except TypeError:  # an older CuPy
            return self._a.__dlpack__(stream=stream)

    def __dlpack_device__(self):
        return self._a.__dlpack_device__()


def test_dlpack_producers_are_handed_the_calls_stream(cupy):
    s = cupy.cuda.Stream(non_blocking=True)
    x = cupy.ones(1000, dtype=cupy.float32)
    offsets = cupy.asarray([0, 10, 1000], dtype=cupy.int64)
    streams = []
    r = rt.sum(RecordingDLPack(x, streams), stream=s)
    s.synchronize()
    assert streams == [s.ptr] and float(r.item()) == 1000.0
    streams.clear()
    with s:  # x a CuPy array: the call runs on CuPy's current stream, the producer is told so
        seg = rt.segment_sum(x, RecordingDLPack(offsets, streams))
    s.synchronize()
    assert streams == [s.ptr] and seg.tolist() == [10.0, 990.0]
