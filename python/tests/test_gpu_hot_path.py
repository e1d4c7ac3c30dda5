"""The eager call on a torch tensor after its first call (reduce_tune._torch_fast): it looks nothing
up in the tuning store, creates no Reducer, allocates nothing but its result (a small result: a
block of them now and then, results.cpp), waits on nothing, asks the driver about no pointer and
takes the library's warm path (no full-path call: _ext.stats() counts both), and its results are
tensors of their own, equal to the general route's. Skipped without a GPU or torch."""
from __future__ import annotations

import pytest

import reduce_tune as rt
from reduce_tune import _ext

pytestmark = pytest.mark.gpu


def _allocations(torch):
    return torch.cuda.memory_stats()["allocation.all.allocated"]


def _calls_stats():
    """_ext.stats() less the result blocks (the counters a warm call must leave alone)."""
    s = _ext.stats()
    return {k: v for k, v in s.items() if k != "result_blocks"}, s["result_blocks"]


def _blocks(calls, per_block, left):
    """Blocks a pool makes for `calls` results with `left` results of its block still free."""
    return max(0, -(-(calls - left) // per_block))


def test_a_warm_call_looks_nothing_up_and_allocates_only_its_result(torch):
    x = torch.rand(1 << 10, device="cuda")
    m = torch.rand(32, 32, device="cuda")
    o, orow, ocol = (torch.empty(s, device="cuda") for s in ((), (32,), (32,)))
    calls = [lambda: rt.sum(x, out=o), lambda: rt.max(m, dim=-1, out=orow),
             lambda: rt.min(m, dim=0, out=ocol), lambda: rt.sum(x), lambda: rt.sum(m, -1)]
    for c in calls:  # the first calls: the Reducer, the lookups, the compiles, the scratch
        c()
    torch.cuda.synchronize()
    (before, blocks), allocated = _calls_stats(), _allocations(torch)
    for _ in range(20):
        for c in calls[:3]:
            c()
    torch.cuda.synchronize()
    # No store statement, Reducer, allocation, wait, pointer query (the extension's or the
    # library's) or call that took the library's full path.
    assert _calls_stats() == (before, blocks)
    assert _allocations(torch) == allocated  # out=: not one tensor made either
    k = 200
    for _ in range(k):
        calls[3]()
        calls[4]()
    torch.cuda.synchronize()
    after, new_blocks = _calls_stats()
    assert after == before
    # The results: from blocks of 64 (0-d float32, 16 bytes apart) and 32 (32 float32 results),
    # whose first call took one result each; one torch allocation a block.
    assert new_blocks - blocks == _blocks(k, 64, 63) + _blocks(k, 32, 31)
    assert _allocations(torch) - allocated == new_blocks - blocks
    assert o.item() == pytest.approx(x.double().sum().item(), rel=1e-5)
    assert torch.allclose(orow, m.amax(-1)) and torch.allclose(ocol, m.amin(0))


def test_results_are_tensors_of_their_own(torch):
    x = torch.rand(1 << 10, device="cuda")
    rs = [rt.sum(x) for _ in range(70)]
    assert len({r.data_ptr() for r in rs}) == len(rs)
    assert all(r._base is None and r.shape == () and r.is_contiguous() for r in rs)
    v = rs[1]._version
    rs[0].add_(1)  # an in-place change of one result bumps no other's version counter
    assert rs[1]._version == v
    torch.cuda.synchronize()
    want = x.double().sum().item()
    assert rs[1].item() == pytest.approx(want, rel=1e-5)
    assert rs[0].item() == pytest.approx(want + 1, rel=1e-5)
    rows = [rt.max(x.view(8, 128), -1) for _ in range(40)]
    assert len({r.data_ptr() for r in rows}) == len(rows)
    assert all(torch.equal(r, x.view(8, 128).amax(-1)) for r in rows)


@pytest.mark.parametrize("op", ["sum", "min", "max"])
def test_fast_and_general_routes_agree_per_dim(torch, op):
    f = getattr(rt, op)
    cur = torch.cuda.current_stream()
    for dtype in (torch.float32, torch.float64, torch.int32, torch.int64):
        for shape in ((1000,), (33, 65), (5, 1), (1, 7), (4, 6, 9), ()):
            x = (torch.randn(shape, device="cuda") * 100).to(dtype)
            for dim in (None, 0, -1):
                if x.dim() == 0 and dim == -1:
                    continue
                fast = f(x, dim)
                general = f(x, dim, stream=cur)  # stream=: the general route
                assert fast.shape == general.shape and fast.dtype == general.dtype
                if op == "sum" and dtype.is_floating_point:
                    assert torch.allclose(fast, general, rtol=1e-5, atol=1e-3), (shape, dim)
                else:
                    assert torch.equal(fast, general), (shape, dim)


def test_results_on_other_streams_and_in_graph_capture(torch):
    x = torch.rand(1 << 10, device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        r = [rt.sum(x) for _ in range(3)]
        g = torch.cuda.CUDAGraph()
        blocks = _ext.stats()["result_blocks"]
        with torch.cuda.graph(g):
            captured = rt.sum(x)  # made in the graph's memory pool, not a pooled result
        assert _ext.stats()["result_blocks"] == blocks
        x.fill_(2)
        g.replay()
    side.synchronize()
    assert captured.item() == 2 * x.numel()
    assert all(t.item() == pytest.approx(r[0].item()) for t in r)


def test_every_op_and_keepdim_is_warm_after_its_first_call(torch):
    # The planned calls of every public function (one plan per op, dtype, shape, dim, keepdim):
    # after the first, no lookup, Reducer, wait or pointer query, and one allocation, the result.
    m = torch.rand(32, 32, device="cuda")
    calls = [lambda: rt.argmax(m, -1), lambda: rt.argmin(m, 0, True), lambda: rt.logsumexp(m, -1),
             lambda: rt.var(m, -1, keepdim=True), lambda: rt.std(m, 0, correction=0),
             lambda: rt.mean(m), lambda: rt.sum(m, -1, True), lambda: rt.max(m, keepdim=True)]
    for c in calls:
        c()
    torch.cuda.synchronize()
    (before, blocks), allocated = _calls_stats(), _allocations(torch)
    k = 40
    for _ in range(k):
        for c in calls:
            c()
    torch.cuda.synchronize()
    after, new_blocks = _calls_stats()
    assert after == before
    # Pooled results (at most 32 of 8 bytes in any of these): each pool makes a block at most
    # every 16 of its calls, one torch allocation a block.
    assert 0 < new_blocks - blocks <= len(calls) * _blocks(k, 16, 0)
    assert _allocations(torch) - allocated == new_blocks - blocks
    assert torch.equal(rt.argmax(m, -1), m.argmax(-1)) and torch.equal(rt.argmin(m, 0, True),
                                                                        m.argmin(0, keepdim=True))
    torch.testing.assert_close(rt.var(m, -1, keepdim=True), m.var(-1, keepdim=True))


def test_the_idle_timing_runs_the_call(torch):
    """_ext.time_calls_idle (the bench's host cost of one C++ call on an idle GPU) makes the
    library call it times: a positive, finite time, and the sum in the result."""
    from reduce_tune import _dtypes
    x = torch.rand(1 << 10, device="cuda")
    o = torch.full((), -1.0, device="cuda")
    us = _ext.time_calls_idle(x.get_device(), _dtypes.BY_NAME["float32"].value, _dtypes.OPS["sum"],
                              x.data_ptr(), x.numel(), o.data_ptr(),
                              torch.cuda.current_stream().cuda_stream, 20)
    assert 0 < us < 1e5
    assert o.item() == pytest.approx(x.double().sum().item(), rel=1e-5)


def test_pooled_results_keep_their_values_and_go_back_to_torch(torch):
    """A result kept while hundreds more are made and dropped keeps its value (its block is not
    reused while it lives); once every result is gone, torch has its memory back but the blocks
    the pools still hand out."""
    x = torch.rand(1 << 10, device="cuda")
    m = torch.rand(32, 32, device="cuda")
    rt.sum(x), rt.sum(m, -1)
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    kept, kept_rows = rt.sum(x), rt.sum(m, -1)
    for _ in range(500):
        rt.sum(x * 0 + 1)  # other values into the later results
        rt.sum(m, -1)
    torch.cuda.synchronize()
    assert kept.item() == pytest.approx(x.double().sum().item(), rel=1e-5)
    assert torch.allclose(kept_rows, m.sum(-1), rtol=1e-5, atol=1e-5)
    del kept, kept_rows
    torch.cuda.synchronize()
    assert torch.cuda.memory_allocated() - base <= 2 * 4096
