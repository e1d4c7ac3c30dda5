"""The eager call on a torch tensor, on as few host operations as possible: reduce_tune.sum(x) /
sum(x, dim, keepdim) / sum(x, dim, out=o) (and every other op of the package) with x a plain
contiguous CUDA tensor, on torch's current stream. Everything else (stream=, dtype=, strides, empty
arrays, autograd, tracing, dispatch modes) returns None here and takes the general route, which also
reports errors.

A call is planned once per (op, dtype, shape, dim, keepdim, device): `plan` works out the library
call (the problem kind and its extents, the result's dtype and shape, a kept tensor to make results
like) and `_plans` keeps it, so a repeat call reads five things of the tensor (requires_grad,
get_device, dtype, shape, is_contiguous), looks its plan up in one dict and makes the result and the
C++ call. What no key holds is checked on every call: the tensor's contiguity (and with it its
layout: a sparse tensor has no is_contiguous), that nothing needs the dispatcher, and out=. (One
function, one frame: a call of a Python function costs as much as two attribute reads.)

Where the time goes (bench/python_api.py prints it per step): the C++ call (Reducer::reduce_async),
which for a call this thread made before on pointers in allocations it checked before is the warm
path (runtime/warm.h: no pointer query, lookup or planning; the stream's capture state and the
launch); the result, which for at most POOLED_BYTES is a tensor of its own from the plan's
ResultPool (python/src/results.cpp: blocks torch allocates, each result handed to torch through
its DLPack import, ~0.5 us against 1.5-3.7 for ``torch.empty_like``), made and filled by one entry,
``_ext.hot_pooled``; larger results (and any while the stream is captured into a CUDA graph) are
``torch.empty_like`` of a kept tensor of the result's dtype, device and shape, filled by
``_ext.hot`` (``Tensor.new_empty(shape)`` parses more and costs 0.5 us more; views of one
allocation share its version counter); and the reads of the tensor's attributes and the checks
above (in C they cost the same: they are torch's own calls).
"""
import functools
from typing import Any, Dict, Optional, Tuple

import torch

from . import _dtypes, _ext, _ops

Tensor = torch.Tensor
_strided = torch.strided
# Dynamo's own flag (one frame, where is_compiling is two): torch.compile's tracing reads it as
# True; the other tracers (make_fx, export's non-strict mode, FakeTensorMode) run under a dispatch
# mode, which fast checks too.
_is_compiling = getattr(torch.compiler, "is_dynamo_compiling", torch.compiler.is_compiling)
_grad_enabled = torch.is_grad_enabled
_dispatch_modes = torch._C._len_torch_dispatch_stack
_stream_of = torch._C._cuda_getCurrentRawStream
_capturing = torch._C._cuda_isCurrentStreamCapturing
_empty_like = torch.empty_like
_hot = _ext.hot
_hot_pooled = _ext.hot_pooled
#: torch's DLPack import of a capsule (what torch.from_dlpack calls); None: no pooled results.
_import = getattr(torch._C, "_from_dlpack", None)
_ARRAY, _ROWS, _COLUMNS = 0, 1, 2  #: _ext.hot's kinds

#: torch dtype -> the library's DType value, for the dtypes the library reduces.
DTYPES: Dict[Any, int] = {getattr(torch, d.name): d.value for d in _dtypes.BY_NAME.values()
                          if getattr(torch, d.name, None) is not None}

#: (Op value, torch dtype) -> (the library's DType value, the result's torch dtype), for every op
#: of the package and dtype it takes.
RESULTS: Dict[Tuple[int, Any], Tuple[int, Any]] = {
    (_dtypes.op_value(op), t): (v, getattr(torch, _dtypes.result_of(op, _dtypes.RESULTS[v]).name))
    for op in _ops.TABLE for t, v in DTYPES.items()
    if not _ext.op_unsupported(v, _dtypes.op_value(op))}

TEMPLATE_MAX = 4096  #: results of at most this many elements are made like a kept tensor
PLAN_KEYS = 256  #: plans kept at most; then the cache starts over
_TEMPLATE_KEYS = 64  #: kept tensors (dtype, device, shape) at most; then that cache starts over
POOLED_BYTES = 256  #: results of at most this many bytes come from a ResultPool
BLOCK_BYTES = 4096  #: a ResultPool's blocks hold at most this many bytes, and 64 results
#: torch dtype -> its DLPack (type code, bits), for the result dtypes a ResultPool makes.
DLPACK: Dict[Any, Tuple[int, int]] = {
    getattr(torch, name): code for name, code in (
        ("float32", (2, 32)), ("float64", (2, 64)), ("float16", (2, 16)), ("bfloat16", (4, 16)),
        ("int32", (0, 32)), ("int64", (0, 64)), ("uint32", (1, 32)), ("bool", (6, 8)))
    if getattr(torch, name, None) is not None}

#: A plan: (kind, the library's DType value of x, a, b, results, kept tensor or None, the result's
#: torch dtype, its shape, the ResultPool of its results or None), the arguments of _ext.hot and
#: of the result; a plain tuple, unpacked at once.
Plan = Tuple[int, int, int, int, int, Optional[Tensor], Any, Tuple[int, ...], Any]
#: (Op value, dtype, shape, dim, keepdim, device) -> its plan, or None: the general route's.
_plans: Dict[Tuple[Any, ...], Optional[Plan]] = {}
_templates: Dict[Tuple[Any, int, Any], Tensor] = {}


