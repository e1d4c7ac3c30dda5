"""GPU tests of mean, sumsq, norm, count_nonzero, any and all (and keepdim, record): against torch
(torch.mean, linalg.vector_norm, count_nonzero, any, all) over shapes, dims and dtypes, eager,
through the custom ops and compiled; opcheck; gradcheck in float64; CuPy and
__cuda_array_interface__ results; record() writing the store. Skipped without a GPU (test_ops.py
and test_torch_more_ops.py have what needs none)."""
from __future__ import annotations

import os
import sqlite3
import subprocess
import sys

import pytest

import reduce_tune as rt
from reduce_tune import _api

pytestmark = pytest.mark.gpu

MORE = ("mean", "sumsq", "norm1", "norm2", "count_nonzero", "any", "all")
SHAPES = [((1000,), (None, 0)), ((37, 129), (None, 0, -1)), ((4, 5, 300), (0, -1)),
          ((3, 0), (0, -1)), ((0,), (None,)), ((1, 4099), (None, -1)), ((), (None,)),
          ((65536, 16), (-1, 0))]


def call(op, x, dim=None, keepdim=False, **kw):
    if op in ("norm1", "norm2"):
        return rt.norm(x, 1 if op == "norm1" else 2, dim, keepdim, **kw)
    if op == "count_nonzero":
        return rt.count_nonzero(x, dim, **kw)
    return getattr(rt, op)(x, dim, keepdim, **kw)


def reference(torch, op, x, dim, keepdim=False):
    """torch's result (the float ops computed in float64, then rounded to x's dtype; an integer
    mean stays float64, which torch.mean refuses to compute from integers), keepdim by reshaping."""
    d = {} if dim is None else {"dim": dim}
    w = x.double()
    r = {"mean": lambda: torch.mean(w, **d),
         "sumsq": lambda: (w * w).sum(**d) if x.dtype.is_floating_point else (x * x).sum(**d),
         "norm1": lambda: torch.linalg.vector_norm(w, 1, dim),
         "norm2": lambda: torch.linalg.vector_norm(w, 2, dim),
         "count_nonzero": lambda: torch.count_nonzero(x, **d),
         "any": lambda: torch.any(x, **d), "all": lambda: torch.all(x, **d)}[op]()
    if op in ("sumsq", "norm1", "norm2") or (op == "mean" and x.dtype.is_floating_point):
        r = r.to(x.dtype)  # (an integer sumsq: torch's sum is int64; these values do not wrap)
    return r.reshape(_api.keep_shape(x.shape, dim)) if keepdim else r


def close(torch, got, want):
    tol = {torch.float64: 1e-10, torch.float32: 2e-5, torch.bfloat16: 2e-2, torch.float16: 2e-3}
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype, got.shape,
                                                                 want.shape)
    if got.dtype in tol:
        torch.testing.assert_close(got, want, rtol=tol[got.dtype], atol=tol[got.dtype],
                                   equal_nan=True)
    else:
        assert torch.equal(got, want), (got, want)


def data(torch, shape, dt, g):
    if dt.is_floating_point:  # positive, with zeros and exact values for count/any/all
        x = torch.rand(shape, device="cuda", generator=g)
        return torch.where(x < 0.2, 0, x).to(dt)
    return torch.randint(-3, 4, shape, device="cuda", generator=g, dtype=dt)


@pytest.mark.parametrize("op", MORE)
def test_against_torch(torch, op):
    g = torch.Generator(device="cuda").manual_seed(11)
    for dt in (torch.float32, torch.float64, torch.bfloat16, torch.float16, torch.int32, torch.int64):
        if op.startswith("norm") and not dt.is_floating_point:
            continue
        for shape, dims in SHAPES:
            x = data(torch, shape, dt, g)
            for dim in dims:
                for keepdim in ((False,) if op == "count_nonzero" else (False, True)):
                    got = call(op, x, dim, keepdim)
                    close(torch, got, reference(torch, op, x, dim, keepdim))
                    # through the custom op (a tensor that requires grad, or under no fast path)
                    if dt.is_floating_point and op in ("mean", "sumsq", "norm1", "norm2"):
                        close(torch, call(op, x.clone().requires_grad_(), dim, keepdim).detach(),
                              reference(torch, op, x, dim, keepdim))


@pytest.mark.parametrize("op", MORE)
def test_strided_and_out(torch, op):
    g = torch.Generator(device="cuda").manual_seed(12)
    m = data(torch, (300, 200), torch.float32, g)
    for v in (m[:, 3:150], m.t(), m[::2]):
        for dim in ((0, -1) if op == "all" else (None, 0, -1)):
            close(torch, call(op, v, dim), reference(torch, op, v, dim))
    if op == "all":  # no op combines the rows' results of all; a transposed matrix is one run
        for v in (m[:, 3:150], m[::2]):
            with pytest.raises(ValueError, match="all of the whole array"):
                rt.all(v)
        close(torch, rt.all(m.t()), torch.all(m))
        close(torch, rt.all(m.t()[:, None, :]), torch.all(m))
    want = reference(torch, op, m, -1)
    out = torch.empty_like(want)
    assert call(op, m, -1, out=out) is out
    close(torch, out, want)


