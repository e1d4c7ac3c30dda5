"""First-use tuning of a Reduction with a NumPy check (reduce_tune/_first_use.py): the decision with
the tuner, the lookup's grade and the capture query replaced by recorders (no GPU), the points it
tunes (the library's lookup points), the tuner's command line; and on a GPU, with autotune on and a
store of the test's own, a sum of squares tuned checked on its first call and a wrong check that
fails, warns once and still gives the right result."""
from __future__ import annotations

import json
import os
import sqlite3
import stat
import sys
import warnings

import pytest

import reduce_tune as rt
from reduce_tune import _api, _first_use, _tune
from reduce_tune.__main__ import cli_path

np = pytest.importorskip("numpy")


def sumsq_check(a, axis=None):
    return (a * a).sum(axis=axis)


def sumsq(check=sumsq_check, **kw):
    return rt.Reduction(map="x * x", combine="a + b", identity="0", post="a", check=check, **kw)


class Stand:
    """Stand-ins for what needs a GPU: records every grade asked, tune run and reducer renewed."""

    def __init__(self, autotune=True, grades=("related", "exact"), tune_raises=None, capturing=False):
        self.autotune, self.capturing = autotune, capturing
        self.grades = list(grades)  # answered in turn; the last one from then on
        self.tune_raises = tune_raises
        self.graded, self.tuned, self.renewed = [], [], []

    def grade(self, r, dtype, problem, at, dev):
        self.graded.append((r.name, dtype, problem, at, dev))
        g = self.grades.pop(0) if len(self.grades) > 1 else self.grades[0]
        return {"match": g, "note": f"graded {g}"}

    def tune(self, r, dtype, problem, at, dev):
        self.tuned.append((r.name, dtype, problem, at, dev))
        if self.tune_raises is not None:
            raise self.tune_raises
        return [{"problem": problem, "checked": True, "measured": 5, "failed": 0}]

    def first_use(self):
        return _first_use.FirstUse(lambda: self.autotune, lambda dev, stream: self.capturing, self.grade,
                                   self.tune, self.renewed.append)


def test_autotune_off_tunes_nothing():
    s = Stand(autotune=False)
    f = s.first_use()
    assert not f.own_tuning(sumsq(), "float32", "array", 1, 5000, 0, 0)
    assert s.graded == [] and s.tuned == [] and f.reports(sumsq()) == []


def test_an_empty_worker_variable_turns_it_off(monkeypatch):
    monkeypatch.setattr(_first_use, "autotune_on", lambda: True)
    monkeypatch.setenv("REDUCE_TUNE_WORKER", "")
    assert not _first_use.first_use_on()
    monkeypatch.setenv("REDUCE_TUNE_WORKER", "/opt/reduce-tune")
    assert _first_use.first_use_on()
    monkeypatch.delenv("REDUCE_TUNE_WORKER")
    assert _first_use.first_use_on()


def test_without_a_check_the_library_tunes():
    s = Stand()
    f = s.first_use()
    assert not f.own_tuning(sumsq(check=None), "float32", "array", 1, 5000, 0, 0)
    assert s.graded == [] and s.tuned == []


def test_segments_and_empty_reductions_are_the_librarys():
    s = Stand()
    f = s.first_use()
    assert not f.own_tuning(sumsq(), "float32", "segments", 100, 50, 0, 0)  # no check data for offsets
    assert not f.own_tuning(sumsq(), "float32", "rows", 100, 0, 0, 0)      # nothing to reduce
    assert s.graded == [] and s.tuned == []


def test_an_exact_point_is_not_tuned():
    s = Stand(grades=["exact"])
    f = s.first_use()
    r = sumsq()
    assert f.own_tuning(r, "float32", "array", 1, 5000, 0, 7)
    assert s.tuned == [] and s.graded == [(r.name, "float32", "array", (1, 4096), 0)]
    (report,) = f.reports(r)
    assert report["outcome"] == "exact" and report["summary"] is None and report["shape"] == (4096,)


