"""GPU tests of argmax, argmin, logsumexp, var and std: against torch (torch.argmax/argmin exactly,
logsumexp/var/std computed in float64) over shapes, dims, keepdim and dtypes, eager and through the
custom ops; ties, NaN and empty reductions; strided inputs and out=; opcheck; gradcheck in float64;
torch.compile; CuPy results. Skipped without a GPU (test_ops.py and test_torch_more_ops.py have
what needs none)."""
from __future__ import annotations

import pytest

import reduce_tune as rt
from reduce_tune import _api

pytestmark = pytest.mark.gpu

OPS = ("argmax", "argmin", "logsumexp", "var", "std", "var_population", "std_population")
INDEX = ("argmax", "argmin")
MOMENTS = {"var": ("var", 1), "std": ("std", 1), "var_population": ("var", 0),
           "std_population": ("std", 0)}  #: op -> (public function, correction)
SHAPES = [((1000,), (None, 0)), ((37, 129), (None, 0, -1)), ((4, 5, 300), (0, -1)),
          ((3, 0), (0,)), ((0, 3), (-1,)), ((1, 4099), (None, -1)), ((), (None,)),
          ((65536, 16), (-1, 0)), ((16, 1), (None, 0, -1))]
DTYPES = ("float32", "float64", "bfloat16", "float16", "int32", "int64")


def call(op, x, dim=None, keepdim=False, **kw):
    if op in MOMENTS:
        f, c = MOMENTS[op]
        return getattr(rt, f)(x, dim, correction=c, keepdim=keepdim, **kw)
    return getattr(rt, op)(x, dim, keepdim, **kw)


def takes(op, dt):
    return op != "logsumexp" or dt.is_floating_point


def reference(torch, op, x, dim, keepdim=False):
    """torch's result: argmax/argmin of x itself; the others computed in float64 and rounded to
    the result's dtype (x's for floats, float64 for integers, which torch.var refuses)."""
    if op in INDEX:
        return getattr(torch, op)(x, dim, keepdim)
    w = x.double()
    if op == "logsumexp":
        r = torch.logsumexp(w.reshape(-1), 0) if dim is None or x.dim() == 0 else \
            torch.logsumexp(w, dim)
    else:
        f, c = MOMENTS[op]
        r = getattr(torch, f)(w.reshape(-1) if dim is None else w, 0 if dim is None else dim,
                              correction=c)
    r = r.to(x.dtype if x.dtype.is_floating_point else torch.float64)
    return r.reshape(_api.keep_shape(x.shape, dim)) if keepdim else r


def close(torch, got, want, op):
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype, got.shape,
                                                                 want.shape)
    if op in INDEX:
        assert torch.equal(got, want), (got, want)
        return
    tol = {torch.float64: 1e-10, torch.float32: 1e-4, torch.bfloat16: 2e-2, torch.float16: 2e-3}
    torch.testing.assert_close(got, want, rtol=tol[got.dtype], atol=tol[got.dtype], equal_nan=True)


def data(torch, shape, dt, g, ties=False):
    """Values in [-4, 4) (few distinct ones with `ties`: equal maxima and minima in most rows)."""
    if ties:
        return torch.randint(-4, 4, shape, device="cuda", generator=g).to(dt)
    if dt.is_floating_point:
        return (torch.rand(shape, device="cuda", generator=g) * 8 - 4).to(dt)
    return torch.randint(-1000, 1000, shape, device="cuda", generator=g, dtype=dt)


def extent(shape, dim):
    d = _api.check_dim(len(shape), dim)
    n = 1
    for k in (shape if d is None else (shape[d],)):
        n *= k
    return n


@pytest.mark.parametrize("op", OPS)
def test_against_torch(torch, op):
    g = torch.Generator(device="cuda").manual_seed(21)
    for name in DTYPES:
        dt = getattr(torch, name)
        if not takes(op, dt):
            with pytest.raises(TypeError, match="floating-point"):
                call(op, torch.ones(4, device="cuda", dtype=dt))
            continue
        for shape, dims in SHAPES:
            for ties in ((False, True) if op in INDEX else (False,)):
                x = data(torch, shape, dt, g, ties)
                for dim in dims:
                    for keepdim in (False, True):
                        if op in INDEX and extent(shape, dim) == 0:
                            with pytest.raises(ValueError, match="empty reduction"):
                                call(op, x, dim, keepdim)
                            continue
                        got = call(op, x, dim, keepdim)
                        close(torch, got, reference(torch, op, x, dim, keepdim), op)
                        # through the custom op (a tensor that requires grad)
                        if dt.is_floating_point:
                            via = call(op, x.clone().requires_grad_(), dim, keepdim)
                            assert via.requires_grad == (op not in INDEX)
                            close(torch, via.detach(), got, op)