def test_any_all_results_are_bool_written_in_place(torch):
    x = torch.tensor([[0, 0, 3], [0, 0, 0], [1, 2, 3]], device="cuda", dtype=torch.int32)
    for f, want in ((rt.any, [True, False, True]), (rt.all, [False, False, True])):
        r = f(x, -1)
        assert r.dtype == torch.bool and r.tolist() == want
        assert f(x).dtype == torch.bool
    assert rt.any(torch.zeros(0, device="cuda")).item() is False
    assert rt.all(torch.zeros(0, device="cuda")).item() is True
    assert rt.any(torch.zeros(3, 0, device="cuda"), -1).tolist() == [False] * 3
    assert rt.all(torch.zeros(3, 0, device="cuda"), -1).tolist() == [True] * 3
    nan = torch.tensor([0.0, float("nan"), -0.0], device="cuda")
    assert rt.count_nonzero(nan).item() == 1 and rt.any(nan).item() is True


def test_mean_of_empty_is_nan(torch):
    assert torch.isnan(rt.mean(torch.zeros(0, device="cuda")))
    assert torch.isnan(rt.mean(torch.zeros(4, 0, device="cuda"), -1)).all()
    assert rt.mean(torch.zeros(0, device="cuda", dtype=torch.int32)).dtype == torch.float64


@pytest.mark.parametrize("op", MORE)
def test_opcheck(torch, op):
    g = torch.Generator(device="cuda").manual_seed(13)
    f = getattr(torch.ops.reduce_tune, op).default
    for shape, dims in SHAPES[:4]:
        for dt in (torch.float64, torch.float32, torch.int32):
            if op.startswith("norm") and not dt.is_floating_point:
                continue
            x = data(torch, shape, dt, g)
            if op == "mean" and x.numel() == 0:
                continue  # NaN results: opcheck compares them with equal_nan off (test above)
            x.requires_grad_(dt == torch.float64 and op in ("mean", "sumsq", "norm2"))
            for dim in dims:
                torch.library.opcheck(f, (x,), {"dim": dim}, atol=2e-5, rtol=2e-5)


def test_gradcheck(torch):
    g = torch.Generator(device="cuda").manual_seed(14)
    x = (torch.rand(37, 29, device="cuda", generator=g, dtype=torch.float64) + 0.5)
    x = (x * torch.where(torch.rand(37, 29, device="cuda", generator=g) < 0.5, -1, 1)).requires_grad_()
    for dim in (None, 0, -1):
        for keepdim in (False, True):
            for f in (lambda t: rt.mean(t, dim, keepdim), lambda t: rt.norm(t, 2, dim, keepdim),
                      lambda t: rt.norm(t, 1, dim, keepdim), lambda t: rt.sumsq(t, dim, keepdim)):
                assert torch.autograd.gradcheck(f, (x,))
    z = torch.zeros(3, 4, device="cuda", dtype=torch.float64, requires_grad=True)
    rt.norm(z, 2, -1).sum().backward()  # vector_norm's rule: 0 where the norm is 0
    assert torch.equal(z.grad, torch.zeros_like(z))


def test_compiled_matches_eager(torch):
    from torch._dynamo.utils import counters
    torch._dynamo.reset()
    counters.clear()

    def f(x, m):
        return (rt.mean(m, -1), rt.norm(m, 1, 0), rt.norm(x), rt.count_nonzero(m, 0),
                rt.any(m), rt.all(m, -1, keepdim=True), rt.sumsq(x), rt.mean(x, 0, True))

    g = torch.Generator(device="cuda").manual_seed(15)
    x, m = data(torch, (100_003,), torch.float32, g), data(torch, (513, 300), torch.float32, g)
    got = torch.compile(f, fullgraph=True, backend="aot_eager")(x, m)
    assert not counters["graph_break"], dict(counters["graph_break"])
    for a, b in zip(got, f(x, m)):
        close(torch, a, b)


def test_cupy_results(cupy):
    np = pytest.importorskip("numpy")
    a = np.random.default_rng(1).integers(-2, 3, (300, 70)).astype(np.float32)
    x = cupy.asarray(a)
    m = rt.mean(x, -1)
    assert isinstance(m, cupy.ndarray) and m.dtype == np.float32
    np.testing.assert_allclose(m.get(), a.mean(-1), rtol=1e-5, atol=1e-6)
    for f, ref in ((rt.any, np.any), (rt.all, np.all)):
        r = f(x, 0, keepdim=True)
        assert r.dtype == np.bool_ and r.shape == (1, 70)
        np.testing.assert_array_equal(r.get(), ref(a, 0, keepdims=True))
    assert int(rt.count_nonzero(x)) == np.count_nonzero(a)
    assert rt.mean(cupy.asarray(a.astype(np.int32))).dtype == np.float64
    np.testing.assert_allclose(float(rt.norm(x)), np.linalg.norm(a.ravel()), rtol=1e-5)


