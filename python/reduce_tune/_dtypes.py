"""The one table of element types: how each is spelled by the array protocols and frameworks.

A row is enabled when the C++ library knows a dtype of that name (``_ext.dtypes()``), so a dtype
added to the library needs at most its row here (bfloat16 and float16 have theirs already).
"""
from __future__ import annotations

from typing import Dict, NamedTuple, Optional, Tuple

from . import _ext

# name (the library's), __cuda_array_interface__ typestr (None: no standard spelling),
# DLPack (type code, bits): 0 int, 1 uint, 2 float, 4 bfloat.
_TABLE: Tuple[Tuple[str, Optional[str], Tuple[int, int]], ...] = (
    ("int32", "<i4", (0, 32)),
    ("uint32", "<u4", (1, 32)),
    ("int64", "<i8", (0, 64)),
    ("float32", "<f4", (2, 32)),
    ("float64", "<f8", (2, 64)),
    ("float16", "<f2", (2, 16)),
    ("bfloat16", None, (4, 16)),
)
# Other spellings of the same names (the library's short ones, frameworks' aliases).
_ALIASES = {"i32": "int32", "u32": "uint32", "i64": "int64", "f32": "float32", "f64": "float64",
            "f16": "float16", "half": "float16", "bf16": "bfloat16", "float": "float32",
            "double": "float64", "int": "int64"}
# Result-only types of the library (never an input), as the package hands them out: the library's
# uint8 0/1 of any and all is a bool to every framework (one byte, 0 or 1: torch.bool, numpy.bool_),
# so the result is allocated as bool and written in place, with no conversion.
_RESULT_ONLY = {"uint8": ("bool", "|b1", (6, 8)), "u8": ("bool", "|b1", (6, 8))}


class DType(NamedTuple):
    name: str           #: "float32"
    value: int          #: the C++ DType enum value
    itemsize: int       #: bytes per element
    typestr: Optional[str]
    dlpack: Tuple[int, int]


def _build() -> Dict[str, DType]:
    known = {}
    for cpp_name, value in _ext.dtypes():
        known[_ALIASES.get(cpp_name, cpp_name)] = value
    out = {}
    for name, typestr, dl in _TABLE:
        if name in known:
            out[name] = DType(name, known[name], _ext.item_size(known[name]), typestr, dl)
    return out


def _build_results() -> Dict[int, DType]:
    out = {d.value: d for d in BY_NAME.values()}
    for cpp_name, value in _ext.dtypes():
        r = _RESULT_ONLY.get(cpp_name)
        if r is not None:
            out[value] = DType(r[0], value, _ext.item_size(value), r[1], r[2])
    return out


BY_NAME: Dict[str, DType] = _build()
#: DType value -> the DType a result of it is: BY_NAME's, and the result-only types (bool).
RESULTS: Dict[int, DType] = _build_results()
_RESULT_NAMES: Dict[str, DType] = {d.name: d for d in RESULTS.values()}
_RESULT_TYPESTRS: Dict[str, DType] = {d.typestr: d for d in RESULTS.values() if d.typestr}
_RESULT_DLPACK: Dict[Tuple[int, int], DType] = {d.dlpack: d for d in RESULTS.values()}
BY_TYPESTR: Dict[str, DType] = {d.typestr: d for d in BY_NAME.values() if d.typestr}
BY_DLPACK: Dict[Tuple[int, int], DType] = {d.dlpack: d for d in BY_NAME.values()}
SUPPORTED = ", ".join(BY_NAME)
OPS: Dict[str, int] = dict(_ext.ops())


def unsupported(what: str) -> TypeError:
    return TypeError(f"reduce_tune: unsupported dtype {what}; supported: {SUPPORTED}")


# `result`: a result's dtype (out=), which may also be a result-only one (bool).

def from_typestr(typestr: str, result: bool = False) -> DType:
    """A __cuda_array_interface__ typestr ("<f4"; "|" and "=" byte orders are little-endian here)."""
    d = BY_TYPESTR.get("<" + typestr[1:]) if typestr[:1] in ("|", "=", "<") else None
    if d is None and result:
        d = _RESULT_TYPESTRS.get("|" + typestr[1:])
    if d is None:
        raise unsupported(repr(typestr))
    return d


def from_name(name: str, result: bool = False) -> DType:
    d = BY_NAME.get(_ALIASES.get(name, name))
    if d is None and result:
        d = _RESULT_NAMES.get(name)
    if d is None:
        raise unsupported(repr(name))
    return d


def from_dlpack(code: int, bits: int, lanes: int, result: bool = False) -> DType:
    d = BY_DLPACK.get((code, bits)) if lanes == 1 else None
    if d is None and result and lanes == 1:
        d = _RESULT_DLPACK.get((code, bits))
    if d is None:
        raise unsupported(f"(DLPack code {code}, {bits} bits, {lanes} lanes)")
    return d


def from_any(spec: object) -> DType:
    """A dtype given as a name, a NumPy/CuPy dtype or scalar type, or a torch.dtype."""
    if isinstance(spec, DType):
        return spec
    if isinstance(spec, str):
        return from_name(spec.removeprefix("torch."))
    name = getattr(spec, "name", None)  # numpy.dtype
    if not isinstance(name, str):
        name = getattr(spec, "__name__", None)  # numpy.float32 (a type)
    if not isinstance(name, str):
        text = str(spec)  # torch.float32
        name = text[6:] if text.startswith("torch.") else None
    if name is None:
        raise TypeError(f"reduce_tune: not a dtype: {spec!r}")
    return from_name(name)


def op_value(op: str) -> int:
    v = OPS.get(op)
    if v is None:
        raise ValueError(f"reduce_tune: unknown op {op!r}; one of {', '.join(OPS)}")
    return v


def result_of(op: str, dtype: DType) -> DType:
    """The dtype of `op`'s result over `dtype` (the library's rule, kernels/ops.h result_dtype)."""
    return RESULTS[_ext.result_dtype(dtype.value, op_value(op))]
