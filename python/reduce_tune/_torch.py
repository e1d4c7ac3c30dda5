"""The reductions as torch custom ops, ``torch.ops.reduce_tune.{sum,min,max}`` and
``torch.ops.reduce_tune.segment_{sum,min,max}``, with fake implementations (the result's shape and
dtype, for torch.compile, torch.export and FakeTensorMode) and autograd formulas. Imported, and so
registered, only once torch is (see _torch_hook).

    sum(Tensor x, int? dim=None, ScalarType? dtype=None) -> Tensor      (min, max alike)
    dot(Tensor x, Tensor y, int? dim=None, ScalarType? dtype=None) -> Tensor
    segment_sum(Tensor x, Tensor offsets) -> Tensor                     (segment_min, _max alike)

The public functions send a torch tensor through these ops where torch has to see the call: under
torch.compile (and other tracing), when autograd records it, for tensor subclasses and under
dispatch modes. A plain eager call on a CUDA tensor that needs no gradient calls the library
directly: the same kernels on the same stream, without the dispatcher's host time.

The ops run on torch's current stream and allocate through torch's caching allocator, so they can
be captured into CUDA graphs (torch.cuda.graph, torch.compile's mode="reduce-overhead").

Gradients: sum's flows back to every element (in x's dtype); min's and max's go to the elements
equal to the result, split evenly among ties, as torch.amin/amax (a NaN result gives NaN
gradients, as theirs); the segment reductions likewise per segment, and elements outside every
segment get zero. The other ops' as torch's (mean, sumsq, norm1, norm2, logsumexp, var, std and
their correction-0 forms); count_nonzero, any, all, argmax and argmin have none.
"""
import math
from typing import Any, Callable, Dict, Optional, Tuple

import torch

from . import _api, _arrays, _dtypes, _ops

Tensor = torch.Tensor
_is_compiling = torch.compiler.is_compiling
_grad_enabled = torch.is_grad_enabled
_dispatch_modes = torch._C._len_torch_dispatch_stack

_arrays._torch_setup(torch)

OPS = ("sum", "min", "max")
#: The ops of two inputs: ``reduce_tune::dot(Tensor x, Tensor y, int? dim=None, ScalarType?
#: dtype=None) -> Tensor``.
TWO = ("dot",)
#: The other reductions (mean, sumsq, norm1, norm2, count_nonzero, any, all, argmax, argmin,
#: logsumexp, var, std, var_population, std_population): each is
#: ``reduce_tune::<op>(Tensor x, int? dim=None) -> Tensor``, its result of the op's dtype.
MORE = tuple(op for op in _ops.TABLE if op not in OPS and op not in TWO)


def _name(dt: Any) -> str:
    return str(dt).removeprefix("torch.")


# ---- sum, min, max -------------------------------------------------------------------------------

def _reduce_impl(op: str) -> Callable[..., torch.Tensor]:
    def impl(x: torch.Tensor, dim: Optional[int] = None,
             dtype: Optional[torch.dtype] = None) -> torch.Tensor:
        return _api.reduce(op, x, dim, dtype=dtype)
    return impl


def _result_dtype(x: torch.Tensor, dim: Optional[int], dtype: Optional[torch.dtype]) -> torch.dtype:
    """The result's dtype by the library's rule (x's, or float32 for bf16/f16 reduced whole)."""
    xd = _arrays.torch_dtype(x, torch, "x", meta=True)
    if dtype is None:
        return x.dtype
    r = _dtypes.from_any(_name(dtype))
    whole = _api.check_dim(x.dim(), dim) is None
    return x.dtype if _api.check_result_dtype(xd, r, whole) is None else dtype


def _reduce_fake(x: torch.Tensor, dim: Optional[int] = None,
                 dtype: Optional[torch.dtype] = None) -> torch.Tensor:
    rdt = _result_dtype(x, dim, dtype)
    return x.new_empty(_api.result_shape(x.shape, dim), dtype=rdt)


def _setup_sum(ctx: Any, inputs: Tuple[Any, ...], output: torch.Tensor) -> None:
    x, dim, _ = inputs
    ctx.d, ctx.shape, ctx.dtype = _api.check_dim(x.dim(), dim), x.shape, x.dtype


def _sum_backward(ctx: Any, grad: torch.Tensor) -> Tuple[Optional[torch.Tensor], None, None]:
    g = grad if ctx.d is None else grad.unsqueeze(ctx.d)
    return g.expand(ctx.shape).to(ctx.dtype), None, None


