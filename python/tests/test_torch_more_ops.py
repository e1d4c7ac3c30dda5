"""The torch custom ops of mean, sumsq, norm1, norm2, count_nonzero, any, all, argmax, argmin,
logsumexp, var, std, var_population and std_population without a GPU:
registration, schemas, fake implementations (shapes and dtypes by torch's rules, keepdim),
torch.compile(fullgraph=True) with no graph break, and the gradient formulas against torch's own.
Skipped where torch is not installed; test_gpu_ops.py runs the ops."""
from __future__ import annotations

import math
from types import SimpleNamespace

import pytest

torch = pytest.importorskip("torch")
if not hasattr(torch.library, "custom_op"):
    pytest.skip(f"torch {torch.__version__} has no torch.library.custom_op (2.4+)",
                allow_module_level=True)

import reduce_tune as rt  # noqa: E402
from reduce_tune import _api, _ops, _torch  # noqa: E402

from torch._subclasses.fake_tensor import FakeTensorMode  # noqa: E402
from torch._dynamo.utils import counters  # noqa: E402

MORE = ("mean", "sumsq", "norm1", "norm2", "count_nonzero", "any", "all", "argmax", "argmin",
        "logsumexp", "var", "std", "var_population", "std_population")
MOMENTS = {"var": ("var", 1), "std": ("std", 1), "var_population": ("var", 0),
           "std_population": ("std", 0)}  #: op -> (public function, correction)
FLOAT_ONLY = ("norm1", "norm2", "logsumexp")
NO_EMPTY = ("argmax", "argmin")  #: no result of an empty reduction
TORCH_DTYPES = [getattr(torch, d) for d in rt.dtypes() if hasattr(torch, d)]
FLOATS = [d for d in TORCH_DTYPES if d.is_floating_point]
SHAPES = [(), (7,), (0,), (4, 5), (1, 9), (0, 3), (3, 0), (2, 3, 4)]


def public(op):
    """The public function of an op, called as (x, dim, keepdim)."""
    if op in ("norm1", "norm2"):
        return lambda x, dim=None, keepdim=False: rt.norm(x, 1 if op == "norm1" else 2, dim, keepdim)
    if op == "count_nonzero":
        return lambda x, dim=None, keepdim=False: rt.count_nonzero(x, dim)
    if op in MOMENTS:
        f, c = MOMENTS[op]
        return lambda x, dim=None, keepdim=False: getattr(rt, f)(x, dim, correction=c,
                                                                 keepdim=keepdim)
    return lambda x, dim=None, keepdim=False: getattr(rt, op)(x, dim, keepdim)


def want_dtype(op, dt):
    if op == "mean" or op in MOMENTS:
        return dt if dt.is_floating_point else torch.float64
    return {"count_nonzero": torch.int64, "any": torch.bool, "all": torch.bool,
            "argmax": torch.int64, "argmin": torch.int64}.get(op, dt)


def dims_of(shape):
    return [None, 0] if not shape else [None, 0, -1, len(shape) - 1, -len(shape)]


def test_registered_with_schemas():
    for op in MORE:
        assert str(getattr(torch.ops.reduce_tune, op).default._schema) == \
            f"reduce_tune::{op}(Tensor x, int? dim=None) -> Tensor"


@pytest.mark.parametrize("op", MORE)
def test_fake_shapes_and_dtypes(op):
    f = getattr(torch.ops.reduce_tune, op)
    p = public(op)
    with FakeTensorMode():
        for dt in TORCH_DTYPES:
            x0 = torch.empty(4, dtype=dt, device="cuda")
            if op in FLOAT_ONLY and not dt.is_floating_point:
                with pytest.raises(TypeError, match="floating-point"):
                    f(x0)
                continue
            for shape in SHAPES:
                x = torch.empty(shape, dtype=dt, device="cuda")
                for dim in dims_of(shape):
                    ref = torch.empty(shape, device="meta")
                    if op in NO_EMPTY and _extent(shape, dim) == 0:
                        for keepdim in (False, True):
                            with pytest.raises(ValueError, match="empty reduction has no result"):
                                p(x, dim, keepdim)
                        with pytest.raises(ValueError, match="empty reduction has no result"):
                            f(x, dim)
                        continue
                    for keepdim in (False, True):
                        want = tuple((ref.sum(dim, keepdim=keepdim) if dim is not None
                                      else ref.sum(dim=tuple(range(len(shape))), keepdim=True)
                                      if keepdim else ref.sum()).shape)
                        r = p(x, dim, keepdim)
                        if op == "count_nonzero":  # no keepdim, as torch.count_nonzero
                            want = tuple(ref.sum(dim).shape) if dim is not None else ()
                        assert tuple(r.shape) == want, (op, shape, dim, keepdim)
                        assert r.dtype == want_dtype(op, dt) and r.device == x.device
                    r = f(x, dim)
                    assert r.dtype == want_dtype(op, dt) and r.is_contiguous()


