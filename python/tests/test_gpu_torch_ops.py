"""GPU tests of the torch custom ops (torch.ops.reduce_tune.*): torch.library.opcheck over shapes,
dims and dtypes; torch.compile(fullgraph=True) with no graph break and mode="reduce-overhead"
(CUDA graphs) replays against eager; gradcheck in float64; torch.amax/amin's tie rule; autograd
with out= and stream=. Skipped without a GPU or torch (test_torch_ops.py has what needs no GPU)."""
from __future__ import annotations

import math
import os
import shutil

import pytest

import reduce_tune as rt

pytestmark = pytest.mark.gpu

OPS = ("sum", "min", "max")
FUNCS = {"sum": rt.sum, "min": rt.min, "max": rt.max}
SEG_FUNCS = {"sum": rt.segment_sum, "min": rt.segment_min, "max": rt.segment_max}


@pytest.fixture(scope="module")
def ops(torch):
    if not hasattr(torch.library, "custom_op"):
        pytest.skip(f"torch {torch.__version__} has no torch.library.custom_op (2.4+)")
    assert rt._torch_hook.ops is not None, rt._torch_hook.why
    return torch.ops.reduce_tune


def needs_inductor(backend):
    """Inductor's GPU code is Triton's, whose launcher is built with the machine's C compiler."""
    if backend == "inductor" and not any(shutil.which(c) for c in (os.environ.get("CC") or "cc", "gcc", "clang")):
        pytest.skip("torch.compile's inductor needs a C compiler (Triton builds its launcher with one)")


def close(torch, got, want, dtype=None):
    """Sums combine in another order than torch's (and than another of their own calls): float
    tolerances of the dtype; min and max are exact."""
    dtype = dtype or want.dtype
    tol = {torch.float64: 1e-12, torch.float32: 2e-5, torch.bfloat16: 2e-2, torch.float16: 2e-3}
    if dtype in tol:
        torch.testing.assert_close(got, want, rtol=tol[dtype], atol=tol[dtype], equal_nan=True)
    else:
        assert torch.equal(got, want)


# ---- opcheck ----------------------------------------------------------------------------------

CASES = [((1000,), (None, 0)), ((37, 129), (None, 0, -1)), ((4, 5, 300), (0, -1)),
         ((3, 0), (0, -1)), ((1, 4099), (None, -1)), ((), (None,))]


@pytest.mark.parametrize("op", OPS)
def test_opcheck(torch, ops, op):
    g = torch.Generator(device="cuda").manual_seed(1)
    f = getattr(ops, op).default
    tol = {torch.float64: 1e-12, torch.float32: 2e-5, torch.bfloat16: 2e-2}
    for shape, dims in CASES:
        for dt in (torch.float64, torch.float32, torch.bfloat16, torch.int32, torch.int64):
            if dt.is_floating_point:  # positive: sums without cancellation, for the tolerances
                x = torch.rand(shape, device="cuda", generator=g).to(dt)
                x.requires_grad_(dt == torch.float64)
            else:
                x = torch.randint(-1000, 1000, shape, device="cuda", generator=g, dtype=dt)
            for dim in dims:
                torch.library.opcheck(f, (x,), {"dim": dim}, atol=tol.get(dt), rtol=tol.get(dt))
    for dt in (torch.bfloat16, torch.float16):  # the float32 accumulator of a half array
        x = torch.rand(5000, device="cuda", generator=g).to(dt)
        torch.library.opcheck(f, (x,), {"dtype": torch.float32}, atol=2e-5, rtol=2e-5)
    x = torch.rand(300, device="cuda", generator=g, dtype=torch.float64)[::3]  # a strided vector
    torch.library.opcheck(f, (x,), {})


@pytest.mark.parametrize("op", OPS)
def test_opcheck_segments(torch, ops, op):
    g = torch.Generator(device="cuda").manual_seed(2)
    f = getattr(ops, "segment_" + op).default
    for dt in (torch.float64, torch.float32, torch.int32):
        x = (torch.rand(1000, device="cuda", generator=g) * 100).to(dt)
        x.requires_grad_(dt == torch.float64 and op == "sum")  # min/max's below (no empty segment)
        for offsets in ([0, 0, 10, 400, 1000], [5, 6, 900], [0], [0, 1000]):
            o = torch.tensor(offsets, dtype=torch.int64, device="cuda")
            torch.library.opcheck(f, (x, o), atol=2e-5 if dt == torch.float32 else None,
                                  rtol=2e-5 if dt == torch.float32 else None)
    x = torch.rand(1000, device="cuda", generator=g, dtype=torch.float64, requires_grad=True)
    torch.library.opcheck(f, (x, torch.tensor([3, 10, 10, 17, 990], device="cuda")) if op == "sum"
                          else (x, torch.tensor([3, 10, 17, 990], device="cuda")))


