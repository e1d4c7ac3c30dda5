#!/usr/bin/env python3
"""Derives the built-in defaults (runtime/defaults_table.inc) from tuning stores.

The defaults are what a call gets where no store has tuning for its GPU: per problem, a few shape
classes in hardware terms (bytes, and counts per SM), each with the configuration that served the
class best in the stores' sweeps. docs/DEFAULTS.md describes the method; in short:

* A GPU is a model and its SM count (the devices table's sm_count): one model limited to fewer
  SMs (e.g. with CUDA MPS) is another GPU here, and its shapes land in other per-SM classes.
* A point is one measured shape of one GPU and dtype: its best time is the fastest row kept
  there. A configuration's ratio at a point is its time over that best, or where it was not
  measured, its evict-first twin's (the sweeps measure a segmented twin only where the plain one
  ranks among the fastest, so the two count as one family). Where neither was: at a point of a
  shipped store (only the fastest few rows a shape are kept, "censored") at least the slowest kept
  row's ratio, raised to another GPU's ratio at the shape or else to CENSORED_GUESS; at a
  point of a full sweep, the slowest measured there (at least MISSING_COST: not swept, pointless).
* Configurations are compared in 4-byte terms: a row of a 2-byte dtype with v8 is the 4-byte v4
  (the same 16-byte loads); the runtime scales the vector width back for the call's dtype.
* One cost decides both the choice within a class and the classes: the sum over its points of the
  log ratio, with the part above TARGET weighted OVER_WEIGHT times more (the worst points count
  most). Classes come from splitting each problem's points at powers of two of one hardware
  feature at a time, greedily, while a split lowers the cost by more than MIN_GAIN, up to
  MAX_CLASSES a problem.
* Each class also has an `exact` configuration: the same choice among configurations without an
  atomic finish (deterministic for every dtype, valid for bf16/f16 sums); where the stores hold
  none of those for the class, the fast one's atomic-free twin (same loads, marked "twin").

Usage:
  derive-defaults.py [--stores A.db ...] [--devices NAME ...] [--out FILE | --check FILE]
  derive-defaults.py --evaluate [--points] [--stores ...]   # each GPU left out, judged on it
  derive-defaults.py --evaluate --from '132 SMs'            # derived from some GPUs, judged on each
Python 3 standard library only.
"""
import argparse
import glob
import gzip
import math
import os
import shutil
import sqlite3
import statistics
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SHIPPED = os.path.join(HERE, "..", "share", "reduce-tune", "tuning.db")
# The full default sweeps kept for replay that the defaults are derived from: every configuration
# the sweep considers at every point (the evict-first twins of the fastest plain ones only). The
# stores of every twin (*-every-twin-sweeps, for replaying the guided search) are not among them.
EXHAUSTIVE = sorted(p for p in glob.glob(os.path.join(HERE, "..", "data", "replay", "*.db.gz"))
                    if "-every-twin-" not in os.path.basename(p))

SIZE = {"int32": 4, "uint32": 4, "int64": 8, "float32": 4, "float64": 8, "bfloat16": 2,
        "float16": 2}
PROBLEMS = ["array", "rows", "columns", "segments"]
ATOMIC_FINISHES = {"atomic", "firstblock"}
UNBOUNDED = 99         # a class bound that is no bound (2^-99 .. 2^99)
MISSING_COST = 2.0     # at least the ratio taken for one a full sweep did not measure at a point
CENSORED_GUESS = 1.25  # at least, for one a shipped store did not keep at a point (not in its best)
MIN_GAIN = math.log(1.01)  # a split must lower the summed log cost by at least this much
MAX_CLASSES = 12       # per problem (and for offsets of unknown mean)
MIN_POINTS = 1         # shapes a class holds at least (of each GPU where there are several)
SHIPPED_KEEP = 8       # rows a shape the shipped store keeps: a point with no more is censored
TARGET = 1.15          # the part of a ratio above this costs OVER_WEIGHT times more (choice, splits)
OVER_WEIGHT = 4.0

