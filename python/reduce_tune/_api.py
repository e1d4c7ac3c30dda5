"""sum / min / max, the segment reductions, config_for and devices: argument handling and the calls
into the extension. Everything that can be checked without a GPU is checked before the driver is
asked anything."""
from __future__ import annotations

import math
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from . import _arrays, _dtypes, _ext, _first_use, _ops
from ._arrays import Array, Shape

Dim = Optional[int]
StreamLike = Any  # int handle, torch.cuda.Stream, cupy.cuda.Stream, or a __cuda_stream__ object


# ---- streams ---------------------------------------------------------------------------------

def _stream_arg(stream: StreamLike) -> Optional[Tuple[int, Optional[int]]]:
    """(handle, its device if the object says) for a stream= argument; None for None."""
    if stream is None:
        return None
    if isinstance(stream, bool):
        raise TypeError("reduce_tune: stream must be a stream object or an int handle, not a bool")
    if isinstance(stream, int):
        if stream < 0:
            raise ValueError(f"reduce_tune: stream handle {stream} is negative")
        return stream, None
    proto = getattr(stream, "__cuda_stream__", None)
    if proto is not None:  # the CUDA stream protocol: (version, handle)
        return int(proto()[1]), None
    handle = getattr(stream, "cuda_stream", None)  # torch.cuda.Stream / ExternalStream
    if handle is not None:
        return int(handle), getattr(stream, "device_index", None)
    handle = getattr(stream, "ptr", None)  # cupy.cuda.Stream
    if handle is not None:
        return int(handle), getattr(stream, "device_id", None)
    raise TypeError(f"reduce_tune: stream={type(stream).__name__} is not a CUDA stream (an int handle, "
                    "torch.cuda.Stream, cupy.cuda.Stream or an object with __cuda_stream__)")


Input = Tuple[Any, str, Optional[Array]]  # (object, its name in messages, read or None: DLPack)


def _read(x: Any, what: str) -> Optional[Array]:
    """`x` read, or None for a DLPack array: its capsule is asked for by _place, once the stream
    that the producer must order its work before is known."""
    return _arrays.read_or_defer(x, what)


def _place(arg: Optional[Tuple[int, Optional[int]]], inputs: Sequence[Input]
           ) -> Tuple[List[Array], int, int]:
    """(the inputs read, the GPU, the stream) of a call: the first input's GPU; the stream given,
    else the first input's framework's current stream (torch, CuPy; a __cuda_array_interface__'s
    own stream; else the legacy default stream). The stream is ordered after the work that wrote
    the inputs: __cuda_array_interface__ v3 streams and other frameworks' current streams are
    waited for, and DLPack producers are handed the stream (``__dlpack__(stream=...)``)."""
    x, what, first = inputs[0]
    default = arg[1] if arg is not None and arg[1] is not None and arg[1] >= 0 else 0
    dev = first.device(default) if first is not None else _arrays.dlpack_device(x, what, default)
    if arg is None:
        handle = (first.producer if first is not None else None) or 0
    else:
        handle, sdev = arg
        if sdev is not None and sdev >= 0:
            if sdev != dev:
                raise ValueError(f"reduce_tune: the stream is on GPU {sdev}, the array on GPU {dev}")
        elif not _ext.stream_on_device(dev, handle):
            raise ValueError(f"reduce_tune: stream {handle:#x} does not belong to GPU {dev} (the "
                             "array's); pass a stream of the array's GPU")
    arrays = [a if a is not None else _arrays.read(obj, name, handle) for obj, name, a in inputs]
    _same_device(dev, [(name, a) for (_, name, _), a in zip(inputs[1:], arrays[1:])])
    for a in arrays:
        _wait(a, dev, handle)
    return arrays, dev, handle


def _wait(a: Array, dev: int, stream: int) -> None:
    if a.producer is not None and a.producer != stream:
        _ext.stream_wait(dev, stream, a.producer)


def _same_device(dev: int, others: Sequence[Tuple[str, Array]]) -> None:
    for what, a in others:
        d = a.device(dev)
        if d != dev:
            raise ValueError(f"reduce_tune: {what} is on GPU {d}, the input on GPU {dev}")