# ---- torch.compile ----------------------------------------------------------------------------

def model(torch, x, m, offsets, out):
    return (rt.sum(x) * 2, rt.max(m, dim=-1) + 1, rt.min(m, 0), rt.segment_sum(x, offsets),
            rt.sum(m.to(torch.bfloat16), dtype=torch.float32), rt.max(m, -1, out=out),
            rt.sum(m[:, 3:50]), rt.min(m.t(), -1))


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_compile_fullgraph_matches_eager(torch, ops, backend):
    from torch._dynamo.utils import counters
    needs_inductor(backend)
    torch._dynamo.reset()
    counters.clear()
    g = torch.Generator(device="cuda").manual_seed(3)
    x = torch.rand(100_003, device="cuda", generator=g)
    m = torch.rand(513, 300, device="cuda", generator=g)  # positive: sums without cancellation
    offsets = torch.tensor([0, 7, 7, 60_000, 100_003], device="cuda")
    f = torch.compile(lambda *a: model(torch, *a), fullgraph=True, backend=backend)
    out_c, out_e = torch.empty(513, device="cuda"), torch.empty(513, device="cuda")
    got = f(x, m, offsets, out_c)
    want = model(torch, x, m, offsets, out_e)
    assert not counters["graph_break"], dict(counters["graph_break"])
    assert got[5].data_ptr() == out_c.data_ptr()
    for a, b in zip(got, want):
        close(torch, a, b)
    close(torch, got[0], x.double().sum().float() * 2)
    close(torch, got[1], m.amax(-1) + 1)
    close(torch, got[6], m[:, 3:50].double().sum().float())


@pytest.mark.parametrize("how", ["reduce-overhead", "cudagraphs"])
def test_cuda_graph_replays_match_eager(torch, ops, how):
    # mode="reduce-overhead": inductor's code in CUDA graph trees; backend="cudagraphs": the same
    # trees over the traced graph as it is (no Triton).
    from torch._dynamo.utils import counters
    needs_inductor("inductor" if how == "reduce-overhead" else how)
    torch._dynamo.reset()
    counters.clear()

    def f(x, m, offsets):
        return (rt.sum(x), rt.max(m, dim=-1), rt.min(m, 0), rt.segment_max(x, offsets),
                rt.sum(m[:, 3:50]), rt.max(torch.empty(0, device=x.device)))

    cf = torch.compile(f, mode="reduce-overhead", fullgraph=True) if how == "reduce-overhead" \
        else torch.compile(f, backend="cudagraphs", fullgraph=True)
    g = torch.Generator(device="cuda").manual_seed(4)
    x = torch.empty(1 << 20, device="cuda")
    m = torch.empty(700, 300, device="cuda")
    offsets = torch.tensor([0, 1000, 1000, 70_000, 1 << 20], device="cuda")
    for step in range(6):  # warm-up, recording, then replays, each with new data
        x.copy_(torch.rand(1 << 20, device="cuda", generator=g))
        m.copy_(torch.rand(700, 300, device="cuda", generator=g))
        got = [t.clone() for t in cf(x, m, offsets)]
        want = f(x, m, offsets)
        for a, b in zip(got, want):
            close(torch, a, b)
        assert torch.equal(got[1], m.amax(-1)) and got[5].item() == -math.inf
    assert counters["inductor"]["cudagraph_skips"] == 0, dict(counters["inductor"])
    assert not counters["graph_break"], dict(counters["graph_break"])


def test_compiled_backward_matches_eager(torch, ops):
    torch._dynamo.reset()

    def loss(x, m):
        return (rt.sum(x * x) + rt.max(m, -1).sum() + rt.min(m, 0).square().sum()
                + rt.segment_max(x, torch.tensor([0, 50, 50, 300], device=x.device)).sum())

    g = torch.Generator(device="cuda").manual_seed(5)
    x = torch.randn(300, device="cuda", dtype=torch.float64, generator=g, requires_grad=True)
    m = torch.randn(40, 30, device="cuda", dtype=torch.float64, generator=g, requires_grad=True)
    want = torch.autograd.grad(loss(x, m), (x, m))
    got = torch.autograd.grad(torch.compile(loss, fullgraph=True, backend="aot_eager")(x, m), (x, m))
    for a, b in zip(got, want):
        close(torch, a, b)


