"""reduce_tune: tuned GPU reductions for PyTorch, CuPy and any CUDA array.

    import torch, reduce_tune
    x = torch.rand(1 << 24, device="cuda")
    s = reduce_tune.sum(x)            # a 0-d tensor on x's device, on torch's current stream

Inputs are anything on a CUDA GPU: torch tensors, CuPy arrays, objects with
``__cuda_array_interface__`` (v3: its ``stream`` is waited for) or ``__dlpack__``. Results are of
the input's framework (torch -> tensor, CuPy -> ndarray, others -> :class:`DeviceArray`) and dtype,
on its device, written asynchronously on the framework's current stream unless ``stream=`` names
another: nothing waits on the host, so calls compose with the framework's work and CUDA graphs
(``torch.cuda.graph``, ``cupy.cuda.Graph`` from stream capture). A ``__dlpack__`` producer is
handed the stream the call runs on (``__dlpack__(stream=...)``, as the array API standard asks:
the legacy default stream unless ``stream=`` or another input's framework names one).
(A bfloat16/float16 array reduced whole may ask ``dtype=float32``: the float32 accumulator,
unrounded.) Integer sums wrap in the input's dtype; min/max are exact and propagate NaN (IEEE 754-2019
minimum/maximum, like numpy.max and torch.amax); floating-point sums (NaN if any element is) are
accurate to a bound like a pairwise sum's. An empty reduction gives
the identity (0; for min the largest value, +inf for floats; for max the lowest, -inf).

With PyTorch, each reduction is also a ``torch.library`` custom op (``torch.ops.reduce_tune.sum``,
``min``, ``max``, ``mean``, ``sumsq``, ``norm1``, ``norm2``, ``count_nonzero``, ``any``, ``all``,
``argmax``, ``argmin``, ``logsumexp``, ``var``, ``std``, ``var_population``, ``std_population``,
``dot``, ``segment_sum``, ``segment_min``, ``segment_max``) with a fake implementation and a gradient
(none for count_nonzero, any, all, argmax and argmin), registered as soon as torch is imported (reduce_tune never
imports torch itself):

    f = torch.compile(lambda x: reduce_tune.max(x, dim=-1).sum(), fullgraph=True)  # no graph break
    g = torch.compile(lambda x: reduce_tune.sum(x, dim=0), mode="reduce-overhead")  # CUDA graphs
    reduce_tune.sum(w).backward()                     # w.grad: ones, as torch.sum's

Gradients: a sum's reaches every element (in x's dtype); a min's or max's goes to the elements
equal to the result, split evenly among ties, as torch.amin/amax's; the segment reductions' per
segment (zero outside every segment). ``out=`` does not support autograd (as torch's out=
functions), and ``stream=`` is for eager calls (under torch.compile it breaks the graph: use
``torch.cuda.stream`` around the compiled call instead). An eager call on a CUDA tensor that needs
no gradient skips the dispatcher and calls the library directly: the same kernels, stream and
result.

The kernel for each (GPU, dtype, op, size) comes from the tuning store that ``reduce-tune tune``
writes (``$REDUCE_TUNE_DB``, else the default path; ``python -m reduce_tune --help``), else the
tuning built into the package for the same GPU model (H100, H200), else a built-in default;
:func:`config_for` says which. The first call at a size compiles its kernel
(NVRTC, cached on disk).

Errors: a host (NumPy) array or an unsupported dtype -> TypeError; a non-contiguous array that no
row stride expresses, or arrays and stream on different GPUs -> ValueError; no CUDA driver or GPU
-> RuntimeError (importing works without one).
"""
from __future__ import annotations

import os as _os

from typing import Any, Dict, List, Optional, Tuple, Union

from . import _ext, _nvrtc, _torch_hook
from . import _ops as _ops_table
from ._api import StreamLike
from ._api import config_for as _config_for
from ._api import devices as _devices
from ._api import dot as _dot
from ._api import reduce as _reduce
from ._api import segment_reduce as _segment_reduce
from ._arrays import DeviceArray
from ._first_use import ReductionWarning
from ._reduction import Reduction
from ._tune import TuneError
from ._dtypes import OPS as _OPS

