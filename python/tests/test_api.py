"""What runs without a GPU: the import, the argument handling and every error that needs no
driver (and, on a machine without one, the RuntimeError that says so)."""
from __future__ import annotations

import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import reduce_tune as rt
from reduce_tune import _api, _dtypes, _ext

from conftest import GPU_OK

REPO = Path(__file__).resolve().parents[2]


class FakeCAI:
    """An object that speaks __cuda_array_interface__ v3 and nothing else; its pointer is made up,
    so only errors raised before the driver is asked can be tested with it."""

    def __init__(self, shape, typestr="<f4", strides=None, ptr=0x7F0000000000, version=3,
                 stream=None, mask=None):
        self.__cuda_array_interface__ = {
            "shape": tuple(shape), "typestr": typestr, "data": (ptr, False), "strides": strides,
            "version": version, "stream": stream, "mask": mask}


class FakeDLPack:
    def __init__(self, device):
        self._device = device

    def __dlpack_device__(self):
        return self._device

    def __dlpack__(self, stream=None):  # pragma: no cover - never reached for these devices
        raise AssertionError("must not be asked for a capsule")


# ---- the package ---------------------------------------------------------------------------

def test_version_is_the_cmake_projects():
    text = (REPO / "CMakeLists.txt").read_text() if (REPO / "CMakeLists.txt").exists() else None
    if text is None:
        pytest.skip("not run from a source tree")
    m = re.search(r"project\(reduce_tune VERSION ([0-9.]+)", text)
    assert m and rt.__version__ == m.group(1)


def test_dtypes_are_the_librarys():
    names = rt.dtypes()
    assert {"int32", "uint32", "int64", "float32", "float64"} <= set(names)
    for name in names:
        d = _dtypes.BY_NAME[name]
        assert d.itemsize * 8 == d.dlpack[1]
        assert _dtypes.from_name(name) is d
        if d.typestr:
            assert _dtypes.from_typestr(d.typestr) is d


def test_shipped_tuning_is_built_in(tmp_path):
    # No file to find: the package's CLI grades an H100 point `shipped` with no environment
    # pointing anywhere, from any directory.
    assert _ext.shipped_path() == ""
    cli = Path(rt.__file__).resolve().parent / "bin" / "reduce-tune"
    env = {k: v for k, v in os.environ.items() if k != "REDUCE_TUNE_SHIPPED_DB"}
    out = subprocess.run([str(cli), "query", "--db", str(tmp_path / "none.db"), "--lookup", "--uuid",
                          "model:NVIDIA H100 80GB HBM3", "--n", "2^24"], cwd=tmp_path, env=env,
                         capture_output=True, text=True, check=True).stdout
    assert " shipped (" in out


def test_public_api():
    for f in ("sum", "min", "max", "segment_sum", "segment_min", "segment_max", "config_for",
              "devices", "gpu_available", "dtypes", "nvrtc_info"):
        assert callable(getattr(rt, f)) and getattr(rt, f).__doc__, f
    ok, why = rt.gpu_available()
    assert isinstance(ok, bool) and (ok or why)


def test_stubs_match_the_extension():
    stub = (Path(_ext.__file__).parent / "_ext.pyi").read_text()
    declared = set(re.findall(r"^(?:def|class) (\w+)\b", stub, re.M))
    actual = {n for n in dir(_ext) if not n.startswith("_") and callable(getattr(_ext, n))}
    assert declared == actual
    assert (Path(_ext.__file__).parent / "py.typed").exists()


def test_nvrtc_wheels_are_found_in_order(tmp_path):
    from reduce_tune import _nvrtc
    files = ["nvidia/cu13/lib/libnvrtc.so.13", "nvidia/cu13/lib/libnvrtc-builtins.so.13.5",
             "nvidia/cuda_nvrtc/lib/libnvrtc.so.12", "nvidia/cuda_nvrtc/lib/libnvrtc.alt.so.12",
             "nvidia/cuda_nvrtc/lib/libnvrtc-builtins.so.12.9", "other/nvidia/x/lib/libnvrtc.so.11.2"]
    for f in files:
        (tmp_path / f).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / f).write_bytes(b"")
    paths = [str(tmp_path / "absent"), str(tmp_path), str(tmp_path / "other"), str(tmp_path)]
    got = [Path(p).relative_to(tmp_path).as_posix() for p in _nvrtc.wheel_candidates(paths, "libnvrtc.so.12")]
    assert got == ["nvidia/cuda_nvrtc/lib/libnvrtc.so.12", "nvidia/cu13/lib/libnvrtc.so.13",
                   "other/nvidia/x/lib/libnvrtc.so.11.2"]
    got = [Path(p).name for p in _nvrtc.wheel_candidates(paths, "libnvrtc.so.13")]
    assert got == ["libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2"]


