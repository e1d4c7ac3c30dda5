"""Reduction.tune: a user reduction tuned by the package's ``reduce-tune`` (in its own process, so a
faulting kernel never touches the caller's CUDA context), on inputs made here, each result checked
against the reduction's NumPy ``check``.

The check data is what ``reduce-tune tune --reduction FILE --check-data DIR`` reads (docs/CLI.md):
per point, the input (.npy), the expected results ``check(x, axis)`` and their magnitudes
``check(abs(x), axis)``, and DIR/index.txt naming them.
"""
from __future__ import annotations

import json
import os
import subprocess
import tempfile
import warnings
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from . import _dtypes, _ext

ShapeLike = Union[int, Tuple[int, int]]

#: The first-use search's budget at a point, as the C++ first-use worker's: 5% of its candidates
#: (the replay's figures, docs/PERFORMANCE.md), within the time limit that comes first.
FIRST_USE_BUDGET = "5%"

#: NumPy's dtype of each element dtype's input file (bfloat16 has none: its values go as float32).
_NUMPY_DTYPES = {"float32": "<f4", "float64": "<f8", "float16": "<f2", "bfloat16": "<f4",
                 "int32": "<i4", "int64": "<i8", "uint32": "<u4"}


def points_of(shapes: Sequence[ShapeLike], dim: Optional[int]) -> List[Tuple[str, Tuple[int, ...]]]:
    """The (problem, input shape) of each of ``shapes``: an int n is the array problem over n elements;
    a (rows, cols) pair reduced over ``dim`` -1 or 1 is rows, over 0 or -2 columns, over None
    the array problem over all of it."""
    if isinstance(shapes, (int, tuple)):
        shapes = [shapes]
    out: List[Tuple[str, Tuple[int, ...]]] = []
    for s in shapes:
        if isinstance(s, bool) or not isinstance(s, (int, tuple, list)):
            raise TypeError(f"reduce_tune: a shape is an int (elements) or (rows, cols), not {s!r}")
        if isinstance(s, int) or len(s) == 1:
            n = int(s if isinstance(s, int) else s[0])
            if n <= 0:
                raise ValueError(f"reduce_tune: shape {s!r} is empty")
            out.append(("array", (n,)))
            continue
        if len(s) != 2 or not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in s):
            raise ValueError(f"reduce_tune: shape {s!r} is not (rows, cols) of positive ints")
        if dim is None:
            out.append(("array", (s[0] * s[1],)))
        elif dim in (-1, 1):
            out.append(("rows", (s[0], s[1])))
        elif dim in (0, -2):
            out.append(("columns", (s[0], s[1])))
        else:
            raise ValueError(f"reduce_tune: dim {dim!r} of a (rows, cols) shape is not 0, 1, -1, -2 or None")
    seen = set()
    return [p for p in out if not (p in seen or seen.add(p))]


def random_input(dtype: str, shape: Tuple[int, ...], rng: Any) -> Any:
    """An input of ``dtype`` in NumPy's nearest type (bfloat16: float32 values that are each a
    bfloat16): floats uniform in [-1, 1), integers small (|x| <= 7; uint32 1..7); never zero, so
    that a reduction that loses an element shows it."""
    import numpy as np
    if dtype in ("int32", "int64"):
        x = rng.integers(1, 8, size=shape) * rng.choice([-1, 1], size=shape)
        return x.astype(_NUMPY_DTYPES[dtype])
    if dtype == "uint32":
        return rng.integers(1, 8, size=shape).astype("<u4")
    x = rng.uniform(-1.0, 1.0, size=shape).astype(np.float32 if dtype != "float64" else np.float64)
    if dtype == "bfloat16":  # round to nearest even on the upper 16 bits
        b = x.view(np.uint32)
        b = (b + np.uint32(0x7FFF) + ((b >> np.uint32(16)) & np.uint32(1))) & np.uint32(0xFFFF0000)
        x = b.view(np.float32)
    elif dtype == "float16":
        x = x.astype(np.float16)
    x[x == 0] = 0.5
    return x.astype(_NUMPY_DTYPES[dtype])


def _expected(check: Any, x64: Any, problem: str, shape: Tuple[int, ...], what: str) -> Any:
    import numpy as np
    axis = None if problem == "array" else (1 if problem == "rows" else 0)
    v = np.asarray(check(x64, axis=axis), dtype=np.float64)
    want = () if problem == "array" else ((shape[0],) if problem == "rows" else (shape[1],))
    if problem == "array" and v.shape == (1,):
        v = v.reshape(())
    if v.shape != want:
        raise ValueError(f"reduce_tune: check({what}, axis={axis}) has shape {v.shape} for an input of shape "
                         f"{shape}; a reduction over axis {axis} has {want}")
    return np.array(v, dtype=np.float64, order="C")  # (ascontiguousarray makes a 0-d array 1-d)