def test_index_rules_as_torch(torch):
    # The first index among equal extremes; a NaN wins (the first one), for argmin too.
    nan, inf = float("nan"), float("inf")
    x = torch.tensor([[1., 3., 3., 0.], [2., 2., 2., 2.], [5., nan, 1., nan], [-0.0, 0.0, -inf, inf],
                      [inf, inf, -inf, -inf]], device="cuda")
    for dt in (torch.float32, torch.float64, torch.bfloat16, torch.float16):
        v = x.to(dt)
        for op in INDEX:
            f = getattr(torch, op)
            for dim in (None, 0, -1):
                assert torch.equal(call(op, v, dim), f(v, dim)), (op, dt, dim)
    i = torch.tensor([[7, 7, -7, -7], [0, 0, 0, 0]], device="cuda", dtype=torch.int64)
    assert rt.argmax(i, -1).tolist() == [0, 0] and rt.argmin(i, -1).tolist() == [2, 0]
    assert rt.argmax(i).item() == 0 and rt.argmin(i).item() == 2
    big = torch.zeros(1 << 22, device="cuda")
    big[(1 << 22) - 5] = big[3_000_001] = 1.0  # ties far apart: the first one
    assert rt.argmax(big).item() == 3_000_001


def test_logsumexp_and_moments_at_the_edges(torch):
    inf, nan = float("inf"), float("nan")
    x = torch.tensor([[-inf, -inf], [1.0, -inf], [inf, 0.0], [nan, 0.0], [1000.0, 1000.0]],
                     device="cuda")
    close(torch, rt.logsumexp(x, -1), torch.logsumexp(x, -1), "logsumexp")
    assert rt.logsumexp(torch.empty(0, device="cuda")).item() == -inf
    assert rt.logsumexp(torch.empty(3, 0, device="cuda"), -1).tolist() == [-inf] * 3
    one = torch.tensor([[2.0], [5.0]], device="cuda")
    assert torch.isnan(rt.var(one, -1)).all() and torch.isnan(rt.std(one, -1)).all()  # n - 1 = 0
    assert rt.var(one, -1, correction=0).tolist() == [0.0, 0.0]
    assert torch.isnan(rt.var(torch.empty(0, device="cuda"))).item()
    assert torch.isnan(rt.std(torch.empty(4, 0, device="cuda"), -1, correction=0)).all()
    assert rt.var(torch.empty(0, device="cuda", dtype=torch.int32)).dtype == torch.float64
    # far from 0: moments about the mean, not a sum of squares less a squared sum
    big = torch.full((1 << 20,), 1e3, device="cuda") + torch.rand(1 << 20, device="cuda")
    close(torch, rt.var(big), big.double().var().float(), "var")


@pytest.mark.parametrize("op", OPS)
def test_strided_and_out(torch, op):
    g = torch.Generator(device="cuda").manual_seed(22)
    m = data(torch, (300, 200), torch.float32, g, ties=op in INDEX)
    views = (m[:, 3:150], m.t(), m[::2], m[5])
    for v in views:
        for dim in (None, 0, -1):
            whole_ok = (op == "logsumexp" or v.is_contiguous() or v.dim() == 1
                        or (op in MOMENTS and v is views[1]))
            if dim is None and not whole_ok:
                with pytest.raises(ValueError, match="of the whole array"):
                    call(op, v, dim)
                continue
            close(torch, call(op, v, dim), reference(torch, op, v, dim), op)
    want = reference(torch, op, m, -1)
    out = torch.empty_like(want)
    assert call(op, m, -1, out=out) is out
    close(torch, out, want, op)
    out2 = torch.empty(300, 1, dtype=want.dtype, device="cuda")
    assert call(op, m, -1, True, out=out2) is out2
    close(torch, out2.view(-1), want, op)
    with pytest.raises(TypeError, match="out has dtype"):
        call(op, m, -1, out=torch.empty(300, dtype=torch.int32, device="cuda"))


@pytest.mark.parametrize("op", OPS)
def test_opcheck(torch, op):
    g = torch.Generator(device="cuda").manual_seed(23)
    f = getattr(torch.ops.reduce_tune, op).default
    for shape, dims in SHAPES[:3] + SHAPES[5:7]:
        for dt in (torch.float64, torch.float32, torch.int32):
            if not takes(op, dt):
                continue
            x = data(torch, shape, dt, g, ties=op in INDEX)
            x.requires_grad_(dt == torch.float64 and op not in INDEX)
            for dim in dims:
                if op in MOMENTS and extent(shape, dim) <= 1:
                    continue  # NaN results: opcheck compares them with equal_nan off
                torch.library.opcheck(f, (x,), {"dim": dim}, atol=1e-4, rtol=1e-4)