def test_a_point_is_tuned_once_at_its_lookup_point():
    s = Stand(grades=["nearest_size", "exact"])
    f = s.first_use()
    r = sumsq()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a tuning that succeeds says nothing
        assert f.own_tuning(r, "float32", "rows", 300, 77, 0, 0)
    # the library's point of the call's bucket: 256 rows of 64
    assert s.tuned == [(r.name, "float32", "rows", (256, 64), 0)]
    # the same bucket again, another shape in it: decided, neither graded nor tuned again
    graded = len(s.graded)
    assert f.own_tuning(r, "float32", "rows", 511, 127, 0, 0)
    assert len(s.graded) == graded and len(s.tuned) == 1
    (report,) = f.reports(r)
    assert report["outcome"] == "tuned" and report["checked"] and report["shape"] == (256, 64)
    # another bucket, dtype, problem or GPU is another point
    for args in (("float32", "rows", 512, 77, 0), ("float64", "rows", 300, 77, 0),
                 ("float32", "columns", 300, 77, 0), ("float32", "rows", 300, 77, 1)):
        s.grades = ["related", "exact"]
        assert f.own_tuning(r, *args, 0)
    assert len(s.tuned) == 5 and len(f.reports(r)) == 5
    # another reduction's points are its own
    assert f.reports(sumsq(check=lambda a, axis=None: (a * a).sum(axis=axis), commutative=False)) == []


def test_a_failed_tuning_warns_once_and_serves_the_call():
    s = Stand(grades=["related"], tune_raises=rt.TuneError("FAILED user:x wrong result", [{"failed": 3}]))
    f = s.first_use()
    r = sumsq()
    with pytest.warns(rt.ReductionWarning, match=r"first-use tuning of user:[0-9a-f]{16} at array 4096 float32 "
                                                 r"failed; the call runs with the related configuration") as w:
        assert f.own_tuning(r, "float32", "array", 1, 4096, 0, 0)  # served anyway, not by the library
    assert len(w) == 1 and "wrong result" in str(w[0].message)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # remembered: no second tuning, no second warning
        assert f.own_tuning(r, "float32", "array", 1, 5000, 0, 0)
    assert len(s.tuned) == 1
    (report,) = f.reports(r)
    assert report["outcome"] == "failed" and "TuneError" in report["error"] and report["summary"] == [{"failed": 3}]


def test_a_check_that_raises_is_a_failed_tuning():
    s = Stand(grades=["builtin"], tune_raises=ValueError("check(x, axis=None) has shape (2,)"))
    f = s.first_use()
    with pytest.warns(rt.ReductionWarning, match="has shape"):
        assert f.own_tuning(sumsq(), "float32", "array", 1, 64, 0, 0)


def test_a_tuned_point_the_lookup_does_not_find_renews_the_reducer():
    # the reducer predates the store: opened again, the point is exact
    s = Stand(grades=["related", "related", "exact"])
    f = s.first_use()
    assert f.own_tuning(sumsq(), "float32", "array", 1, 4096, 2, 0)
    assert s.renewed == [2] and f.reports(sumsq())[0]["outcome"] == "tuned"
    # still not exact after that: a failure, said once
    s = Stand(grades=["related"])
    f = s.first_use()
    with pytest.warns(rt.ReductionWarning, match="grades the point 'related'"):
        assert f.own_tuning(sumsq(), "float32", "array", 1, 4096, 0, 0)
    assert s.renewed == [0] and f.reports(sumsq())[0]["outcome"] == "failed"


def test_a_capturing_call_uses_what_it_has_and_the_next_call_tunes():
    s = Stand(capturing=True)
    f = s.first_use()
    r = sumsq()
    assert not f.own_tuning(r, "float32", "array", 1, 4096, 0, 5)  # the library's: provisional, recorded
    assert s.graded == [] and s.tuned == []
    s.capturing = False
    assert f.own_tuning(r, "float32", "array", 1, 4096, 0, 5)
    assert len(s.tuned) == 1
    s.capturing = True  # decided: a capture runs on the tuned point
    assert f.own_tuning(r, "float32", "array", 1, 4096, 0, 5)
    assert len(s.tuned) == 1


def test_lookup_points_and_input_shapes():
    assert _first_use.lookup_point(1, 4096) == (1, 4096)
    assert _first_use.lookup_point(1, 5000) == (1, 4096)
    assert _first_use.lookup_point(0, 1) == (1, 1)
    assert _first_use.lookup_point(300, 77) == (256, 64)
    assert _first_use.input_shape("array", (1, 4096)) == (4096,)
    assert _first_use.input_shape("rows", (256, 64)) == (256, 64)
    assert _first_use.input_shape("columns", (256, 64)) == (64, 256)  # 256 results of 64 rows