# ---- planning: which library call a (shape, strides, dim) is ---------------------------------

def _merge(dims: List[Tuple[int, int]]) -> List[Tuple[int, int]]:
    """(size, stride) pairs without size-1 dimensions, adjacent ones merged where one stride
    walks both (row-major order kept)."""
    out: List[Tuple[int, int]] = []
    for n, s in dims:
        if n == 1:
            continue
        if out and out[-1][1] == n * s:
            out[-1] = (out[-1][0] * n, s)
        else:
            out.append((n, s))
    return out


def _not_expressible(shape: Shape, strides: Shape, why: str) -> ValueError:
    return ValueError(f"reduce_tune: an array of shape {shape} and strides {strides} (elements) {why}; "
                      "make it contiguous first (.contiguous(), cupy.ascontiguousarray)")


def _matrix(rows: Tuple[int, int], cols: Tuple[int, int], shape: Shape, strides: Shape
            ) -> Tuple[str, int, int, int]:
    """A rows x cols matrix, given (size, stride) of each, as ("rows"|"columns", r, c, row_stride)
    of the library's row-major problem: "rows" when the columns are adjacent, "columns" of the
    transposed matrix when the rows are. The first reduces each row, the second each column."""
    (r, rs), (c, cs) = rows, cols
    if c == 1 or cs == 1:
        if r > 1 and rs < c:
            raise _not_expressible(shape, strides, "has overlapping or reversed rows")
        return "rows", r, c, rs if r > 1 else c
    if r == 1 or rs == 1:
        if c > 1 and cs < r:
            raise _not_expressible(shape, strides, "has overlapping or reversed columns")
        return "columns", c, r, cs if c > 1 else r
    raise _not_expressible(shape, strides, "has no unit stride that a row stride can express")


class Plan:
    """Library calls for one reduction. kind: "array" (n), "rows" / "columns" (rows, cols,
    row_stride; per-row / per-column results), "rows+array" (rows first into a temporary, then
    the array problem over it). count results, each of length elements."""
    __slots__ = ("kind", "args", "result_shape", "count", "length")

    def __init__(self, kind: str, args: Tuple[int, ...], result_shape: Shape, count: int, length: int):
        self.kind, self.args, self.result_shape, self.count, self.length = \
            kind, args, result_shape, count, length


def check_dim(ndim: int, dim: Dim) -> Optional[int]:
    """The dimension reduced, 0 or ndim - 1, or None for the whole array (also what a dim of a
    0-D or 1-D array means). Raises TypeError / ValueError for another dim."""
    if dim is None:
        return None
    if isinstance(dim, bool) or not isinstance(dim, int):
        raise TypeError(f"reduce_tune: dim must be None or an int, not {type(dim).__name__}")
    if not -ndim <= dim < max(ndim, 1):
        raise ValueError(f"reduce_tune: dim {dim} is out of range for a {ndim}-D array")
    if ndim <= 1:
        return None
    d = dim % ndim
    if d not in (0, ndim - 1):
        raise ValueError(f"reduce_tune: dim must be None, 0 or -1 ({ndim - 1}); "
                         f"got {dim} for a {ndim}-D array")
    return d


def result_shape(shape: Sequence[Any], dim: Dim, keepdim: bool = False) -> Tuple[Any, ...]:
    """The shape of a reduction's result: () for the whole array, else `shape` without the
    dimension reduced; with `keepdim`, `shape` with 1 for each dimension reduced (torch's rule).
    Sizes are only sliced, never compared, so they may be symbolic."""
    d = check_dim(len(shape), dim)
    if keepdim:
        return keep_shape(shape, dim)
    if d is None:
        return ()
    return tuple(shape[1:]) if d == 0 else tuple(shape[:-1])


def keep_shape(shape: Sequence[Any], dim: Dim) -> Tuple[Any, ...]:
    """keepdim's result shape: `shape` with 1 for the dimension reduced, or every one (dim=None)."""
    if dim is None:
        return (1,) * len(shape)
    d = dim % len(shape) if shape else 0
    return tuple(1 if i == d else n for i, n in enumerate(shape))