def plan(opv: int, x: Tensor, dim: Optional[int], keepdim: Any, dev: int,
         keep: bool = True) -> Optional[Plan]:
    """The library call of op `opv` over x along `dim` (x on GPU `dev`, as ``x.get_device()``
    says), from x's dtype and shape alone; None where the general route must take it: x not on a
    GPU, a dtype the op does not take, no elements, a dim that is not None, 0 or -1 (or not an
    int). With `keep`, the kept tensor to make results like (results of at most TEMPLATE_MAX
    elements) is made here, on x's device."""
    rt = RESULTS.get((opv, x.dtype))
    # get_device(): -1 on the CPU (and for meta tensors); a CUDA build's other devices are not
    # CUDA's, and the library refuses their pointers.
    if rt is None or dev < 0:
        return None
    shape = tuple(x.shape)
    nd = len(shape)
    n = x.numel()
    if n == 0:
        return None  # the identity, or no result: the general route
    d = None
    if dim is None or nd <= 1:
        if dim is not None and (type(dim) is not int or not -nd <= dim < max(nd, 1)):
            return None
        kind, a, b, count, rshape = _ARRAY, n, 0, 1, ()
        if dim is not None:
            d = dim % nd if nd else 0
    else:
        if type(dim) is not int or not -nd <= dim < nd:
            return None
        d = dim % nd
        if d == nd - 1:
            kind, b, rshape = _ROWS, shape[-1], shape[:-1]
            a = count = n // b
        elif d == 0:
            kind, a, rshape = _COLUMNS, shape[0], shape[1:]
            b = count = n // a
        else:
            return None
    if keepdim:
        rshape = (1,) * nd if d is None else tuple(1 if i == d else k for i, k in enumerate(shape))
    dt, rdt = rt
    t = pool = None
    if keep and count <= TEMPLATE_MAX:
        key = (rdt, dev, rshape)
        t = _templates.get(key)
        if t is None:
            if len(_templates) >= _TEMPLATE_KEYS:
                _templates.clear()
            t = _templates[key] = x.new_empty(rshape, dtype=rdt)
        pool = _pool(t, dev, count)
    return (kind, dt, a, b, count, t, rdt, rshape, pool)


def _pool(t: Tensor, dev: int, count: int) -> Any:
    """A ResultPool of results like t (GPU `dev`), where they are small enough (the pool spaces
    them and sizes its blocks: at most BLOCK_BYTES)."""
    code = DLPACK.get(t.dtype)
    if _import is None or code is None or count * t.element_size() > POOLED_BYTES:
        return None
    allocate = functools.partial(torch.empty, dtype=torch.uint8, device=t.device)
    return _ext.ResultPool(2, dev, code[0], code[1], list(t.shape), BLOCK_BYTES, allocate, _import)


def _planned(opv: int, x: Tensor, dim: Optional[int], keepdim: Any, dev: int) -> Optional[Plan]:
    """plan, kept in _plans. Not while a CUDA graph is captured: a kept tensor made then would
    hold the graph's memory pool (the call is planned again after the capture)."""
    if dev >= 0 and _capturing():
        return plan(opv, x, dim, keepdim, dev, keep=False)
    p = plan(opv, x, dim, keepdim, dev)
    if len(_plans) >= PLAN_KEYS:
        _plans.clear()
    _plans[(opv, x.dtype, x.shape, dim, keepdim, dev)] = p
    return p


def fast(opv: int, x: Tensor, dim: Optional[int], out: Any, keepdim: Any = False) -> Any:
    """reduce_tune.<op>(x, dim, keepdim, out=out) of a torch.Tensor (exactly that type) with no
    stream= or dtype=, or None where the general route must take it."""
    # is_compiling before the others: torch.compile traces it as True and stops there.
    if (x.requires_grad and _grad_enabled()) or _is_compiling() or _dispatch_modes():
        return None
    if dim is not None and type(dim) is not int:  # a bool hashes as an int: the general route's
        return None
    dev = x.get_device()
    try:
        p = _plans[opv, x.dtype, x.shape, dim, keepdim, dev]
    except KeyError:
        p = _planned(opv, x, dim, keepdim, dev)
    except TypeError:  # keepdim unhashable
        return None
    if p is None:
        return None
    try:
        if not x.is_contiguous():
            return None
    except RuntimeError:  # a layout other than strided (sparse, ...)
        return None
    kind, dt, a, b, count, t, rdt, rshape, pool = p
    if out is None:
        if pool is not None:
            o = _hot_pooled(kind, dev, dt, opv, x.data_ptr(), a, b, pool, _stream_of(dev))
            if o is not None:  # (None: the stream is being captured; the result is torch's)
                return o
        o = _empty_like(t) if t is not None else x.new_empty(rshape, dtype=rdt)
    # out= as it is: a plain contiguous tensor of the result's dtype and size on x's GPU (else
    # the general route checks it, and says what is wrong).
    elif (type(out) is Tensor and out.dtype == rdt and out.get_device() == dev
          and out.layout is _strided and out.numel() == count and out.is_contiguous()):
        o = out
    else:
        return None
    _hot(kind, dev, dt, opv, x.data_ptr(), a, b, o.data_ptr(), _stream_of(dev))
    return o
