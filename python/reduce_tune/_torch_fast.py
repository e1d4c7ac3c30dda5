"""The eager call on a torch tensor, on as few host operations as possible: reduce_tune.sum(x) /
sum(x, dim) / sum(x, dim, out=o) with x a plain contiguous CUDA tensor, on torch's current stream.
Everything else (stream=, dtype=, strides, empty arrays, autograd, tracing, dispatch modes) returns
None here and takes the general route, which also reports errors.

Where the time goes (bench/python_api.py prints it per step): the C++ call (Reducer::reduce_async),
which for a call this thread made before on pointers in allocations it checked before is the warm
path (runtime/warm.h: no pointer query, lookup or planning; the stream's capture state and the
launch); calling it from Python through ``_ext.hot``, a METH_FASTCALL function of nine ints; the
result tensor (``torch.empty_like`` of a kept tensor of the result's dtype, device and shape:
``Tensor.new_empty(shape)`` parses more and costs 0.5 us more, and tensors made 32 at a time by one
torch call cost as much each); and about ten reads of the tensor's attributes at 0.07-0.12 us each.
"""
from typing import Any, Dict, Optional, Tuple

import torch

from . import _dtypes, _ext, _ops

Tensor = torch.Tensor
_strided = torch.strided
_is_compiling = torch.compiler.is_compiling
_grad_enabled = torch.is_grad_enabled
_dispatch_modes = torch._C._len_torch_dispatch_stack
_stream_of = torch._C._cuda_getCurrentRawStream
_capturing = torch._C._cuda_isCurrentStreamCapturing
_empty_like = torch.empty_like
_hot = _ext.hot
_ARRAY, _ROWS, _COLUMNS = 0, 1, 2  #: _ext.hot's kinds

#: torch dtype -> the library's DType value, for the dtypes the library reduces.
DTYPES: Dict[Any, int] = {getattr(torch, d.name): d.value for d in _dtypes.BY_NAME.values()
                          if getattr(torch, d.name, None) is not None}

#: (Op value, torch dtype) -> (the library's DType value, the result's torch dtype), for every op
#: of the package and dtype it takes (fast_op).
RESULTS: Dict[Tuple[int, Any], Tuple[int, Any]] = {
    (_dtypes.op_value(op), t): (v, getattr(torch, _dtypes.result_of(op, _dtypes.RESULTS[v]).name))
    for op in _ops.TABLE for t, v in DTYPES.items()
    if not _ext.op_unsupported(v, _dtypes.op_value(op))}

TEMPLATE_MAX = 4096  #: results of at most this many elements are made like a kept tensor
_TEMPLATE_KEYS = 64  #: (dtype, device, shape) kept at most; then the cache starts over
_templates: Dict[Tuple[Any, int, Any], Tensor] = {}


def _result(x: Tensor, dev: int, shape: Any, count: int, dtype: Any) -> Tensor:
    """A new contiguous tensor of `shape` and `dtype` on x's device (GPU `dev`), allocated on
    torch's current stream like any: empty_like of a kept contiguous tensor of that kind."""
    key = (dtype, dev, shape)
    t = _templates.get(key)
    if t is not None:
        return _empty_like(t)
    r = x.new_empty(shape, dtype=dtype)
    # Not while a CUDA graph is captured: the kept tensor would hold the graph's memory pool.
    if count <= TEMPLATE_MAX and not _capturing():
        if len(_templates) >= _TEMPLATE_KEYS:
            _templates.clear()
        _templates[key] = x.new_empty(shape, dtype=dtype)
    return r


def fast(opv: int, x: Tensor, dim: Optional[int], out: Any) -> Any:
    """reduce_tune.sum/min/max(x, dim, out=out) of a torch.Tensor (exactly that type) with no
    stream= or dtype=, or None where the general route must take it."""
    if (x.requires_grad and _grad_enabled()) or _is_compiling() or _dispatch_modes():
        return None
    xd = x.dtype
    dt = DTYPES.get(xd)
    # get_device(): -1 on the CPU (and for meta tensors); a CUDA build's other devices are not
    # CUDA's, and the library refuses their pointers.
    dev = x.get_device()
    if dt is None or dev < 0 or x.layout is not _strided or not x.is_contiguous():
        return None
    n = x.numel()
    if n == 0:
        return None  # the identity: the general route
    if dim is None:
        kind, a, b, count, rshape = _ARRAY, n, 0, 1, ()
    else:
        nd = x.dim()
        if type(dim) is not int or not -nd <= dim < max(nd, 1):
            return None
        d = dim % nd if nd else 0
        if nd <= 1:
            kind, a, b, count, rshape = _ARRAY, n, 0, 1, ()
        elif d == nd - 1:
            shape = x.shape
            kind, b, rshape = _ROWS, shape[-1], shape[:-1]
            a = count = n // b
        elif d == 0:
            shape = x.shape
            kind, a, rshape = _COLUMNS, shape[0], shape[1:]
            b = count = n // a
        else:
            return None
    s = _stream_of(dev)
    if out is None:
        o = _result(x, dev, rshape, count, xd)
    elif (type(out) is Tensor and out.dtype == xd and out.get_device() == dev
          and out.layout is _strided and out.numel() == count and out.is_contiguous()):
        o = out
    else:
        return None
    _hot(kind, dev, dt, opv, x.data_ptr(), a, b, o.data_ptr(), s)
    return o


def fast_op(opv: int, x: Tensor, dim: Optional[int], out: Any, keepdim: bool) -> Any:
    """fast for every op of the package (mean, norms, any, ...), whose result dtype may differ
    from x's, and with keepdim; or None where the general route must take it. (sum, min and max
    take fast, which leaves out these steps: their calls are the ones most often made.)"""
    if (x.requires_grad and _grad_enabled()) or _is_compiling() or _dispatch_modes():
        return None
    rt = RESULTS.get((opv, x.dtype))
    dev = x.get_device()
    if rt is None or dev < 0 or x.layout is not _strided or not x.is_contiguous():
        return None
    dt, rdt = rt
    n = x.numel()
    if n == 0:
        return None
    nd = x.dim()
    if dim is None:
        kind, a, b, count, rshape = _ARRAY, n, 0, 1, ()
        if keepdim:
            rshape = (1,) * nd
    else:
        if type(dim) is not int or not -nd <= dim < max(nd, 1):
            return None
        d = dim % nd if nd else 0
        shape = x.shape
        if nd <= 1:
            kind, a, b, count, rshape = _ARRAY, n, 0, 1, ()
        elif d == nd - 1:
            kind, b, rshape = _ROWS, shape[-1], shape[:-1]
            a = count = n // b
        elif d == 0:
            kind, a, rshape = _COLUMNS, shape[0], shape[1:]
            b = count = n // a
        else:
            return None
        if keepdim:
            rshape = tuple(1 if i == d else k for i, k in enumerate(shape))
    s = _stream_of(dev)
    if out is None:
        o = _result(x, dev, rshape, count, rdt)
    elif (type(out) is Tensor and out.dtype == rdt and out.get_device() == dev
          and out.layout is _strided and out.numel() == count and out.is_contiguous()):
        o = out
    else:
        return None
    _hot(kind, dev, dt, opv, x.data_ptr(), a, b, o.data_ptr(), s)
    return o
