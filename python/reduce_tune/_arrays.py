"""Reading GPU arrays and making results in the input's framework.

PyTorch tensors and CuPy arrays are read through their own accessors (what their
``__cuda_array_interface__`` says, without building the dict); anything else through
``__cuda_array_interface__`` (v2/v3) or ``__dlpack__``/``__dlpack_device__``. Neither torch nor CuPy
is imported here: an object is one of theirs only if its module is already loaded.
"""
from __future__ import annotations

import math
import sys
from typing import Any, Dict, Optional, Tuple

from . import _dtypes, _ext
from ._dtypes import DType

Shape = Tuple[int, ...]

# DLPack device types.
_DL_CPU, _DL_CUDA, _DL_CUDA_HOST, _DL_CUDA_MANAGED = 1, 2, 3, 13
# CU_MEMORYTYPE_HOST / _DEVICE.
_MEM_HOST, _MEM_DEVICE = 1, 2


def _host_error(what: str, x: object) -> TypeError:
    return TypeError(
        f"reduce_tune: {what} is a host array ({type(x).__module__}.{type(x).__name__}): "
        "reduce_tune reduces GPU arrays; move it to the GPU first (torch.as_tensor(x, "
        "device='cuda'), cupy.asarray(x), ...)")


class Array:
    """One input or output, read: a data pointer, shape, strides in elements (None: C-contiguous),
    dtype, device and the stream its data was written on (`producer`; None: nothing to wait for)."""

    __slots__ = ("obj", "kind", "ptr", "shape", "strides", "dtype", "_device", "producer", "keep")

    def __init__(self, obj: Any, kind: str, ptr: int, shape: Shape, strides: Optional[Shape],
                 dtype: DType, device: Optional[int], producer: Optional[int], keep: Any = None):
        self.obj, self.kind, self.ptr, self.shape = obj, kind, ptr, shape
        self.strides, self.dtype, self._device, self.producer, self.keep = \
            strides, dtype, device, producer, keep

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    def device(self, default: int = 0) -> int:
        """The GPU ordinal; for __cuda_array_interface__ objects asked of the driver (raises
        RuntimeError without one, TypeError for host memory)."""
        if self._device is None:
            self._device = _pointer_device(self.ptr, self.obj, default)
        return self._device

    def contiguous(self) -> bool:
        return self.strides is None or is_c_contiguous(self.shape, self.strides)


def is_c_contiguous(shape: Shape, strides: Shape) -> bool:
    expected = 1
    for n, s in zip(reversed(shape), reversed(strides)):
        if n == 0:
            return True
        if n != 1 and s != expected:
            return False
        expected *= n
    return True


def _pointer_device(ptr: int, obj: object, default: int) -> int:
    if ptr == 0:
        return default  # an empty array: no memory to ask about
    mem_type, device, managed = _ext.pointer_info(ptr)
    if mem_type == 0 or (mem_type == _MEM_HOST and not managed):
        raise _host_error("the array", obj)
    return device if device >= 0 else default


# ---- PyTorch ---------------------------------------------------------------------------------

_torch_dtypes: Dict[Any, DType] = {}
_torch_results: Dict[Any, DType] = {}  #: torch dtypes of results only (bool)
_torch_stream = None


def _torch_setup(torch: Any) -> None:
    global _torch_stream
    for d in _dtypes.BY_NAME.values():
        t = getattr(torch, d.name, None)
        if t is not None:
            _torch_dtypes[t] = d
    for d in _dtypes.RESULTS.values():
        t = getattr(torch, d.name, None)
        if t is not None and t not in _torch_dtypes:
            _torch_results[t] = d
    raw = getattr(getattr(torch, "_C", None), "_cuda_getCurrentRawStream", None)
    if raw is not None:
        _torch_stream = raw
    else:
        _torch_stream = lambda dev: torch.cuda.current_stream(dev).cuda_stream  # noqa: E731


def torch_dtype(x: Any, torch: Any, what: str, meta: bool = False, result: bool = False) -> DType:
    """The dtype of a dense CUDA tensor (with `meta`, a meta tensor too: the fake implementations
    of the custom ops see those; with `result`, a result-only dtype too: out=); TypeError for
    another tensor."""
    if not (x.is_cuda or (meta and x.is_meta)):
        raise TypeError(f"reduce_tune: {what} is a torch tensor on {x.device}, not on a GPU; "
                        "move it with .cuda() first")
    if not _torch_dtypes:
        _torch_setup(torch)
    dt = _torch_dtypes.get(x.dtype)
    if dt is None and result:
        dt = _torch_results.get(x.dtype)
    if dt is None:
        raise _dtypes.unsupported(str(x.dtype))
    if x.layout is not torch.strided:
        raise TypeError(f"reduce_tune: {what} is a {x.layout} tensor; only dense (strided) tensors")
    return dt


