"""First-use tuning of a Reduction that carries a NumPy ``check`` (``reduce_tune.autotune(True)``).

The C++ first-use tuning sends a user reduction to its worker process without the CPU evaluation,
which stays in Python, so what it measures is not checked. A Reduction with a ``check`` is
therefore tuned here instead, the way :meth:`Reduction.tune` tunes it (``reduce-tune tune
--reduction --check-data``, every result checked against ``check``), once per point and process,
before its first call there; its calls then run on the extension's reducer that never tunes on
first use, so the library does not search the point again unchecked. A point is the C++ entry's:
(reduction, dtype, problem, the lower end of the call's size bucket, GPU), where the lookup reads.
"""
from __future__ import annotations

import os
import threading
import warnings
from typing import Any, Callable, Dict, List, Tuple

from . import _ext

#: A point: (reduction name, dtype name, problem, (count, length) at the bucket's lower end, GPU).
Key = Tuple[str, str, str, Tuple[int, int], int]

# Problem values, as the extension names them.
_PROBLEMS: Dict[str, int] = dict(_ext.problems())


class ReductionWarning(UserWarning):
    """A Reduction's first-use tuning did not end in a checked tuning of the point (a result
    failed its ``check``, the tuner failed, or ``check`` raised): the call ran with what the lookup
    had, and the point is not tuned again in this process."""


def lookup_point(count: int, length: int) -> Tuple[int, int]:
    """Where the library looks a call of ``count`` results of ``length`` elements up: each at the
    lower end of its bucket [2^k, 2^(k+1)) (runtime/lookup.h: lookup_point); a count of 0 as 1."""
    count = max(count, 1)
    return 1 << (count.bit_length() - 1), (1 << (length.bit_length() - 1)) if length else 0


def budget_ms() -> float:
    """The time a point's search may take, as the C++ first use reads it: $REDUCE_TUNE_AUTOTUNE_MS
    where it is a positive number, else 300."""
    try:
        v = float(os.environ.get("REDUCE_TUNE_AUTOTUNE_MS", ""))
    except ValueError:
        return 300.0
    return v if v > 0 else 300.0