def write_check_data(reduction: Any, points: Sequence[Tuple[str, Tuple[int, ...]]], dtype: str,
                     directory: Union[str, os.PathLike], seed: int = 0) -> List[str]:
    """Writes the check data of ``points`` (one problem) into ``directory``: per point x<i>.npy (the
    input), e<i>.npy (``reduction.check(x, axis)`` in float64) and m<i>.npy (the same of abs(x)),
    and index.txt naming them. Returns the index's lines."""
    import numpy as np
    rng = np.random.default_rng(seed)
    d = Path(directory)
    lines = ["# problem shape dtype input expected magnitude"]
    for i, (problem, shape) in enumerate(points):
        x = random_input(dtype, shape, rng)
        x64 = x.astype(np.float64)
        np.save(d / f"x{i}.npy", np.ascontiguousarray(x))
        np.save(d / f"e{i}.npy", _expected(reduction.check, x64, problem, shape, "x"))
        np.save(d / f"m{i}.npy", _expected(reduction.check, np.abs(x64), problem, shape, "abs(x)"))
        text = str(shape[0]) if problem == "array" else f"{shape[0]}x{shape[1]}"
        lines.append(f"{problem} {text} {dtype} x{i}.npy e{i}.npy m{i}.npy")
    (d / "index.txt").write_text("\n".join(lines) + "\n")
    return lines


def _cli() -> Path:
    from .__main__ import cli_path
    exe = cli_path()
    if not os.access(exe, os.X_OK):
        raise RuntimeError(f"reduce_tune: the reduce-tune CLI is missing from this installation ({exe})")
    return exe


def _summary(tables: List[Dict[str, Any]], checked: bool) -> List[Dict[str, Any]]:
    out = []
    for t in tables:
        best = next((r for r in t.get("rows", []) if r["key"] == t.get("best")), None)
        shape = (t["n"],) if t["problem"] == "array" else (
            (t["count"], t["n"]) if t["problem"] == "rows" else (t["n"], t["count"]))
        out.append({"problem": t["problem"], "dtype": t["dtype"], "shape": shape, "device": t["device"],
                    "measured": t["measured"], "failed": t["failed"], "checked": checked,
                    "best": t.get("best") or None, "best_us": best["time_us"] if best else None})
    return out


def tune(reduction: Any, shapes: Sequence[ShapeLike], dtype: Any = "float32", dim: Optional[int] = None, *,
         search: str = "guided", budget: Optional[Union[int, str]] = None,
         db: Optional[Union[str, os.PathLike]] = None, device: int = 0, seed: int = 0,
         timeout: Optional[float] = None, time_ms: Optional[float] = None) -> List[Dict[str, Any]]:
    """See Reduction.tune. ``time_ms``: the search's time limit (``tune --deadline-ms``; first-use
    tuning's budget), counted from the start of the process that measures."""
    dt = _dtypes.from_any(dtype).name
    points = points_of(shapes, dim)
    if not points:
        raise ValueError("reduce_tune: tune needs at least one shape")
    if reduction.check is None:
        warnings.warn(f"reduce_tune: {reduction.name} has no check: its tuning results are NOT checked",
                      stacklevel=3)
    exe = _cli()
    out: List[Dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="reduce-tune-") as tmp:
        (Path(tmp) / "reduction.txt").write_text(_ext.reduction_text(reduction._fields))
        for problem in dict.fromkeys(p for p, _ in points):  # one sweep a problem, in order
            mine = [p for p in points if p[0] == problem]
            args = [str(exe), "tune", "--reduction", str(Path(tmp) / "reduction.txt"), "--device", str(device),
                    "--search", search, "--format", "json"]
            if budget is not None:
                args += ["--budget", str(budget)]
            if time_ms is not None:
                args += ["--deadline-ms", f"{float(time_ms):g}"]
            if db is not None:
                args += ["--db", os.fspath(db)]
            if reduction.check is not None:
                data = Path(tmp) / problem
                data.mkdir()
                write_check_data(reduction, mine, dt, data, seed)
                args += ["--check-data", str(data)]
            else:
                args += ["--dtypes", dt, "--problem", problem]
                if problem == "array":
                    args += ["--sizes", ",".join(str(s[0]) for _, s in mine)]
                else:
                    args += ["--shapes", ",".join(f"{s[0]}x{s[1]}" for _, s in mine)]
            r = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
            try:
                tables = json.loads(r.stdout) if r.stdout.strip() else []
            except json.JSONDecodeError:
                tables = []
            summary = _summary(tables, reduction.check is not None)
            if r.returncode != 0:
                raise TuneError(f"reduce_tune: tuning {reduction.name} ({problem}) failed (reduce-tune exit "
                                f"{r.returncode}):\n{r.stderr.strip()}", out + summary)
            out += summary
    return out


class TuneError(RuntimeError):
    """Reduction.tune failed: the tuner's message; ``summary`` holds what it measured (with the
    failures of the check, where that is why)."""

    def __init__(self, message: str, summary: List[Dict[str, Any]]):
        super().__init__(message)
        self.summary = summary
