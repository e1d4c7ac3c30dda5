"""The torch custom ops without a GPU: their registration (when torch is imported, never importing
torch otherwise), schemas, fake implementations (shapes, dtypes, errors) through FakeTensorMode and
meta tensors, torch.compile(fullgraph=True) tracing with no graph break, and the gradient formulas
against torch's own. Skipped where torch is not installed; test_gpu_torch.py runs the ops."""
from __future__ import annotations

import os
import subprocess
import sys
from types import SimpleNamespace

import pytest

torch = pytest.importorskip("torch")
if not hasattr(torch.library, "custom_op"):
    pytest.skip(f"torch {torch.__version__} has no torch.library.custom_op (2.4+)",
                allow_module_level=True)

import reduce_tune as rt  # noqa: E402
from reduce_tune import _torch_hook  # noqa: E402

from torch._subclasses.fake_tensor import FakeTensorMode  # noqa: E402
from torch._dynamo.utils import counters  # noqa: E402

OPS = ("sum", "min", "max")
FUNCS = {"sum": rt.sum, "min": rt.min, "max": rt.max}
SEG_FUNCS = {"sum": rt.segment_sum, "min": rt.segment_min, "max": rt.segment_max}
REF = {"sum": torch.sum, "min": torch.amin, "max": torch.amax}
TORCH_DTYPES = [getattr(torch, d) for d in rt.dtypes() if hasattr(torch, d)]