_SUM, _MIN, _MAX = _OPS["sum"], _OPS["min"], _OPS["max"]

__version__: str = _ext.version

# The shipped tuning is built into the extension, as into the C++ library ($REDUCE_TUNE_SHIPPED_DB
# names another file; empty: none).
# The torch custom ops (torch.ops.reduce_tune.*): registered now if torch is imported, else as soon
# as it is; torch itself is never imported here.
_torch_hook.install()
# NVRTC from the nvidia-cuda-nvrtc wheels, where the machine has no other (see _nvrtc).
_ext.set_nvrtc_candidates(_nvrtc.candidates())

__all__ = ["sum", "min", "max", "mean", "sumsq", "norm", "count_nonzero", "any", "all",
           "argmax", "argmin", "logsumexp", "var", "std", "dot", "segment_sum", "segment_min",
           "segment_max", "config_for", "devices", "gpu_available", "dtypes", "nvrtc_info", "record",
           "autotune", "DeviceArray", "Reduction", "ReductionWarning", "TuneError", "__version__"]


def sum(x: Any, dim: Optional[int] = None, keepdim: bool = False, *, out: Any = None,  # noqa: A001
        stream: StreamLike = None, dtype: Any = None) -> Any:
    """The sum of `x`'s elements (``dim=None``), or along a dimension.

    dim: None reduces everything (a 0-d result). For a 2-D array, ``dim=-1`` (or 1) gives one
        result per row and ``dim=0`` one per column; for N-D arrays dim 0 or -1 of a contiguous
        array (results of shape ``x.shape[1:]`` or ``x.shape[:-1]``). Strided rows (a slice of
        columns, ``x[:, a:b]``) and transposed matrices are read in place through a row stride.
    keepdim: the result keeps the reduced dimension as 1 (every dimension for ``dim=None``), as
        torch's: the same result, shaped so (out= is then any contiguous array of its size).
    out: an array of the result's size and dtype on x's GPU to write into (returned).
    dtype: the result's dtype: x's (the default), or for a bfloat16/float16 array reduced whole,
        float32 (``torch.float32``, ``"float32"``): the float32 accumulator itself, not rounded to
        x's dtype (as ``torch.sum(x, dtype=torch.float32)``), and faster for sums.
    stream: the stream to run on (torch.cuda.Stream, cupy.cuda.Stream, an int handle); default:
        the framework's current stream. The call is ordered after the work that produced `x`.
    A torch tensor's sum is ``torch.ops.reduce_tune.sum(x, dim, dtype)`` where torch must see it
    (torch.compile, autograd; see the module's documentation), with a gradient of ones.
    """
    h = _torch_hook
    if type(x) is h.tensor and stream is None and dtype is None:
        r = h.fast(_SUM, x, dim, out, keepdim)
        if r is not None:
            return r
    t = h.ops
    if t is not None and isinstance(x, t.Tensor):
        return t.reduce("sum", x, dim, out, stream, dtype, keepdim)
    return _reduce("sum", x, dim, out=out, stream=stream, dtype=dtype, keepdim=keepdim)


def min(x: Any, dim: Optional[int] = None, keepdim: bool = False, *, out: Any = None,  # noqa: A001
        stream: StreamLike = None, dtype: Any = None) -> Any:
    """The minimum of `x`'s elements, or along a dimension (arguments as for :func:`sum`).
    A floating-point NaN anywhere gives NaN (IEEE 754-2019 minimum, like numpy.min and torch.amin);
    -0.0 orders below +0.0. The gradient (torch) is split evenly among the elements equal to the
    result, as torch.amin's."""
    h = _torch_hook
    if type(x) is h.tensor and stream is None and dtype is None:
        r = h.fast(_MIN, x, dim, out, keepdim)
        if r is not None:
            return r
    t = h.ops
    if t is not None and isinstance(x, t.Tensor):
        return t.reduce("min", x, dim, out, stream, dtype, keepdim)
    return _reduce("min", x, dim, out=out, stream=stream, dtype=dtype, keepdim=keepdim)