class FirstUse:
    """The decisions of one process: which points were tuned, found tuned, or failed. The tuner,
    the grade lookup, the capture query and whether autotune is on are passed in, so the decision
    is the same code with the extension or with stand-ins (the CPU tests)."""

    def __init__(self, autotune_on: Callable[[], bool], capturing: Callable[[int, int], bool],
                 grade: Callable[[Any, str, str, Tuple[int, int], int], Dict[str, Any]],
                 tune: Callable[[Any, str, str, Tuple[int, int], int], List[Dict[str, Any]]],
                 renew: Callable[[int], None]):
        self._autotune_on, self._capturing, self._grade, self._tune, self._renew = \
            autotune_on, capturing, grade, tune, renew
        self._points: Dict[Key, Dict[str, Any]] = {}
        self._lock = threading.Lock()  # one point tuned at a time in the process, as the C++ worker

    def own_tuning(self, r: Any, dtype: str, problem: str, count: int, length: int, dev: int,
                   stream: int) -> bool:
        """Whether the call of ``r`` (``count`` results of ``length`` elements of ``dtype``, on GPU
        ``dev`` and ``stream``) runs on the reducer that never tunes on first use, the point decided
        here first: tuned checked by ``r.check`` where the lookup has no exact tuning (once a
        point), else taken as it is. False (the library's own path, unchanged) without a check,
        with autotune off, for an empty reduction or segments (which the check data does not
        cover), and for a call on a stream being captured at a point not decided yet: the capture
        takes what the store has (the library records the point), and the next call decides."""
        if r.check is None or length == 0 or problem not in ("array", "rows", "columns"):
            return False
        if not self._autotune_on():
            return False
        key: Key = (r.name, dtype, problem, lookup_point(count, length), dev)
        if key in self._points:
            return True
        if self._capturing(dev, stream):
            return False
        with self._lock:
            if key not in self._points:
                self._points[key] = self._decide(r, key)
        return True

    def _decide(self, r: Any, key: Key) -> Dict[str, Any]:
        _, dtype, problem, at, dev = key
        report: Dict[str, Any] = {"problem": problem, "dtype": dtype, "shape": input_shape(problem, at),
                                  "device": dev, "outcome": "exact", "checked": False, "summary": None,
                                  "error": None}
        before = serving = self._grade(r, dtype, problem, at, dev)
        if before.get("match") == "exact":
            return report
        try:
            report["summary"] = self._tune(r, dtype, problem, at, dev)
        except Exception as e:  # noqa: BLE001 -- tuning never fails the call
            report.update(outcome="failed", error=f"{type(e).__name__}: {e}",
                          summary=getattr(e, "summary", None))
        else:
            report["checked"] = all(s.get("checked") for s in report["summary"] or [{}])
            after = self._grade(r, dtype, problem, at, dev)
            if after.get("match") != "exact":
                # The reducer may predate the store the tuner just made: it opens it again.
                self._renew(dev)
                after = self._grade(r, dtype, problem, at, dev)
            serving = after
            if after.get("match") == "exact":
                report["outcome"] = "tuned"
            else:
                report.update(outcome="failed", error=f"tuned, but the lookup grades the point "
                              f"{after.get('match')!r}: {after.get('note', '')}")
        if report["outcome"] == "failed":
            where = f"{problem} {'x'.join(map(str, report['shape']))} {dtype}"
            warnings.warn(f"reduce_tune: first-use tuning of {r.name} at {where} failed; the call runs "
                          f"with the {serving.get('match')} configuration and the point is not tuned "
                          f"again in this process: {report['error']}", ReductionWarning, stacklevel=5)
        return report

    def reports(self, r: Any) -> List[Dict[str, Any]]:
        """What was decided for ``r``'s points in this process, in order."""
        return [dict(v) for k, v in self._points.items() if k[0] == r.name]

    def forget(self) -> None:
        """Every point undecided again (tests)."""
        with self._lock:
            self._points.clear()


def input_shape(problem: str, at: Tuple[int, int]) -> Tuple[int, ...]:
    """The input's shape of a point (count, length): (n,) for the array problem, (rows, cols) of
    the matrix for rows (a result a row) and columns (a result a column)."""
    count, length = at
    if problem == "array":
        return (length,)
    return (count, length) if problem == "rows" else (length, count)


# ---- the extension's side ----------------------------------------------------------------------

def autotune_on() -> bool:
    mine, env = _ext.autotune()
    return bool(mine or env)


def first_use_on() -> bool:
    """Autotune on, and not turned off by an empty $REDUCE_TUNE_WORKER, which turns the library's
    first-use tuning off (runtime/autotune.h: find_worker)."""
    return autotune_on() and os.environ.get("REDUCE_TUNE_WORKER") != ""


def _grade(r: Any, dtype: str, problem: str, at: Tuple[int, int], dev: int) -> Dict[str, Any]:
    from ._dtypes import BY_NAME
    return _ext.config_for_user(dev, r._fields, BY_NAME[dtype].value, _PROBLEMS[problem], at[0], at[1], True)


def _tune_point(r: Any, dtype: str, problem: str, at: Tuple[int, int], dev: int) -> List[Dict[str, Any]]:
    from . import _tune
    shape = input_shape(problem, at)
    dim = None if problem == "array" else (-1 if problem == "rows" else 0)
    return _tune.tune(r, [shape[0] if problem == "array" else shape], dtype, dim, search="guided",
                      budget=_tune.FIRST_USE_BUDGET, device=dev, time_ms=budget_ms())


STATE = FirstUse(first_use_on, lambda dev, stream: bool(_ext.stream_capturing(dev, stream)), _grade,
                 _tune_point, _ext.renew_own_reducer)