def _setup_extreme(ctx: Any, inputs: Tuple[Any, ...], output: torch.Tensor) -> None:
    x, dim, _ = inputs
    ctx.d = _api.check_dim(x.dim(), dim)
    ctx.save_for_backward(x, output)


def _extreme_backward(ctx: Any, grad: torch.Tensor) -> Tuple[Optional[torch.Tensor], None, None]:
    # torch.amax/amin's rule: the gradient split evenly among the elements equal to the result.
    x, r = ctx.saved_tensors
    if ctx.d is None:
        mask = x == r
        count = mask.sum()
    else:
        r, grad = r.unsqueeze(ctx.d), grad.unsqueeze(ctx.d)
        mask = x == r
        count = mask.sum(ctx.d, keepdim=True)
    return ((grad / count) * mask).to(x.dtype), None, None


# ---- the other ops (_ops.TABLE) --------------------------------------------------------------------

def _op_impl(op: str) -> Callable[..., torch.Tensor]:
    def impl(x: torch.Tensor, dim: Optional[int] = None) -> torch.Tensor:
        return _api.reduce(op, x, dim)
    return impl


def _op_fake(op: str) -> Callable[..., torch.Tensor]:
    def fake(x: torch.Tensor, dim: Optional[int] = None) -> torch.Tensor:
        rdt = _ops.check(op, _arrays.torch_dtype(x, torch, "x", meta=True))
        _api.check_reducible(op, x.shape, dim)
        return x.new_empty(_api.result_shape(x.shape, dim), dtype=getattr(torch, rdt.name))
    return fake


def _setup_shape(ctx: Any, inputs: Tuple[Any, ...], output: torch.Tensor) -> None:
    x, dim = inputs
    ctx.d, ctx.shape, ctx.dtype = _api.check_dim(x.dim(), dim), x.shape, x.dtype


def _setup_saved(ctx: Any, inputs: Tuple[Any, ...], output: torch.Tensor) -> None:
    x, dim = inputs
    ctx.d = _api.check_dim(x.dim(), dim)
    ctx.save_for_backward(x, output)