def max(x: Any, dim: Optional[int] = None, keepdim: bool = False, *, out: Any = None,  # noqa: A001
        stream: StreamLike = None, dtype: Any = None) -> Any:
    """The maximum of `x`'s elements, or along a dimension (arguments as for :func:`sum`); a NaN
    gives NaN as in :func:`min`, and +0.0 orders above -0.0; the gradient as torch.amax's."""
    h = _torch_hook
    if type(x) is h.tensor and stream is None and dtype is None:
        r = h.fast(_MAX, x, dim, out, keepdim)
        if r is not None:
            return r
    t = h.ops
    if t is not None and isinstance(x, t.Tensor):
        return t.reduce("max", x, dim, out, stream, dtype, keepdim)
    return _reduce("max", x, dim, out=out, stream=stream, dtype=dtype, keepdim=keepdim)


def _op(op: str, opv: int, x: Any, dim: Optional[int], keepdim: bool, out: Any,
        stream: StreamLike) -> Any:
    h = _torch_hook
    if type(x) is h.tensor and stream is None:
        r = h.fast(opv, x, dim, out, keepdim)
        if r is not None:
            return r
    t = h.ops
    if t is not None and isinstance(x, t.Tensor):
        return t.reduce(op, x, dim, out, stream, None, keepdim)
    return _reduce(op, x, dim, out=out, stream=stream, keepdim=keepdim)


def mean(x: Any, dim: Optional[int] = None, keepdim: bool = False, *, out: Any = None,
         stream: StreamLike = None) -> Any:
    """The mean of `x`'s elements, or along a dimension (arguments as for :func:`sum`): of x's
    dtype for floating-point arrays (bf16/f16 accumulate in float32), float64 for integers (where
    torch.mean refuses them); NaN for an empty reduction. The gradient (torch) is grad / count."""
    return _op("mean", _OPS["mean"], x, dim, keepdim, out, stream)


def sumsq(x: Any, dim: Optional[int] = None, keepdim: bool = False, *, out: Any = None,
          stream: StreamLike = None) -> Any:
    """The sum of the squares of `x`'s elements, or along a dimension (arguments as for
    :func:`sum`), of x's dtype (integers wrap); ``(x * x).sum(dim)`` in one pass. Gradient 2 x."""
    return _op("sumsq", _OPS["sumsq"], x, dim, keepdim, out, stream)


def norm(x: Any, ord: Union[int, float] = 2, dim: Optional[int] = None, keepdim: bool = False, *,  # noqa: A002
         out: Any = None, stream: StreamLike = None) -> Any:
    """The vector norm of `x`, or along a dimension, as torch.linalg.vector_norm: ``ord=2`` the
    square root of the sum of squares, ``ord=1`` the sum of absolute values; floating-point arrays
    only, results of x's dtype (other arguments as for :func:`sum`). Other orders raise
    ValueError. Gradients (torch) as vector_norm's: x / norm (0 where the norm is 0), sign(x)."""
    if isinstance(ord, bool) or ord not in (1, 2):
        raise ValueError(f"reduce_tune: norm supports ord=1 and ord=2, not {ord!r}")
    op = "norm1" if ord == 1 else "norm2"
    return _op(op, _OPS[op], x, dim, keepdim, out, stream)


def count_nonzero(x: Any, dim: Optional[int] = None, *, out: Any = None,
                  stream: StreamLike = None) -> Any:
    """How many of `x`'s elements are not zero, or along a dimension (arguments as for
    :func:`sum`): int64, as torch.count_nonzero (NaN counts, -0.0 does not). No gradient."""
    return _op("count_nonzero", _OPS["count_nonzero"], x, dim, False, out, stream)