def _plan(shape: Shape, strides: Optional[Shape], dim: Dim) -> Plan:
    ndim = len(shape)
    dim = check_dim(ndim, dim)
    n = math.prod(shape)
    if dim is None:
        if n == 0 or strides is None:
            return Plan("array", (n,), (), 1, n)
        dims = _merge(list(zip(shape, strides)))
        if len(dims) == 1 and dims[0][1] == 1:
            return Plan("array", (n,), (), 1, n)
        if len(dims) == 1:  # a strided vector: one column of a matrix with that row stride
            (m, s), = dims
            if s < 1:
                raise _not_expressible(shape, strides, "has a zero or negative stride")
            return Plan("columns", (m, 1, s), (), 1, m)
        if len(dims) == 2:  # a matrix: its rows (of it or its transpose) first, then those results
            _, r, c, rs = _matrix(dims[0], dims[1], shape, strides)
            return Plan("rows+array", (r, c, rs), (), 1, n)
        if _dense_run(shape, strides):  # a permuted dense array: its elements are one run
            return Plan("array", (n,), (), 1, n)
        raise _not_expressible(shape, strides, "cannot be read as one matrix")
    st = strides if strides is not None else _c_strides(shape)
    if dim % ndim == ndim - 1:
        outer = _merge(list(zip(shape[:-1], st[:-1]))) or [(1, 0)]
        if len(outer) > 1:
            raise _not_expressible(shape, st, "has leading dimensions that are not one stride")
        kind, r, c, rs = _matrix(outer[0], (shape[-1], st[-1]), shape, st)
        count, length = (r, c) if kind == "rows" else (c, r)
        return Plan(kind, (r, c, rs), tuple(shape[:-1]), count, length)
    inner = _merge(list(zip(shape[1:], st[1:]))) or [(1, 0)]
    if len(inner) > 1:
        raise _not_expressible(shape, st, "has trailing dimensions that are not one stride")
    # Each result reduces along dim 0: the columns of (shape[0] x inner), or rows of its transpose.
    kind, r, c, rs = _matrix((shape[0], st[0]), inner[0], shape, st)
    kind = "columns" if kind == "rows" else "rows"
    count, length = (c, r) if kind == "columns" else (r, c)
    return Plan(kind, (r, c, rs), tuple(shape[1:]), count, length)


def _c_strides(shape: Shape) -> Shape:
    out, s = [], 1
    for n in reversed(shape):
        out.append(s)
        s *= max(n, 1)
    return tuple(reversed(out))


# ---- results -----------------------------------------------------------------------------------

def _identity(dt: _dtypes.DType, op: str) -> Union[int, float, bool]:
    identity = _ops.info(op).identity
    if identity is None:
        raise ValueError(f"reduce_tune: {op} of no elements has no result")
    return identity(dt)


def check_reducible(op: str, shape: Sequence[Any], dim: Dim) -> None:
    """ValueError where `op` has no result of an empty reduction (argmax, argmin: no index of
    nothing, as torch raises) and the reduced extent is 0. Symbolic sizes are not compared."""
    if _ops.info(op).identity is not None:
        return
    d = check_dim(len(shape), dim)
    extent = shape if d is None else (shape[d],)
    if all(isinstance(n, int) for n in extent) and math.prod(extent) == 0:
        raise _empty_error(op, shape, dim)


def _empty_error(op: str, shape: Sequence[Any], dim: Dim) -> ValueError:
    what = "the array" if check_dim(len(shape), dim) is None else f"dimension {dim}"
    return ValueError(f"reduce_tune: {op} of an empty reduction has no result: {what} of shape "
                      f"{tuple(shape)} has no elements (torch raises too)")


