"""GPU tests through CuPy: results are CuPy arrays on CuPy's current stream; every dtype and op
against cupy on odd sizes. Skipped without a GPU or CuPy."""
from __future__ import annotations

import math

import pytest

import reduce_tune as rt

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
