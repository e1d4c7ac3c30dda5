"""The ops beyond sum, min and max (mean, sumsq, norm, count_nonzero, any, all, argmax, argmin,
logsumexp, var, std), keepdim and record(), without a GPU: the op table against the library's, result dtypes, argument errors raised
before the driver is asked, and the record switch. test_gpu_ops.py runs them."""
from __future__ import annotations

import math
import os
import subprocess
import sys
from typing import Optional

import pytest

import reduce_tune as rt
from reduce_tune import _api, _dtypes, _ops

from conftest import GPU_OK
from test_api import FakeCAI

NEW = ("mean", "sumsq", "norm", "count_nonzero", "any", "all", "argmax", "argmin", "logsumexp",
       "var", "std")


def run_python(code: str, **env: Optional[str]) -> str:
    e = {k: v for k, v in os.environ.items() if k not in ("REDUCE_TUNE_RECORD", "REDUCE_TUNE_AUTOTUNE")}
    e.update({k: v for k, v in env.items() if v is not None})
    out = subprocess.run([sys.executable, "-c", code], env=e, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_public_functions():
    for f in NEW + ("record", "autotune"):
        assert f in rt.__all__ and callable(getattr(rt, f)) and getattr(rt, f).__doc__, f


# The library's ops the package does not offer yet (C++ and the CLI only; docs/PYTHON.md).
NOT_IN_PYTHON: set = set()


def test_every_library_op_has_a_row():
    # The library's ops (_ext.ops) are the package's: a new one needs its row in _ops.TABLE, or a
    # place in NOT_IN_PYTHON.
    assert set(_ops.TABLE) <= set(_dtypes.OPS), set(_ops.TABLE) - set(_dtypes.OPS)
    assert set(_dtypes.OPS) - set(_ops.TABLE) == NOT_IN_PYTHON


def test_result_dtypes_are_the_librarys():
    by = _dtypes.BY_NAME
    for name, d in by.items():
        floating = d.dlpack[0] in (2, 4)
        assert _ops.check("sum", d) is d and _ops.check("max", d) is d
        assert _ops.check("mean", d).name == (name if floating else "float64")
        assert _ops.check("sumsq", d) is d
        assert _ops.check("count_nonzero", d).name == "int64"
        for op in ("any", "all"):
            r = _ops.check(op, d)
            assert (r.name, r.itemsize, r.typestr, r.dlpack) == ("bool", 1, "|b1", (6, 8))
        for op in ("norm1", "norm2"):
            if floating:
                assert _ops.check(op, d) is d
            else:
                with pytest.raises(TypeError, match=f"{op} of {name}: .*floating-point"):
                    _ops.check(op, d)


def test_result_dtypes_of_index_and_moment_ops():
    for name, d in _dtypes.BY_NAME.items():
        floating = d.dlpack[0] in (2, 4)
        for op in ("argmax", "argmin"):
            assert _ops.check(op, d).name == "int64"
        for op in ("var", "std", "var_population", "std_population"):
            assert _ops.check(op, d).name == (name if floating else "float64"), (op, name)
        if floating:
            assert _ops.check("logsumexp", d) is d
        else:
            with pytest.raises(TypeError, match=f"logsumexp of {name}: .*floating-point"):
                _ops.check("logsumexp", d)


def test_every_op_of_the_table_is_a_public_function():
    # Each library op is reached by a public function: its own name, norm's ord, var/std's
    # correction.
    reached = {"norm1", "norm2"} | {op for pair in _ops.MOMENTS.values() for op in pair}
    for op in _ops.TABLE:
        assert op in reached or (op in rt.__all__ and callable(getattr(rt, op))), op
    assert set(_ops.CORRECTION) == {op for pair in _ops.MOMENTS.values() for op in pair}


@pytest.mark.parametrize("correction,want", [
    (None, 0), (1, 0), (1.0, 0), (True, 0), (0, 1), (0.0, 1), (False, 1)])
def test_correction_picks_the_librarys_op(correction, want):
    for name in ("var", "std"):
        op = _ops.moment_op(name, correction)
        assert op == _ops.MOMENTS[name][want]
        assert _ops.CORRECTION[op] == (1 if want == 0 else 0)


@pytest.mark.parametrize("correction", [2, -1, 0.5, 1.5, "1", float("nan")])
def test_other_corrections_are_a_value_error(correction):
    for f in (rt.var, rt.std):
        with pytest.raises(ValueError, match="correction=1 .* and correction=0"):
            f(FakeCAI((10,)), correction=correction)


def test_var_and_std_take_keyword_arguments_as_torch():
    # torch.var(x, dim, *, correction, keepdim): keepdim is keyword-only, as there.
    with pytest.raises(TypeError):
        rt.var(FakeCAI((4, 3)), 0, True)
    with pytest.raises(TypeError, match="dim must be None or an int"):
        rt.std(FakeCAI((4, 3)), dim=0.0, keepdim=True)


def test_empty_argmax_is_a_value_error_before_the_driver():
    # No index of nothing (torch raises as well): said before any GPU is asked for.
    for f in (rt.argmax, rt.argmin):
        for shape, dim in (((0,), None), ((0,), 0), ((3, 0), -1), ((0, 3), 0), ((2, 0, 4), None),
                           ((0, 0), 0), ((5, 0), 1)):
            with pytest.raises(ValueError, match="empty reduction has no result"):
                f(FakeCAI(shape), dim)
    with pytest.raises(ValueError, match="no result"):
        _api._identity(_dtypes.BY_NAME["float32"], "argmax")
    # Rows of no count but a length: an empty result, as torch's (planned, no error).
    a = _api._read(FakeCAI((0, 3)), "x")
    plan, rdt = _api._prepare("argmax", a, -1, None)
    assert (plan.count, plan.length, plan.result_shape, rdt.name) == (0, 3, (0,), "int64")


def test_check_reducible_for_the_fake_implementations():
    _api.check_reducible("argmax", (4, 5), None)
    _api.check_reducible("argmin", (0, 5), -1)  # 0 rows of 5: an empty result
    _api.check_reducible("sum", (0,), None)  # an identity
    for shape, dim in (((0,), None), ((4, 0), -1), ((0, 5), 0), ((0, 2), None)):
        with pytest.raises(ValueError, match="empty reduction"):
            _api.check_reducible("argmax", shape, dim)


@pytest.mark.parametrize("shape,strides,ok", [
    ((4, 3), (3, 1), True),            # contiguous
    ((300,), (3,), True),              # a strided vector: one column, read in order
    ((5, 1, 4), (4, 99, 1), True),     # contiguous but for a size-1 dimension
    ((5, 4), (1, 5), False),           # transposed: a dense run, in another order
    ((4, 3), (10, 1), False),          # rows with gaps
    ((2, 3, 4), (1, 2, 6), False)])    # permuted
def test_argmax_of_a_whole_array_reads_it_in_order(shape, strides, ok):
    a = _api._read(FakeCAI(shape, strides=tuple(4 * s for s in strides)), "x")
    for op in ("argmax", "argmin"):
        if ok:
            plan, rdt = _api._prepare(op, a, None, None)
            assert plan.kind in ("array", "columns") and plan.count == 1 and rdt.name == "int64"
        else:
            with pytest.raises(ValueError, match=f"own order, which {op} of the whole array"):
                _api._prepare(op, a, None, None)
    if len(shape) == 2:  # along a dimension: the index within each row or column, any strides
        for dim in (0, -1):
            plan, _ = _api._prepare("argmax", a, dim, None)
            assert plan.kind in ("rows", "columns") and plan.length == shape[dim]


def test_moments_and_logsumexp_of_whole_strided_arrays():
    # var/std need one pass over every element: a permuted dense run is fine, rows with gaps are
    # not; logsumexp combines its rows' results (the logsumexp of the rows' logsumexps).
    t = _api._read(FakeCAI((5, 4), strides=(4, 20)), "x")
    gaps = _api._read(FakeCAI((4, 3), strides=(40, 4)), "x")
    for op in ("var", "std", "var_population", "std_population"):
        plan, rdt = _api._prepare(op, t, None, None)
        assert (plan.kind, plan.args, rdt.name) == ("array", (20,), "float32")
        with pytest.raises(ValueError, match=f"{op} of the whole array"):
            _api._prepare(op, gaps, None, None)
    plan, _ = _api._prepare("logsumexp", gaps, None, None)
    assert plan.kind == "rows+array" and _ops.info("logsumexp").stages == ("logsumexp", "logsumexp")


def test_bool_is_a_result_type_only():
    b = _dtypes.from_typestr("|b1", result=True)
    assert b.name == "bool" and _dtypes.from_name("bool", result=True) is b
    assert _dtypes.from_dlpack(6, 8, 1, result=True) is b
    assert "bool" not in rt.dtypes() and "uint8" not in rt.dtypes()
    for f in (lambda: _dtypes.from_typestr("|b1"), lambda: _dtypes.from_name("bool"),
              lambda: _dtypes.from_dlpack(6, 8, 1), lambda: _dtypes.from_name("uint8")):
        with pytest.raises(TypeError, match="unsupported dtype"):
            f()
    for op in ("any", "all", "count_nonzero", "mean"):  # never an input either
        with pytest.raises(TypeError, match="unsupported dtype"):
            getattr(rt, op)(FakeCAI((8,), "|b1"))


def test_identities_of_the_new_ops():
    f32, i32 = _dtypes.BY_NAME["float32"], _dtypes.BY_NAME["int32"]
    assert _api._identity(f32, "mean") != _api._identity(f32, "mean")  # NaN
    assert _api._identity(i32, "count_nonzero") == 0 and _api._identity(f32, "norm2") == 0
    assert _api._identity(i32, "any") is False and _api._identity(i32, "all") is True
    assert _api._identity(f32, "logsumexp") == -math.inf  # torch.logsumexp of nothing
    for op in ("var", "std", "var_population", "std_population"):
        assert math.isnan(_api._identity(i32, op))


def test_norm_orders():
    for ord_ in (0, 3, float("inf"), -1, "fro", True, 1.5):
        with pytest.raises(ValueError, match="ord=1 and ord=2"):
            rt.norm(FakeCAI((4,)), ord=ord_)


def test_norm_of_integers_is_a_type_error():
    for ord_ in (1, 2, 2.0):
        with pytest.raises(TypeError, match="floating-point"):
            rt.norm(FakeCAI((4, 3), "<i4"), ord_, dim=-1)


def test_dim_errors_of_the_new_ops():
    for f in (rt.mean, rt.sumsq, rt.norm, rt.any, rt.all, rt.count_nonzero, rt.argmax, rt.argmin,
              rt.logsumexp, rt.var, rt.std):
        with pytest.raises(ValueError, match="dim must be None, 0 or -1"):
            f(FakeCAI((2, 3, 4)), dim=1)
        with pytest.raises(TypeError, match="dim must be None or an int"):
            f(FakeCAI((2, 3)), dim=1.0)


def test_all_of_a_strided_matrix_whole_is_a_value_error():
    # any combines its rows' counts; all's per-row results have no op to combine them.
    m = FakeCAI((4, 3), strides=(40, 4))
    with pytest.raises(ValueError, match="all of the whole array"):
        rt.all(m)


@pytest.mark.parametrize("shape,strides,dense", [
    ((5, 4), (1, 5), True), ((2, 3, 4), (1, 2, 6), True), ((4, 3), (3, 1), True),
    ((4, 3), (10, 1), False), ((4, 3), (1, 8), False), ((3, 1, 4), (1, 99, 3), True),
    ((2, 2), (2, 2), False)])
def test_dense_runs(shape, strides, dense):
    # all of a whole transposed (permuted) dense array reads it as one run; the plan says so.
    assert _api._dense_run(shape, strides) is dense
    a = _api._read(FakeCAI(shape, strides=tuple(4 * s for s in strides)), "x")
    if dense:
        plan, rdt = _api._prepare("all", a, None, None)
        assert (plan.kind, plan.args, plan.result_shape, rdt.name) == ("array", (a.size,), (), "bool")
    else:
        with pytest.raises(ValueError, match="all of the whole array|no unit stride"):
            _api._prepare("all", a, None, None)


def test_out_of_the_wrong_dtype():
    # The result dtype is checked against out= after the driver is asked where the input is: the
    # plan and dtype come first, so what can be checked here is that a bad op/dtype pair never
    # gets as far as out=.
    with pytest.raises(TypeError, match="floating-point"):
        rt.norm(FakeCAI((8,), "<i8"), out=object())


@pytest.mark.parametrize("shape,dim,want", [
    ((4, 5), None, (1, 1)), ((4, 5), 0, (1, 5)), ((4, 5), -1, (4, 1)), ((4, 5), 1, (4, 1)),
    ((7,), None, (1,)), ((7,), 0, (1,)), ((), None, ()), ((), 0, ()), ((2, 3, 4), -1, (2, 3, 1)),
    ((2, 3, 4), 0, (1, 3, 4)), ((0, 3), 0, (1, 3))])
def test_keepdim_shapes(shape, dim, want):
    assert _api.result_shape(shape, dim, keepdim=True) == want
    assert _api.keep_shape(shape, dim) == want


@pytest.mark.skipif(GPU_OK, reason="this machine has a GPU")
def test_new_ops_without_a_gpu_are_a_runtime_error():
    for f in (rt.mean, rt.sumsq, rt.norm, rt.any, rt.all, rt.count_nonzero, rt.argmax, rt.argmin,
              rt.logsumexp, rt.var, rt.std):
        with pytest.raises(RuntimeError, match="no CUDA driver or GPU"):
            f(FakeCAI((10,)))
    with pytest.raises(RuntimeError, match="no CUDA driver or GPU"):
        rt.config_for("int32", "mean", 1 << 20)
    with pytest.raises(RuntimeError, match="no CUDA driver or GPU"):
        rt.DeviceArray((3,), "bool", 0)


# ---- record ---------------------------------------------------------------------------------

def test_record_switch():
    out = run_python("import reduce_tune as rt\n"
                     "print(rt.record(), rt.record(True), rt.record(), rt._ext.record(),\n"
                     "      rt.record(False), rt.record(), rt._ext.record())")
    assert out == "False True True (True, False) False False (False, False)"


# ---- autotune -------------------------------------------------------------------------------

def test_autotune_switch():
    out = run_python("import reduce_tune as rt\n"
                     "print(rt.autotune(), rt.autotune(True), rt.autotune(), rt._ext.autotune(),\n"
                     "      rt.autotune(False), rt.autotune(), rt._ext.autotune(), rt.record())")
    assert out == "False True True (True, False) False False (False, False) False"


@pytest.mark.parametrize("value,on", [("1", True), ("on", True), ("0", False), ("", False)])
def test_autotune_environment_turns_it_on(value, on):
    out = run_python("import reduce_tune as rt\n"
                     "print(rt.autotune(), rt.autotune(False), rt._ext.autotune())",
                     REDUCE_TUNE_AUTOTUNE=value)
    assert out == f"{on} {on} (False, {on})"


@pytest.mark.parametrize("value,on", [("1", True), ("yes", True), ("0", False), ("", False)])
def test_record_environment_turns_it_on(value, on):
    out = run_python("import reduce_tune as rt\n"
                     "print(rt.record(), rt.record(False), rt._ext.record())",
                     REDUCE_TUNE_RECORD=value)
    assert out == f"{on} {on} (False, {on})"