def test_device_array_results(torch):
    class CAI:  # a __cuda_array_interface__ object: results are DeviceArrays
        def __init__(self, t):
            self.t, self.__cuda_array_interface__ = t, t.__cuda_array_interface__

    x = torch.tensor([[0, 1, 2], [0, 0, 0]], device="cuda", dtype=torch.int64)
    r = rt.any(CAI(x), -1)
    assert isinstance(r, rt.DeviceArray) and r.dtype == "bool"
    assert r.__cuda_array_interface__["typestr"] == "|b1"
    assert r.get().tolist() == [True, False]
    assert torch.as_tensor(r, device="cuda").tolist() == [True, False]
    assert rt.mean(CAI(x)).dtype == "float64" and rt.mean(CAI(x)).item() == 0.5


def test_record_writes_the_store(torch, tmp_path):
    db = tmp_path / "store.db"
    code = ("import torch, reduce_tune as rt\n"
            "assert rt.record(True)\n"
            "x = torch.rand(12345, device='cuda')\n"
            "rt.mean(x); rt.norm(x.reshape(15, 823), dim=-1); torch.cuda.synchronize()\n"
            "before = rt._ext.stats()['reducers']\n"
            "assert not rt.record(False) and rt._ext.stats()['reducers'] == before + 1\n"
            "rt.sumsq(x); torch.cuda.synchronize()\n")
    env = {k: v for k, v in os.environ.items() if k != "REDUCE_TUNE_RECORD"}
    env["REDUCE_TUNE_DB"] = str(db)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    rows = sqlite3.connect(db).execute("SELECT dtype, op, problem FROM recorded").fetchall()
    assert ("float32", "mean", "array") in rows and ("float32", "norm2", "rows") in rows, rows
    assert not any(op == "sumsq" for _, op, _ in rows), rows  # after record(False)


def test_autotune_tunes_the_point_on_first_use(torch, tmp_path):
    db = tmp_path / "store.db"
    code = ("import torch, reduce_tune as rt\n"
            "assert rt.autotune(True)\n"
            "x = torch.rand(12345, device='cuda', dtype=torch.float64)\n"
            "s = rt.sum(x); torch.cuda.synchronize()\n"
            "assert abs(s.item() - x.sum().item()) <= 1e-9 * x.sum().item(), (s.item(), x.sum().item())\n")
    env = {k: v for k, v in os.environ.items() if k not in ("REDUCE_TUNE_RECORD", "REDUCE_TUNE_AUTOTUNE")}
    env["REDUCE_TUNE_DB"] = str(db)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    con = sqlite3.connect(db)
    # The call's point, float64 sum of 12345 elements: looked up and tuned at its bucket, 2^13.
    best = con.execute("SELECT count(*) FROM best WHERE dtype = 'float64' AND op = 'sum' AND "
                       "problem = 'array' AND n = 8192").fetchone()[0]
    runs = con.execute("SELECT status FROM runs WHERE options LIKE '%autotune-worker%'").fetchall()
    assert best == 1 and runs == [("done",)], (best, runs)


def test_autotune_tunes_a_user_reductions_point_under_its_name(torch, tmp_path):
    db = tmp_path / "store.db"
    code = ("import torch, reduce_tune as rt\n"
            "assert rt.autotune(True)\n"
            "sq = rt.Reduction(map='x * x')\n"
            "x = torch.rand(12345, device='cuda', dtype=torch.float32)\n"
            "want = (x.double() ** 2).sum().item()\n"
            "for _ in range(2):\n"
            "    s = sq(x); torch.cuda.synchronize()\n"
            "    assert abs(s.item() - want) <= 1e-5 * want, (s.item(), want)\n"
            "print(sq.name)\n")
    env = {k: v for k, v in os.environ.items() if k not in ("REDUCE_TUNE_RECORD", "REDUCE_TUNE_AUTOTUNE")}
    env["REDUCE_TUNE_DB"] = str(db)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    name = out.stdout.strip().splitlines()[-1]
    assert name.startswith("user:"), out.stdout
    con = sqlite3.connect(db)
    # Tuned at its bucket, 2^13, under the reduction's name, its description kept; once.
    best = con.execute("SELECT count(*) FROM best WHERE dtype = 'float32' AND op = ? AND "
                       "problem = 'array' AND n = 8192", (name,)).fetchone()[0]
    kept = con.execute("SELECT count(*) FROM reductions WHERE name = ?", (name,)).fetchone()[0]
    runs = con.execute("SELECT status FROM runs WHERE options LIKE '%autotune-worker%'").fetchall()
    assert best == 1 and kept == 1 and runs == [("done",)], (best, kept, runs)
