"""The torch custom op reduce_tune::dot without a GPU: its schema, fake implementation (shapes,
dtypes, keepdim, mismatched inputs), torch.compile(fullgraph=True) with no graph break and its
gradient formula (grad * y, grad * x) against torch's own (x * y).sum(dim). Skipped where torch is
not installed; test_gpu_dot.py runs it."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

torch = pytest.importorskip("torch")
if not hasattr(torch.library, "custom_op"):
    pytest.skip(f"torch {torch.__version__} has no torch.library.custom_op (2.4+)",
                allow_module_level=True)

import reduce_tune as rt  # noqa: E402
from reduce_tune import _api, _torch  # noqa: E402

from torch._subclasses.fake_tensor import FakeTensorMode  # noqa: E402
from torch._dynamo.utils import counters  # noqa: E402

TORCH_DTYPES = [getattr(torch, d) for d in rt.dtypes() if hasattr(torch, d)]
SHAPES = [(), (7,), (0,), (4, 5), (1, 9), (0, 3), (3, 0), (2, 3, 4)]


def dims_of(shape):
    return [None, 0] if not shape else [None, 0, -1, len(shape) - 1, -len(shape)]


def test_registered_with_its_schema():
    assert str(torch.ops.reduce_tune.dot.default._schema) == \
        "reduce_tune::dot(Tensor x, Tensor y, int? dim=None, ScalarType? dtype=None) -> Tensor"
    assert "dot" not in _torch.MORE  # not registered as an op of one input


def test_fake_shapes_and_dtypes():
    with FakeTensorMode():
        for dt in TORCH_DTYPES:
            for shape in SHAPES:
                x = torch.empty(shape, dtype=dt, device="cuda")
                y = torch.empty(shape, dtype=dt, device="cuda")
                for dim in dims_of(shape):
                    ref = torch.empty(shape, device="meta")
                    for keepdim in (False, True):
                        want = tuple((ref.sum(dim, keepdim=keepdim) if dim is not None
                                      else ref.sum(dim=tuple(range(len(shape))), keepdim=True)
                                      if keepdim else ref.sum()).shape)
                        r = rt.dot(x, y, dim, keepdim)
                        assert tuple(r.shape) == want and r.dtype == dt, (dt, shape, dim, keepdim)
                    r = torch.ops.reduce_tune.dot(x, y, dim)
                    assert r.dtype == dt and r.is_contiguous()
        h = torch.empty(6, dtype=torch.bfloat16, device="cuda")
        assert torch.ops.reduce_tune.dot(h, h, None, torch.float32).dtype == torch.float32


def test_fake_refuses_mismatched_inputs():
    with FakeTensorMode():
        x = torch.empty(4, 5, device="cuda")
        with pytest.raises(ValueError, match="one shape"):
            torch.ops.reduce_tune.dot(x, torch.empty(5, 4, device="cuda"))
        with pytest.raises(TypeError, match="one dtype"):
            torch.ops.reduce_tune.dot(x, torch.empty(4, 5, device="cuda", dtype=torch.float64))
        with pytest.raises(ValueError, match="one layout"):
            torch.ops.reduce_tune.dot(x, torch.empty(5, 4, device="cuda").t())


def test_compile_fullgraph_has_no_graph_break():
    torch._dynamo.reset()
    counters.clear()

    def f(x, y, m, n):
        return rt.dot(x, y), rt.dot(m, n, -1), rt.dot(m, n, 0, keepdim=True)

    x, y = torch.empty(100, device="meta"), torch.empty(100, device="meta")
    m, n = torch.empty(6, 7, device="meta"), torch.empty(6, 7, device="meta")
    r = torch.compile(f, fullgraph=True, backend="aot_eager")(x, y, m, n)
    assert [tuple(t.shape) for t in r] == [(), (6,), (1, 7)]
    assert not counters["graph_break"], dict(counters["graph_break"])


def test_compiled_backward_shapes():
    torch._dynamo.reset()
    x = torch.empty(6, 7, device="meta", requires_grad=True)
    y = torch.empty(6, 7, device="meta", requires_grad=True)
    out = torch.compile(lambda a, b: rt.dot(a, b, -1).sum(), fullgraph=True, backend="aot_eager")(x, y)
    gx, gy = torch.autograd.grad(out, (x, y))
    assert gx.shape == gy.shape == x.shape


def test_gradient_formula_matches_torch():
    g = torch.Generator().manual_seed(7)
    for shape in ((7,), (5, 6), (4, 3, 2), ()):
        x = torch.randn(shape, generator=g, dtype=torch.float64)
        y = torch.randn(shape, generator=g, dtype=torch.float64)
        for dim in dims_of(shape):
            xr, yr = x.clone().requires_grad_(), y.clone().requires_grad_()
            want = (xr * yr).sum() if dim is None else (xr * yr).sum(dim)
            grad = torch.rand(want.shape, generator=g, dtype=x.dtype) + 0.5
            ex, ey = torch.autograd.grad(want, (xr, yr), grad)
            ctx = SimpleNamespace(d=_api.check_dim(x.dim(), dim), saved_tensors=(x, y),
                                  needs_input_grad=(True, True, False, False))
            gx, gy, *rest = _torch._dot_backward(ctx, grad)
            assert rest == [None, None]
            torch.testing.assert_close(gx, ex)
            torch.testing.assert_close(gy, ey)
    ctx = SimpleNamespace(d=None, saved_tensors=(x, y), needs_input_grad=(False, True, False, False))
    assert _torch._dot_backward(ctx, torch.tensor(1.0, dtype=torch.float64))[0] is None
