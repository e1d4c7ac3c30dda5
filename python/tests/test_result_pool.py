"""The eager torch call's small results (reduce_tune._ext.ResultPool, results.cpp) without a GPU:
CPU tensors stand in for CUDA ones (DLPack device type 1), made by torch's own DLPack import as
on a GPU. Each result is a tensor of its own (no view of its block: its own data, storage and
version counter), results are 16 bytes apart in blocks of per_block, a block per stream, and a
block goes back to torch when its last result is gone, from whichever thread that happens on.
test_gpu_hot_path.py runs the pooled results on a GPU; test_torch_fast.py the plans that make
the pools."""
from __future__ import annotations

import gc
import threading
import weakref

import pytest

torch = pytest.importorskip("torch")
if getattr(torch._C, "_from_dlpack", None) is None:
    pytest.skip(f"torch {torch.__version__} has no torch._C._from_dlpack", allow_module_level=True)

from reduce_tune import _dtypes, _ext, _torch_fast  # noqa: E402

CPU = 1  # DLPack's kDLCPU
FLOAT32, INT64, BOOL = (2, 32), (0, 64), (6, 8)
SUM = _dtypes.OPS["sum"]


class Blocks:
    """allocate(nbytes) for a pool: torch tensors of the bytes asked for, each watched by a weak
    reference; the sizes asked for in `sizes`."""

    def __init__(self):
        self.made, self.sizes = [], []

    def __call__(self, nbytes):
        t = torch.empty(nbytes, dtype=torch.uint8)
        self.made.append(weakref.ref(t))
        self.sizes.append(nbytes)
        return t

    def alive(self):
        gc.collect()
        return [r() is not None for r in self.made]


def pool(code=FLOAT32, shape=(), per_block=4):
    """A pool whose blocks hold `per_block` results (its block_bytes: per_block times the 16-byte
    multiple a result takes), and its allocate()."""
    size = 1
    for d in shape:
        size *= d
    stride = (size * code[1] // 8 + 15) // 16 * 16
    blocks = Blocks()
    return _ext.ResultPool(CPU, 0, code[0], code[1], list(shape), per_block * stride, blocks,
                           torch._C._from_dlpack), blocks


def test_results_are_tensors_of_their_own_carved_16_bytes_apart():
    p, blocks = pool()
    before = _ext.stats()["result_blocks"]
    rs = [p.take(7) for _ in range(10)]
    assert _ext.stats()["result_blocks"] - before == 3 and len(blocks.made) == 3  # 4 a block
    assert p.stride == 16 and p.per_block == 4 and p.streams == 1 and blocks.sizes == [64] * 3
    for i, r in enumerate(rs):
        assert r.shape == () and r.dtype == torch.float32 and r.is_contiguous()
        assert r._base is None and r.untyped_storage().nbytes() == 4
        if i % 4:
            assert r.data_ptr() - rs[i - 1].data_ptr() == 16  # the same block
    assert len({r.data_ptr() for r in rs}) == 10
    for i, r in enumerate(rs):
        r.fill_(i)
    assert [r.item() for r in rs] == list(range(10))  # no result overlaps another
    v = rs[1]._version
    rs[0].add_(1)  # an in-place change of one result bumps no other's version counter
    assert rs[1]._version == v and rs[0].item() == 1


def test_shapes_and_dtypes():
    p, _ = pool(INT64, (2, 3))
    r = p.take(0)
    assert r.shape == (2, 3) and r.dtype == torch.int64 and r.stride() == (3, 1)
    assert p.stride == 48
    b, _ = pool(BOOL, (5,))
    r = b.take(0)
    assert r.shape == (5,) and r.dtype == torch.bool and b.stride == 16
    for bad in (dict(code=(2, 12)), dict(shape=(1,) * 9), dict(per_block=0)):
        with pytest.raises(ValueError):
            pool(**bad)
    # A block of results larger than block_bytes holds one; of tiny ones, 64 at most.
    one = _ext.ResultPool(CPU, 0, 2, 32, [100], 64, Blocks(), torch._C._from_dlpack)
    assert (one.stride, one.per_block) == (400, 1)
    many = _ext.ResultPool(CPU, 0, 2, 32, [], 1 << 20, Blocks(), torch._C._from_dlpack)
    assert (many.stride, many.per_block) == (16, 64)


def test_a_block_per_stream():
    p, blocks = pool()
    a, b = p.take(1), p.take(2)
    assert p.streams == 2 and len(blocks.made) == 2
    assert p.take(1).data_ptr() - a.data_ptr() == 16 and p.take(2).data_ptr() - b.data_ptr() == 16


def test_a_block_goes_back_when_its_last_result_is_gone():
    p, blocks = pool()
    rs = [p.take(0) for _ in range(6)]  # block 0: results 0-3; block 1 (the pool's): 4, 5
    del rs[:3]
    assert blocks.alive() == [True, True]  # result 3 holds block 0
    del rs[0]
    assert blocks.alive() == [False, True]
    del rs
    assert blocks.alive() == [False, True]  # the pool still hands block 1 out
    del p
    assert blocks.alive() == [False, False]


def test_results_outlive_their_pool_and_may_die_on_another_thread():
    p, blocks = pool()
    rs = [p.take(0) for _ in range(3)]
    for i in range(3):
        rs[i].fill_(i + 1)
    del p
    assert blocks.alive() == [True] and [r.item() for r in rs] == [1, 2, 3]
    gone = threading.Thread(target=rs.clear)  # the last results die on a thread of their own
    gone.start()
    gone.join()
    assert blocks.alive() == [False]


def test_plans_pool_small_results():
    """The plan's ResultPool (its last item): for results of at most POOLED_BYTES, with blocks of
    at most BLOCK_BYTES and 64 results."""
    for shape, dim, dtype, stride, per_block in (((1024,), None, torch.float32, 16, 64),
                                                 ((32, 32), -1, torch.float32, 128, 32),
                                                 ((64, 32), 0, torch.float64, 256, 16),
                                                 ((4, 5), 0, torch.int32, 32, 64)):
        x = torch.zeros(shape, dtype=dtype)
        p = _torch_fast.plan(SUM, x, dim, False, 0)
        assert p[8] is not None and (p[8].stride, p[8].per_block) == (stride, per_block), (shape, dim)
    assert _torch_fast.plan(SUM, torch.zeros(2, 65), 0, False, 0)[8] is None  # 260 bytes
    assert _torch_fast.plan(SUM, torch.zeros(4, 3), 0, False, 0, keep=False)[8] is None