def any(x: Any, dim: Optional[int] = None, keepdim: bool = False, *, out: Any = None,  # noqa: A001
        stream: StreamLike = None) -> Any:
    """Whether any of `x`'s elements is not zero, or along a dimension (arguments as for
    :func:`sum`): bool, as torch.any (torch.bool, numpy.bool_ for CuPy, a "bool" DeviceArray),
    written by the library as one byte 0 or 1 in place; False for an empty reduction. x is of a
    dtype of :func:`dtypes` (a bool array is not: ``x.int()`` first). No gradient."""
    return _op("any", _OPS["any"], x, dim, keepdim, out, stream)


def all(x: Any, dim: Optional[int] = None, keepdim: bool = False, *, out: Any = None,  # noqa: A001
        stream: StreamLike = None) -> Any:
    """Whether all of `x`'s elements are not zero, or along a dimension (as :func:`any`); True for
    an empty reduction. An array reduced whole must be one run of elements in some order of its
    dimensions (contiguous, transposed, or a strided vector): a matrix with gaps between its rows
    (``x[:, a:b]``) raises ValueError. No gradient."""
    return _op("all", _OPS["all"], x, dim, keepdim, out, stream)


def argmax(x: Any, dim: Optional[int] = None, keepdim: bool = False, *, out: Any = None,
           stream: StreamLike = None) -> Any:
    """The index of the maximum of `x`'s elements, as torch.argmax: int64, of the flattened array
    (``dim=None``: x in its row-major order, which a whole non-contiguous array must be; a
    transposed matrix raises ValueError) or along a dimension (other arguments as for
    :func:`sum`). The first index among equal maxima; a NaN is the maximum (the first NaN). An
    empty reduction has no index: ValueError, where torch raises too. No gradient."""
    return _op("argmax", _OPS["argmax"], x, dim, keepdim, out, stream)


def argmin(x: Any, dim: Optional[int] = None, keepdim: bool = False, *, out: Any = None,
           stream: StreamLike = None) -> Any:
    """The index of the minimum, as torch.argmin (see :func:`argmax`; a NaN is the minimum)."""
    return _op("argmin", _OPS["argmin"], x, dim, keepdim, out, stream)


def logsumexp(x: Any, dim: Optional[int] = None, keepdim: bool = False, *, out: Any = None,
              stream: StreamLike = None) -> Any:
    """``log(sum(exp(x)))`` of `x`'s elements, or along a dimension, as torch.logsumexp (which
    needs a dim; here ``dim=None`` reduces everything), in one pass (a running maximum and a sum
    rescaled to it): floating-point arrays only, results of x's dtype (bf16/f16 accumulate in
    float32). -inf elements add nothing; an empty reduction or all -inf gives -inf, a +inf gives
    +inf, a NaN NaN. Other arguments as for :func:`sum`. Gradient (torch) grad * exp(x - result),
    the softmax of x, as torch's."""
    return _op("logsumexp", _OPS["logsumexp"], x, dim, keepdim, out, stream)


def var(x: Any, dim: Optional[int] = None, *, correction: Union[int, float, None] = 1,
        keepdim: bool = False, out: Any = None, stream: StreamLike = None) -> Any:
    """The variance of `x`'s elements, or along a dimension, as torch.var: the sum of squared
    deviations from the mean over ``n - correction``. ``correction=1`` (the default; None too)
    and ``correction=0`` (over n); another correction raises ValueError (the library divides
    by n - 1 or n, and the sum of squared deviations is no result to rescale exactly). Floating-point
    arrays give x's dtype (bf16/f16 accumulate in float32), integers float64 (which torch.var
    refuses to compute). ``n - correction <= 0`` gives NaN, as torch. A whole array that is not one
    run of elements (``x[:, a:b]``) raises ValueError. Other arguments as for :func:`sum`
    (keyword-only, as torch.var's). Gradient (torch) as torch.var's: 2 (x - mean) / (n -
    correction)."""
    op = _ops_table.moment_op("var", correction)
    return _op(op, _OPS[op], x, dim, keepdim, out, stream)


