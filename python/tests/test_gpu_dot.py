"""GPU tests of reduce_tune.dot: against torch's (x * y).sum(dim) over shapes, dims, keepdim and
dtypes, eager and through the custom op, strided views, out=, bfloat16 with a float32 result,
CuPy inputs, opcheck and gradcheck in float64. Skipped without a GPU (test_dot.py and
test_torch_dot.py have what needs none)."""
from __future__ import annotations

import pytest

import reduce_tune as rt
from reduce_tune import _api

pytestmark = pytest.mark.gpu

SHAPES = [((1000,), (None, 0)), ((37, 129), (None, 0, -1)), ((4, 5, 300), (0, -1)),
          ((3, 0), (0, -1)), ((0,), (None,)), ((1, 4099), (None, -1)), ((), (None,)),
          ((65536, 16), (-1, 0))]


def data(torch, shape, dt, g):
    if dt.is_floating_point:
        return (torch.rand(shape, device="cuda", generator=g) * 2 - 1).to(dt)
    return torch.randint(-50, 51, shape, device="cuda", generator=g, dtype=dt)


def reference(torch, x, y, dim, keepdim=False):
    """torch's (x * y).sum(dim): floats in float64 rounded to x's dtype, integers in int64 then
    narrowed (the products and sums here do not wrap)."""
    d = {} if dim is None else {"dim": dim}
    w = (x.double() * y.double()) if x.dtype.is_floating_point else (x.long() * y.long())
    r = w.sum(**d).to(x.dtype)
    return r.reshape(_api.keep_shape(x.shape, dim)) if keepdim else r


def close(torch, got, want):
    tol = {torch.float64: 1e-10, torch.float32: 5e-5, torch.bfloat16: 2e-2, torch.float16: 2e-3}
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype, got.shape,
                                                                 want.shape)
    if got.dtype in tol:
        scale = max(1.0, float(want.double().abs().max())) if want.numel() else 1.0
        torch.testing.assert_close(got, want, rtol=tol[got.dtype], atol=tol[got.dtype] * scale)
    else:
        assert torch.equal(got, want), (got, want)


def test_against_torch(torch):
    g = torch.Generator(device="cuda").manual_seed(21)
    for dt in (torch.float32, torch.float64, torch.bfloat16, torch.float16, torch.int32, torch.int64):
        for shape, dims in SHAPES:
            x, y = data(torch, shape, dt, g), data(torch, shape, dt, g)
            for dim in dims:
                for keepdim in (False, True):
                    close(torch, rt.dot(x, y, dim, keepdim), reference(torch, x, y, dim, keepdim))
                    if dt.is_floating_point:  # through the custom op (autograd records it)
                        got = rt.dot(x.clone().requires_grad_(), y, dim, keepdim).detach()
                        close(torch, got, reference(torch, x, y, dim, keepdim))
    v = data(torch, (4097,), torch.float32, g)
    w = data(torch, (4097,), torch.float32, g)
    close(torch, rt.dot(v, w), torch.dot(v.double(), w.double()).float())


def test_strided_views_and_out(torch):
    g = torch.Generator(device="cuda").manual_seed(22)
    m, n = data(torch, (300, 200), torch.float32, g), data(torch, (300, 200), torch.float32, g)
    for a, b in ((m[:, 3:150], n[:, 3:150]), (m.t(), n.t()), (m[::2], n[::2])):
        for dim in (None, 0, -1):
            close(torch, rt.dot(a, b, dim), reference(torch, a, b, dim))
    # y one element off x's alignment: read without vectors, the same result
    big_x, big_y = data(torch, (100_001,), torch.float32, g), data(torch, (100_002,), torch.float32, g)
    close(torch, rt.dot(big_x[:100_000], big_y[1:100_001]),
          reference(torch, big_x[:100_000], big_y[1:100_001], None))
    want = reference(torch, m, n, -1)
    out = torch.empty_like(want)
    assert rt.dot(m, n, -1, out=out) is out
    close(torch, out, want)
    with pytest.raises(ValueError, match="one layout"):
        rt.dot(m.t(), n.t().contiguous())


def test_half_with_a_float32_result(torch):
    g = torch.Generator(device="cuda").manual_seed(23)
    x, y = data(torch, (1 << 20,), torch.bfloat16, g), data(torch, (1 << 20,), torch.bfloat16, g)
    r = rt.dot(x, y, dtype=torch.float32)
    assert r.dtype == torch.float32
    want = (x.double() * y.double()).sum()
    assert abs(float(r) - float(want)) <= 1e-4 * float((x.double() * y.double()).abs().sum())


def test_cupy_inputs(cupy):
    np = pytest.importorskip("numpy")
    rng = np.random.default_rng(3)
    a = rng.integers(-5, 6, (300, 70)).astype(np.int32)
    b = rng.integers(-5, 6, (300, 70)).astype(np.int32)
    x, y = cupy.asarray(a), cupy.asarray(b)
    assert int(rt.dot(x, y)) == int((a.astype(np.int64) * b).sum())
    assert (cupy.asnumpy(rt.dot(x, y, 0)) == (a * b).sum(0)).all()
    assert (cupy.asnumpy(rt.dot(x, y, -1)) == (a * b).sum(-1)).all()


def test_opcheck(torch):
    g = torch.Generator(device="cuda").manual_seed(24)
    f = torch.ops.reduce_tune.dot.default
    for shape, dims in SHAPES[:4]:
        for dt in (torch.float64, torch.float32, torch.int32):
            x, y = data(torch, shape, dt, g), data(torch, shape, dt, g)
            x.requires_grad_(dt == torch.float64)
            y.requires_grad_(dt == torch.float64)
            for dim in dims:
                torch.library.opcheck(f, (x, y), {"dim": dim}, atol=2e-5, rtol=2e-5)


def test_gradcheck(torch):
    g = torch.Generator(device="cuda").manual_seed(25)
    x = data(torch, (37, 29), torch.float64, g).requires_grad_()
    y = data(torch, (37, 29), torch.float64, g).requires_grad_()
    for dim in (None, 0, -1):
        for keepdim in (False, True):
            assert torch.autograd.gradcheck(lambda a, b: rt.dot(a, b, dim, keepdim), (x, y))
    v = data(torch, (1000,), torch.float64, g).requires_grad_()
    assert torch.autograd.gradcheck(lambda a: rt.dot(a, a), (v,))  # both gradients into one input
