"""Reduction.tune: the check data it writes (no GPU needed: the files NumPy writes are what the
tuner reads, expected = check(x)), the tuner reading them, and on a GPU a sum of squares tuned
into a store of the test's own, checked against its NumPy check, and a wrong check caught."""
from __future__ import annotations

import os
import sqlite3
import subprocess
from pathlib import Path

import pytest

import reduce_tune as rt
from reduce_tune import _tune
from reduce_tune.__main__ import cli_path

np = pytest.importorskip("numpy")


def sumsq_check(a, axis=None):
    return (a * a).sum(axis=axis)


def sumsq(check=sumsq_check):
    return rt.Reduction(map="x * x", combine="a + b", identity="0", post="a", check=check)


def _cli_or_skip():
    if not os.access(cli_path(), os.X_OK):
        pytest.skip(f"no reduce-tune CLI at {cli_path()}")
    return str(cli_path())


def test_points_of_shapes_and_dim():
    assert _tune.points_of([4096, 16384], None) == [("array", (4096,)), ("array", (16384,))]
    assert _tune.points_of([4096, (333, 77)], -1) == [("array", (4096,)), ("rows", (333, 77))]
    assert _tune.points_of((333, 77), 0) == [("columns", (333, 77))]
    assert _tune.points_of([(3, 4), 12, 12], None) == [("array", (12,))]  # the whole matrix; once
    with pytest.raises(ValueError, match="dim 2"):
        _tune.points_of([(3, 4)], 2)
    with pytest.raises(ValueError, match="empty"):
        _tune.points_of([0], None)
    with pytest.raises(TypeError):
        _tune.points_of(["4096"], None)


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16", "float16", "int32", "int64", "uint32"])
def test_random_inputs_are_small_nonzero_and_of_the_dtype(dtype):
    x = _tune.random_input(dtype, (1000,), np.random.default_rng(1))
    assert x.shape == (1000,) and x.flags["C_CONTIGUOUS"]
    assert x.dtype == np.dtype(_tune._NUMPY_DTYPES[dtype])
    assert not np.any(x == 0)
    if dtype.startswith("int") or dtype == "uint32":
        assert np.all(np.abs(x.astype(np.int64)) <= 7)
        assert (x.astype(np.int64) < 0).any() == (dtype != "uint32")
    else:
        assert np.all((x >= -1) & (x <= 1))
        assert len(np.unique(x)) > 100
    if dtype == "bfloat16":  # float32 values that are each a bfloat16
        assert np.all(x.view(np.uint32) & 0xFFFF == 0)


def test_check_data_files_are_the_inputs_and_their_check(tmp_path):
    r = sumsq()
    points = [("array", (1000,)), ("array", (7,))]
    lines = _tune.write_check_data(r, points, "float32", tmp_path, seed=3)
    assert lines[1:] == ["array 1000 float32 x0.npy e0.npy m0.npy", "array 7 float32 x1.npy e1.npy m1.npy"]
    assert (tmp_path / "index.txt").read_text().splitlines() == lines
    for i, (_, shape) in enumerate(points):
        x = np.load(tmp_path / f"x{i}.npy")
        e, m = np.load(tmp_path / f"e{i}.npy"), np.load(tmp_path / f"m{i}.npy")
        assert x.dtype == np.float32 and x.shape == shape
        assert e.dtype == np.float64 and e.shape == () and m.shape == ()
        x64 = x.astype(np.float64)
        assert e == (x64 * x64).sum() and m == e  # a sum of squares is its own magnitude
    # the same seed, the same data; another, other data
    for seed, same in ((3, True), (4, False)):
        again = tmp_path / f"seed{seed}"
        again.mkdir()
        _tune.write_check_data(r, points, "float32", again, seed=seed)
        assert np.array_equal(np.load(again / "x0.npy"), np.load(tmp_path / "x0.npy")) == same


@pytest.mark.parametrize("problem,dtype", [("rows", "bfloat16"), ("columns", "int32"), ("rows", "float64")])
def test_check_data_of_rows_and_columns(tmp_path, problem, dtype):
    def plain_sum(a, axis=None):
        return a.sum(axis=axis)

    r = rt.Reduction(check=plain_sum)
    _tune.write_check_data(r, [(problem, (33, 7))], dtype, tmp_path)
    x, e, m = (np.load(tmp_path / f"{k}0.npy") for k in "xem")
    assert x.shape == (33, 7) and x.dtype == np.dtype(_tune._NUMPY_DTYPES[dtype])
    axis = 1 if problem == "rows" else 0
    assert e.shape == ((33,) if problem == "rows" else (7,)) and e.dtype == np.float64
    x64 = x.astype(np.float64)
    assert np.array_equal(e, x64.sum(axis=axis))
    assert np.array_equal(m, np.abs(x64).sum(axis=axis))
    assert not np.array_equal(e, m)  # signed inputs: the magnitudes differ
    assert (tmp_path / "index.txt").read_text().splitlines()[1] == f"{problem} 33x7 {dtype} x0.npy e0.npy m0.npy"