def std(x: Any, dim: Optional[int] = None, *, correction: Union[int, float, None] = 1,
        keepdim: bool = False, out: Any = None, stream: StreamLike = None) -> Any:
    """The standard deviation, the square root of :func:`var` (the same arguments), as torch.std.
    Gradient (torch) as torch.std's: var's of grad / (2 std), 0 where std is 0."""
    op = _ops_table.moment_op("std", correction)
    return _op(op, _OPS[op], x, dim, keepdim, out, stream)


def dot(x: Any, y: Any, dim: Optional[int] = None, keepdim: bool = False, *, out: Any = None,
        stream: StreamLike = None, dtype: Any = None) -> Any:
    """The sum of ``x * y`` over every element (``dim=None``, as torch.dot of two vectors) or
    along a dimension (``(x * y).sum(dim)``), in one pass that reads each element once. x and y
    have one dtype, shape and layout (y is read where x is: a strided x needs y strided alike);
    the result is of their dtype (integers wrap; bfloat16/float16 multiply and accumulate in
    float32 and round once, or ``dtype=float32`` for the float32 accumulator of a whole array).
    Other arguments as for :func:`sum`. A torch tensor's is ``torch.ops.reduce_tune.dot(x, y,
    dim, keepdim)`` where torch must see it, with the gradients ``grad * y`` and ``grad * x``."""
    t = _torch_hook.ops
    if t is not None and isinstance(x, t.Tensor):
        return t.dot(x, y, dim, keepdim, out, stream, dtype)
    return _dot(x, y, dim, out=out, stream=stream, dtype=dtype, keepdim=keepdim)


def record(on: Optional[bool] = None) -> bool:
    """Records the call points the package serves without an exact tuning (the C++
    ``Options::record``): each (GPU, dtype, op, problem, shape) once, in the tuning store, without
    measuring anything; ``reduce-tune tune --recorded`` then tunes exactly those and ``reduce-tune
    coverage`` lists them. ``record(True)`` / ``record(False)`` switch it for the calls from then
    on (the library's per-GPU reducers are made anew with the setting: the next call on each GPU
    loads its kernels again, from the compile cache); ``record()`` only asks. Returns whether
    calls are recorded: the setting, or ``$REDUCE_TUNE_RECORD=1``, which turns it on whatever
    the setting."""
    if on is not None:
        _ext.set_record(bool(on))
    mine, env = _ext.record()
    return bool(mine or env)


def autotune(on: Optional[bool] = None) -> bool:
    """Tunes each call point on first use (the C++ ``Options::autotune``): a call at a (GPU,
    dtype, op, problem, shape) the tuning store has no exact tuning for first runs a bounded guided
    search of it (about 300 ms a point, ``$REDUCE_TUNE_AUTOTUNE_MS``), every result checked
    against the CPU, in a separate process (the package's ``reduce-tune``, started once and kept),
    stores it for later calls and processes, then runs with it. A call inside a CUDA graph capture
    is not tuned: it runs with what the store has and records the point (as :func:`record`), and
    so does a call whose tuning fails; tuning never makes a call fail. ``autotune(True)`` /
    ``autotune(False)`` switch it for the calls from then on (the per-GPU reducers are made anew);
    ``autotune()`` only asks. Returns whether it is on: the setting, or ``$REDUCE_TUNE_AUTOTUNE=1``.
    Off by default: a first call at a new point takes the search's time, and the worker holds a
    CUDA context of its own on the GPU while it lives. A :class:`Reduction`'s call is tuned under
    its name: checked by its ``check`` where it has one (the package tunes the point itself, as
    :meth:`Reduction.tune` does, within the same budget; a failure warns once with
    :class:`ReductionWarning`), else by the worker, whose measurements are then not checked."""
    if on is not None:
        _ext.set_autotune(bool(on))
    mine, env = _ext.autotune()
    return bool(mine or env)