def _result(a: Array, shape: Shape, out: Any, dev: int, stream: int,
            rdt: Optional[_dtypes.DType] = None) -> Tuple[Any, int, str]:
    """(result object, its pointer, its kind): `out` checked (and the call's stream ordered after
    the work on it), or a new array of a's framework, of dtype `rdt` (default: a's)."""
    rdt = rdt or a.dtype
    if out is None:
        o, ptr = _arrays.empty(a, shape, dev, stream, None if rdt == a.dtype else rdt)
        return o, ptr, a.kind
    o = _arrays.read(out, "out", stream, result=True)
    want = math.prod(shape)
    if o.dtype != rdt:
        raise TypeError(f"reduce_tune: out has dtype {o.dtype.name}, the result is {rdt.name}")
    if o.size != want:
        raise ValueError(f"reduce_tune: out has {o.size} elements (shape {o.shape}); the result "
                         f"has {want} (shape {shape})")
    if not o.contiguous():
        raise ValueError("reduce_tune: out must be contiguous")
    _same_device(dev, [("out", o)])
    _wait(o, dev, stream)
    return out, o.ptr, o.kind


# ---- the reductions ----------------------------------------------------------------------------

def _result_dtype(op: str, a: Array, dtype: Any, kind: str) -> _dtypes.DType:
    """The result's dtype: the op's (_ops.check, which refuses a dtype the op does not take), or
    the dtype= argument: a's dtype (the element type), or float32 for a bf16/float16 array reduced
    whole (the float32 accumulator, unrounded: Reducer::reduce_async with DType::f32)."""
    own = _ops.check(op, a.dtype)
    if dtype is None:
        return own
    return check_result_dtype(a.dtype, _dtypes.from_any(dtype), kind == "array") or own


def check_result_dtype(x: _dtypes.DType, r: _dtypes.DType, whole: bool) -> Optional[_dtypes.DType]:
    """r, the result dtype asked for an array of dtype x, checked: None when it is x's; float32
    for bfloat16/float16 reduced `whole`; else TypeError or ValueError."""
    if r == x:
        return None
    if r.name != "float32" or x.name not in ("bfloat16", "float16"):
        raise TypeError(f"reduce_tune: dtype={r.name} for a {x.name} array: the result is the "
                        "element type, or float32 for bfloat16 and float16")
    if not whole:
        raise ValueError("reduce_tune: dtype=float32 is for a whole contiguous (or evenly strided) "
                         "array reduced to one value (dim=None)")
    return r


def _prepare(op: str, a: Array, dim: Dim, dtype: Any) -> Tuple[Plan, _dtypes.DType]:
    """(the plan, the result's dtype) of a reduction of `a`, checked."""
    plan = _plan(a.shape, a.strides, dim)
    rdt = _result_dtype(op, a, dtype, plan.kind)
    info = _ops.info(op)
    if info.identity is None and plan.length == 0:
        raise _empty_error(op, a.shape, dim)
    if info.ordered and plan.kind in ("array", "rows+array") and not _in_order(a.shape, a.strides):
        # An index counts the elements in the array's row-major order: not the order of a
        # permuted run or of partial results by rows of its memory.
        raise _not_expressible(a.shape, a.strides or (), f"is not one run of elements in its own "
                               f"order, which {op} of the whole array needs")
    if plan.kind == "rows+array" and info.stages is None:
        # No op combines the rows' results: one pass over the elements, which a transposed (or
        # otherwise permuted) dense array still is, in another order.
        if not _dense_run(a.shape, a.strides or ()):
            raise _not_expressible(a.shape, a.strides or (), f"is not one run of elements, which "
                                   f"{op} of the whole array needs")
        plan = Plan("array", (plan.length,), (), 1, plan.length)
    return plan, rdt


def _in_order(shape: Shape, strides: Optional[Shape]) -> bool:
    """Whether the elements are one dense run in row-major order (C-contiguous but for size-1
    dimensions)."""
    if strides is None:
        return True
    dims = _merge(list(zip(shape, strides)))
    return not dims or (len(dims) == 1 and dims[0][1] == 1)


def _dense_run(shape: Shape, strides: Shape) -> bool:
    """Whether the elements are one dense run from the first, in some order of the dimensions."""
    dims = _merge(sorted(zip(shape, strides), key=lambda d: -d[1]))
    return len(dims) == 1 and dims[0][1] == 1


