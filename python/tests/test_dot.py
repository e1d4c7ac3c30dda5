"""reduce_tune.dot (the sum of x * y) without a GPU: its place in the op table and the package,
and the argument errors raised before the driver is asked (dtypes, shapes, layouts, dims). The
torch custom op's registration, fake shapes and gradient formula: test_torch_dot.py; values on a
GPU: test_gpu_dot.py."""
from __future__ import annotations

import pytest

import reduce_tune as rt
from reduce_tune import _api, _dtypes, _ops

from conftest import GPU_OK
from test_api import FakeCAI


def test_public_and_in_the_table():
    assert "dot" in rt.__all__ and callable(rt.dot) and rt.dot.__doc__
    assert "dot" in _dtypes.OPS and _ops.info("dot").stages == ("dot", "sum")
    for d in _dtypes.BY_NAME.values():  # the element type, every input dtype
        assert _ops.check("dot", d) is d


def test_inputs_of_one_dtype_shape_and_layout():
    with pytest.raises(TypeError, match="one dtype"):
        rt.dot(FakeCAI((8,)), FakeCAI((8,), "<f8"))
    with pytest.raises(ValueError, match="one shape"):
        rt.dot(FakeCAI((8,)), FakeCAI((9,)))
    with pytest.raises(ValueError, match="one shape"):
        rt.dot(FakeCAI((4, 2)), FakeCAI((8,)))
    with pytest.raises(ValueError, match="one layout"):
        rt.dot(FakeCAI((4, 3), strides=(40, 4)), FakeCAI((4, 3)))
    with pytest.raises(ValueError, match="one layout"):
        rt.dot(FakeCAI((4, 3), strides=(4, 16)), FakeCAI((4, 3)))  # a transposed x
    # C-contiguous spelled out or left implicit (None) is one layout.
    _api.check_pair(("float32", (4, 3), (3, 1)), ("float32", (4, 3), None))


def test_dim_errors():
    with pytest.raises(ValueError, match="dim must be None, 0 or -1"):
        rt.dot(FakeCAI((2, 3, 4)), FakeCAI((2, 3, 4)), dim=1)
    with pytest.raises(TypeError, match="dim must be None or an int"):
        rt.dot(FakeCAI((2, 3)), FakeCAI((2, 3)), dim=1.0)


def test_float32_result_only_whole_and_for_16_bit_floats():
    with pytest.raises(TypeError, match="the result is the element type"):
        rt.dot(FakeCAI((8,)), FakeCAI((8,)), dtype="float64")
    with pytest.raises(ValueError, match="dim=None"):
        rt.dot(FakeCAI((4, 2), "<f2"), FakeCAI((4, 2), "<f2"), dim=0, dtype="float32")


@pytest.mark.skipif(GPU_OK, reason="this machine has a GPU")
def test_without_a_gpu_is_a_runtime_error():
    with pytest.raises(RuntimeError, match="no CUDA driver or GPU"):
        rt.dot(FakeCAI((10,)), FakeCAI((10,)))
