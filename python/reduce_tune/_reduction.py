"""User-defined reductions: reduce_tune.Reduction (the C++ library's reduce_tune::Reduction)."""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from . import _api, _dtypes, _ext, _first_use, _tune
from ._api import StreamLike



class Reduction:
    """A reduction described by CUDA C++ expressions, compiled with NVRTC into the library's tuned
    kernel templates::

        norm = reduce_tune.Reduction(map="x * x", combine="a + b", identity="0", post="sqrt(a)")
        y = norm(x, dim=-1)             # torch tensor in, torch tensor out (CuPy: ndarray)

    ``map`` sees the element ``x`` (float for bfloat16/float16) and its index ``i`` in its row,
    column or segment; ``combine`` two accumulators ``a`` (earlier elements) and ``b``;
    ``identity`` is the accumulator of nothing; ``post`` sees the accumulator ``a`` and the count
    ``count``. ``accumulator`` is its CUDA C++ type (None: the element's wide type;
    ``accumulator_bytes`` its size where it is not a scalar spelling; ``preamble`` CUDA C++
    before the functions, for structs and helpers). ``dtype`` is the result's dtype (None: the
    element type), ``inputs`` the element dtypes it takes (None: all). ``commutative=False`` keeps
    each result's elements in order (rows and segments only). ``check`` is an optional NumPy
    function ``check(array, axis=None or int) -> array`` for :meth:`verify`, :meth:`tune` and
    first-use tuning: with ``reduce_tune.autotune(True)`` (or ``$REDUCE_TUNE_AUTOTUNE=1``), the
    first call at a point (dtype, problem, size bucket, GPU) with no exact tuning first tunes it as
    :meth:`tune` does, every result checked against ``check``, within the first-use budget
    (``$REDUCE_TUNE_AUTOTUNE_MS``, 300 ms, and 5% of the point's candidates), once a point per
    process; where that fails the call runs with what the lookup has and a
    :class:`ReductionWarning` says so (:meth:`first_use_report` tells what each point came to).
    Without a ``check`` the library's own first-use tuning searches the point, unchecked.

    A description that does not compile raises ValueError carrying NVRTC's log (at the first call,
    or at :meth:`compile`, which needs no GPU). :attr:`name` is ``user:`` and a stable hash of the
    description, the same as the C++ library's (and ``reduce-tune reduction``'s) for the same fields.
    """

    __slots__ = ("map", "combine", "identity", "post", "dtype", "check", "accumulator",
                 "accumulator_bytes", "preamble", "inputs", "commutative", "_fields")

    def __init__(self, map: str = "x", combine: str = "a + b", identity: str = "0",  # noqa: A002
                 post: str = "a", dtype: Any = None, check: Optional[Callable[..., Any]] = None, *,
                 accumulator: Optional[str] = None, accumulator_bytes: int = 0, preamble: str = "",
                 inputs: Optional[Sequence[Any]] = None, commutative: bool = True):
        for field, value in (("map", map), ("combine", combine), ("identity", identity),
                             ("post", post), ("preamble", preamble)):
            if not isinstance(value, str):
                raise TypeError(f"reduce_tune: Reduction's {field} must be a str, not {type(value).__name__}")
        if accumulator is not None and not isinstance(accumulator, str):
            raise TypeError("reduce_tune: Reduction's accumulator must be a str or None")
        if check is not None and not callable(check):
            raise TypeError("reduce_tune: Reduction's check must be callable")
        self.map, self.combine, self.identity, self.post = map, combine, identity, post
        self.dtype = None if dtype is None else _dtypes.from_any(dtype)
        self.check = check
        self.accumulator, self.accumulator_bytes = accumulator or "", int(accumulator_bytes)
        self.preamble = preamble
        self.inputs = tuple(_dtypes.from_any(d) for d in inputs) if inputs else ()
        self.commutative = bool(commutative)
        self._fields: Tuple[Any, ...] = (
            self.map, self.combine, self.identity, self.post, self.accumulator,
            self.accumulator_bytes, self.preamble, [d.value for d in self.inputs],
            -1 if self.dtype is None else self.dtype.value, self.commutative)
        # The library's checks of the description (empty fields, the accumulator's size) now.
        _ext.reduction_name(self._fields)

    @property
    def name(self) -> str:
        """``user:`` and 16 hex digits: the stable hash of the description (not of ``check``)."""
        return _ext.reduction_name(self._fields)

    @property
    def hash(self) -> int:
        return int(self.name[5:], 16)

    def canonical(self) -> str:
        """The description's canonical text, which :attr:`name` hashes."""
        return _ext.reduction_canonical(self._fields)

    def result_dtype(self, dtype: Any) -> str:
        """The result's dtype name for elements of ``dtype``; ValueError where it does not take it."""
        return _dtypes.RESULTS[_ext.reduction_result_dtype(self._fields, _dtypes.from_any(dtype).value)].name

    def compile(self, dtype: Any = "float32", arch: str = "") -> None:
        """Compiles the reduction for ``dtype`` with NVRTC (no GPU needed), for ``arch``
        ("sm_90"; empty: the newest the NVRTC targets). ValueError with NVRTC's log if it fails."""
        _ext.compile_reduction(self._fields, _dtypes.from_any(dtype).value, arch)

    def __call__(self, x: Any, dim: Optional[int] = None, keepdim: bool = False, *, out: Any = None,
                 stream: StreamLike = None) -> Any:
        """The reduction of ``x`` over ``dim`` (None: all of it; an int: that dimension), as
        torch's reductions: a result of x's framework, on its device and current stream."""
        return _api.user_reduce(self, x, dim, out=out, stream=stream, keepdim=keepdim)

    def segments(self, x: Any, offsets: Any, *, out: Any = None, stream: StreamLike = None) -> Any:
        """One result per segment ``x[offsets[s]:offsets[s+1]]`` (int64 offsets), as segment_sum."""
        return _api.user_segment_reduce(self, x, offsets, out=out, stream=stream)

    def verify(self, x: Any, dim: Optional[int] = None, *, rtol: float = 1e-4, atol: float = 1e-6) -> bool:
        """Whether ``self(x, dim)`` agrees with ``check`` on x's values (copied to the host with
        NumPy): the reduction's own CPU evaluation. ValueError without a check."""
        import numpy as np
        if self.check is None:
            raise ValueError(f"reduce_tune: the reduction {self.name} has no check: results not checked")
        got = _to_numpy(self(x, dim))
        want = np.asarray(self.check(_to_numpy(x), axis=dim))
        return bool(np.allclose(got.astype(np.float64), want.astype(np.float64), rtol=rtol, atol=atol,
                                equal_nan=True))

    def tune(self, shapes: Any, dtype: Any = "float32", dim: Optional[int] = None, *, search: str = "guided",
             budget: Optional[Any] = None, db: Any = None, device: int = 0, seed: int = 0,
             timeout: Optional[float] = None) -> List[Dict[str, Any]]:
        """Tunes the reduction on GPU ``device`` at ``shapes`` and stores the results under
        :attr:`name` in the tuning store the calls read (``db``: another store file; None:
        ``$REDUCE_TUNE_DB`` or the default), so that later calls there find an exact tuning.

        shapes: an int n (the whole of n elements) or (rows, cols) pairs, reduced over ``dim``
        (-1 or 1: one result a row; 0 or -2: one a column; None: the whole matrix), or a list of
        them. The package's ``reduce-tune`` measures them in its own process (``tune --reduction
        --check-data``, docs/CLI.md) with ``search`` ("guided", "random" or "exhaustive") within
        ``budget`` (measurements a point, or "5%"), on inputs made here with NumPy from ``seed``
        (floats uniform in [-1, 1), small integers, never zero), every result checked against
        ``check(x, axis)`` (float64) with a rounding bound scaled by ``check(abs(x), axis)``.
        Without a ``check`` it tunes on its own random inputs, warns, and nothing is checked.

        Returns one dict a point: ``problem``, ``dtype``, ``shape``, ``device`` (the GPU's name),
        ``measured``, ``failed`` (measurements whose results failed the check), ``checked``,
        ``best`` (the fastest configuration that passed; None if none did) and ``best_us``.
        Raises :class:`TuneError` (a RuntimeError, with the tuner's message and ``summary``) where
        the tuner fails or any result fails the check, ValueError where ``check`` gives results
        of the wrong shape."""
        return _tune.tune(self, shapes, dtype, dim, search=search, budget=budget, db=db, device=device,
                          seed=seed, timeout=timeout)

    def config_for(self, dtype: Any, n: Any, *, problem: str = "array", device: int = 0) -> Dict[str, Any]:
        """The configuration a call of this reduction uses, and why, as :func:`reduce_tune.config_for`
        (``match`` "exact" where its own rows of this GPU are at the point's size bucket; the
        note names the reduction). ``n``: elements for the array problem, ``(rows, cols)`` for
        "rows" and "columns", ``(segments, mean length)`` for "segments". A lookup only: nothing
        is compiled or tuned. RuntimeError without a GPU."""
        dt = _dtypes.from_any(dtype)
        p, count, length = _api.shape_of(problem, n)
        own = self.check is not None and _first_use.autotune_on()
        d = _ext.config_for_user(device, self._fields, dt.value, p, count, length, own)
        d["dtype"], d["op"], d["device"] = dt.name, self.name, device
        return d

    def first_use_report(self) -> List[Dict[str, Any]]:
        """What first-use tuning (see the class) came to at each point this process called the
        reduction at with autotune on and a ``check``, in order: ``problem``, ``dtype``, ``shape``
        (the point's input: (n,), or (rows, cols) of the matrix), ``device``, ``outcome``
        ("exact": tuned before, not searched; "tuned": searched and now exact; "failed"),
        ``checked`` (every measurement was checked against ``check``), ``summary`` (as
        :meth:`tune` returns; None where nothing was searched) and ``error`` (why it failed)."""
        return _first_use.STATE.reports(self)

    def __repr__(self) -> str:
        return (f"Reduction(map={self.map!r}, combine={self.combine!r}, identity={self.identity!r}, "
                f"post={self.post!r}) [{self.name}]")


def _to_numpy(a: Any) -> Any:
    import numpy as np
    if hasattr(a, "detach"):  # torch
        return a.detach().cpu().float().numpy() if str(a.dtype) == "torch.bfloat16" else a.detach().cpu().numpy()
    if hasattr(a, "get"):  # CuPy
        return a.get()
    return np.asarray(a)