def reduce(op: str, x: Any, dim: Dim = None, *, out: Any = None, stream: StreamLike = None,
           dtype: Any = None, keepdim: bool = False) -> Any:
    """The reduction `op` (sum, min, max, mean, ...: see sum); `keepdim` as torch's."""
    opv = _dtypes.op_value(op)
    sarg = _stream_arg(stream)
    a = _read(x, "x")
    plan = rdt = None
    if a is not None:  # what can be checked without the driver is, before it is asked anything
        plan, rdt = _prepare(op, a, dim, dtype)
    (a,), dev, s = _place(sarg, [(x, "x", a)])
    if plan is None:  # a DLPack array, read now
        plan, rdt = _prepare(op, a, dim, dtype)
    shape = keep_shape(a.shape, dim) if keepdim else plan.result_shape
    res, rptr, rkind = _result(a, shape, out, dev, s, rdt)
    if plan.count == 0:
        return res
    dt = a.dtype.value
    k = plan.kind
    if k == "array":
        _ext.reduce(dev, dt, opv, a.ptr, plan.args[0], rptr, s, rdt.value)
    elif plan.length == 0:  # empty rows or columns: the identity each
        _arrays.fill(res, rkind, _identity(a.dtype, op), a.dtype, rptr, plan.count, opv, dev, s,
                     rdt.itemsize)
    elif k == "rows":
        _ext.reduce_rows(dev, dt, opv, a.ptr, *plan.args[:2], rptr, s, plan.args[2])
    elif k == "columns":
        _ext.reduce_columns(dev, dt, opv, a.ptr, *plan.args[:2], rptr, s, plan.args[2])
    else:  # "rows+array": one partial result per row, then their reduction
        r, c, rs = plan.args
        first, then = _ops.info(op).stages
        tdt = _dtypes.result_of(first, a.dtype)
        tmp, tptr, keep = _arrays.scratch(a, r, dev, s, tdt)
        _ext.reduce_rows(dev, dt, _dtypes.op_value(first), a.ptr, r, c, tptr, s, rs)
        _ext.reduce(dev, tdt.value, _dtypes.op_value(then), tptr, r, rptr, s, rdt.value)
        del tmp, keep  # freed stream-ordered on s (a DeviceArray after the device is done)
    return res


def check_pair(x: Tuple[Any, Any, Any], y: Tuple[Any, Any, Any]) -> None:
    """dot's inputs, as (dtype name, shape, strides): one dtype, shape and layout (the library reads
    y where it reads x); else TypeError or ValueError."""
    if x[0] != y[0]:
        raise TypeError(f"reduce_tune: dot of {x[0]} and {y[0]}: x and y must have one dtype")
    if tuple(x[1]) != tuple(y[1]):
        raise ValueError(f"reduce_tune: dot of shapes {tuple(x[1])} and {tuple(y[1])}: x and y must "
                         "have one shape")
    def layout(strides: Any, shape: Shape) -> Tuple[int, ...]:  # strides in elements, None: C
        return tuple(strides) if strides is not None else _c_strides(shape)
    if layout(x[2], x[1]) != layout(y[2], y[1]) and math.prod(x[1]) > 1:
        raise ValueError(f"reduce_tune: dot of strides {x[2]} and {y[2]}: x and y must have one "
                         "layout (make both contiguous)")