def run_python(code: str) -> str:
    out = subprocess.run([sys.executable, "-c", code], env=dict(os.environ), capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


# ---- registration ---------------------------------------------------------------------------

def test_registered_once_torch_is_imported():
    assert _torch_hook.ops is not None, _torch_hook.why
    for op in OPS:
        for name in (op, "segment_" + op):
            assert hasattr(torch.ops.reduce_tune, name)


def test_import_never_imports_torch_and_registers_when_torch_comes():
    # reduce_tune first (isort's order), then torch, whose import registers the ops; a find_spec
    # that only asks whether torch is there changes nothing.
    code = (
        "import importlib.util, sys, reduce_tune as rt\n"
        "assert 'torch' not in sys.modules\n"
        "assert importlib.util.find_spec('torch') is not None and 'torch' not in sys.modules\n"
        "assert rt._torch_hook.ops is None\n"
        "import torch\n"
        "assert rt._torch_hook.ops is not None, rt._torch_hook.why\n"
        "assert type(torch.__spec__.loader).__module__ != 'reduce_tune._torch_hook'\n"
        "assert torch.__loader__ is torch.__spec__.loader\n"
        "assert not any(isinstance(f, rt._torch_hook._Finder) for f in sys.meta_path)\n"
        "print(torch.ops.reduce_tune.segment_max.default._schema)\n")
    assert run_python(code) == "reduce_tune::segment_max(Tensor x, Tensor offsets) -> Tensor"


def test_registered_at_import_when_torch_came_first():
    code = ("import sys, torch, reduce_tune as rt\n"
            "assert rt._torch_hook.ops is not None and rt._torch_hook._finder is None\n"
            "print(torch.ops.reduce_tune.sum.default._schema)\n")
    assert run_python(code) == \
        "reduce_tune::sum(Tensor x, int? dim=None, ScalarType? dtype=None) -> Tensor"


def test_schemas():
    for op in OPS:
        assert str(getattr(torch.ops.reduce_tune, op).default._schema) == \
            f"reduce_tune::{op}(Tensor x, int? dim=None, ScalarType? dtype=None) -> Tensor"
        assert str(getattr(torch.ops.reduce_tune, "segment_" + op).default._schema) == \
            f"reduce_tune::segment_{op}(Tensor x, Tensor offsets) -> Tensor"


# ---- fake implementations ---------------------------------------------------------------------

SHAPES = [(), (7,), (0,), (4, 5), (1, 9), (0, 3), (3, 0), (2, 3, 4), (2, 1, 5, 3)]


def dims_of(shape):
    return [None, 0] if not shape else [None, 0, -1, len(shape) - 1, -len(shape)]


def expected_shape(shape, dim):
    if dim is None:
        return ()
    return tuple(torch.empty(shape, device="meta").sum(dim).shape)  # torch's own rule


@pytest.mark.parametrize("op", OPS)
def test_fake_shapes_and_dtypes(op):
    f = getattr(torch.ops.reduce_tune, op)
    with FakeTensorMode():
        for dt in TORCH_DTYPES:
            for shape in SHAPES:
                x = torch.empty(shape, dtype=dt, device="cuda")
                for dim in dims_of(shape):
                    r = f(x, dim)
                    assert tuple(r.shape) == expected_shape(shape, dim), (shape, dim)
                    assert r.dtype == dt and r.device == x.device and r.is_contiguous()
                    p = FUNCS[op](x, dim)  # the public function on a fake tensor: the op
                    assert tuple(p.shape) == tuple(r.shape) and p.dtype == dt


@pytest.mark.parametrize("op", OPS)
def test_meta_tensors(op):
    f = getattr(torch.ops.reduce_tune, op)
    x = torch.empty(6, 10, dtype=torch.float16, device="meta")
    assert f(x, -1).shape == (6,) and f(x, 0).shape == (10,) and f(x).shape == ()
    assert f(x, None, torch.float32).dtype == torch.float32
    offsets = torch.empty(5, dtype=torch.int64, device="meta")
    s = getattr(torch.ops.reduce_tune, "segment_" + op)(x.reshape(-1), offsets)
    assert s.shape == (4,) and s.dtype == torch.float16 and s.is_meta


def test_result_dtype_rules():
    with FakeTensorMode():
        for dt in (torch.bfloat16, torch.float16):
            x = torch.empty(3, 8, dtype=dt, device="cuda")
            for op in OPS:
                f = getattr(torch.ops.reduce_tune, op)
                assert f(x, None, torch.float32).dtype == torch.float32
                assert f(x.reshape(-1), 0, torch.float32).dtype == torch.float32  # 1-D: whole
                assert f(x, None, dt).dtype == dt
                assert FUNCS[op](x, dtype="float32").dtype == torch.float32
                with pytest.raises(ValueError, match="dim=None"):
                    f(x, -1, torch.float32)
                with pytest.raises(TypeError, match="element type, or float32"):
                    f(x, None, torch.float64)
        x = torch.empty(8, device="cuda")
        assert torch.ops.reduce_tune.sum(x, None, torch.float32).dtype == torch.float32
        for dt in (torch.float64, torch.bfloat16):
            with pytest.raises(TypeError, match="element type, or float32"):
                torch.ops.reduce_tune.sum(x, None, dt)
        with pytest.raises(TypeError, match="element type, or float32"):
            i = torch.empty(8, dtype=torch.int32, device="cuda")
            torch.ops.reduce_tune.max(i, None, torch.float32)


def test_fake_errors_are_the_eager_ones():
    with FakeTensorMode():
        x = torch.empty(2, 3, 4, device="cuda")
        with pytest.raises(ValueError, match="dim must be None, 0 or -1"):
            torch.ops.reduce_tune.sum(x, 1)
        with pytest.raises(ValueError, match="out of range"):
            torch.ops.reduce_tune.max(x, 3)
        for dt in (torch.int16, torch.bool, torch.complex64, torch.uint8):
            with pytest.raises(TypeError, match="unsupported dtype"):
                torch.ops.reduce_tune.min(torch.empty(4, dtype=dt, device="cuda"))
        with pytest.raises(TypeError, match="not on a GPU"):
            torch.ops.reduce_tune.sum(torch.empty(4, device="cpu"))
        for dim in (True, 1.0):
            with pytest.raises(TypeError, match="dim must be None or an int"):
                rt.sum(x, dim)


def test_segment_fake():
    with FakeTensorMode():
        x = torch.empty(100, device="cuda", dtype=torch.float64)
        for k in (1, 2, 37):
            off = torch.empty(k, dtype=torch.int64, device="cuda")
            for op in OPS:
                r = SEG_FUNCS[op](x, off)
                assert r.shape == (k - 1,) and r.dtype == torch.float64
        with pytest.raises(TypeError, match="offsets must be int64, not int32"):
            rt.segment_sum(x, torch.empty(3, dtype=torch.int32, device="cuda"))
        with pytest.raises(ValueError, match="1-D"):
            rt.segment_min(x, torch.empty(2, 2, dtype=torch.int64, device="cuda"))
        with pytest.raises(ValueError, match="1-D"):
            rt.segment_min(x, torch.empty(0, dtype=torch.int64, device="cuda"))
        with pytest.raises(ValueError, match="contiguous"):
            rt.segment_max(x[::2], torch.empty(3, dtype=torch.int64, device="cuda"))


def test_out_argument_on_fake_tensors():
    with FakeTensorMode():
        x = torch.empty(5, 6, device="cuda")
        out = torch.empty(5, device="cuda")
        assert rt.max(x, -1, out=out) is out
        with pytest.raises(TypeError, match="out has dtype float64"):
            rt.max(x, -1, out=torch.empty(5, dtype=torch.float64, device="cuda"))
        with pytest.raises(ValueError, match="elements"):
            rt.max(x, -1, out=torch.empty(6, device="cuda"))


# ---- torch.compile ----------------------------------------------------------------------------

def traced(x, m, offsets, out):
    a = rt.sum(x)
    b = rt.max(m, dim=-1)
    c = rt.min(m, 0)
    d = rt.segment_sum(x, offsets)
    e = rt.sum(m.to(torch.bfloat16), dtype="float32")
    rt.max(m, -1, out=out)
    return a * 2, b + 1, c, d, e, out


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_compile_fullgraph_has_no_graph_break(backend):
    # Meta tensors: dynamo traces the public functions and the compiled graph runs the fake
    # implementations, so this needs no GPU.
    torch._dynamo.reset()
    counters.clear()
    x = torch.empty(100, device="meta")
    m = torch.empty(6, 7, device="meta")
    off = torch.empty(4, dtype=torch.int64, device="meta")
    out = torch.empty(6, device="meta")
    r = torch.compile(traced, fullgraph=True, backend=backend)(x, m, off, out)
    assert [tuple(t.shape) for t in r] == [(), (6,), (7,), (3,), (), (6,)]
    assert r[4].dtype == torch.float32 and r[-1] is out
    assert not counters["graph_break"], dict(counters["graph_break"])
    explained = torch._dynamo.explain(traced)(x, m, off, out)
    assert explained.graph_break_count == 0 and explained.graph_count == 1
    ops = {str(n.target) for g in explained.graphs for n in g.graph.nodes if n.op == "call_function"}
    assert {"reduce_tune.sum.default", "reduce_tune.max.default", "reduce_tune.min.default",
            "reduce_tune.segment_sum.default"} <= ops, ops


def test_compiled_backward_shapes():
    torch._dynamo.reset()

    def loss(x, m, h):
        return (rt.sum(x) + rt.max(m, -1).sum() + rt.min(m, 0).sum()
                + rt.segment_max(x, torch.zeros(3, dtype=torch.int64, device=x.device)).sum()
                + rt.sum(h, dtype=torch.float32))

    x = torch.empty(20, device="meta", requires_grad=True)
    m = torch.empty(6, 7, device="meta", dtype=torch.float64, requires_grad=True)
    h = torch.empty(9, device="meta", dtype=torch.bfloat16, requires_grad=True)
    out = torch.compile(loss, fullgraph=True, backend="aot_eager")(x, m, h)
    gx, gm, gh = torch.autograd.grad(out, (x, m, h))
    assert (gx.shape, gm.shape, gh.shape) == (x.shape, m.shape, h.shape)
    assert (gx.dtype, gm.dtype, gh.dtype) == (torch.float32, torch.float64, torch.bfloat16)


# ---- the gradient formulas against torch's (on the CPU, through the registered functions) -------

def ctx_for(op, x, dim, r):
    from reduce_tune import _api, _torch
    d = _api.check_dim(x.dim(), dim)
    if op == "sum":
        return _torch._sum_backward, SimpleNamespace(d=d, shape=x.shape, dtype=x.dtype)
    return _torch._extreme_backward, SimpleNamespace(d=d, saved_tensors=(x, r))


@pytest.mark.parametrize("op", OPS)
def test_gradient_formulas_match_torch(op):
    g = torch.Generator().manual_seed(3)
    nan = float("nan")
    cases = [
        torch.tensor([[1., 3., 3., 0.], [2., 2., 2., 2.], [5., nan, 1., 5.]]),
        torch.randint(-3, 4, (5, 6, 4), generator=g).double(),  # many ties
        torch.randn(7, generator=g),
        torch.tensor(2.5),
        torch.tensor([-0.0, 0.0, -0.0]),
    ]
    for x in cases:
        for dim in dims_of(tuple(x.shape)):
            xr = x.clone().requires_grad_()
            want = REF[op](xr) if dim is None else REF[op](xr, dim)
            grad = torch.rand(want.shape, generator=g, dtype=x.dtype) + 0.5
            expected, = torch.autograd.grad(want, xr, grad)
            backward, ctx = ctx_for(op, x, dim, want.detach())
            got = backward(ctx, grad)[0]
            assert got.shape == x.shape and got.dtype == x.dtype
            torch.testing.assert_close(got, expected, equal_nan=True, atol=0, rtol=0)


@pytest.mark.parametrize("op", OPS)
def test_segment_gradient_formulas(op):
    from reduce_tune import _torch
    g = torch.Generator().manual_seed(4)
    x = torch.randint(-2, 3, (40,), generator=g).double()
    x[17] = float("nan")
    offsets = torch.tensor([3, 3, 10, 10, 11, 25, 25, 38])  # empty segments, elements outside
    segments = len(offsets) - 1
    results, expected = [], torch.zeros_like(x)
    grad = torch.rand(segments, generator=g, dtype=x.dtype) + 0.5
    ident = {"sum": 0.0, "min": float("inf"), "max": float("-inf")}[op]
    for s in range(segments):
        a, b = int(offsets[s]), int(offsets[s + 1])
        if a == b:
            results.append(torch.tensor(ident, dtype=x.dtype))
            continue
        piece = x[a:b].clone().requires_grad_()
        r = REF[op](piece)
        expected[a:b] = torch.autograd.grad(r, piece, grad[s])[0]
        results.append(r.detach())
    ctx = SimpleNamespace(saved_tensors=(x, offsets, torch.stack(results)))
    fn = _torch._segment_sum_backward if op == "sum" else _torch._segment_extreme_backward
    got = fn(ctx, grad)[0]
    torch.testing.assert_close(got, expected, equal_nan=True, atol=0, rtol=0)
    assert torch.all(got[:3] == 0) and torch.all(got[38:] == 0)
    empty = SimpleNamespace(saved_tensors=(x, offsets[:1], x.new_empty(0)))
    assert torch.equal(fn(empty, x.new_empty(0))[0], torch.zeros_like(x))