def _read_torch(x: Any, torch: Any, what: str, result: bool = False) -> Array:
    dt = torch_dtype(x, torch, what, result=result)
    dev = x.get_device()
    strides = None if x.is_contiguous() else tuple(x.stride())
    # torch's __cuda_array_interface__ names its current stream, as here.
    return Array(x, "torch", x.data_ptr(), tuple(x.shape), strides, dt, dev, _torch_stream(dev))


# ---- CuPy ------------------------------------------------------------------------------------

def _cupy_stream(cupy: Any, dev: int) -> int:
    try:
        return cupy.cuda.get_current_stream(dev).ptr
    except TypeError:  # older CuPy: the current device's only
        with cupy.cuda.Device(dev):
            return cupy.cuda.get_current_stream().ptr


def _read_cupy(x: Any, cupy: Any, what: str, result: bool = False) -> Array:
    dt = _dtypes.from_name(x.dtype.name, result) if x.dtype.isnative else None
    if dt is None:
        raise _dtypes.unsupported(str(x.dtype))
    dev = x.device.id
    strides = None if x.flags.c_contiguous else _element_strides(x.strides, dt.itemsize, what)
    return Array(x, "cupy", x.data.ptr, tuple(x.shape), strides, dt, dev, _cupy_stream(cupy, dev))


# ---- the protocols ---------------------------------------------------------------------------