def test_the_call_point_is_the_librarys():
    r, ordered = sumsq(), sumsq(commutative=False)
    rows = _api._plan((300, 77), None, -1)
    assert _api._user_point(r, rows) == ("rows", 300, 77)
    cols = _api._plan((300, 77), None, 0)
    assert _api._user_point(r, cols) == ("columns", 77, 300)
    whole = _api._plan((4096,), None, None)
    assert _api._user_point(r, whole) == ("array", 1, 4096)
    # one dense row of a commutative reduction is its 1-D problem (runtime/reducer_user.cpp)
    one = _api._plan((1, 4096), None, -1)
    assert _api._user_point(r, one) == ("array", 1, 4096)
    assert _api._user_point(ordered, one) == ("rows", 1, 4096)


def test_the_budget_is_the_c_plus_plus_first_uses(monkeypatch):
    monkeypatch.delenv("REDUCE_TUNE_AUTOTUNE_MS", raising=False)
    assert _first_use.budget_ms() == 300
    monkeypatch.setenv("REDUCE_TUNE_AUTOTUNE_MS", "1500")
    assert _first_use.budget_ms() == 1500
    monkeypatch.setenv("REDUCE_TUNE_AUTOTUNE_MS", "nonsense")
    assert _first_use.budget_ms() == 300
    seen = {}

    def fake_tune(r, shapes, dtype, dim, **kw):
        seen.update(shapes=shapes, dtype=dtype, dim=dim, **kw)
        return []

    monkeypatch.setattr(_tune, "tune", fake_tune)
    monkeypatch.setenv("REDUCE_TUNE_AUTOTUNE_MS", "250")
    _first_use._tune_point(sumsq(), "float32", "columns", (256, 64), 1)
    assert seen == {"shapes": [(64, 256)], "dtype": "float32", "dim": 0, "search": "guided", "budget": "5%",
                    "device": 1, "time_ms": 250.0}
    _first_use._tune_point(sumsq(), "float64", "array", (1, 4096), 0)
    assert seen["shapes"] == [4096] and seen["dim"] is None


