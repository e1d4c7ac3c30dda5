"""The one table of the ops the package calls: what the general route and the torch custom ops
need to know of each beyond what the library says (its result dtype and which dtypes it takes come
from the C++ library: _dtypes.result_of, op_unsupported). An op the library gains is one row here
(and its public function in __init__.py).
"""
from __future__ import annotations

import math
from typing import Callable, Dict, NamedTuple, Optional, Tuple, Union

from . import _dtypes, _ext
from ._dtypes import DType

Value = Union[int, float, bool]


def _zero(dt: DType) -> Value:
    return 0


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
    #: The result of an empty reduction over elements of a dtype (fills empty rows and columns).
    identity: Callable[[DType], Value]
    #: A whole strided matrix is reduced as its rows into a temporary, then the temporary as an
    #: array: (the rows' op, the temporary's op). None: partial results that no op combines.
    stages: Optional[Tuple[str, str]]
    #: The gradient formula of the torch op (reduce_tune._torch); None: no gradient (integer or
    #: bool results).
    grad: Optional[str]


TABLE: Dict[str, OpInfo] = {o.name: o for o in (
    OpInfo("sum", _zero, ("sum", "sum"), "sum"),
    OpInfo("min", _extreme("min"), ("min", "min"), "extreme"),
    OpInfo("max", _extreme("max"), ("max", "max"), "extreme"),
    OpInfo("mean", lambda dt: math.nan, ("mean", "mean"), "mean"),  # rows of equal length
    OpInfo("sumsq", _zero, ("sumsq", "sum"), "sumsq"),
    OpInfo("norm1", _zero, ("norm1", "sum"), "norm1"),
    OpInfo("norm2", _zero, ("norm2", "norm2"), "norm2"),
    OpInfo("count_nonzero", _zero, ("count_nonzero", "sum"), None),
    OpInfo("any", lambda dt: False, ("count_nonzero", "any"), None),
    OpInfo("all", lambda dt: True, None, None),
    # Of two inputs (reduce_tune.dot, _api.dot): a whole strided matrix as row dot products, summed.
    OpInfo("dot", _zero, ("dot", "sum"), "dot"),
) if o.name in _dtypes.OPS}


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