def dot(x: Any, y: Any, dim: Dim = None, *, out: Any = None, stream: StreamLike = None,
        dtype: Any = None, keepdim: bool = False) -> Any:
    """The sum of x * y over everything or along `dim` (see reduce_tune.dot)."""
    sarg = _stream_arg(stream)
    a, b = _read(x, "x"), _read(y, "y")
    plan = rdt = None
    if a is not None and b is not None:  # checked before the driver is asked anything
        check_pair((a.dtype.name, a.shape, a.strides), (b.dtype.name, b.shape, b.strides))
        plan, rdt = _prepare("dot", a, dim, dtype)
    (a, b), dev, s = _place(sarg, [(x, "x", a), (y, "y", b)])
    if plan is None:  # a DLPack array, read now
        check_pair((a.dtype.name, a.shape, a.strides), (b.dtype.name, b.shape, b.strides))
        plan, rdt = _prepare("dot", a, dim, dtype)
    shape = keep_shape(a.shape, dim) if keepdim else plan.result_shape
    res, rptr, rkind = _result(a, shape, out, dev, s, rdt)
    if plan.count == 0:
        return res
    dt = a.dtype.value
    k = plan.kind
    if k == "array":
        _ext.dot(dev, dt, a.ptr, b.ptr, plan.args[0], rptr, s, rdt.value)
    elif plan.length == 0:  # empty rows or columns: 0 each (sum's identity, as an empty sum's)
        _arrays.fill(res, rkind, 0, a.dtype, rptr, plan.count, _dtypes.op_value("sum"), dev, s,
                     rdt.itemsize)
    elif k == "rows":
        _ext.dot_rows(dev, dt, a.ptr, b.ptr, *plan.args[:2], rptr, s, plan.args[2])
    elif k == "columns":
        _ext.dot_columns(dev, dt, a.ptr, b.ptr, *plan.args[:2], rptr, s, plan.args[2])
    else:  # "rows+array": one dot product per row, then their sum
        r, c, rs = plan.args
        tmp, tptr, keep = _arrays.scratch(a, r, dev, s, a.dtype)
        _ext.dot_rows(dev, dt, a.ptr, b.ptr, r, c, tptr, s, rs)
        _ext.reduce(dev, dt, _dtypes.op_value("sum"), tptr, r, rptr, s, rdt.value)
        del tmp, keep  # freed stream-ordered on s (a DeviceArray after the device is done)
    return res


def _check_segments(a: Array, o: Array) -> None:
    check_segments(o.dtype.name, o.shape, a.contiguous() and o.contiguous())


def check_segments(offsets_dtype: str, offsets_shape: Sequence[Any], contiguous: bool) -> None:
    """The segment reductions' arguments: int64 offsets, 1-D with at least one entry; x and
    offsets contiguous. TypeError or ValueError otherwise."""
    if offsets_dtype != "int64":
        raise TypeError(f"reduce_tune: offsets must be int64, not {offsets_dtype}")
    if len(offsets_shape) != 1 or offsets_shape[0] < 1:
        raise ValueError("reduce_tune: offsets must be 1-D with segments + 1 >= 1 entries; shape "
                         f"{tuple(offsets_shape)}")
    if not contiguous:
        raise ValueError("reduce_tune: x and offsets must be contiguous for the segment reductions")


def segment_reduce(op: str, x: Any, offsets: Any, *, out: Any = None, stream: StreamLike = None) -> Any:
    """segment_sum, segment_min or segment_max by `op` (see segment_sum)."""
    opv = _dtypes.op_value(op)
    sarg = _stream_arg(stream)
    a, o = _read(x, "x"), _read(offsets, "offsets")
    if a is not None and o is not None:
        _check_segments(a, o)
    (a, o), dev, s = _place(sarg, [(x, "x", a), (offsets, "offsets", o)])
    _check_segments(a, o)
    segments = o.shape[0] - 1
    res, rptr, rkind = _result(a, (segments,), out, dev, s)
    if segments and a.size == 0:  # every segment is empty (and x may have no memory at all)
        _arrays.fill(res, rkind, _identity(a.dtype, op), a.dtype, rptr, segments, opv, dev, s)
    elif segments:
        # x's size: the elements the segments span, or near it (picks the tuned configuration)
        _ext.reduce_segments(dev, a.dtype.value, opv, a.ptr, o.ptr, segments, rptr, s, a.size)
    return res


# ---- user reductions (reduce_tune.Reduction) ---------------------------------------------------