# The features a class is bounded in, per problem, all log2 of a hardware-relative quantity.
FEATURES = {
    "array": ["bytes_per_sm"],
    "rows": ["length_bytes", "count_per_sm", "bytes_per_sm"],
    "columns": ["length_bytes", "count_per_sm", "bytes_per_sm"],
    "segments": ["length_bytes", "count_per_sm", "bytes_per_sm"],
    "segments_count_only": ["count_per_sm"],
}
SLOTS = ["length_bytes", "count_per_sm", "bytes_per_sm"]  # the table's order (runtime/defaults.h)


def bit_floor(x):
    return 1 << (max(int(x), 1).bit_length() - 1)


def parse_key(key):
    """A key as its variant and its other tokens, in order (b256, u4, ..., the finish last)."""
    parts = key.split(".")
    return parts[0], parts[1:]


def with_vec(key, vec):
    variant, toks = parse_key(key)
    return ".".join([variant] + ["v%d" % vec if t[0] == "v" and t[1:].isdigit() else t
                                 for t in toks])


def vec_of(key):
    for t in parse_key(key)[1]:
        if t[0] == "v" and t[1:].isdigit():
            return int(t[1:])
    return None


def finish_of(key):
    return parse_key(key)[1][-1]


def normalized(key, dtype):
    """The 4-byte key loading the same bytes as `key` does for `dtype`, or None where there is
    none (a 2-byte v1 row). Keys without a vector width are as they are."""
    v = vec_of(key)
    if v is None:
        return key
    size = SIZE[dtype]
    if v * size % 4:
        return None
    return with_vec(key, v * size // 4)


def candidate(key):
    """Whether a normalized key may be a default: valid for every dtype's 4-byte-equivalent
    (no 32-bit-integer-only redux tail), on the device (no host finish), not in place."""
    toks = parse_key(key)[1]
    return "redux" not in toks and "host" not in toks and not key.startswith("neighbored_gmem")


def typical_length_bytes(bounds):
    """log2 of the bytes a result reduces that stands for a class: the middle of its bounds, one
    step inside the one bound it has, or None where it has neither."""
    lo, hi = bounds.get("length_bytes", [-UNBOUNDED, UNBOUNDED])
    if lo != -UNBOUNDED and hi != UNBOUNDED:
        return (lo + hi) // 2
    if lo != -UNBOUNDED:
        return lo + 1
    if hi != UNBOUNDED:
        return hi - 1
    return None


def twin(key, bounds):
    """The atomic-free twin of a configuration (for a class whose stores kept no atomic-free row):
    the same loads with a deterministic finish, or for the offsets mappings that only exist with
    atomics, a group of lanes per segment sized to the class's segments."""
    variant, toks = parse_key(key)
    if finish_of(key) not in ATOMIC_FINISHES:
        return key
    keep = [t for t in toks if t[0] in "buvw" and t[1:].isdigit()]
    if variant in ("vectorized", "streaming"):
        g = next(int(t[1:]) for t in toks if t[0] == "g")
        # A data-sized grid with the last-block finish makes every block take the ticket at large
        # sizes; 8 blocks per SM is data-sized below that (catalogue.cpp, grid_for).
        return ".".join([variant] + keep + ["g%d" % (g or 8), "shfl", "lastblock"])
    stream = "_streaming" if variant.endswith("_streaming") else ""
    base = variant[: len(variant) - len(stream)]
    blocks = [t for t in keep if t[0] != "w"]
    if base == "rows_split":
        return ".".join(["rows_block" + stream] + blocks + ["direct"])
    if base == "columns_split":  # narrow stripes: the most blocks without row slices
        return ".".join(["columns_narrow"] + blocks + ["direct"])
    if base == "segments_split":
        return ".".join(["segments_block" + stream] + blocks + ["direct"])
    if base == "segments_binned":
        return ".".join(["segments_group" + stream] + keep + ["direct"])
    # merge, flat, staged: 16 bytes a lane, as many lanes as the class's segments fill (up to a
    # warp), a block from 2 KiB.
    t = typical_length_bytes(bounds)
    if t is None:
        return "segments_group.b256.w32.u2.v4.direct"
    if t >= 11:
        return "segments_block.b512.u4.v4.direct"
    w = min(max(t - 4, 0), 5)
    return "segments_group.b256.w%d.u2.v%d.direct" % (1 << w, 1 if w == 0 else 4)


# --- the stores ------------------------------------------------------------------------------

def gpu_label(name, sm):
    """What identifies a GPU here: its model name and SM count."""
    return "%s, %d SMs" % (name, sm)


class Point:
    """One measured shape of one GPU (model and SM count), dtype and op: its rows by normalized
    key."""

    def __init__(self, device, sm, problem, dtype, op, count, length):
        self.device, self.sm, self.problem = device, sm, problem
        self.dtype, self.op, self.count, self.length = dtype, op, count, length
        self.best = math.inf
        self.slowest = 0.0   # the slowest row the store kept here
        self.times = {}      # normalized key -> fastest median
        self.keys = set()    # the raw keys measured here (how many: censored or not)
        self.est = {}        # normalized key -> (estimated ratio, how): set by estimate()
        self.cost = {}       # normalized key -> point_cost of its estimated ratio

    @property
    def censored(self):
        """Whether the stores kept only the fastest rows here (a shipped store): a configuration
        not kept is slower than the slowest kept, by how much is unknown."""
        return len(self.keys) <= SHIPPED_KEEP

    def shape(self):
        return (self.problem, self.dtype, self.op, self.count, self.length)

    def features(self, problem=None):
        size = SIZE[self.dtype]
        count, length = bit_floor(self.count), bit_floor(self.length)  # lookup_point
        elements = count * length
        f = {"bytes_per_sm": math.log2(elements * size / self.sm),
             "length_bytes": math.log2(length * size),
             "count_per_sm": math.log2(count / self.sm)}
        return {k: f[k] for k in FEATURES[problem or self.problem]}


def twin_of(key):
    """A configuration's evict-first twin, or the plain configuration of an evict-first one: the
    same mapping and loads, the input marked to leave L2 first. The sweeps measure a segmented
    mapping's twin only where the plain one ranks among the fastest few of the shape
    (tuner/segmented_sweep.cpp, TwinFilter), so elsewhere the twin stands for it."""
    variant, toks = parse_key(key)
    if variant in ("vectorized", "streaming"):
        other = "streaming" if variant == "vectorized" else "vectorized"
    elif variant.endswith("_streaming"):
        other = variant[: -len("_streaming")]
    else:
        other = variant + "_streaming"
    return ".".join([other] + toks)


def measured_ratio(p, key):
    """A key's ratio to the point's best where it or its twin was measured, and which."""
    if key in p.times:
        return p.times[key] / p.best, "measured"
    t = twin_of(key)
    if t in p.times:
        return p.times[t] / p.best, "twin"
    return None, None


def estimate(pts):
    """Each point's estimated ratio for every key measured in `pts`: its own time, else its
    twin's, else, where the point is censored, the slowest kept row's ratio (a lower bound) raised
    to what another GPU model measured at the same shape, or where none did to CENSORED_GUESS
    (not among the fastest few: taken as at the edge of what a default may cost), else the
    slowest measured there, at least MISSING_COST (not swept there: the sweep found it pointless
    or invalid at the shape)."""
    keys = sorted({k for p in pts for k in p.times})
    by_shape = {}
    for p in pts:
        by_shape.setdefault(p.shape(), []).append(p)
    for p in pts:
        peers = [q for q in by_shape[p.shape()] if q.device != p.device]
        p.est = {}
        for k in keys:
            r, how = measured_ratio(p, k)
            if r is None and p.censored:
                floor = p.slowest / p.best
                other = [x for x in (measured_ratio(q, k)[0] for q in peers) if x is not None]
                r, how = max(floor, CENSORED_GUESS), "not kept"
                if other:
                    r, how = max(floor, max(other)), "other model"
            if r is None:
                r, how = max(MISSING_COST, p.slowest / p.best), "missing"
            p.est[k] = (r, how)
        p.cost = {k: point_cost(r) for k, (r, _) in p.est.items()}
    return pts


def open_store(path):
    """A store read-only; a .gz one decompressed into a temporary file first."""
    if not path.endswith(".gz"):
        return sqlite3.connect("file:%s?mode=ro" % path, uri=True)
    with gzip.open(path) as f, tempfile.NamedTemporaryFile(suffix=".db", delete=False) as t:
        shutil.copyfileobj(f, t)
    # Immutable: a store kept in WAL mode is read without its -wal and -shm files.
    db = sqlite3.connect("file:%s?immutable=1" % t.name, uri=True)
    os.unlink(t.name)  # the open connection keeps the file
    return db


def load(stores, devices):
    points = {}
    for path in stores:
        db = open_store(path)
        rows = db.execute(
            "SELECT d.name, d.sm_count, m.problem, m.dtype, m.op, m.count, m.n, m.key, m.median_us "
            "FROM measurements m JOIN devices d ON d.uuid = m.device_uuid "
            "WHERE m.valid = 1 AND m.median_us > 0 AND m.op = 'sum' ORDER BY m.id").fetchall()
        db.close()
        for name, sm, problem, dtype, op, count, n, key, us in rows:
            gpu = gpu_label(name, sm)
            if devices and not any(d.lower() in gpu.lower() for d in devices):
                continue
            if dtype not in SIZE or problem not in PROBLEMS:
                continue
            ident = (gpu, problem, dtype, op, count, n)
            p = points.get(ident)
            if p is None:
                p = points[ident] = Point(gpu, sm, problem, dtype, op, count, n)
            p.best = min(p.best, us)
            p.slowest = max(p.slowest, us)
            p.keys.add(key)
            k = normalized(key, dtype)
            if k is not None and candidate(k):
                p.times[k] = min(p.times.get(k, math.inf), us)
    return list(points.values())


# --- the choice within a class ---------------------------------------------------------------

def score(key, pts):
    """A key over a class: its cost (the sum of its points' costs), its estimated worst and median
    ratio, and the points where neither it nor its twin was measured."""
    ratios = [p.est[key][0] for p in pts]
    unmeasured = sum(1 for p in pts if p.est[key][1] not in ("measured", "twin"))
    return (sum(p.cost[key] for p in pts), max(ratios), statistics.median(ratios), unmeasured)


def choose(pts, exact=False):
    """The configuration of a class: the lowest cost (point_cost: the log ratios, those above
    TARGET weighted more), then the lowest worst ratio, median; ties by key. None where no allowed
    configuration was measured in the class."""
    keys = sorted({k for p in pts for k in p.times
                   if not exact or finish_of(k) not in ATOMIC_FINISHES})
    if not keys:
        return None, None
    costs = {k: sum(p.cost[k] for p in pts) for k in keys}
    low = min(costs.values())
    best = min((k for k in keys if costs[k] <= low + 1e-12), key=lambda k: (score(k, pts), k))
    return best, score(best, pts)


def point_cost(r):
    """A point's cost under a class's choice: the log of its ratio, more above TARGET."""
    return math.log(r) + OVER_WEIGHT * max(0.0, math.log(r / TARGET))


def cost(pts):
    """A class's cost when choosing splits: its points' costs under its choice."""
    return choose(pts)[1][0]


class Leaf:
    def __init__(self, pts, bounds):
        self.pts, self.bounds = pts, bounds   # bounds: feature -> [lo, hi) exponents
        self.cost = cost(pts)


def shapes_per_gpu(pts):
    by = {}
    for p in pts:
        by.setdefault(p.device, set()).add((p.count, p.length))
    return min(len(s) for s in by.values()) if by else 0


def best_split(leaf, table):
    best = None
    for f in FEATURES[table]:
        values = sorted({p.features(table)[f] for p in leaf.pts})
        for a, b in zip(values, values[1:]):
            # A power of two between two neighbouring shapes, nearest their middle.
            j = math.floor((a + b) / 2 + 0.5)
            if not a < j <= b:
                j = math.floor(a) + 1
            lo = [p for p in leaf.pts if p.features(table)[f] < j]
            hi = [p for p in leaf.pts if p.features(table)[f] >= j]
            if shapes_per_gpu(lo) < MIN_POINTS or shapes_per_gpu(hi) < MIN_POINTS:
                continue
            gain = leaf.cost - cost(lo) - cost(hi)
            if best is None or gain > best[0] + 1e-12:
                best = (gain, f, j, lo, hi)
    return best


def derive(points, table):
    """The classes of one table ("segments_count_only": offsets whose mean length is unknown)."""
    problem = "segments" if table == "segments_count_only" else table
    pts = [p for p in points if p.problem == problem]
    if table == "segments_count_only":  # staged needs the mean (kernels/segmented.h, needs_mean)
        pts = clone(pts)
        for p in pts:
            p.times = {k: t for k, t in p.times.items() if not k.startswith("segments_staged")}
    if not pts:
        return []
    estimate(pts)
    leaves = [Leaf(pts, {f: [-UNBOUNDED, UNBOUNDED] for f in FEATURES[table]})]
    while len(leaves) < MAX_CLASSES:
        splits = [(best_split(l, table), l) for l in leaves]
        splits = [(s, l) for s, l in splits if s and s[0] >= MIN_GAIN]
        if not splits:
            break
        (gain, f, j, lo, hi), leaf = max(splits, key=lambda x: x[0][0])
        leaves.remove(leaf)
        for part, side in ((lo, 1), (hi, 0)):
            bounds = {k: list(v) for k, v in leaf.bounds.items()}
            bounds[f][side] = j
            leaves.append(Leaf(part, bounds))
    classes = []
    for leaf in sorted(leaves, key=lambda l: [tuple(l.bounds[f]) for f in FEATURES[table]]):
        fast, fast_score = choose(leaf.pts)
        exact, exact_score = choose(leaf.pts, exact=True)
        measured = exact is not None and exact_score[3] < len(leaf.pts)
        if not measured:
            exact, exact_score = twin(fast, leaf.bounds), None
        classes.append({"bounds": leaf.bounds, "fast": fast, "fast_score": fast_score,
                        "exact": exact, "exact_score": exact_score, "points": len(leaf.pts)})
    return classes


def tables(points):
    return {t: derive(points, t) for t in PROBLEMS + ["segments_count_only"]}


# --- output ----------------------------------------------------------------------------------

TABLE_NAMES = {"array": "1-D", "rows": "rows", "columns": "columns", "segments": "offsets",
               "segments_count_only": "offsets, mean unknown"}


def bound_text(feature, lo, hi):
    unit = {"bytes_per_sm": " B/SM", "length_bytes": " B", "count_per_sm": ""}[feature]
    name = {"bytes_per_sm": "bytes per SM", "length_bytes": "bytes a result",
            "count_per_sm": "results per SM"}[feature]

    def e(x):
        return ("%d" % (1 << x)) if x >= 0 else "1/%d" % (1 << -x)
    if lo == -UNBOUNDED and hi == UNBOUNDED:
        return None
    if lo == -UNBOUNDED:
        return "%s < %s%s" % (name, e(hi), unit)
    if hi == UNBOUNDED:
        return "%s >= %s%s" % (name, e(lo), unit)
    return "%s in [%s, %s)%s" % (name, e(lo), e(hi), unit)


def score_text(s, pts):
    if s is None:
        return "twin, not measured"
    return "worst %.3f, median %.3f, %d/%d not measured" % (s[1], s[2], s[3], pts)


def bound_code(lo, hi):
    return "{%s, %s}" % ("-kOpen" if lo == -UNBOUNDED else str(lo),
                         "kOpen" if hi == UNBOUNDED else str(hi))


def render(result, stores, devices):
    out = []
    w = out.append
    w("// Generated by scripts/derive-defaults.py from %s%s; do not edit: docs/DEFAULTS.md"
      % (", ".join(os.path.basename(s) for s in stores),
         " (GPUs matching %s)" % ", ".join(devices) if devices else ""))
    w("// says how to regenerate. A row: problem, whether the mean length is known (offsets),")
    w("// the class as [lo, hi) log2 bounds of (bytes a result reduces, results per SM, bytes per")
    w("// SM) (kOpen: no bound), then its configurations in 4-byte terms:")
    w("// the best over the class, and the best without an atomic finish. Comments: estimated")
    w("// ratios to each point's best (measured, its evict-first twin's, or guessed where not")
    w("// measured), and the points where neither it nor its twin was measured (or 'twin': no")
    w("// atomic-free row kept, the fast one's atomic-free twin).")
    for table in PROBLEMS + ["segments_count_only"]:
        w("")
        w("// %s" % {"array": "1-D", "rows": "rows", "columns": "columns (a result a column)",
                      "segments": "offsets, mean segment length known",
                      "segments_count_only": "offsets, mean segment length unknown"}[table])
        problem = "segments" if table == "segments_count_only" else table
        for c in result[table]:
            b = [c["bounds"].get(f, [-UNBOUNDED, UNBOUNDED]) for f in SLOTS]
            text = [x for x in (bound_text(f, *c["bounds"][f]) for f in FEATURES[table] if f in c["bounds"]) if x]
            w("// %s: fast %s; exact %s" % (", ".join(text) or "every shape",
                                             score_text(c["fast_score"], c["points"]),
                                             score_text(c["exact_score"], c["points"])))
            w('{Problem::%s, %s, {%s}, "%s", "%s"},' % (
                problem, "false" if table == "segments_count_only" else "true",
                ", ".join(bound_code(*x) for x in b), c["fast"], c["exact"]))
    return "\n".join(out) + "\n"


def find(classes, table, p):
    """The class of `classes` that holds point p (as the runtime finds it)."""
    f = p.features(table)
    for c in classes:
        if all(c["bounds"][k][0] <= f[k] < c["bounds"][k][1] for k in f):
            return c
    raise AssertionError("no class holds %s" % f)


def judge(classes, table, pts, column):
    """Per point: the ratio of the table's choice to the point's best where the store measured it
    or its evict-first twin (the sweeps measure a twin only where the plain one ranks among the
    fastest, twin_of), with which; where neither, None and the slowest kept row's ratio (the choice
    is slower than that where the store is censored)."""
    out = []
    for p in pts:
        key = find(classes, table, p)[column]
        r, how = measured_ratio(p, key)
        out.append((p, key, r, how, p.slowest / p.best))
    return out


def judged_points(points, device, table):
    problem = "segments" if table == "segments_count_only" else table
    pts = [p for p in clone(points) if p.device == device and p.problem == problem]
    if table == "segments_count_only":
        for p in pts:
            p.times = {k: t for k, t in p.times.items() if not k.startswith("segments_staged")}
    return pts


def judged_cells(judged):
    ratios = [r for _, _, r, _, _ in judged if r is not None]
    twins = sum(1 for _, _, r, how, _ in judged if how == "twin")
    floors = [f for _, _, r, _, f in judged if r is None]
    n = len(judged)
    return ["%.3f" % statistics.median(ratios) if ratios else "-",
            "%.3f" % max(ratios) if ratios else "-",
            "%.0f %%" % (100.0 * twins / n),
            "%.0f %%" % (100.0 * len(floors) / n),
            "%.3f" % statistics.median(floors) if floors else "-"]


def evaluate(points, per_point=False, sources=None):
    """Markdown: for each GPU, the defaults derived from every other GPU's rows judged on its own
    (leave one out), then those derived from every GPU (the shipped table) judged on each; or with
    `sources` (parts of GPU labels), those derived from the matching GPUs judged on each. Per
    problem and column, the median and worst ratio to the point's best where the judging store
    measured the choice (or its twin: the share), the share of points where it measured neither,
    and there the median ratio of the slowest row kept (a lower bound where the store kept only
    the fastest). With per_point, every point of the last section: shape, choice, ratio."""
    gpus = sorted({p.device for p in points})
    head = ["| defaults from | judged on | problem | points | fast: median | worst | by twin "
            "| not measured | (slowest kept there) | exact: median | worst | by twin "
            "| not measured | (slowest kept there) |",
            "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    if sources:
        chosen = [g for g in gpus if any(s.lower() in g.lower() for s in sources)]
        if not chosen:
            sys.exit("derive-defaults: no GPU in the stores matches %s" % ", ".join(sources))
        pairs = [(chosen, d, "; ".join(chosen)) for d in gpus]
        titles = {False: "Derived from %s, judged on each:" % "; ".join(chosen)}
    else:
        pairs = [([s for s in gpus if s != d], d, "every other GPU") for d in gpus] + \
                [(gpus, d, "every GPU") for d in gpus]
        titles = {True: "Leave one GPU out: derived from every other GPU, judged on it:",
                  False: "Derived from every GPU (the shipped table), judged on each:"}
    out, rows = [], []
    section = None
    for src, dst, src_text in pairs:
        held_out = dst not in src
        if section != (held_out and not sources):
            section = held_out and not sources
            out += ["", titles[section], ""] + head
        derived = tables(clone([p for p in points if p.device in src]))
        for table in PROBLEMS + ["segments_count_only"]:
            pts = judged_points(points, dst, table)
            if not pts or not derived[table]:
                continue
            fast = judge(derived[table], table, pts, "fast")
            exact = judge(derived[table], table, pts, "exact")
            out.append("| %s | %s | %s | %d | %s |" % (
                src_text, dst, TABLE_NAMES[table], len(pts),
                " | ".join(judged_cells(fast) + judged_cells(exact))))
            if dst not in src or len(src) < len(gpus):
                continue
            for (p, key, r, how, f), (_, xkey, xr, xhow, _) in zip(fast, exact):
                rows.append("| %s | %s | %s | %s | %d x %d | %s | %s | %s | %s |" % (
                    dst, TABLE_NAMES[table], p.dtype, p.op, p.count, p.length, key,
                    "%.3f%s" % (r, " (twin)" if how == "twin" else "") if r is not None
                    else "> %.3f" % f if p.censored else "not measured", xkey,
                    "%.3f%s" % (xr, " (twin)" if xhow == "twin" else "") if xr is not None
                    else "> %.3f" % f if p.censored else "not measured"))
    if per_point:
        out += ["", "Every point, the table derived from every GPU judged:", "",
                "| GPU | problem | dtype | op | count x length | fast | ratio | exact | ratio |",
                "|---|---|---|---|---|---|---:|---|---:|"] + rows
    return "\n".join(out[1:]) + "\n"


def clone(points):
    out = []
    for p in points:
        q = Point(p.device, p.sm, p.problem, p.dtype, p.op, p.count, p.length)
        q.best, q.slowest, q.times, q.keys = p.best, p.slowest, dict(p.times), p.keys
        out.append(q)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--stores", nargs="+", default=[SHIPPED] + EXHAUSTIVE)
    ap.add_argument("--devices", nargs="+", default=[],
                    help="GPUs whose rows are used, by part of 'model, N SMs'; default: all")
    ap.add_argument("--out", help="write the table here (default: standard output)")
    ap.add_argument("--check", help="exit 1 unless the generated table equals this file")
    ap.add_argument("--evaluate", action="store_true",
                    help="leave each GPU out of the derivation and judge on it")
    ap.add_argument("--from", dest="sources", nargs="+", default=None,
                    help="with --evaluate, derive from these GPUs only (parts of 'model, N SMs') "
                         "and judge on each")
    ap.add_argument("--points", action="store_true",
                    help="with --evaluate, list every point's ratio under the table of every GPU")
    a = ap.parse_args()
    for s in a.stores:
        if not os.path.isfile(s):
            sys.exit("derive-defaults: no store at %s" % s)
    points = load(a.stores, a.devices)
    if not points:
        sys.exit("derive-defaults: no measurements in the stores for those GPUs")
    if a.evaluate:
        sys.stdout.write(evaluate(points, a.points, a.sources))
        return
    text = render(tables(points), a.stores, a.devices)
    if a.check:
        with open(a.check) as f:
            if f.read() != text:
                sys.exit("derive-defaults: %s differs from what the stores give; regenerate it"
                         % a.check)
        return
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
