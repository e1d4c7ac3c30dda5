"""The eager call on a torch tensor, on as few host operations as possible: reduce_tune.sum(x) /
sum(x, dim) / sum(x, dim, out=o) with x a plain contiguous CUDA tensor, on torch's current stream.
Everything else (stream=, dtype=, strides, empty arrays, autograd, tracing, dispatch modes) returns
None here and takes the general route, which also reports errors.

Where the time goes (per call, 2^10 float32 elements, on the hosts of an H100 and an H200;
bench/python_api.py prints it): the C++ call (Reducer::reduce_async) 4.0-4.3 us, half of torch.sum's
whole call; calling it from Python 0.4-0.6 us more; the result tensor 1.7-1.9 us
(``torch.empty_like`` of a kept tensor of the result's dtype, device and shape:
``Tensor.new_empty(shape)`` parses more and costs 0.5 us more, and tensors made 32 at a time by
one torch call cost as much each); and about ten reads of the tensor's attributes at 0.07-0.12 us
each.
"""
from typing import Any, Dict, Optional, Tuple

import torch

from . import _dtypes, _ext

Tensor = torch.Tensor
_strided = torch.strided
_is_compiling = torch.compiler.is_compiling
_grad_enabled = torch.is_grad_enabled
_dispatch_modes = torch._C._len_torch_dispatch_stack
_stream_of = torch._C._cuda_getCurrentRawStream
_capturing = torch._C._cuda_isCurrentStreamCapturing
_empty_like = torch.empty_like
_reduce, _rows, _columns = _ext.reduce, _ext.reduce_rows_dense, _ext.reduce_columns_dense

#: torch dtype -> the library's DType value, for the dtypes the library reduces.
DTYPES: Dict[Any, int] = {getattr(torch, d.name): d.value for d in _dtypes.BY_NAME.values()
                          if getattr(torch, d.name, None) is not None}

TEMPLATE_MAX = 4096  #: results of at most this many elements are made like a kept tensor
_TEMPLATE_KEYS = 64  #: (dtype, device, shape) kept at most; then the cache starts over
_templates: Dict[Tuple[Any, int, Any], Tensor] = {}


def _result(x: Tensor, dev: int, shape: Any, count: int) -> Tensor:
    """A new contiguous tensor of `shape` and x's dtype on x's device (GPU `dev`), allocated on
    torch's current stream like any: empty_like of a kept contiguous tensor of that kind."""
    key = (x.dtype, dev, shape)
    t = _templates.get(key)
    if t is not None:
        return _empty_like(t)
    r = x.new_empty(shape)
    # Not while a CUDA graph is captured: the kept tensor would hold the graph's memory pool.
    if count <= TEMPLATE_MAX and not _capturing():
        if len(_templates) >= _TEMPLATE_KEYS:
            _templates.clear()
        _templates[key] = x.new_empty(shape)
    return r


def fast(opv: int, x: Tensor, dim: Optional[int], out: Any) -> Any:
    """reduce_tune.sum/min/max(x, dim, out=out) of a torch.Tensor (exactly that type) with no
    stream= or dtype=, or None where the general route must take it."""
    if (x.requires_grad and _grad_enabled()) or _is_compiling() or _dispatch_modes():
        return None
    dt = DTYPES.get(x.dtype)
    # get_device(): -1 on the CPU (and for meta tensors); a CUDA build's other devices are not
    # CUDA's, and the library refuses their pointers.
    dev = x.get_device()
    if dt is None or dev < 0 or x.layout is not _strided or not x.is_contiguous():
        return None
    n = x.numel()
    if n == 0:
        return None  # the identity: the general route
    if dim is None:
        kind, count, rshape = _reduce, 1, ()
    else:
        nd = x.dim()
        if type(dim) is not int or not -nd <= dim < max(nd, 1):
            return None
        d = dim % nd if nd else 0
        if nd <= 1:
            kind, count, rshape = _reduce, 1, ()
        elif d == nd - 1:
            shape = x.shape
            kind, cols, rshape = _rows, shape[-1], shape[:-1]
            rows = count = n // cols
        elif d == 0:
            shape = x.shape
            kind, rows, rshape = _columns, shape[0], shape[1:]
            cols = count = n // rows
        else:
            return None
    s = _stream_of(dev)
    if out is None:
        o = _result(x, dev, rshape, count)
    elif (type(out) is Tensor and out.dtype == x.dtype and out.get_device() == dev
          and out.layout is _strided and out.numel() == count and out.is_contiguous()):
        o = out
    else:
        return None
    if kind is _reduce:
        _reduce(dev, dt, opv, x.data_ptr(), n, o.data_ptr(), s)
    else:
        kind(dev, dt, opv, x.data_ptr(), rows, cols, o.data_ptr(), s)
    return o