def _spread(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
    """grad (the result's shape) broadcast against x: the reduced dimension put back as 1."""
    return grad if ctx.d is None else grad.unsqueeze(ctx.d)


def _mean_backward(ctx: Any, grad: torch.Tensor) -> Tuple[Optional[torch.Tensor], None]:
    count = math.prod(ctx.shape) if ctx.d is None else ctx.shape[ctx.d]
    return (_spread(ctx, grad) / count).expand(ctx.shape).to(ctx.dtype), None


def _sumsq_backward(ctx: Any, grad: torch.Tensor) -> Tuple[Optional[torch.Tensor], None]:
    x, _ = ctx.saved_tensors
    return (2 * x * _spread(ctx, grad)).to(x.dtype), None


def _norm1_backward(ctx: Any, grad: torch.Tensor) -> Tuple[Optional[torch.Tensor], None]:
    x, _ = ctx.saved_tensors
    return (torch.sgn(x) * _spread(ctx, grad)).to(x.dtype), None


def _norm2_backward(ctx: Any, grad: torch.Tensor) -> Tuple[Optional[torch.Tensor], None]:
    # torch.linalg.vector_norm's: x * grad / norm, and 0 where the norm is 0.
    x, r = ctx.saved_tensors
    r = _spread(ctx, r)
    scale = (_spread(ctx, grad) / r).masked_fill(r == 0, 0)
    return (x * scale).to(x.dtype), None


def _logsumexp_backward(ctx: Any, grad: torch.Tensor) -> Tuple[Optional[torch.Tensor], None]:
    # torch.logsumexp's: grad * exp(x - result), the softmax of x scaled by grad.
    x, r = ctx.saved_tensors
    return (_spread(ctx, grad) * (x - _spread(ctx, r)).exp()).to(x.dtype), None


def _setup_moment(correction: int) -> Callable[[Any, Tuple[Any, ...], torch.Tensor], None]:
    def setup(ctx: Any, inputs: Tuple[Any, ...], output: torch.Tensor) -> None:
        _setup_saved(ctx, inputs, output)
        ctx.correction = correction
    return setup


def _var_grad(ctx: Any, x: torch.Tensor, grad: torch.Tensor) -> torch.Tensor:
    """torch.var's gradient: 2 (x - mean) / (n - correction) times grad (spread over x). A
    divisor of 0 gives NaN (torch's too: n = 1 with correction 1)."""
    if ctx.d is None:
        n, mean = x.numel(), x.mean()
    else:
        n, mean = x.shape[ctx.d], x.mean(ctx.d, keepdim=True)
    return (2 * _spread(ctx, grad) * (x - mean)) / (n - ctx.correction)


def _var_backward(ctx: Any, grad: torch.Tensor) -> Tuple[Optional[torch.Tensor], None]:
    x, _ = ctx.saved_tensors
    return _var_grad(ctx, x, grad).to(x.dtype), None


def _std_backward(ctx: Any, grad: torch.Tensor) -> Tuple[Optional[torch.Tensor], None]:
    # torch.std's: var's gradient of grad / (2 std), 0 where std is 0.
    x, r = ctx.saved_tensors
    g = (grad / (2 * r)).masked_fill(r == 0, 0)
    return _var_grad(ctx, x, g).to(x.dtype), None


#: _ops.OpInfo.grad -> (backward, setup_context of the op) of the ops in MORE.
_GRADS: Dict[str, Tuple[Callable[..., Any], Callable[[str], Callable[..., None]]]] = {
    "mean": (_mean_backward, lambda op: _setup_shape),
    "sumsq": (_sumsq_backward, lambda op: _setup_saved),
    "norm1": (_norm1_backward, lambda op: _setup_saved),
    "norm2": (_norm2_backward, lambda op: _setup_saved),
    "logsumexp": (_logsumexp_backward, lambda op: _setup_saved),
    "var": (_var_backward, lambda op: _setup_moment(_ops.CORRECTION[op])),
    "std": (_std_backward, lambda op: _setup_moment(_ops.CORRECTION[op])),
}


# ---- dot: two inputs ------------------------------------------------------------------------------

def _dot_impl(x: torch.Tensor, y: torch.Tensor, dim: Optional[int] = None,
              dtype: Optional[torch.dtype] = None) -> torch.Tensor:
    return _api.dot(x, y, dim, dtype=dtype)


def _dot_fake(x: torch.Tensor, y: torch.Tensor, dim: Optional[int] = None,
              dtype: Optional[torch.dtype] = None) -> torch.Tensor:
    _api.check_pair((_name(x.dtype), x.shape, x.stride()), (_name(y.dtype), y.shape, y.stride()))
    if y.device != x.device:
        raise ValueError(f"reduce_tune: y is on {y.device}, x on {x.device}")
    _ops.check("dot", _arrays.torch_dtype(x, torch, "x", meta=True))
    return x.new_empty(_api.result_shape(x.shape, dim), dtype=_result_dtype(x, dim, dtype))


def _setup_dot(ctx: Any, inputs: Tuple[Any, ...], output: torch.Tensor) -> None:
    x, y, dim, _ = inputs
    ctx.d = _api.check_dim(x.dim(), dim)
    ctx.save_for_backward(x, y)


def _dot_backward(ctx: Any, grad: torch.Tensor) -> Tuple[Optional[torch.Tensor], ...]:
    # d/dx sum(x * y) = y, d/dy = x: each scaled by its result's gradient.
    x, y = ctx.saved_tensors
    g = _spread(ctx, grad)
    gx = (g * y).to(x.dtype) if ctx.needs_input_grad[0] else None
    gy = (g * x).to(y.dtype) if ctx.needs_input_grad[1] else None
    return gx, gy, None, None


# ---- segments -------------------------------------------------------------------------------------

def _segment_impl(op: str) -> Callable[..., torch.Tensor]:
    def impl(x: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
        return _api.segment_reduce(op, x, offsets)
    return impl


def _segment_fake(x: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
    _arrays.torch_dtype(x, torch, "x", meta=True)
    _api.check_segments(_name(offsets.dtype), offsets.shape,
                        x.is_contiguous() and offsets.is_contiguous())
    if offsets.device != x.device:
        raise ValueError(f"reduce_tune: offsets is on {offsets.device}, the input on {x.device}")
    return x.new_empty((offsets.shape[0] - 1,))


def _setup_segment(ctx: Any, inputs: Tuple[Any, ...], output: torch.Tensor) -> None:
    x, offsets = inputs
    ctx.save_for_backward(x, offsets, output)


def _segment_of_each(x: torch.Tensor, offsets: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
    """(the segment of each element of x, flattened, clamped to a valid one; whether it is in
    one): the last s with offsets[s] <= i, which skips empty segments (offsets never decrease)."""
    pos = torch.arange(x.numel(), device=x.device)
    seg = torch.searchsorted(offsets, pos, right=True) - 1
    segments = offsets.shape[0] - 1
    inside = (seg >= 0) & (seg < segments)
    return seg.clamp(0, segments - 1), inside


def _segment_sum_backward(ctx: Any, grad: torch.Tensor) -> Tuple[Optional[torch.Tensor], None]:
    x, offsets, _ = ctx.saved_tensors
    if grad.shape[0] == 0:
        return torch.zeros_like(x), None
    seg, inside = _segment_of_each(x, offsets)
    gx = torch.where(inside, grad.index_select(0, seg), 0)
    return gx.reshape(x.shape).to(x.dtype), None


def _segment_extreme_backward(ctx: Any, grad: torch.Tensor) -> Tuple[Optional[torch.Tensor], None]:
    x, offsets, r = ctx.saved_tensors
    if grad.shape[0] == 0:
        return torch.zeros_like(x), None
    seg, inside = _segment_of_each(x, offsets)
    mask = inside & (x.reshape(-1) == r.index_select(0, seg))
    count = torch.zeros(r.shape, dtype=torch.int64, device=r.device).scatter_add(0, seg, mask.long())
    share = grad.index_select(0, seg) / count.index_select(0, seg)
    gx = torch.where(inside, share * mask, 0)
    return gx.reshape(x.shape).to(x.dtype), None


# ---- registration ---------------------------------------------------------------------------------

_REDUCE_SCHEMA = "(Tensor x, int? dim=None, ScalarType? dtype=None) -> Tensor"
_SEGMENT_SCHEMA = "(Tensor x, Tensor offsets) -> Tensor"
_OP_SCHEMA = "(Tensor x, int? dim=None) -> Tensor"
_DOT_SCHEMA = "(Tensor x, Tensor y, int? dim=None, ScalarType? dtype=None) -> Tensor"

for _op in OPS:
    _d = torch.library.custom_op(f"reduce_tune::{_op}", _reduce_impl(_op), mutates_args=(),
                                 schema=_REDUCE_SCHEMA)
    _d.register_fake(_reduce_fake)
    if _op == "sum":
        _d.register_autograd(_sum_backward, setup_context=_setup_sum)
    else:
        _d.register_autograd(_extreme_backward, setup_context=_setup_extreme)
    _d = torch.library.custom_op(f"reduce_tune::segment_{_op}", _segment_impl(_op), mutates_args=(),
                                 schema=_SEGMENT_SCHEMA)
    _d.register_fake(_segment_fake)
    _d.register_autograd(_segment_sum_backward if _op == "sum" else _segment_extreme_backward,
                         setup_context=_setup_segment)
for _op in MORE:
    _d = torch.library.custom_op(f"reduce_tune::{_op}", _op_impl(_op), mutates_args=(),
                                 schema=_OP_SCHEMA)
    _d.register_fake(_op_fake(_op))
    _g = _ops.TABLE[_op].grad
    if _g is not None:
        _d.register_autograd(_GRADS[_g][0], setup_context=_GRADS[_g][1](_op))
_d = torch.library.custom_op("reduce_tune::dot", _dot_impl, mutates_args=(), schema=_DOT_SCHEMA)
_d.register_fake(_dot_fake)
_d.register_autograd(_dot_backward, setup_context=_setup_dot)
del _op, _d

_REDUCE = {op: getattr(torch.ops.reduce_tune, op).default for op in OPS + MORE}
_DOT = torch.ops.reduce_tune.dot.default
_SEGMENT = {op: getattr(torch.ops.reduce_tune, "segment_" + op).default for op in OPS}


# ---- the public functions' torch path ---------------------------------------------------------------

def _direct(x: Any) -> bool:
    """Whether a call on x may skip the dispatcher: eager, a plain tensor, no gradient to record,
    no dispatch mode to see it."""
    return (not _is_compiling() and type(x) is Tensor and not (x.requires_grad and _grad_enabled())
            and not _dispatch_modes())


def reduce(op: str, x: torch.Tensor, dim: Any, out: Any, stream: Any, dtype: Any,
           keepdim: bool = False) -> Any:
    """reduce_tune.sum / min / max / mean / ... of a torch tensor (dtype=: sum, min, max only)."""
    if _direct(x):  # (the common cases took _torch_fast before this)
        return _api.reduce(op, x, dim, out=out, stream=stream, dtype=dtype, keepdim=keepdim)
    _api.check_dim(x.dim(), dim)
    if dtype is not None and not isinstance(dtype, torch.dtype):
        dtype = getattr(torch, _dtypes.from_any(dtype).name)
    if stream is not None and _is_compiling():  # stream=: eager only, a graph break here
        return _api.reduce(op, x, dim, out=out, stream=stream, dtype=dtype, keepdim=keepdim)
    args = (x, dim, dtype) if op in OPS else (x, dim)
    r = _call(_REDUCE[op], args, x, out, stream)
    return r.reshape(_api.keep_shape(x.shape, dim)) if keepdim and out is None else r


def dot(x: torch.Tensor, y: Any, dim: Any, keepdim: bool, out: Any, stream: Any, dtype: Any) -> Any:
    """reduce_tune.dot of torch tensors."""
    if _direct(x) and (type(y) is Tensor or not isinstance(y, Tensor)) and \
            not (isinstance(y, Tensor) and y.requires_grad and _grad_enabled()):
        return _api.dot(x, y, dim, out=out, stream=stream, dtype=dtype, keepdim=keepdim)
    if not isinstance(y, Tensor):
        raise TypeError("reduce_tune: y must be a torch tensor where x is one and the call is "
                        f"traced or differentiated, not {type(y).__name__}")
    _api.check_dim(x.dim(), dim)
    if dtype is not None and not isinstance(dtype, torch.dtype):
        dtype = getattr(torch, _dtypes.from_any(dtype).name)
    if stream is not None and _is_compiling():  # stream=: eager only, a graph break here
        return _api.dot(x, y, dim, out=out, stream=stream, dtype=dtype, keepdim=keepdim)
    r = _call(_DOT, (x, y, dim, dtype), x, out, stream)
    return r.reshape(_api.keep_shape(x.shape, dim)) if keepdim and out is None else r


def segment_reduce(op: str, x: torch.Tensor, offsets: Any, out: Any, stream: Any) -> Any:
    """reduce_tune.segment_sum / _min / _max of a torch tensor."""
    # offsets: a plain tensor or another framework's array (int64: never differentiated)
    if _direct(x) and (type(offsets) is Tensor or not isinstance(offsets, Tensor)):
        return _api.segment_reduce(op, x, offsets, out=out, stream=stream)
    if not isinstance(offsets, Tensor):
        raise TypeError("reduce_tune: offsets must be a torch tensor where x is one and the call is "
                        f"traced or differentiated, not {type(offsets).__name__}")
    if stream is not None and _is_compiling():  # stream=: eager only, a graph break here
        return _api.segment_reduce(op, x, offsets, out=out, stream=stream)
    return _call(_SEGMENT[op], (x, offsets), x, out, stream)


def _call(fn: Any, args: Tuple[Any, ...], x: torch.Tensor, out: Any, stream: Any) -> Any:
    if out is not None:
        if not isinstance(out, Tensor):
            raise TypeError(f"reduce_tune: out must be a torch tensor for a torch input here, not "
                            f"{type(out).__name__}")
        if _grad_enabled() and (x.requires_grad or out.requires_grad):
            raise RuntimeError("reduce_tune: out= does not support automatic differentiation (as "
                               "torch's out= functions), and an argument requires grad")
    if stream is None:
        r = fn(*args)
        return r if out is None else _write(out, r)
    return _eager_on_stream(fn, args, x, out, stream)


def _eager_on_stream(fn: Any, args: Tuple[Any, ...], x: torch.Tensor, out: Any, stream: Any) -> Any:
    """The op on the stream= given, ordered after the work on torch's current stream (x's), as
    the direct calls are."""
    sarg = _api._stream_arg(stream)
    _, _, handle = _api._place(sarg, [(x, "x", _arrays.read(x, "x"))])
    s = torch.cuda.default_stream(x.device) if handle in (0, 1) else \
        torch.cuda.ExternalStream(handle, device=x.device)
    with torch.cuda.stream(s):
        r = fn(*args)
        return r if out is None else _write(out, r)


def _write(out: torch.Tensor, r: torch.Tensor) -> torch.Tensor:
    """out= of a traced call: the op's result copied into it, after the checks of the direct call."""
    if out.dtype != r.dtype:
        raise TypeError(f"reduce_tune: out has dtype {_name(out.dtype)}, the result is {_name(r.dtype)}")
    if out.numel() != r.numel():
        raise ValueError(f"reduce_tune: out has {out.numel()} elements (shape {tuple(out.shape)}); "
                         f"the result has {r.numel()} (shape {tuple(r.shape)})")
    if not out.is_contiguous():
        raise ValueError("reduce_tune: out must be contiguous")
    if out.device != r.device:
        raise ValueError(f"reduce_tune: out is on {out.device}, the input on {r.device}")
    out.view(r.shape).copy_(r)
    return out