def _element_strides(strides: Any, itemsize: int, what: str) -> Shape:
    out = []
    for s in strides:
        if s % itemsize:
            raise ValueError(f"reduce_tune: {what} has a stride of {s} bytes, not a multiple of its "
                             f"{itemsize}-byte elements")
        out.append(s // itemsize)
    return tuple(out)


def _read_cai(x: Any, cai: Dict[str, Any], what: str, result: bool = False) -> Array:
    if cai.get("mask") is not None:
        raise ValueError(f"reduce_tune: {what} is a masked array; masks are not supported")
    dt = _dtypes.from_typestr(cai["typestr"], result)
    shape = tuple(int(n) for n in cai["shape"])
    ptr = int(cai["data"][0] or 0)
    strides = cai.get("strides")
    if strides is not None:
        strides = _element_strides(strides, dt.itemsize, what)
    # v3: the stream the data is valid on (None: no synchronisation needed); 0 is disallowed by
    # the protocol and read as the legacy default stream, which it also is.
    producer = cai.get("stream") if cai.get("version", 0) >= 3 else None
    return Array(x, "cai", ptr, shape, strides, dt, None, producer)


def _dlpack_device(x: Any, what: str) -> Tuple[int, int]:
    """(DLPack device type, id) of a GPU array; TypeError for host memory or another kind of device."""
    dev_type, dev_id = x.__dlpack_device__()
    if dev_type in (_DL_CPU, _DL_CUDA_HOST):
        raise _host_error(what, x)
    if dev_type not in (_DL_CUDA, _DL_CUDA_MANAGED):
        raise TypeError(f"reduce_tune: {what} is on DLPack device type {dev_type}, not a CUDA GPU")
    return int(dev_type), int(dev_id)


def dlpack_device(x: Any, what: str, default: int) -> int:
    """The GPU of a DLPack array, without asking for its capsule (managed memory: `default`)."""
    dev_type, dev_id = _dlpack_device(x, what)
    return dev_id if dev_type == _DL_CUDA else default


def _dlpack_capsule(x: Any, stream: int) -> Any:
    """The array API's exchange: the consumer names the stream it will use the data on (1: the
    legacy default stream, 2: the per-thread default stream, else a handle; 0 is not allowed), and
    the producer orders its pending work on the array before that stream. A versioned (1.x)
    capsule is asked for first; producers of older versions of the protocol get older calls."""
    try:
        return x.__dlpack__(stream=stream, max_version=(1, 0))
    except TypeError:
        pass
    try:
        return x.__dlpack__(stream=stream)
    except TypeError:  # a producer without the stream keyword: it assumes the legacy default stream
        return x.__dlpack__()


def _read_dlpack(x: Any, what: str, stream: Optional[int], result: bool = False) -> Array:
    dev_type, _ = _dlpack_device(x, what)
    # The stream the call runs on; 0 (the legacy default stream's CUDA runtime handle) is spelled 1.
    capsule = _dlpack_capsule(x, stream if stream else 1)
    ptr, shape, strides, (code, bits, lanes), (_dt, dl_dev) = _ext.dlpack_view(capsule)
    dt = _dtypes.from_dlpack(code, bits, lanes, result)
    dev = dl_dev if dev_type == _DL_CUDA else None
    return Array(x, "dlpack", ptr, tuple(shape), strides, dt, dev, None, keep=capsule)


def read(x: Any, what: str = "x", dlpack_stream: Optional[int] = None, result: bool = False) -> Array:
    """Reads `x`; raises TypeError for a host array, an unsupported dtype or a non-array.
    dlpack_stream: the stream the call runs on, for a DLPack producer to order its work before
    (None or 0: the legacy default stream). result: `x` is to receive a result (out=), which may
    also be of a result-only dtype (bool)."""
    a = _read(x, what, dlpack_stream, False, result)
    assert a is not None
    return a


def read_or_defer(x: Any, what: str = "x") -> Optional[Array]:
    """read, except that a DLPack array (one read through ``__dlpack__`` alone) gives None: its
    capsule is asked for once the call's stream is known, read(x, what, that stream)."""
    return _read(x, what, None, True)


def _read(x: Any, what: str, dlpack_stream: Optional[int], defer: bool,
          result: bool = False) -> Optional[Array]:
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(x, torch.Tensor):
        return _read_torch(x, torch, what, result)
    cupy = sys.modules.get("cupy")
    if cupy is not None and isinstance(x, cupy.ndarray):
        return _read_cupy(x, cupy, what, result)
    cai = getattr(x, "__cuda_array_interface__", None)
    if cai is not None:
        return _read_cai(x, cai, what, result)
    if hasattr(x, "__dlpack_device__") and hasattr(x, "__dlpack__"):
        return None if defer else _read_dlpack(x, what, dlpack_stream, result)
    if hasattr(x, "__array_interface__") or hasattr(x, "__array__") or \
            isinstance(x, (list, tuple, int, float, complex, bytes, bytearray, memoryview)):
        raise _host_error(what, x)
    raise TypeError(f"reduce_tune: {what} ({type(x).__module__}.{type(x).__name__}) is not a GPU "
                    "array: it has neither __cuda_array_interface__ nor __dlpack__")


# ---- results ---------------------------------------------------------------------------------

def empty(like: Array, shape: Shape, device: int, stream: int,
          dtype: Optional[DType] = None) -> Tuple[Any, int]:
    """An uninitialised C-contiguous array of like's framework and dtype (or `dtype`) on `device`;
    (array, pointer). Frameworks allocate stream-ordered on their current stream, which is
    `stream` unless the caller passed another."""
    name = (dtype or like.dtype).name
    if like.kind == "torch":
        o = like.obj.new_empty(shape) if dtype is None else like.obj.new_empty(
            shape, dtype=getattr(sys.modules["torch"], name))
        return o, o.data_ptr()
    if like.kind == "cupy":
        cupy = sys.modules["cupy"]
        with cupy.cuda.Device(device):
            o = cupy.empty(shape, dtype=like.obj.dtype if dtype is None else name)
        return o, o.data.ptr
    o = DeviceArray(shape, name, device, stream)
    return o, o.ptr


def scratch(like: Array, count: int, device: int, stream: int,
            dtype: Optional[DType] = None) -> Tuple[Any, int, Any]:
    """Memory for `count` intermediate results of like's dtype (or `dtype`), used by the call's kernels on
    `stream` only: (array, pointer, what to keep alive as long as the array). Frameworks allocate
    it on `stream`, so that the memory is handed to other work only after those kernels; while a
    CUDA graph is being captured on `stream`, the graph owns it (torch: the graph's private pool;
    CuPy: stream-ordered allocation, whose allocation and free become nodes of the graph)."""
    dt = dtype or like.dtype
    if like.kind == "torch":
        torch = sys.modules["torch"]
        tdt = getattr(torch, dt.name)
        if _torch_stream(device) == stream:
            o = like.obj.new_empty((count,), dtype=tdt)
        else:
            on = torch.cuda.default_stream(like.obj.device) if stream in (0, 1) else \
                torch.cuda.ExternalStream(stream, device=like.obj.device)
            with torch.cuda.stream(on):
                o = like.obj.new_empty((count,), dtype=tdt)
        return o, o.data_ptr(), None
    if like.kind == "cupy":
        cupy = sys.modules["cupy"]
        with cupy.cuda.Device(device):
            s = cupy.cuda.ExternalStream(stream)
            with s:
                if _cupy_capturing(cupy, stream):
                    mem = cupy.cuda.MemoryAsyncPool().malloc(max(count, 1) * dt.itemsize)
                    o = cupy.ndarray((count,), dtype=dt.name, memptr=mem)
                else:
                    o = cupy.empty((count,), dtype=dt.name)
        # MemoryAsync frees on the stream it was allocated on while that object lives.
        return o, o.data.ptr, s
    o = DeviceArray((count,), dt.name, device, stream)
    return o, o.ptr, None


def _cupy_capturing(cupy: Any, stream: int) -> bool:
    if stream in (0, 1):  # the legacy default stream cannot capture
        return False
    return bool(cupy.cuda.runtime.streamIsCapturing(stream))


def fill(obj: Any, kind: str, value: Any, dtype: DType, ptr: int, count: int, op: int,
         device: int, stream: int, itemsize: int = 0) -> None:
    """Sets every element of a result to `value` (the op's identity), on `stream`; `dtype` is the
    input's, `itemsize` the result's element size (0: dtype's)."""
    if kind == "torch":
        torch = sys.modules["torch"]
        if _torch_stream(device) == stream:
            obj.fill_(value)
        else:
            with torch.cuda.stream(torch.cuda.ExternalStream(stream, device=obj.device)):
                obj.fill_(value)
    elif kind == "cupy":
        cupy = sys.modules["cupy"]
        with cupy.cuda.Device(device), cupy.cuda.ExternalStream(stream):
            obj.fill(value)
    else:  # one element at a time through the library's empty reduction (rare: a generic array)
        step = itemsize or dtype.itemsize
        for i in range(count):
            _ext.reduce(device, dtype.value, op, 0, 0, ptr + i * step, stream)


class DeviceArray:
    """A result in device memory for inputs of frameworks other than PyTorch and CuPy: any of them
    can take it through ``__cuda_array_interface__`` (v3; ``cupy.asarray``, ``torch.as_tensor``,
    ``numba.cuda.as_cuda_array``). ``get()`` copies it to the host."""

    __slots__ = ("shape", "dtype", "device", "ptr", "_stream", "_itemsize", "_typestr")

    def __init__(self, shape: Shape, dtype: str, device: int, stream: int = 0):
        d = _dtypes.from_name(dtype, result=True)
        self.shape, self.dtype, self.device, self._stream = tuple(shape), d.name, device, stream
        self._itemsize, self._typestr = d.itemsize, d.typestr
        self.ptr = 0
        self.ptr = _ext.alloc(device, max(self.nbytes, 1))

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return self.size * self._itemsize

    @property
    def __cuda_array_interface__(self) -> Dict[str, Any]:
        if self._typestr is None:
            raise TypeError(f"reduce_tune: {self.dtype} has no __cuda_array_interface__ typestr")
        return {"shape": self.shape, "typestr": self._typestr, "data": (self.ptr, False),
                "strides": None, "version": 3, "stream": self._stream or 1}

    def get(self) -> Any:
        """A host copy (after the stream's work): a NumPy array if NumPy is installed, else bytes."""
        buf = bytearray(self.nbytes)
        if buf:
            _ext.copy_to_host(self.device, self.ptr, buf, self._stream)
        try:
            import numpy
        except ImportError:
            return bytes(buf)
        return numpy.frombuffer(buf, dtype=self.dtype).reshape(self.shape)

    def item(self) -> Any:
        """The value of a one-element array (needs NumPy)."""
        if self.size != 1:
            raise ValueError(f"reduce_tune: item() of an array of {self.size} elements")
        return self.get().reshape(()).item()

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d array")
        return self.shape[0]

    def __repr__(self) -> str:
        return f"DeviceArray(shape={self.shape}, dtype={self.dtype}, device={self.device})"

    def __del__(self) -> None:
        if getattr(self, "ptr", 0):
            try:
                _ext.free(self.device, self.ptr)
            except Exception:  # noqa: BLE001 - at interpreter exit the driver may be gone
                pass
            self.ptr = 0