def test_a_check_of_the_wrong_shape_is_refused(tmp_path):
    r = rt.Reduction(check=lambda a, axis=None: a.sum())  # ignores axis
    with pytest.raises(ValueError, match=r"check\(x, axis=1\) has shape \(\) .* has \(5,\)"):
        _tune.write_check_data(r, [("rows", (5, 3))], "float32", tmp_path)


def test_the_tuner_reads_what_python_writes(tmp_path):
    """The CLI reads the description and the index Python writes: its name is the package's, and a
    size that is not a point is refused naming the points (before any GPU is touched)."""
    exe = _cli_or_skip()
    r = sumsq()
    text = tmp_path / "reduction.txt"
    text.write_text(rt._ext.reduction_text(r._fields))
    out = subprocess.run([exe, "reduction", str(text), "--dtype", "float32"], capture_output=True, text=True)
    assert out.stdout.startswith(r.name), out.stdout + out.stderr
    _tune.write_check_data(r, [("array", (4096,)), ("array", (999,))], "float32", tmp_path)
    store = tmp_path / "store.db"
    out = subprocess.run([exe, "tune", "--db", str(store), "--reduction", str(text), "--check-data", str(tmp_path),
                          "--sizes", "4096,8192"], capture_output=True, text=True)
    assert out.returncode == 2, out.stderr
    assert "has no point float32 n=8192 (its points: float32 n=4096, float32 n=999)" in out.stderr
    assert not store.exists()


# ---- on a GPU -------------------------------------------------------------------------------


def _stored(store, name):
    with sqlite3.connect(store) as db:
        return db.execute("SELECT problem, count, n, valid, expected FROM measurements WHERE op = ?",
                          (name,)).fetchall()


def _lookup(exe, store, text, *where):
    out = subprocess.run([exe, "query", "--db", str(store), "--lookup", "--device", "0", "--reduction", str(text),
                          *where], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return out.stdout


@pytest.mark.gpu
def test_tune_a_sum_of_squares_checked_by_numpy(tmp_path):
    exe = _cli_or_skip()
    r = sumsq()
    store = tmp_path / "store.db"
    summary = r.tune([4096, 1 << 14, (256, 128)], dim=-1, budget=6, db=store)
    assert [(s["problem"], s["shape"]) for s in summary] == [("array", (4096,)), ("array", (16384,)),
                                                             ("rows", (256, 128))]
    for s in summary:
        assert s["checked"] and s["measured"] > 0 and s["failed"] == 0 and s["best"], s
    rows = _stored(store, r.name)
    assert rows and all(valid == 1 for *_, valid, _ in rows)
    # every result was checked against a value, not "not checked"
    assert all(not e.startswith("not checked") for *_, e in rows), rows
    # what the array points were checked against is check(x) of the inputs made from the seed
    array_expected = {n: float(e) for p, _, n, _, e in rows if p == "array"}
    assert set(array_expected) == {4096, 16384}
    again = tmp_path / "again"
    again.mkdir()
    _tune.write_check_data(r, [("array", (4096,)), ("array", (16384,))], "float32", again, seed=0)
    for i, n in enumerate((4096, 16384)):
        assert array_expected[n] == float(np.load(again / f"e{i}.npy"))
    text = tmp_path / "reduction.txt"
    text.write_text(rt._ext.reduction_text(r._fields))
    # `query --lookup` rounds a shape down to powers of two (runtime/lookup.cpp lookup_point), so
    # only a tuned shape of powers of two is found `exact` by it.
    for where in (["--n", "4096"], ["--n", "2^14"], ["--problem", "rows", "--shape", "256x128"]):
        got = _lookup(exe, store, text, *where)
        assert " exact " in got and r.name in got, got


@pytest.mark.gpu
def test_tune_with_a_wrong_check_fails_every_measurement(tmp_path):
    r = sumsq(check=lambda a, axis=None: (a * a).sum(axis=axis) + 1.0)
    store = tmp_path / "store.db"
    with pytest.raises(rt.TuneError, match="failed the check") as e:
        r.tune([4096], budget=4, db=store)
    assert "wrong result" in str(e.value)
    assert e.value.summary and all(s["measured"] > 0 and s["failed"] == s["measured"] and s["best"] is None
                                   for s in e.value.summary), e.value.summary
    rows = _stored(store, r.name)
    assert rows and all(valid == 0 for *_, valid, _ in rows)


@pytest.mark.gpu
def test_tune_without_a_check_warns_and_says_unchecked(tmp_path):
    r = rt.Reduction(map="x * x")
    store = tmp_path / "store.db"
    with pytest.warns(UserWarning, match="NOT checked"):
        summary = r.tune([4096], budget=3, db=store)
    assert summary and not summary[0]["checked"] and summary[0]["measured"] > 0
    assert all(e.startswith("not checked") for *_, e in _stored(store, r.name))