def test_the_tuner_is_asked_with_the_time_limit(tmp_path, monkeypatch):
    """_tune.tune's command line, read by a stand-in for the CLI that writes its arguments: the
    check data, the guided search, the budget and --deadline-ms."""
    log = tmp_path / "args.json"
    fake = tmp_path / "reduce-tune"
    fake.write_text(f"#!{sys.executable}\nimport json, sys\n"
                    f"json.dump(sys.argv[1:], open({str(log)!r}, 'w'))\nprint('[]')\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setattr(_tune, "_cli", lambda: fake)
    assert _tune.tune(sumsq(), [(256, 64)], "float32", -1, budget="5%", device=1, time_ms=300) == []
    args = json.loads(log.read_text())
    at = {a: args[i + 1] for i, a in enumerate(args) if a.startswith("--") and i + 1 < len(args)}
    assert args[0] == "tune" and at["--search"] == "guided" and at["--budget"] == "5%"
    assert at["--deadline-ms"] == "300" and at["--device"] == "1" and "--check-data" in at
    assert "--db" not in at  # the store the calls read: $REDUCE_TUNE_DB or the default


# ---- on a GPU -------------------------------------------------------------------------------


@pytest.fixture
def autotuned(tmp_path, monkeypatch):
    """Autotune on, a store of the test's own, every point undecided; restored after."""
    if not os.access(cli_path(), os.X_OK):
        pytest.skip(f"no reduce-tune CLI at {cli_path()}")
    monkeypatch.setenv("REDUCE_TUNE_DB", str(tmp_path / "store.db"))
    was = rt._ext.autotune()[0]
    rt.autotune(False)
    rt.autotune(True)  # the reducers made anew: they read the store named above
    rt._ext.renew_own_reducer(0)
    _first_use.STATE.forget()
    yield tmp_path / "store.db"
    monkeypatch.undo()
    rt.autotune(not was)
    rt.autotune(was)
    rt._ext.renew_own_reducer(0)
    _first_use.STATE.forget()


@pytest.mark.gpu
def test_first_use_tunes_a_sum_of_squares_checked(autotuned, torch):
    r = sumsq()
    host = np.random.default_rng(5).uniform(-1, 1, 5000).astype(np.float32)  # bucket 4096
    x = torch.from_numpy(host).cuda()
    # asked before the store exists: the reducer that answers opens it again once it is tuned
    assert r.config_for("float32", 5000)["match"] != "exact"
    with warnings.catch_warnings():
        warnings.simplefilter("error", rt.ReductionWarning)
        got = float(r(x))
    want = float(sumsq_check(host.astype(np.float64)))
    assert got == pytest.approx(want, rel=1e-5)
    (report,) = r.first_use_report()
    assert report["outcome"] == "tuned" and report["shape"] == (4096,) and report["checked"], report
    (point,) = report["summary"]
    assert point["checked"] and point["measured"] >= 3 and point["failed"] == 0 and point["best"], point
    c = r.config_for("float32", 5000)
    assert c["match"] == "exact" and r.name in c["note"], c
    with sqlite3.connect(autotuned) as db:
        expected = [e for (e,) in db.execute("SELECT expected FROM measurements WHERE op = ?", (r.name,))]
    assert expected and not any(e.startswith("not checked") for e in expected), expected
    # the next call at the bucket neither tunes nor warns
    with warnings.catch_warnings():
        warnings.simplefilter("error", rt.ReductionWarning)
        again = float(r(x[:4500]))
    assert again == pytest.approx(float(sumsq_check(host[:4500].astype(np.float64))), rel=1e-5)
    assert len(r.first_use_report()) == 1


@pytest.mark.gpu
def test_first_use_with_a_wrong_check_warns_once_and_serves(autotuned, torch):
    r = sumsq(check=lambda a, axis=None: (a * a).sum(axis=axis) + 1.0)
    host = np.random.default_rng(6).uniform(-1, 1, (256, 40)).astype(np.float32)
    x = torch.from_numpy(host).cuda()
    with pytest.warns(rt.ReductionWarning, match="failed") as w:
        got = r(x, dim=-1).cpu().numpy()
    assert len([m for m in w if issubclass(m.category, rt.ReductionWarning)]) == 1
    assert np.allclose(got, sumsq_check(host.astype(np.float64), axis=1), rtol=1e-5)
    (report,) = r.first_use_report()
    assert report["outcome"] == "failed" and "wrong result" in report["error"], report
    with warnings.catch_warnings():
        warnings.simplefilter("error", rt.ReductionWarning)  # remembered: said once
        again = r(x, dim=-1).cpu().numpy()
    assert np.allclose(again, got)
    # served with what the lookup had: no run of the library's own (unchecked) first use
    assert r.config_for("float32", (256, 40), problem="rows")["match"] != "exact"
    with sqlite3.connect(autotuned) as db:
        unchecked = db.execute("SELECT COUNT(*) FROM measurements WHERE op = ? AND expected LIKE 'not checked%'",
                               (r.name,)).fetchone()[0]
    assert unchecked == 0


@pytest.mark.gpu
def test_a_call_captured_into_a_graph_is_not_tuned(autotuned, torch):
    r = sumsq()
    host = np.random.default_rng(7).uniform(-1, 1, 3000).astype(np.float32)
    x = torch.from_numpy(host).cuda()
    side = torch.cuda.Stream()
    assert not rt._ext.stream_capturing(0, side.cuda_stream)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, stream=side):
        assert rt._ext.stream_capturing(0, torch.cuda.current_stream().cuda_stream)
        y = r(x)
    assert r.first_use_report() == []  # nothing searched inside the capture
    g.replay()
    torch.cuda.synchronize()
    want = float(sumsq_check(host.astype(np.float64)))
    assert float(y) == pytest.approx(want, rel=1e-5)
    # the next call outside the capture tunes the point
    assert float(r(x)) == pytest.approx(want, rel=1e-5)
    assert [p["outcome"] for p in r.first_use_report()] == ["tuned"]


def test_config_for_checks_its_arguments_before_the_gpu():
    r = sumsq()
    with pytest.raises(ValueError, match="unknown problem 'diagonal'"):
        r.config_for("float32", 4096, problem="diagonal")
    with pytest.raises(TypeError, match="pair of non-negative ints for rows"):
        r.config_for("float32", 4096, problem="rows")
    with pytest.raises(TypeError, match="non-negative int for the array problem"):
        r.config_for("float32", (4, 4))
