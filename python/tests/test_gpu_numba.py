"""A third producer: Numba's device arrays speak only __cuda_array_interface__ (v3, with their
stream); results come back as reduce_tune.DeviceArray, which Numba takes back. Skipped without a
GPU or a working numba.cuda."""
from __future__ import annotations

import pytest

import reduce_tune as rt

np = pytest.importorskip("numpy")
pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def cuda():
    ok, why = rt.gpu_available()
    if not ok:
        pytest.skip(f"no GPU: {why}")
    try:
        from numba import cuda
        cuda.to_device(np.zeros(1, dtype=np.float32)).copy_to_host()
    except Exception as e:  # noqa: BLE001
        pytest.skip(f"numba.cuda not usable ({type(e).__name__}: {str(e)[:200]})")
    return cuda


def test_numba_device_arrays(cuda):
    a = np.random.default_rng(2).integers(-1000, 1000, 100_001).astype(np.int64)
    d = cuda.to_device(a)
    r = rt.sum(d)
    assert isinstance(r, rt.DeviceArray) and r.item() == int(a.sum())
    m = cuda.to_device(a[:100_000].reshape(400, 250))
    rows = rt.max(m, dim=-1)
    assert np.array_equal(rows.get(), a[:100_000].reshape(400, 250).max(1))
    assert np.array_equal(cuda.as_cuda_array(rows).copy_to_host(), rows.get())
    s = cuda.stream()
    ds = cuda.to_device(a, stream=s)  # its interface names s: the call waits for the copy
    assert rt.min(ds).item() == int(a.min())