def _extent(shape, dim):
    """The number of elements each result reduces."""
    d = _api.check_dim(len(shape), dim)
    return math.prod(shape) if d is None else shape[d]


def test_torch_rules_for_the_result_dtypes():
    # torch's own ops on meta tensors, where they are defined: the same dtypes.
    for dt in FLOATS:
        x = torch.empty(3, 4, dtype=dt, device="meta")
        assert torch.ops.reduce_tune.mean(x, 0).dtype == torch.mean(x, 0).dtype
        assert torch.ops.reduce_tune.norm2(x, -1).dtype == torch.linalg.vector_norm(x, 2, -1).dtype
    for dt in TORCH_DTYPES:
        x = torch.empty(3, 4, dtype=dt, device="meta")
        assert torch.ops.reduce_tune.count_nonzero(x, 0).dtype == torch.count_nonzero(x, 0).dtype
        assert torch.ops.reduce_tune.any(x, -1).dtype == torch.any(x, -1).dtype == torch.bool
        assert torch.ops.reduce_tune.all(x).dtype == torch.all(x).dtype
        assert torch.ops.reduce_tune.argmax(x, 0).dtype == torch.argmax(x, 0).dtype == torch.int64
        assert torch.ops.reduce_tune.argmin(x).dtype == torch.argmin(x).dtype
    for dt in FLOATS:
        x = torch.empty(3, 4, dtype=dt, device="meta")
        assert torch.ops.reduce_tune.logsumexp(x, -1).dtype == torch.logsumexp(x, -1).dtype
        for op in MOMENTS:
            f, c = MOMENTS[op]
            assert getattr(torch.ops.reduce_tune, op)(x, 0).dtype == \
                getattr(torch, f)(x, 0, correction=c).dtype


def test_torch_shapes_of_the_index_and_moment_ops():
    # keepdim and dim=None as torch.argmax / torch.var (torch.logsumexp needs a dim).
    for shape in ((), (7,), (4, 5), (2, 3, 4)):
        ref = torch.empty(shape, device="meta")
        for dim in dims_of(shape):
            for keepdim in (False, True):
                want = [torch.argmax(ref, dim, keepdim).shape, torch.var(ref, dim, keepdim=keepdim).shape]
                if dim is not None:
                    want.append(torch.logsumexp(ref, dim, keepdim).shape)
                with FakeTensorMode():
                    x = torch.empty(shape, device="cuda")
                    got = [rt.argmax(x, dim, keepdim).shape, rt.var(x, dim, keepdim=keepdim).shape]
                    if dim is not None:
                        got.append(rt.logsumexp(x, dim, keepdim).shape)
                assert got == want, (shape, dim, keepdim)


def test_var_and_std_route_by_correction():
    from torch.fx.experimental.proxy_tensor import make_fx
    x = torch.empty(6, 7, device="meta", dtype=torch.float64)
    for f in ("var", "std"):
        for c, op in ((1, f), (None, f), (True, f), (0, f + "_population"), (0.0, f + "_population")):
            g = make_fx(lambda t: getattr(rt, f)(t, -1, correction=c))(x)
            targets = [str(n.target) for n in g.graph.nodes if n.op == "call_function"]
            assert targets == [f"reduce_tune.{op}.default"], (f, c, targets)
    with pytest.raises(ValueError, match="correction=1"):
        rt.var(x, correction=2)
    with pytest.raises(ValueError, match="correction=1"):
        rt.std(x, 0, correction=0.5)