def test_nvrtc_info_needs_no_gpu():
    try:
        info = rt.nvrtc_info("sm_90")
    except RuntimeError as e:  # a machine without any NVRTC: the message says where to get one
        assert "nvidia-cuda-nvrtc" in str(e)
        pytest.skip(f"no NVRTC here: {e}")
    assert tuple(info["version"]) >= (11, 2) and 90 in info["archs"]
    assert info["path"] and info["compiled_bytes"] > 0
    assert set(rt.nvrtc_info()) == {"path", "version", "archs"}


def test_cli_runs_through_python_m():
    r = subprocess.run([sys.executable, "-m", "reduce_tune", "--help"], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "usage: reduce-tune" in r.stdout
    r = subprocess.run([sys.executable, "-m", "reduce_tune", "no-such-command"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode != 0


# ---- dtypes and ops ------------------------------------------------------------------------

@pytest.mark.parametrize("spec", ["float32", "f32", "torch.float32", "float"])
def test_dtype_spellings(spec):
    assert _dtypes.from_any(spec).name == "float32"


def test_dtype_from_numpy():
    np = pytest.importorskip("numpy")
    assert _dtypes.from_any(np.dtype("int64")).name == "int64"
    assert _dtypes.from_any(np.uint32).name == "uint32"


@pytest.mark.parametrize("typestr", ["<c8", "<i2", "|b1", ">f4", "<f16", "|u1"])
def test_unsupported_dtype_is_a_type_error(typestr):
    with pytest.raises(TypeError, match="unsupported dtype"):
        rt.sum(FakeCAI((10,), typestr))


def test_identities():
    f32, i32, u32 = (_dtypes.BY_NAME[n] for n in ("float32", "int32", "uint32"))
    assert _api._identity(f32, "sum") == 0
    assert _api._identity(f32, "min") == math.inf and _api._identity(f32, "max") == -math.inf
    assert _api._identity(i32, "min") == 2**31 - 1 and _api._identity(i32, "max") == -2**31
    assert _api._identity(u32, "min") == 2**32 - 1 and _api._identity(u32, "max") == 0


def test_unknown_op():
    with pytest.raises(ValueError, match="unknown op"):
        _api.reduce("prod", FakeCAI((4,)))


# ---- inputs that are not GPU arrays --------------------------------------------------------

def test_numpy_array_is_a_type_error():
    np = pytest.importorskip("numpy")
    with pytest.raises(TypeError, match="host array"):
        rt.sum(np.ones(5, dtype=np.float32))
    with pytest.raises(TypeError, match="host array"):
        rt.segment_sum(np.ones(5), np.zeros(2, dtype=np.int64))


@pytest.mark.parametrize("x", [[1.0, 2.0], 3.0, b"abc", (1, 2)])
def test_python_values_are_a_type_error(x):
    with pytest.raises(TypeError, match="host array"):
        rt.sum(x)


def test_other_objects_are_a_type_error():
    with pytest.raises(TypeError, match="not a GPU array"):
        rt.max(object())


def test_dlpack_devices():
    with pytest.raises(TypeError, match="host array"):
        rt.sum(FakeDLPack((1, 0)))  # kDLCPU
    with pytest.raises(TypeError, match="host array"):
        rt.sum(FakeDLPack((3, 0)))  # kDLCUDAHost
    with pytest.raises(TypeError, match="not a CUDA GPU"):
        rt.sum(FakeDLPack((10, 0)))  # ROCm


class RecordingDLPack:
    """A CUDA array by its __dlpack_device__ whose __dlpack__ notes how it was called; the capsule
    is a NumPy array's, so the call gets as far as the result's allocation (the driver)."""

    def __init__(self, calls, signature="standard"):
        np = pytest.importorskip("numpy")
        self._a, self._calls = np.ones(6, dtype=np.float32), calls
        if signature == "old":
            self.__dlpack__ = lambda stream=None: self._note(stream=stream)
        elif signature == "bare":
            self.__dlpack__ = lambda: self._note()

    def __dlpack_device__(self):
        return (2, 0)  # kDLCUDA, GPU 0

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        return self._note(stream=stream, max_version=max_version)

    def _note(self, **kwargs):
        self._calls.append(kwargs)
        return self._a.__dlpack__()


@pytest.mark.skipif(GPU_OK, reason="the fake capsule must not reach a GPU")
def test_dlpack_producers_get_the_calls_stream():
    # The array API's rule: the consumer names the stream it will use the data on, 1 for the
    # legacy default stream (0 is not allowed), and asks for a versioned capsule first.
    for stream, want in ((None, 1), (0, 1), (1, 1), (2, 2)):
        calls = []
        with pytest.raises(RuntimeError, match="no CUDA driver or GPU"):
            rt.sum(RecordingDLPack(calls), stream=stream)
        assert calls == [{"stream": want, "max_version": (1, 0)}], stream
    calls = []
    with pytest.raises(RuntimeError, match="no CUDA driver or GPU"):
        rt.max(RecordingDLPack(calls, "old"), stream=2)
    assert calls == [{"stream": 2}]
    calls = []
    with pytest.raises(RuntimeError, match="no CUDA driver or GPU"):
        rt.min(RecordingDLPack(calls, "bare"))
    assert calls == [{}]


def test_masked_array_is_a_value_error():
    with pytest.raises(ValueError, match="masked"):
        rt.sum(FakeCAI((4,), mask=object()))


def test_misaligned_strides_are_a_value_error():
    with pytest.raises(ValueError, match="not a multiple"):
        rt.sum(FakeCAI((4, 4), strides=(18, 4)))


# ---- arguments -----------------------------------------------------------------------------

@pytest.mark.parametrize("stream,exc", [("s", TypeError), (True, TypeError), (-1, ValueError),
                                         (1.5, TypeError)])
def test_bad_stream_arguments(stream, exc):
    with pytest.raises(exc):
        rt.sum(FakeCAI((4,)), stream=stream)


@pytest.mark.parametrize("dim,exc", [(2, ValueError), (-3, ValueError), (1.0, TypeError),
                                     (True, TypeError), ((0, 1), TypeError)])
def test_bad_dims(dim, exc):
    with pytest.raises(exc):
        rt.sum(FakeCAI((3, 4)), dim)


def test_result_dtype_arguments():
    # float32 only for bfloat16/float16 reduced whole; the element type itself is always fine (it
    # is checked with the rest, so a fake array gets as far as the driver only then).
    with pytest.raises(TypeError, match="element type, or float32 for bfloat16 and float16"):
        rt.sum(FakeCAI((8,), typestr="<f4"), dtype="float64")
    with pytest.raises(TypeError, match="element type, or float32"):
        rt.sum(FakeCAI((8,), typestr="<f2"), dtype="float64")
    with pytest.raises(TypeError, match="element type, or float32"):
        rt.max(FakeCAI((8,), typestr="<i4"), dtype="float32")
    with pytest.raises(ValueError, match="dim=None"):
        rt.sum(FakeCAI((4, 8), typestr="<f2"), dim=-1, dtype="float32")
    with pytest.raises(TypeError, match="unsupported dtype"):
        rt.sum(FakeCAI((8,), typestr="<f2"), dtype="complex64")


def test_middle_dim_of_3d():
    with pytest.raises(ValueError, match="dim must be None, 0 or -1"):
        rt.sum(FakeCAI((2, 3, 4)), dim=1)


def test_non_expressible_strides_are_a_value_error():
    x = FakeCAI((4, 4), strides=(64, 8))  # x[::2, ::2] of an 8 x 8 float32 matrix
    for dim in (None, 0, -1):
        with pytest.raises(ValueError, match="contiguous"):
            rt.sum(x, dim)
    with pytest.raises(ValueError, match="overlapping"):
        rt.sum(FakeCAI((4, 5), strides=(0, 4)), dim=-1)  # a broadcast row
    with pytest.raises(ValueError):
        rt.sum(FakeCAI((4,), strides=(-4,)))  # reversed


def test_segment_arguments():
    x = FakeCAI((10,))
    with pytest.raises(TypeError, match="int64"):
        rt.segment_sum(x, FakeCAI((3,), "<i4"))
    with pytest.raises(ValueError, match="1-D"):
        rt.segment_sum(x, FakeCAI((2, 2), "<i8"))
    with pytest.raises(ValueError, match="1-D"):
        rt.segment_min(x, FakeCAI((0,), "<i8"))
    with pytest.raises(ValueError, match="contiguous"):
        rt.segment_max(FakeCAI((10,), strides=(8,)), FakeCAI((3,), "<i8"))


def test_config_for_arguments():
    with pytest.raises(TypeError):
        rt.config_for("complex64", "sum", 10)
    with pytest.raises(ValueError):
        rt.config_for("float32", "prod", 10)
    with pytest.raises(ValueError):
        rt.config_for("float32", "sum", 10, problem="cubes")
    with pytest.raises(TypeError):
        rt.config_for("float32", "sum", -1)
    with pytest.raises(TypeError):
        rt.config_for("float32", "sum", 10, problem="rows")


# ---- which library call a shape is -----------------------------------------------------------

def plan(shape, strides, dim):
    p = _api._plan(tuple(shape), None if strides is None else tuple(strides), dim)
    return p.kind, p.args, p.result_shape, p.count, p.length


@pytest.mark.parametrize("shape,strides,dim,expected", [
    ((7,), None, None, ("array", (7,), (), 1, 7)),
    ((7,), None, 0, ("array", (7,), (), 1, 7)),
    ((7,), None, -1, ("array", (7,), (), 1, 7)),
    ((0,), None, None, ("array", (0,), (), 1, 0)),
    ((4, 5), None, None, ("array", (20,), (), 1, 20)),
    ((4, 5), None, -1, ("rows", (4, 5, 5), (4,), 4, 5)),
    ((4, 5), None, 1, ("rows", (4, 5, 5), (4,), 4, 5)),
    ((4, 5), None, 0, ("columns", (4, 5, 5), (5,), 5, 4)),
    # a slice of columns: rows 8 apart
    ((4, 5), (8, 1), -1, ("rows", (4, 5, 8), (4,), 4, 5)),
    ((4, 5), (8, 1), 0, ("columns", (4, 5, 8), (5,), 5, 4)),
    ((4, 5), (8, 1), None, ("rows+array", (4, 5, 8), (), 1, 20)),
    # the transpose of a contiguous 4 x 5 matrix
    ((5, 4), (1, 5), -1, ("columns", (4, 5, 5), (5,), 5, 4)),
    ((5, 4), (1, 5), 0, ("rows", (4, 5, 5), (4,), 4, 5)),
    ((5, 4), (1, 5), None, ("rows+array", (4, 5, 5), (), 1, 20)),
    # a strided vector is one column
    ((10,), (3,), None, ("columns", (10, 1, 3), (), 1, 10)),
    # size-1 dimensions do not matter
    ((1, 5), (999, 1), -1, ("rows", (1, 5, 5), (1,), 1, 5)),
    ((4, 1), (7, 1), 0, ("columns", (4, 1, 7), (1,), 1, 4)),
    # N-D: the leading or trailing dimensions as one
    ((2, 3, 4), None, -1, ("rows", (6, 4, 4), (2, 3), 6, 4)),
    ((2, 3, 4), None, 0, ("columns", (2, 12, 12), (3, 4), 12, 2)),
    ((2, 3, 4), (30, 10, 1), -1, ("rows", (6, 4, 10), (2, 3), 6, 4)),
    # empty shapes
    ((0, 5), None, -1, ("rows", (0, 5, 5), (0,), 0, 5)),
    ((3, 0), None, -1, ("rows", (3, 0, 1), (3,), 3, 0)),
])
def test_plans(shape, strides, dim, expected):
    assert plan(shape, strides, dim) == expected


def test_3d_not_one_stride():
    with pytest.raises(ValueError):
        plan((2, 3, 4), (40, 10, 1), -1)  # leading dims not mergeable
    with pytest.raises(ValueError):
        plan((2, 3, 4), (12, 8, 1), 0)


# ---- without a GPU ---------------------------------------------------------------------------

@pytest.mark.skipif(GPU_OK, reason="this machine has a GPU")
def test_no_gpu_is_a_runtime_error():
    with pytest.raises(RuntimeError, match="no CUDA driver or GPU"):
        rt.sum(FakeCAI((10,)))
    with pytest.raises(RuntimeError, match="no CUDA driver or GPU"):
        rt.config_for("float32", "sum", 1 << 20)
    with pytest.raises(RuntimeError, match="no CUDA driver or GPU"):
        rt.DeviceArray((3,), "float32", 0)
    assert rt.devices() == []


def test_hot_entry_arguments():
    """The eager torch call's entry (_ext.hot) parses its nine ints itself: wrong arguments are
    refused before the driver is asked anything."""
    args = [0, 0, _dtypes.BY_NAME["float32"].value, _dtypes.OPS["sum"], 0x7F0000000000, 1024, 0,
            0x7F0000001000, 0]
    with pytest.raises(TypeError, match="9 ints"):
        _ext.hot(*args[:8])
    with pytest.raises(TypeError):
        _ext.hot(*args[:4], "0x7f00", *args[5:])
    with pytest.raises(TypeError):
        _ext.hot(*args[:5], 1024.0, *args[6:])
    with pytest.raises(OverflowError):
        _ext.hot(*args[:4], -1, *args[5:])
    for i, bad in ((0, 3), (0, -1), (1, -1), (2, 256), (3, -2)):
        with pytest.raises(ValueError, match="out of range"):
            _ext.hot(*args[:i], bad, *args[i + 1:])


@pytest.mark.skipif(GPU_OK, reason="this machine has a GPU")
def test_hot_entry_without_a_gpu_is_a_runtime_error():
    with pytest.raises(RuntimeError, match="no CUDA driver or GPU"):
        _ext.hot(0, 0, _dtypes.BY_NAME["float32"].value, _dtypes.OPS["sum"], 0x7F0000000000, 1024,
                 0, 0x7F0000001000, 0)