def test_gradcheck(torch):
    g = torch.Generator(device="cuda").manual_seed(24)
    x = (torch.rand(37, 29, device="cuda", generator=g, dtype=torch.float64) * 4 - 2).requires_grad_()
    v = (torch.rand(300, device="cuda", generator=g, dtype=torch.float64) - 0.5).requires_grad_()
    for t in (x, v):
        for dim in (None, 0, -1):
            for keepdim in (False, True):
                fs = [lambda u: rt.logsumexp(u, dim, keepdim)]
                for c in (0, 1):
                    fs += [lambda u, c=c: rt.var(u, dim, correction=c, keepdim=keepdim),
                           lambda u, c=c: rt.std(u, dim, correction=c, keepdim=keepdim)]
                for f in fs:
                    assert torch.autograd.gradcheck(f, (t,))
    assert torch.autograd.gradcheck(lambda u: rt.std(u[:, 3:20], -1), (x,))  # a strided view
    # Gradients equal torch's own, for the values of torch.
    w = x.detach().clone().requires_grad_()
    y = x.detach().clone().requires_grad_()
    (rt.logsumexp(w, -1).sum() + rt.std(w, 0).sum() * 3 + rt.var(w, correction=0)).backward()
    (torch.logsumexp(y, -1).sum() + torch.std(y, 0).sum() * 3 + torch.var(y, correction=0)).backward()
    torch.testing.assert_close(w.grad, y.grad, rtol=1e-10, atol=1e-12)


def test_no_gradient_for_indices(torch):
    x = torch.rand(20, 30, device="cuda", requires_grad=True)
    for op in INDEX:
        r = call(op, x, -1)
        assert r.dtype == torch.int64 and not r.requires_grad and r.grad_fn is None
    # an index result used in a loss that needs x's gradient through something else
    loss = (x * torch.nn.functional.one_hot(rt.argmax(x, -1), 30)).sum()
    loss.backward()
    assert torch.equal(x.grad, torch.nn.functional.one_hot(x.detach().argmax(-1), 30).float())


def test_compiled_matches_eager(torch):
    from torch._dynamo.utils import counters
    torch._dynamo.reset()
    counters.clear()

    def f(x, m):
        return (rt.argmax(m, -1), rt.argmin(m, 0, True), rt.argmax(x), rt.logsumexp(m, -1),
                rt.logsumexp(x), rt.var(m, 0), rt.std(m, -1, correction=0, keepdim=True),
                rt.var(x, correction=0), rt.std(x))

    g = torch.Generator(device="cuda").manual_seed(25)
    x, m = data(torch, (100_003,), torch.float32, g), data(torch, (513, 300), torch.float32, g)
    got = torch.compile(f, fullgraph=True, backend="aot_eager")(x, m)
    assert not counters["graph_break"], dict(counters["graph_break"])
    ops = ("argmax", "argmin", "argmax", "logsumexp", "logsumexp", "var", "std_population",
           "var_population", "std")
    for a, b, op in zip(got, f(x, m), ops):
        close(torch, a, b, op)


def test_cupy_results(cupy):
    np = pytest.importorskip("numpy")
    rng = np.random.default_rng(2)
    a = rng.integers(-3, 4, (300, 70)).astype(np.float32)  # ties
    x = cupy.asarray(a)
    for dim in (None, 0, -1):
        r = rt.argmax(x, dim)
        assert isinstance(r, cupy.ndarray) and r.dtype == np.int64
        np.testing.assert_array_equal(r.get(), np.argmax(a, axis=dim))
        np.testing.assert_array_equal(rt.argmin(x, dim).get(), np.argmin(a, axis=dim))
        np.testing.assert_allclose(rt.var(x, dim).get(), a.astype(np.float64).var(axis=dim, ddof=1),
                                   rtol=1e-5)
        np.testing.assert_allclose(rt.std(x, dim, correction=0).get(),
                                   a.astype(np.float64).std(axis=dim), rtol=1e-5)
        m = a.astype(np.float64).max(axis=dim, keepdims=True)
        lse = np.log(np.exp(a - m).sum(axis=dim, keepdims=True)) + m
        np.testing.assert_allclose(rt.logsumexp(x, dim, keepdim=True).get(),
                                   lse.reshape(1, 1) if dim is None else lse, rtol=1e-5)
    i = cupy.asarray(a.astype(np.int32))
    assert rt.var(i).dtype == np.float64 and rt.argmax(i, 0).dtype == np.int64