def traced(x, m, i):
    return (rt.mean(m, -1), rt.norm(m, 1, 0), rt.norm(x), rt.count_nonzero(i, 0), rt.any(i),
            rt.all(m, -1, keepdim=True), rt.sumsq(x), rt.mean(i, 0, True), rt.sum(m, -1, True),
            rt.argmax(m, -1), rt.argmin(i, 0, True), rt.logsumexp(m, 0), rt.var(m, -1),
            rt.std(x, correction=0), rt.var(i, 0, correction=0, keepdim=True), rt.std(m))


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_compile_fullgraph_has_no_graph_break(backend):
    torch._dynamo.reset()
    counters.clear()
    x = torch.empty(100, device="meta")
    m = torch.empty(6, 7, device="meta")
    i = torch.empty(6, 7, dtype=torch.int32, device="meta")
    r = torch.compile(traced, fullgraph=True, backend=backend)(x, m, i)
    assert [tuple(t.shape) for t in r] == [(6,), (7,), (), (7,), (), (6, 1), (), (1, 7), (6, 1),
                                           (6,), (1, 7), (7,), (6,), (), (1, 7), ()]
    assert [t.dtype for t in r] == [torch.float32] * 3 + [torch.int64, torch.bool, torch.bool,
                                                          torch.float32, torch.float64, torch.float32,
                                                          torch.int64, torch.int64, torch.float32,
                                                          torch.float32, torch.float32, torch.float64,
                                                          torch.float32]
    assert not counters["graph_break"], dict(counters["graph_break"])
    explained = torch._dynamo.explain(traced)(x, m, i)
    assert explained.graph_break_count == 0 and explained.graph_count == 1
    ops = {str(n.target) for g in explained.graphs for n in g.graph.nodes if n.op == "call_function"}
    assert {f"reduce_tune.{op}.default" for op in MORE} <= ops, ops


def test_compiled_backward_shapes():
    torch._dynamo.reset()

    def loss(x, m):
        return (rt.mean(x) + rt.norm(m, 2, -1).sum() + rt.norm(m, 1, 0).sum()
                + rt.sumsq(x) + rt.mean(m, 0, keepdim=True).sum() + rt.logsumexp(m, -1).sum()
                + rt.var(x) + rt.std(m, 0, correction=0).sum() + rt.var(m, -1, keepdim=True).sum()
                + rt.std(x) + rt.argmax(m, 0).sum())

    x = torch.empty(20, device="meta", requires_grad=True)
    m = torch.empty(6, 7, device="meta", dtype=torch.float64, requires_grad=True)
    out = torch.compile(loss, fullgraph=True, backend="aot_eager")(x, m)
    gx, gm = torch.autograd.grad(out, (x, m))
    assert (gx.shape, gm.shape, gx.dtype, gm.dtype) == (x.shape, m.shape, torch.float32, torch.float64)


def test_no_gradient_for_counts_predicates_and_indices():
    x = torch.empty(4, 5, device="meta", requires_grad=True)
    for op in ("count_nonzero", "any", "all", "argmax", "argmin"):
        r = getattr(torch.ops.reduce_tune, op)(x, -1)
        assert not r.requires_grad and r.grad_fn is None


# ---- the gradient formulas against torch's (on the CPU, through the registered functions) -------

REF = {
    "mean": lambda x, dim: torch.mean(x) if dim is None else torch.mean(x, dim),
    "sumsq": lambda x, dim: (x * x).sum() if dim is None else (x * x).sum(dim),
    "norm1": lambda x, dim: torch.linalg.vector_norm(x, 1, dim),
    "norm2": lambda x, dim: torch.linalg.vector_norm(x, 2, dim),
    "logsumexp": lambda x, dim: torch.logsumexp(x, tuple(range(x.dim())) if dim is None else dim),
    "var": lambda x, dim: torch.var(x, dim),
    "std": lambda x, dim: torch.std(x, dim),
    "var_population": lambda x, dim: torch.var(x, dim, correction=0),
    "std_population": lambda x, dim: torch.std(x, dim, correction=0),
}