def user_reduce(r: Any, x: Any, dim: Dim = None, *, out: Any = None, stream: StreamLike = None,
                keepdim: bool = False) -> Any:
    """A Reduction of x over dim (see Reduction.__call__)."""
    sarg = _stream_arg(stream)
    a = _read(x, "x")
    (a,), dev, s = _place(sarg, [(x, "x", a)])
    plan = _plan(a.shape, a.strides, dim)
    if plan.kind == "rows+array":  # one pass over the elements: a dense run in some order
        if not _dense_run(a.shape, a.strides or ()):
            raise _not_expressible(a.shape, a.strides or (), "is not one run of elements, which a "
                                   "user reduction of the whole array needs")
        plan = Plan("array", (plan.length,), (), 1, plan.length)
    rdt = _dtypes.RESULTS[_ext.reduction_result_dtype(r._fields, a.dtype.value)]
    shape = keep_shape(a.shape, dim) if keepdim else plan.result_shape
    res, rptr, _ = _result(a, shape, out, dev, s, rdt)
    if plan.count == 0:
        return res
    args = tuple(plan.args) + (0,) * (3 - len(plan.args))
    own = _first_use.STATE.own_tuning(r, a.dtype.name, *_user_point(r, plan), dev, s) \
        if r.check is not None else False
    _ext.reduce_user(dev, r._fields, a.dtype.value, _PROBLEMS[plan.kind], a.ptr, *args, 0,
                     rptr, s, own)
    return res


def _user_point(r: Any, plan: Plan) -> Tuple[str, int, int]:
    """(problem, results, elements each) of a user reduction's call as the library looks it up:
    a single dense row or column of a commutative reduction is its 1-D problem
    (runtime/reducer_user.cpp)."""
    if plan.kind in ("rows", "columns") and plan.count == 1 and r.commutative:
        rows, cols, stride = plan.args
        if stride == cols or rows == 1:
            return "array", 1, plan.length
    return plan.kind, plan.count, plan.length


def user_segment_reduce(r: Any, x: Any, offsets: Any, *, out: Any = None,
                        stream: StreamLike = None) -> Any:
    """A Reduction of each segment (see Reduction.segments)."""
    sarg = _stream_arg(stream)
    a, o = _read(x, "x"), _read(offsets, "offsets")
    (a, o), dev, s = _place(sarg, [(x, "x", a), (offsets, "offsets", o)])
    _check_segments(a, o)
    segments = o.shape[0] - 1
    rdt = _dtypes.RESULTS[_ext.reduction_result_dtype(r._fields, a.dtype.value)]
    res, rptr, _ = _result(a, (segments,), out, dev, s, rdt)
    if segments:
        _ext.reduce_user(dev, r._fields, a.dtype.value, _PROBLEMS["segments"], a.ptr,
                         segments, a.size, 0, o.ptr, rptr, s)
    return res


# ---- what the library would choose, and the GPUs -------------------------------------------------

_PROBLEMS: Dict[str, int] = dict(_ext.problems())


def config_for(dtype: Any, op: str, n: Union[int, Tuple[int, int]], *, problem: str = "array",
               device: int = 0) -> Dict[str, Any]:
    """See reduce_tune.config_for."""
    dt = _dtypes.from_any(dtype)
    opv = _dtypes.op_value(op)
    p, count, length = shape_of(problem, n)
    d = _ext.config_for(device, dt.value, opv, p, count, length)
    d["dtype"], d["op"], d["device"] = dt.name, op, device
    return d


def shape_of(problem: str, n: Union[int, Tuple[int, int]]) -> Tuple[int, int, int]:
    """(the Problem value, results, elements each) of config_for's `problem` and `n`; ValueError
    or TypeError where they are not one."""
    p = _PROBLEMS.get(problem)
    if p is None:
        raise ValueError(f"reduce_tune: unknown problem {problem!r}; one of {', '.join(_PROBLEMS)}")
    if problem == "array":
        if not isinstance(n, int) or isinstance(n, bool) or n < 0:
            raise TypeError(f"reduce_tune: n must be a non-negative int for the array problem, not {n!r}")
        return p, 1, n
    if not (isinstance(n, tuple) and len(n) == 2 and all(isinstance(v, int) and v >= 0 for v in n)):
        raise TypeError(f"reduce_tune: n must be a pair of non-negative ints for {problem}: "
                        "(rows, cols), or (segments, mean length)")
    count, length = n if problem in ("rows", "segments") else (n[1], n[0])
    return p, count, length


def devices() -> List[Dict[str, Any]]:
    """See reduce_tune.devices."""
    return [_ext.device_info(i) for i in range(_ext.device_count())]
