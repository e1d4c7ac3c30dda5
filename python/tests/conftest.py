"""pytest configuration: GPU tests skip, with the reason, where there is no CUDA driver or GPU, or
no PyTorch/CuPy with CUDA."""
from __future__ import annotations

import pytest

import reduce_tune

GPU_OK, GPU_WHY = reduce_tune.gpu_available()


def _torch():
    try:
        import torch
    except Exception as e:  # noqa: BLE001
        return None, f"torch not importable ({type(e).__name__}: {e})"
    if not torch.cuda.is_available():
        return None, "torch.cuda.is_available() is False"
    return torch, ""


def _cupy():
    try:
        import cupy
        cupy.cuda.runtime.getDeviceCount()
    except Exception as e:  # noqa: BLE001
        return None, f"cupy not usable ({type(e).__name__}: {e})"
    return cupy, ""


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs a CUDA driver and GPU (skipped without)")


def pytest_report_header(config):
    return f"reduce_tune {reduce_tune.__version__}: GPU {'available' if GPU_OK else 'not available: ' + GPU_WHY}"


def pytest_collection_modifyitems(config, items):
    if GPU_OK:
        return
    skip = pytest.mark.skip(reason=f"no GPU: {GPU_WHY}")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def torch():
    if not GPU_OK:
        pytest.skip(f"no GPU: {GPU_WHY}")
    t, why = _torch()
    if t is None:
        pytest.skip(why)
    return t


@pytest.fixture(scope="session")
def cupy():
    if not GPU_OK:
        pytest.skip(f"no GPU: {GPU_WHY}")
    c, why = _cupy()
    if c is None:
        pytest.skip(why)
    return c