def segment_sum(x: Any, offsets: Any, *, out: Any = None, stream: StreamLike = None) -> Any:
    """Sums of segments of the 1-D array `x`: ``result[s] = x[offsets[s]:offsets[s+1]].sum()``.

    offsets: int64, on x's GPU, ``segments + 1`` non-decreasing entries within ``[0, len(x)]``
        (like CSR row pointers); an empty segment gives the identity.
    Returns ``segments`` results of x's dtype and framework. The kernel is the one tuned nearest
    ``segments`` segments of mean length ``n // segments``, n being x's element count (passed to
    the library as the elements the segments span): ``config_for(x.dtype, "sum",
    (segments, n // segments), problem="segments")`` names it. A torch tensor's is
    ``torch.ops.reduce_tune.segment_sum(x, offsets)`` where torch must see it (torch.compile,
    autograd: each element's gradient is its segment's, zero outside every segment).
    """
    t = _torch_hook.ops
    if t is not None and isinstance(x, t.Tensor):
        return t.segment_reduce("sum", x, offsets, out, stream)
    return _segment_reduce("sum", x, offsets, out=out, stream=stream)


def segment_min(x: Any, offsets: Any, *, out: Any = None, stream: StreamLike = None) -> Any:
    """Minima of segments of `x` (see :func:`segment_sum`)."""
    t = _torch_hook.ops
    if t is not None and isinstance(x, t.Tensor):
        return t.segment_reduce("min", x, offsets, out, stream)
    return _segment_reduce("min", x, offsets, out=out, stream=stream)


def segment_max(x: Any, offsets: Any, *, out: Any = None, stream: StreamLike = None) -> Any:
    """Maxima of segments of `x` (see :func:`segment_sum`)."""
    t = _torch_hook.ops
    if t is not None and isinstance(x, t.Tensor):
        return t.segment_reduce("max", x, offsets, out, stream)
    return _segment_reduce("max", x, offsets, out=out, stream=stream)


def config_for(dtype: Any, op: str, n: Union[int, Tuple[int, int]], *, problem: str = "array",
               device: int = 0) -> Dict[str, Any]:
    """The configuration the calls above use, and why: a dict with ``key`` (the kernel
    configuration), ``match`` ("exact", "nearest_size", "shipped", "same_arch", "carried", "related" or
    "builtin"), ``tuned_shape`` / ``tuned_n`` (where it was measured), ``median_us`` and ``gbps``
    (its measured time), ``device_name`` (the GPU it was measured on), ``note``.

    dtype: a name ("float32"), NumPy/CuPy dtype or torch.dtype. op: the library's name of an op
    ("sum", "min", "max", "mean", "sumsq", "norm1", "norm2", "count_nonzero", "any", "all",
    "argmax", "argmin", "logsumexp", "var", "std", "var_population", "std_population").
    n: elements for ``problem="array"``; ``(rows, cols)`` for "rows" and "columns";
    ``(segments, mean segment length)`` for "segments". Raises RuntimeError without a GPU.
    """
    return _config_for(dtype, op, n, problem=problem, device=device)


def devices() -> List[Dict[str, Any]]:
    """The GPUs the driver sees: index, name, uuid, compute_capability, sm_count, total_memory,
    l2_bytes, peak_gbps, driver_version. An empty list without a driver or GPU
    (:func:`gpu_available` says why)."""
    return _devices()


def gpu_available() -> Tuple[bool, str]:
    """(True, "") when a CUDA driver and a GPU are present, else (False, the reason)."""
    ok, why = _ext.gpu_available()
    return bool(ok), str(why)


def nvrtc_info(arch: Optional[str] = None) -> Dict[str, Any]:
    """The NVRTC that compiles the kernels: ``path``, ``version`` (major, minor) and ``archs`` (the
    SM numbers it targets); with `arch` ("sm_90"), also ``compiled_bytes`` of a small kernel
    compiled for it. Needs no GPU. The NVRTC is ``$REDUCE_TUNE_NVRTC`` if set, else the one this
    build was made against where the loader finds it, else that of an installed
    ``nvidia-cuda-nvrtc`` wheel (``pip install nvidia-cuda-nvrtc``); RuntimeError if none loads."""
    return _ext.nvrtc_info(arch or "")


def dtypes() -> List[str]:
    """The dtypes this build reduces, by name."""
    from ._dtypes import BY_NAME
    return list(BY_NAME)