def ctx_for(x, dim, r, op):
    d = _api.check_dim(x.dim(), dim)
    return SimpleNamespace(d=d, shape=x.shape, dtype=x.dtype, saved_tensors=(x, r),
                           correction=_ops.CORRECTION.get(op))


@pytest.mark.parametrize("op", list(REF))
def test_gradient_formulas_match_torch(op):
    backward = {"mean": _torch._mean_backward, "sumsq": _torch._sumsq_backward,
                "norm1": _torch._norm1_backward, "norm2": _torch._norm2_backward,
                "logsumexp": _torch._logsumexp_backward, "var": _torch._var_backward,
                "std": _torch._std_backward, "var_population": _torch._var_backward,
                "std_population": _torch._std_backward}[op]
    g = torch.Generator().manual_seed(5)
    cases = [
        torch.tensor([[1., -3., 0., 2.], [0., 0., 0., 0.], [5., -1., 1., 5.]]),  # a zero row
        torch.randn(5, 6, 4, generator=g).double(),
        torch.randn(7, generator=g),
        torch.tensor(2.5),
        torch.tensor([-2.0, 0.0, 3.0]),
    ]
    for x in cases:
        for dim in dims_of(tuple(x.shape)):
            xr = x.clone().requires_grad_()
            want = REF[op](xr, dim)
            grad = torch.rand(want.shape, generator=g, dtype=x.dtype) + 0.5
            expected, = torch.autograd.grad(want, xr, grad)
            got = backward(ctx_for(x, dim, want.detach(), op), grad)[0]
            assert got.shape == x.shape and got.dtype == x.dtype
            torch.testing.assert_close(got, expected, atol=1e-6, rtol=1e-6, equal_nan=True)


def test_gradient_formulas_at_the_edges():
    # logsumexp of a row of -inf (NaN gradients, as torch's), std of equal elements (0, as
    # torch's), var of one element with correction 1 (a divisor of 0: NaN, as torch's).
    inf = float("inf")
    cases = [("logsumexp", torch.tensor([[-inf, -inf], [1.0, -inf], [0.5, 0.5]]), -1),
             ("std", torch.tensor([[2.0, 2.0, 2.0], [1.0, 2.0, 4.0]]), -1),
             ("std_population", torch.tensor([[3.0], [1.0]]), -1),
             ("var", torch.tensor([[3.0], [1.0]]), -1),
             ("std", torch.tensor([[3.0], [1.0]]), -1)]
    for op, x, dim in cases:
        xr = x.clone().requires_grad_()
        want = REF[op](xr, dim)
        expected, = torch.autograd.grad(want.sum(), xr)
        backward = _torch._GRADS[_ops.TABLE[op].grad][0]
        got = backward(ctx_for(x, dim, want.detach(), op), torch.ones_like(want))[0]
        torch.testing.assert_close(got, expected, equal_nan=True)


def test_fast_path_result_dtypes():
    # The eager fast path's table: the library's result dtype of each (op, torch dtype) it takes.
    from reduce_tune import _dtypes, _torch_fast
    op = _dtypes.op_value
    r = _torch_fast.RESULTS
    assert r[(op("sum"), torch.bfloat16)][1] == torch.bfloat16
    assert r[(op("mean"), torch.int32)][1] == torch.float64
    assert r[(op("mean"), torch.float16)][1] == torch.float16
    assert r[(op("count_nonzero"), torch.float32)][1] == torch.int64
    assert r[(op("any"), torch.int64)][1] == r[(op("all"), torch.float64)][1] == torch.bool
    assert (op("norm2"), torch.int32) not in r and (op("norm1"), torch.float32) in r
    assert r[(op("argmax"), torch.float16)][1] == r[(op("argmin"), torch.int32)][1] == torch.int64
    assert r[(op("var"), torch.int64)][1] == r[(op("std_population"), torch.int32)][1] == torch.float64
    assert r[(op("std"), torch.bfloat16)][1] == torch.bfloat16
    assert (op("logsumexp"), torch.int64) not in r and (op("logsumexp"), torch.float64) in r
    assert all(v[0] == _torch_fast.DTYPES[t] for (_, t), v in r.items())