# ---- autograd ---------------------------------------------------------------------------------

@pytest.mark.parametrize("op", OPS)
def test_gradcheck_float64(torch, ops, op):
    g = torch.Generator(device="cuda").manual_seed(6)
    for shape, dims in (((30,), (None, 0)), ((13, 17), (None, 0, -1)), ((3, 4, 5), (0, -1))):
        x = torch.randn(shape, device="cuda", dtype=torch.float64, generator=g, requires_grad=True)
        for dim in dims:
            assert torch.autograd.gradcheck(lambda t: FUNCS[op](t, dim), (x,))
    x = torch.randn(20, 9, device="cuda", dtype=torch.float64, generator=g, requires_grad=True)
    assert torch.autograd.gradcheck(lambda t: FUNCS[op](t[:, 2:7], -1), (x,))  # a strided view
    x = torch.randn(50, device="cuda", dtype=torch.float64, generator=g, requires_grad=True)
    offsets = [2, 9, 9, 30, 31, 47] if op == "sum" else [2, 9, 30, 31, 47]  # min/max of nothing: inf
    o = torch.tensor(offsets, device="cuda")
    assert torch.autograd.gradcheck(lambda t: SEG_FUNCS[op](t, o), (x,))


@pytest.mark.parametrize("op", ["min", "max"])
def test_ties_split_the_gradient_as_torch(torch, ops, op):
    nan = float("nan")
    ref = torch.amin if op == "min" else torch.amax
    cases = [torch.tensor([[1., 3., 3., 0.], [2., 2., 2., 2.], [5., nan, 1., 5.], [-0.0, 0.0, 1., -1.]]),
             torch.randint(-2, 3, (64, 33)).double()]
    for x in cases:
        x = x.cuda()
        for dim in (None, 0, -1):
            a = x.clone().requires_grad_()
            b = x.clone().requires_grad_()
            ra = FUNCS[op](a, dim)
            rb = ref(b) if dim is None else ref(b, dim)
            close(torch, ra, rb)
            w = torch.rand(rb.shape, device="cuda", dtype=x.dtype) + 0.5
            (ra * w).sum().backward()
            (rb * w).sum().backward()
            torch.testing.assert_close(a.grad, b.grad, atol=0, rtol=0, equal_nan=True)


def test_sum_gradient_in_the_inputs_dtype(torch, ops):
    x = torch.rand(1000, device="cuda").to(torch.bfloat16).requires_grad_()
    r = rt.sum(x, dtype=torch.float32)
    assert r.dtype == torch.float32 and r.requires_grad
    r.backward()
    assert x.grad.dtype == torch.bfloat16 and torch.equal(x.grad, torch.ones_like(x))
    m = torch.rand(30, 40, device="cuda", requires_grad=True)
    rt.sum(m, 0).mul(torch.arange(40, device="cuda")).sum().backward()
    assert torch.equal(m.grad, torch.arange(40, device="cuda").float().expand(30, 40))


def test_op_and_direct_calls_agree(torch, ops):
    g = torch.Generator(device="cuda").manual_seed(7)
    m = torch.rand(257, 1024, device="cuda", generator=g)
    w = m.clone().requires_grad_()
    for op in OPS:
        for dim in (None, 0, -1):
            direct = FUNCS[op](m, dim)
            traced = FUNCS[op](w, dim)  # needs a gradient: through the op
            assert not direct.requires_grad and traced.requires_grad and traced.grad_fn is not None
            close(torch, traced.detach(), direct)
            with torch.no_grad():
                assert not FUNCS[op](w, dim).requires_grad


def test_out_with_a_gradient_is_an_error(torch, ops):
    x = torch.rand(100, device="cuda", requires_grad=True)
    with pytest.raises(RuntimeError, match="automatic differentiation"):
        rt.sum(x, out=torch.empty((), device="cuda"))
    with torch.no_grad():
        o = torch.empty((), device="cuda")
        assert rt.max(x, out=o) is o and o.item() == x.max().item()


def test_stream_argument_with_a_gradient(torch, ops):
    n = 1 << 22
    x = torch.ones(n, device="cuda", requires_grad=True)
    side = torch.cuda.Stream()
    torch.cuda._sleep(20_000_000)  # the producer of y, on the current stream, is late
    y = x * 3
    r = rt.sum(y, stream=side)  # on `side`, after y
    side.synchronize()
    assert r.item() == 3 * n and r.requires_grad
    r.backward()
    torch.cuda.synchronize()
    assert torch.equal(x.grad, torch.full_like(x, 3.0))
