"""The one table of the ops the package calls: what the general route and the torch custom ops
need to know of each beyond what the library says (its result dtype and which dtypes it takes come
from the C++ library: _dtypes.result_of, op_unsupported). An op the library gains is one row here
(and its public function in __init__.py).
"""
from __future__ import annotations

import math
from typing import Any, Callable, Dict, NamedTuple, Optional, Tuple, Union

from . import _dtypes, _ext
from ._dtypes import DType

Value = Union[int, float, bool]


def _zero(dt: DType) -> Value:
    return 0


def _nan(dt: DType) -> Value:
    return math.nan


def _extreme(op: str) -> Callable[[DType], Value]:
    def identity(dt: DType) -> Value:
        if dt.dlpack[0] in (2, 4):  # floats
            return math.inf if op == "min" else -math.inf
        bits, signed = dt.dlpack[1], dt.dlpack[0] == 0
        hi = (1 << (bits - 1)) - 1 if signed else (1 << bits) - 1
        lo = -(1 << (bits - 1)) if signed else 0
        return hi if op == "min" else lo
    return identity


class OpInfo(NamedTuple):
    name: str
    #: The result of an empty reduction over elements of a dtype (fills empty rows and columns);
    #: None: an empty reduction has no result (argmax: no index of nothing), a ValueError.
    identity: Optional[Callable[[DType], Value]]
    #: A whole strided matrix is reduced as its rows into a temporary, then the temporary as an
    #: array: (the rows' op, the temporary's op). None: partial results that no op combines.
    stages: Optional[Tuple[str, str]]
    #: The gradient formula of the torch op (reduce_tune._torch); None: no gradient (integer or
    #: bool results).
    grad: Optional[str]
    #: The result depends on the order of the elements (an index): a whole array must be read in
    #: its own row-major order, never as a permuted run of its memory.
    ordered: bool = False


TABLE: Dict[str, OpInfo] = {o.name: o for o in (
    OpInfo("sum", _zero, ("sum", "sum"), "sum"),
    OpInfo("min", _extreme("min"), ("min", "min"), "extreme"),
    OpInfo("max", _extreme("max"), ("max", "max"), "extreme"),
    OpInfo("mean", _nan, ("mean", "mean"), "mean"),  # rows of equal length
    OpInfo("sumsq", _zero, ("sumsq", "sum"), "sumsq"),
    OpInfo("norm1", _zero, ("norm1", "sum"), "norm1"),
    OpInfo("norm2", _zero, ("norm2", "norm2"), "norm2"),
    OpInfo("count_nonzero", _zero, ("count_nonzero", "sum"), None),
    OpInfo("any", lambda dt: False, ("count_nonzero", "any"), None),
    OpInfo("all", lambda dt: True, None, None),
    OpInfo("argmax", None, None, None, ordered=True),
    OpInfo("argmin", None, None, None, ordered=True),
    # The logsumexp of the rows' logsumexps is the whole array's.
    OpInfo("logsumexp", lambda dt: -math.inf, ("logsumexp", "logsumexp"), "logsumexp"),
    # Moments of rows do not combine into the whole array's without their means: one pass.
    OpInfo("var", _nan, None, "var"),
    OpInfo("std", _nan, None, "std"),
    OpInfo("var_population", _nan, None, "var"),
    OpInfo("std_population", _nan, None, "std"),
    # Of two inputs (reduce_tune.dot, _api.dot): a whole strided matrix as row dot products, summed.
    OpInfo("dot", _zero, ("dot", "sum"), "dot"),
) if o.name in _dtypes.OPS}

#: The correction (torch.var's: the divisor is n - correction) of each moment op of the library.
CORRECTION: Dict[str, int] = {"var": 1, "std": 1, "var_population": 0, "std_population": 0}
#: (op of correction 1, op of correction 0) of the public var and std.
MOMENTS: Dict[str, Tuple[str, str]] = {"var": ("var", "var_population"),
                                       "std": ("std", "std_population")}


def moment_op(name: str, correction: Any) -> str:
    """The library's op of reduce_tune.var / std with `correction` (None: 1, as torch). The library
    computes the divisors n - 1 and n; another correction would need the sum of squared deviations,
    which no result gives exactly: ValueError."""
    if correction is None:
        correction = 1
    if isinstance(correction, (int, float)) and correction in (0, 1):
        return MOMENTS[name][0 if correction == 1 else 1]
    raise ValueError(f"reduce_tune: {name} supports correction=1 (over n - 1, the default) and "
                     f"correction=0 (over n), not {correction!r}")


def info(op: str) -> OpInfo:
    o = TABLE.get(op)
    if o is None:
        raise ValueError(f"reduce_tune: unknown op {op!r}; one of {', '.join(TABLE)}")
    return o


def check(op: str, dtype: DType) -> DType:
    """The dtype of op's result over `dtype` elements; TypeError where the op does not take them
    (the library's rule: norms of integers, ...)."""
    why = _ext.op_unsupported(dtype.value, _dtypes.op_value(op))
    if why:
        raise TypeError(f"reduce_tune: {op} of {dtype.name}: {why}")
    return _dtypes.result_of(op, dtype)
