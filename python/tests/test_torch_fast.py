"""The eager torch path's planning and its cache (reduce_tune._torch_fast) without a GPU: the library
call that each (op, shape, dim, keepdim) becomes, against torch's own result shapes; one plan per
key, made once and reused; the checks made on every call (contiguity and layout, autograd, dim's
type, out=) that send a call to the general route instead. Here a CPU tensor stands for a CUDA one:
its get_device() says GPU 0, and the C++ entry and torch's stream are recorded, not called (so the
results are never written). test_gpu_hot_path.py runs the path on a GPU."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
if not hasattr(torch.library, "custom_op"):
    pytest.skip(f"torch {torch.__version__} has no torch.library.custom_op (2.4+)",
                allow_module_level=True)

import reduce_tune as rt  # noqa: E402
from reduce_tune import _dtypes, _ops, _torch_fast  # noqa: E402

STREAM = 0x5000


@pytest.fixture
def gpu0(monkeypatch):
    """CPU tensors read as on GPU 0; the _ext.hot calls made, as their argument tuples."""
    calls = []
    monkeypatch.setattr(torch.Tensor, "get_device", lambda self: 0)
    monkeypatch.setattr(_torch_fast, "_hot", lambda *a: calls.append(a))
    # A pooled result is made on a GPU only: here, as while a stream is captured, torch's.
    monkeypatch.setattr(_torch_fast, "_hot_pooled", lambda *a: None)
    monkeypatch.setattr(_torch_fast, "_stream_of", lambda dev: STREAM + dev)
    monkeypatch.setattr(_torch_fast, "_capturing", lambda: False)
    monkeypatch.setattr(_torch_fast, "_plans", {})
    monkeypatch.setattr(_torch_fast, "_templates", {})
    return calls


def public(op):
    """The public function of a library op, called as (x, dim, keepdim, out=)."""
    if op in ("norm1", "norm2"):
        return lambda x, dim, keepdim, **kw: rt.norm(x, 1 if op == "norm1" else 2, dim, keepdim, **kw)
    if op == "count_nonzero":
        return lambda x, dim, keepdim, **kw: rt.count_nonzero(x, dim, **kw)
    for name, (c1, c0) in _ops.MOMENTS.items():
        if op in (c1, c0):
            return lambda x, dim, keepdim, **kw: getattr(rt, name)(
                x, dim, correction=1 if op == c1 else 0, keepdim=keepdim, **kw)
    return lambda x, dim, keepdim, **kw: getattr(rt, op)(x, dim, keepdim, **kw)


def torch_shape(shape, dim, keepdim):
    ref = torch.empty(shape, device="meta")
    if dim is None:
        return ref.sum(dim=tuple(range(len(shape))), keepdim=True).shape if keepdim else ()
    return ref.sum(dim, keepdim=keepdim).shape


SHAPES = [((1024,), (None, 0, -1)), ((32, 32), (None, 0, -1, 1, -2)), ((4, 6, 9), (None, 0, -1, 2)),
          ((), (None, 0)), ((5, 1), (None, 0, -1)), ((1, 7), (0, -1))]


# dot reads two inputs: its calls take the general path, never the one-input fast one.
@pytest.mark.parametrize("op", [op for op in _ops.TABLE if op != "dot"])
def test_the_call_each_key_becomes(gpu0, op):
    f, opv = public(op), _dtypes.op_value(op)
    for dt in (torch.float32, torch.int32, torch.bfloat16):
        rt_ = _torch_fast.RESULTS.get((opv, dt))
        if rt_ is None:
            continue
        for shape, dims in SHAPES:
            x = torch.zeros(shape, dtype=dt)
            n = x.numel()
            for dim in dims:
                for keepdim in ((False,) if op == "count_nonzero" else (False, True)):
                    gpu0.clear()
                    r = f(x, dim, keepdim)
                    assert tuple(r.shape) == tuple(torch_shape(shape, dim, keepdim)), (shape, dim)
                    assert r.dtype == rt_[1] and r.is_contiguous()
                    (kind, dev, dtv, opv_, xp, a, b, rp, s), = gpu0
                    assert (dev, dtv, opv_, xp, rp, s) == (0, rt_[0], opv, x.data_ptr(),
                                                           r.data_ptr(), STREAM)
                    d = None if dim is None or x.dim() <= 1 else dim % x.dim()
                    if d is None:
                        assert (kind, a, b) == (0, n, 0)
                    elif d == x.dim() - 1:
                        assert (kind, a, b) == (1, n // shape[-1], shape[-1])
                    else:
                        assert (kind, a, b) == (2, shape[0], n // shape[0])


def test_a_plan_is_made_once_per_key(gpu0, monkeypatch):
    made = []
    real = _torch_fast.plan
    monkeypatch.setattr(_torch_fast, "plan", lambda *a, **k: made.append(a[:1] + a[2:]) or real(*a, **k))
    x, m = torch.zeros(1024), torch.zeros(32, 32)
    for _ in range(3):
        rt.sum(x), rt.sum(m, -1), rt.max(m, 0), rt.sum(m, -1, True), rt.var(m, -1)
    ops = _dtypes.OPS
    assert made == [(ops["sum"], None, False, 0), (ops["sum"], -1, False, 0), (ops["max"], 0, False, 0),
                    (ops["sum"], -1, True, 0), (ops["var"], -1, False, 0)]
    assert len(gpu0) == 15 and len(_torch_fast._plans) == 5
    rt.sum(torch.zeros(1024, dtype=torch.float64))  # another dtype: another plan
    rt.sum(torch.zeros(1025))  # another shape
    assert len(made) == 7


def test_results_are_tensors_of_their_own(gpu0):
    x = torch.zeros(8, 16)
    rs = [rt.sum(x, -1) for _ in range(5)]
    assert len({r.data_ptr() for r in rs}) == 5 and all(r._base is None for r in rs)
    big = torch.zeros(2, 5000)
    r = rt.sum(big, 0)  # more results than a kept tensor is made for
    assert r.shape == (5000,) and _torch_fast._plans[(_dtypes.OPS["sum"], big.dtype, big.shape, 0,
                                                      False, 0)][5] is None


def test_out_is_written_when_it_fits(gpu0):
    m = torch.zeros(6, 5)
    o = torch.empty(6)
    assert rt.sum(m, -1, out=o) is o and gpu0[-1][7] == o.data_ptr()
    o2 = torch.empty(6, 1)
    assert rt.max(m, -1, True, out=o2) is o2
    i = torch.empty(6, dtype=torch.int64)
    assert rt.argmax(m, -1, out=i) is i
    n = len(gpu0)
    for bad in (torch.empty(6, dtype=torch.float64), torch.empty(7), torch.empty(12)[::2], object()):
        with pytest.raises(TypeError):  # the general route: here, a CPU tensor's TypeError
            rt.sum(m, -1, out=bad)
    assert len(gpu0) == n


def test_what_no_key_holds_is_checked_on_every_call(gpu0):
    m = torch.zeros(6, 5)
    rt.sum(m, -1)
    n = len(gpu0)
    # The same dtype and shape, transposed (not contiguous) or sparse: the general route.
    t = torch.zeros(5, 6).t()
    assert t.shape == m.shape
    with pytest.raises(TypeError, match="not on a GPU"):
        rt.sum(t, -1)
    with pytest.raises(TypeError, match="not on a GPU"):
        rt.sum(m.to_sparse(), -1)
    # A gradient to record: the custom op.
    w = m.clone().requires_grad_()
    with pytest.raises(TypeError, match="not on a GPU"):
        rt.sum(w, -1)
    with torch.no_grad():
        rt.sum(w, -1)
    assert len(gpu0) == n + 1
    # dim's type: a bool hashes as 1 and is still refused, as the general route does.
    for dim in (True, 1.0, (1,)):
        with pytest.raises(TypeError):  # (here the CPU tensor's: the general route reads x first)
            rt.sum(m, dim)
    with pytest.raises(TypeError):
        rt.sum(m, -1, [])  # an unhashable keepdim: the general route
    assert len(gpu0) == n + 1


def test_general_route_cases_are_planned_as_such(gpu0):
    for x, dim in ((torch.zeros(0), None), (torch.zeros(3, 0), -1), (torch.zeros(2, 3, 4), 1),
                   (torch.zeros(4), 3), (torch.zeros(4, dtype=torch.bool), None)):
        with pytest.raises((TypeError, ValueError)):
            rt.sum(x, dim)
    assert not gpu0 and all(p is None for p in _torch_fast._plans.values())
    with pytest.raises(TypeError):
        rt.logsumexp(torch.zeros(4, dtype=torch.int32))  # an op of floats only
    with pytest.raises(TypeError):  # 0 columns: an empty result, the general route's
        rt.argmax(torch.zeros(3, 0), 0)
    assert not gpu0 and all(p is None for p in _torch_fast._plans.values())


def test_the_cache_is_bounded(gpu0, monkeypatch):
    monkeypatch.setattr(_torch_fast, "PLAN_KEYS", 8)
    monkeypatch.setattr(_torch_fast, "_TEMPLATE_KEYS", 4)
    for k in range(1, 30):
        rt.sum(torch.zeros(k, 3), -1)
        assert len(_torch_fast._plans) <= 8 and len(_torch_fast._templates) <= 4
    assert len(gpu0) == 29


def test_cpu_tensors_take_the_general_route():
    # get_device() is -1: planned as the general route's (which raises), once.
    x = torch.zeros(10)
    for _ in range(2):
        with pytest.raises(TypeError, match="not on a GPU"):
            rt.sum(x)
    assert _torch_fast._plans.get((_dtypes.OPS["sum"], x.dtype, x.shape, None, False, -1), 1) is None


@pytest.mark.parametrize("call", [lambda x: rt.sum(x), lambda x: rt.sum(x, -1) * 2,
                                  lambda x: rt.max(x, 0, True), lambda x: rt.mean(x, -1),
                                  lambda x: rt.argmax(x, -1)])
def test_torch_compile_traces_past_the_fast_path(call):
    """torch.compile(fullgraph=True) traces the public functions to their custom op, past the
    eager path (which Dynamo must read as not taken: anything it cannot trace there, such as a C
    function called before the compile check, would be a graph break). Tracing a CPU tensor, the
    op's fake implementation refuses it: that error, not Dynamo's Unsupported, is the one raised."""
    torch._dynamo.reset()
    f = torch.compile(call, fullgraph=True, backend="eager")
    with pytest.raises(Exception) as e:
        f(torch.rand(4, 8))
    assert not isinstance(e.value, torch._dynamo.exc.Unsupported), e.value
    assert "not on a GPU" in str(e.value)
