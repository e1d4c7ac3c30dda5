// reduce-tune: the sweep of a segmented problem.
#include "tuner/segmented_sweep.h"

#include "kernels/segmented.h"
#include "tuner/eta.h"
#include "tuner/fast_check.h"
#include "tuner/hold.h"
#include "tuner/measure.h"
#include "tuner/sizes.h"
#include "tuner/input_ahead.h"
#include "tuner/offsets_seed.h"
#include "tuner/sum_prefix.h"
#include "tuner/reference_ahead.h"
#include "tuner/sweep_search.h"
#include "tuner/upload.h"
#include "tuner/user_check.h"
#include "runtime/lookup.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <set>

namespace reduce_tune {
namespace {

using Clock = std::chrono::steady_clock;

double now_s() { return std::chrono::duration<double>(Clock::now().time_since_epoch()).count(); }


/// An input that serves this many shapes or more gets prefix sums (SumPrefix) for their sum
/// references.
constexpr std::size_t kPrefixShapes = 3;

/// One shape's layout on the host and the device.
struct ShapeData {
  Segmentation seg;
};

// The elements of each result of `shape`: dense rows or columns, or offsets drawn from `seed`.
Segmentation segmentation(Problem problem, Shape shape, std::uint64_t seed) {
  Segmentation seg;
  seg.problem = problem;
  seg.shape = shape;
  if (problem == Problem::segments) seg.offsets = skewed_offsets(shape.count, shape.elements(), seed);
  else seg.stride = problem == Problem::rows ? shape.length : shape.count; // dense rows
  return seg;
}

// `seg` on the device: its offsets uploaded into `d_offsets` (grown where it is too small and
// kept from shape to shape), after the work queued on `after`, which may still read it.
ShapeData layout(Segmentation seg, cuda::Buffer& d_offsets, StagedUpload& upload, CUstream after) {
  ShapeData s;
  s.seg = std::move(seg);
  if (s.seg.problem == Problem::segments) {
    const std::size_t bytes = s.seg.offsets.size() * sizeof(std::int64_t);
    if (d_offsets.size() < bytes) {
      d_offsets = cuda::Buffer(); // freed before the larger one is made
      d_offsets = cuda::Buffer(bytes);
    }
    upload(d_offsets.get(), s.seg.offsets.data(), bytes, after);
  }
  return s;
}

} // namespace

void measure_segmented(const SweepOptions& o, const std::vector<CompileJob>& jobs, SweepSetup& setup,
                       SweepResult& res) {
  const cuda::DeviceInfo& info = setup.info;
  // By element count, then length (the order replay searches them in): the shapes of one element
  // count are measured one after the other on one input, generated and uploaded once.
  std::vector<Shape> shapes = o.shapes.empty() ? default_shapes(o.problem) : o.shapes;
  std::stable_sort(shapes.begin(), shapes.end(), [](Shape a, Shape b) {
    return std::pair(a.elements(), a.length) < std::pair(b.elements(), b.length);
  });
  const int reps = std::max(3, o.reps);
  // The evict-first twins after every plain configuration, so TwinFilter knows the plain ranks.
  std::vector<CompileJob> ordered = jobs;
  std::stable_partition(ordered.begin(), ordered.end(),
                        [](const CompileJob& j) { return !evict_first_twin_of(j.config); });
  cuda::Stream stream;
  const CUstream s = stream.get();
  std::vector<cuda::Event> ev_start(static_cast<std::size_t>(reps)), ev_stop(static_cast<std::size_t>(reps));
  const std::size_t flush_bytes = std::size_t(std::max<std::int64_t>(info.l2_bytes, 1 << 24));
  cuda::Buffer flush(o.hot ? 0 : flush_bytes);
  Workspace ws;

  // The points and their candidates, for the search's budget: the configurations the exhaustive
  // sweep measures there, as the replay counts them: those not pointless at the shape (for
  // offsets, counted before the layout is drawn, the rules of the longest segment aside), of which
  // evict-first twins at most TwinFilter::kKeep (it measures only the twins of its fastest plain
  // configurations). The search is still offered every twin. The exhaustive sweep counts every
  // configuration: it decides pointless ones and twins as it goes.
  const auto candidates_at = [&](DType d, Op op, Shape sh) {
    std::size_t plain = 0, twins = 0;
    for (const CompileJob& j : jobs)
      if (j.dtype == d && j.op == op && (o.search == Strategy::exhaustive || !pointless(j.config, sh)))
        ++(evict_first_twin_of(j.config) ? twins : plain);
    return o.search == Strategy::exhaustive ? plain + twins : plain + std::min(twins, TwinFilter::kKeep);
  };
  std::vector<std::pair<PointId, std::size_t>> points;
  for (DType d : o.dtypes)
    for (const Shape& sh : shapes)
      for (Op op : o.ops) points.emplace_back(PointId{d, op, o.problem, sh}, candidates_at(d, op, sh));
  SweepSearch search = [&] {
    PhaseTimer t(res.times.seeds_s);
    return sweep_search(o.search, o.budget, points, &setup.store, device_key(info));
  }();
  seed_first(search, o, points);
  const double seeds_before = res.times.seeds_s;
  const bool exhaustive = search.strategy() == Strategy::exhaustive;
  // Every point's input is read once by each repetition and the checked launch.
  Eta eta(double(reps + 1) / (std::max(info.peak_gbps(), 1.0) * 1e9));
  std::size_t total = 0, done = 0;
  for (const auto& [p, candidates] : points) {
    const std::size_t planned = search.limit(p, candidates);
    eta.plan(double(p.shape.elements()) * double(size_of(p.dtype)), planned);
    total += planned;
  }
  eta.start();

  // How many shapes share the input of `elements` elements.
  const auto shapes_of = [&](std::uint64_t elements) {
    return std::size_t(std::count_if(shapes.begin(), shapes.end(), [&](Shape sh) { return sh.elements() == elements; }));
  };
  // The input of (dtype, elements): its seed is its element count's (and the dtype's); the
  // offsets' are drawn from it and the shape, so the stored seed with the shape gives both.
  // A user reduction (rendered in sum's place) has no use for sum's prefix sums.
  const bool sums = std::find(o.ops.begin(), o.ops.end(), Op::sum) != o.ops.end() && !o.user &&
                    (o.problem == Problem::rows || o.problem == Problem::segments);
  // Supplied inputs are one a shape (check data): an input serves the shape it was given for.
  const auto spec_of = [&](DType d, Shape shape) {
    const std::uint64_t elements = shape.elements();
    InputSpec spec{d, elements, o.seed ^ (elements * 0x9e3779b97f4a7c15ull) ^ std::uint64_t(d),
                   two_input_ops(o.ops), sums && shapes_of(elements) >= kPrefixShapes, {}};
    if (o.check_data) spec.supplied = supplied_point(*o.check_data, d, shape);
    return spec;
  };
  InputAhead ahead;
  StagedUpload upload;
  // Buffers kept across shapes: the input (grown to the largest), the results and their
  // page-locked host copy (allocated once for the most results of any shape), the input check's.
  std::uint64_t most_results = 1;
  for (const Shape& sh : shapes) most_results = std::max(most_results, sh.count);
  // Results of up to 8 bytes each: the ops' result dtypes differ (kernels/ops.h).
  const std::size_t out_bytes = std::size_t(most_results) * 8;
  cuda::Buffer d_in, d_out, d_offsets;
  HostArray got;
  got.bytes.resize(out_bytes);
  std::unique_ptr<cuda::HostRegistration> pinned; // each check copies into it
  InputCheck input_check(setup.nvrtc, setup.loader.cache(), setup.loader.target(), s);
  std::vector<Reference> refs;
  UserExpected user_ref; // a user reduction's, in place of refs
  // The GPU's fast pass of the checked launches (off for the rest of the sweep if its kernels
  // fail to build: the CPU checks everything then).
  FastCheck fast(setup.nvrtc, setup.loader.cache(), setup.loader.target());
  // Every timed batch waits on the GPU until it is queued whole: no host delay is timed.
  Hold timed(setup.nvrtc, setup.loader.cache(), setup.loader.target(), Hold::kTimeoutS, o.hold);
  bool fast_off = false;
  // The second input of the ops of two (dot): other random data in the same layout, kept alike.
  const bool two = two_input_ops(o.ops);
  cuda::Buffer d_in2;
  HostArray data2;

  for (DType d : o.dtypes) {
    const std::size_t es = size_of(d);
    HostArray data;                    // the input of the shapes of `data_elements` elements
    std::uint64_t hash = 0, hash2 = 0; // its input_hash (and data2's)
    std::uint64_t data_elements = 0;
    Shape data_shape;                  // the shape it was loaded for, its first (supplied inputs: the one it serves)
    bool loaded = false;
    // The input is read back once it has served its shapes, not after each shape (a 1 GiB input
    // served two and a 64 MiB one 25), and at once after a wrong result, which a configuration
    // that wrote into its input would cause in the configurations after it. `covered`: the
    // shapes measured on it since it was uploaded, for the message.
    std::string covered;
    // The sum references of an input's rows or offsets shapes from its prefix sums, built with
    // the input where it serves kPrefixShapes shapes or more (one pass and 16 bytes an element,
    // which pay where shapes share the input), and used where exact (SumPrefix).
    SumPrefix prefix;
    bool prefix_built = false;
    // The input that has served its shapes (up to 1 GiB, and its prefix sums) is freed on a thread.
    const auto retire_input = [&] {
      PreparedInput done;
      done.data = std::move(data), done.data2 = std::move(data2), done.prefix = std::move(prefix);
      ahead.retire(std::move(done));
    };
    // The next input, taken from the input thread while the last shape of this one is measured,
    // so that the next shape's references can be made from it meanwhile.
    std::optional<PreparedInput> pending;
    InputSpec pending_spec;
    // The GPU check's data of the next shape's first op, made with its references (stage_ahead,
    // on their thread), and of this shape's (stage_now, swapped in when this shape took them).
    FastStage stage_ahead, stage_now;
    // The next shape's references, made while this one is measured (destroyed, so waited for,
    // before the inputs and stages above).
    ReferenceAhead refs_ahead;
    // The input of `sh` from the input thread; the next one (of this dtype, else the next one's
    // first; supplied inputs: the next shape's) is then started there.
    const auto take_input = [&](Shape sh) {
      const auto t_take = Clock::now();
      PreparedInput in = ahead.take(spec_of(d, sh));
      res.times.input_wait_s += std::chrono::duration<double>(Clock::now() - t_take).count();
      const auto later = std::find_if(shapes.begin(), shapes.end(), [&](Shape x) {
        return o.check_data ? std::pair(x.elements(), x.length) > std::pair(sh.elements(), sh.length)
                            : x.elements() > sh.elements();
      });
      const auto dt = std::find(o.dtypes.begin(), o.dtypes.end(), d);
      if (later != shapes.end()) ahead.start(spec_of(d, *later));
      else if (dt != o.dtypes.end() && dt + 1 != o.dtypes.end() && !shapes.empty())
        ahead.start(spec_of(*(dt + 1), shapes.front()));
      return in;
    };
    auto check_input = [&](bool last) {
      if (covered.empty()) return;
      PhaseTimer t(res.times.input_check_s);
      const std::string what = std::string(name(d)) + " " + covered;
      input_check(d_in.get(), data, what, hash);
      if (two) input_check(d_in2.get(), data2, what + " (y)", hash2);
      if (last) covered.clear();
    };
    for (const Shape& shape : shapes) {
      if (res.interrupted) break;
      const double bytes = double(shape.elements()) * double(es);
      std::size_t of_dtype = 0; // the measurements planned at this shape
      for (const auto& [p, candidates] : points)
        if (p.dtype == d && p.shape == shape) of_dtype += search.limit(p, candidates);
      std::size_t free_b = 0, total_b = 0;
      RT_CU(cuMemGetInfo(&free_b, &total_b));
      // What this shape needs beyond the buffers already held.
      const auto beyond = [](double need, std::size_t held) { return std::max(0.0, need - double(held)); };
      const double need = beyond(std::max(bytes, 16.0), d_in.size()) +
                          (two ? beyond(std::max(bytes, 16.0), d_in2.size()) : 0.0) +
                          beyond(double(out_bytes), d_out.size()) + (64 << 20);
      if (need > double(free_b)) {
        res.skipped.push_back({"*", std::string(name(d)), "*", shape.elements(),
                               "needs " + std::to_string(std::uint64_t(need) >> 20) + " MiB of GPU memory, " +
                                   std::to_string(free_b >> 20) + " MiB free"});
        done += of_dtype;
        eta.skipped(bytes, of_dtype);
        continue;
      }
      // The shape's segmentation and references where they were made ahead (waiting for them is
      // the reference's time).
      Segmentation made_ahead;
      const bool ahead_ready = [&] {
        PhaseTimer t(res.times.reference_s);
        return refs_ahead.take_segmentation(shape, made_ahead);
      }();
      if (ahead_ready) std::swap(stage_now, stage_ahead);
      const bool staged = ahead_ready && stage_now.shape == shape;
      const std::uint64_t elements = shape.elements();
      const std::uint64_t seed = o.check_data ? 0 : spec_of(d, shape).seed; // 0: a supplied input
      const bool new_input = !loaded || data_elements != elements || (o.check_data && data_shape != shape);
      if (new_input) check_input(true); // the previous input's shapes are done (input_check_s, not input_s)
      const auto t_data = Clock::now();
      // The seed of the offsets of a shape of this input (0: a supplied input).
      const auto seg_seed = [problem = o.problem](Shape sh, std::uint64_t seed) {
        return shape_seed(problem, sh, seed ^ (sh.count * 0x9e3779b97f4a7c15ull) ^ (sh.length << 20));
      };
      ShapeData sd;
      {
        const auto t_layout = Clock::now();
        sd = layout(ahead_ready ? std::move(made_ahead) : segmentation(o.problem, shape, seg_seed(shape, seed)),
                    d_offsets, upload, s);
        if (o.problem == Problem::segments) { // rows and columns have no layout to draw
          res.times.layout_s += std::chrono::duration<double>(Clock::now() - t_layout).count();
          ++res.times.layouts;
          res.times.layouts_ahead += ahead_ready;
        }
      }
      const std::uint64_t longest = longest_segment(sd.seg.offsets);
      if (sd.seg.input_elements() != elements)
        throw std::logic_error("a segmented shape's input is not its element count"); // Shape says it is
      if (new_input) {
        refs_ahead.wait(); // it reads the inputs about to be replaced
        {
          const bool taken = pending && pending_spec == spec_of(d, shape);
          PreparedInput in = taken ? std::move(*pending) : take_input(shape);
          pending.reset();
          retire_input(); // the previous one
          data = std::move(in.data), data2 = std::move(in.data2);
          prefix = std::move(in.prefix), prefix_built = in.prefix_built;
          hash = in.hash, hash2 = in.hash2;
        }
        data_elements = elements, data_shape = shape, loaded = true;
        const std::size_t in_bytes = std::max<std::size_t>(elements * es, 16);
        if (d_in.size() < in_bytes) {
          d_in = cuda::Buffer(); // freed before the larger one is made
          d_in = cuda::Buffer(in_bytes);
        }
        upload(d_in.get(), data.bytes.data(), elements * es, s);
        if (two) {
          if (d_in2.size() < in_bytes) {
            d_in2 = cuda::Buffer();
            d_in2 = cuda::Buffer(in_bytes);
          }
          upload(d_in2.get(), data2.bytes.data(), elements * es, s);
        }
        ++res.times.inputs;
      }
      if (d_out.size() < out_bytes) d_out = cuda::Buffer(out_bytes);
      if (!pinned) pinned = std::make_unique<cuda::HostRegistration>(got.bytes.data(), got.bytes.size());
      got.n = shape.count;
      SegmentedArgs args;
      args.in = d_in.get();
      args.offsets = d_offsets.get();
      args.out = d_out.get();
      args.shape = shape;
      args.stride = sd.seg.stride;
      res.times.input_s += std::chrono::duration<double>(Clock::now() - t_data).count();
      covered += (covered.empty() ? "" : ", ") + std::to_string(shape.count) + " x " + std::to_string(shape.length);

      for (Op op : o.ops) {
        got.dtype = o.user ? o.user->result_dtype(d) : result_dtype(op, d);
        const std::size_t rs = size_of(got.dtype);
        const bool op_two = describe(op).traits.two_inputs;
        args.in2 = op_two ? d_in2.get() : 0;
        // Where the prefix sums serve the op and the GPU check applies, its data are made straight
        // from them (stage_now) and the point's References only where its CPU check needs them
        // (refs_owed until then).
        bool refs_owed = false, use_stage = false, stage_made_ahead = false;
        // This point's References, made here (true where the prefix sums gave them).
        const auto make_refs = [&] {
          return point_references(data, &data2, prefix_built ? &prefix : nullptr, sd.seg, op, refs);
        };
        {
          PhaseTimer t(res.times.reference_s);
          if (o.user) {
            user_ref = o.check_data ? load_check_expected(*supplied_point(*o.check_data, d, shape))
                                    : user_expected(*o.user, data, sd.seg);
          } else {
            bool from_prefix = false;
            if (ahead_ready && refs_ahead.take(op, refs, from_prefix, refs_owed)) {
              ++res.times.references_ahead;
              use_stage = stage_made_ahead = staged && stage_now.op == op && stage_now.result == got.dtype;
            } else if (const bool tried = !fast_off && prefix_built;
                       tried && FastCheck::stage(prefix, sd.seg, op, got.dtype, fast.min_results(), stage_now)) {
              from_prefix = refs_owed = use_stage = true;
            } else {
              use_stage = tried && stage_now.decided; // refused whatever its References: not staged again
              from_prefix = make_refs();
            }
            res.times.prefix_points += from_prefix;
            res.times.prefix_straight += refs_owed;
          }
        }
        // Makes the References still owed (before anything reads them); returns its seconds, which
        // count as the reference's, not the phase's that asked for them.
        const auto make_owed = [&]() -> double {
          if (!refs_owed) return 0;
          const auto t0 = Clock::now();
          make_refs();
          refs_owed = false;
          ++res.times.references_on_demand;
          const double took = std::chrono::duration<double>(Clock::now() - t0).count();
          res.times.reference_s += took;
          return took;
        };
        // Then the next shape's, while this one is measured: from this input, or from the next
        // one, taken now from the input thread where it had this input's other shapes to be made
        // in (else taking it would wait for all of it, which the next upload waits for anyway).
        const Shape* next = &shape + 1;
        const bool same = next != shapes.data() + shapes.size() && next->elements() == elements;
        if (op == o.ops.front() && !o.user && !o.check_data && next != shapes.data() + shapes.size() &&
            (same || data_shape != shape)) {
          const InputSpec next_spec = spec_of(d, *next);
          if (!same && !(pending && pending_spec == next_spec)) {
            const auto t_take = Clock::now();
            pending = take_input(*next);
            pending_spec = next_spec;
            res.times.input_s += std::chrono::duration<double>(Clock::now() - t_take).count();
          }
          const HostArray& x = same ? data : pending->data;
          const HostArray* y = same ? &data2 : &pending->data2;
          const SumPrefix* sums = same ? (prefix_built ? &prefix : nullptr)
                                       : (pending->prefix_built ? &pending->prefix : nullptr);
          const std::uint64_t next_seed = seg_seed(*next, next_spec.seed);
          // The GPU check's data of its first op too, unless the fast pass is off.
          // Straight from the prefix sums where they serve it (its references then left unmade).
          ReferenceAhead::Then then;
          refs_ahead.wait(); // a shape skipped for memory did not take what it made
          stage_ahead.shape = Shape{0, 0};
          if (!fast_off) {
            then.straight = [&stage_ahead, d, first = o.ops.front(), least = fast.min_results()](
                                Op of, const SumPrefix& p, const Segmentation& sg) {
              return of == first && FastCheck::stage(p, sg, of, result_dtype(of, d), least, stage_ahead);
            };
            then.made = [&stage_ahead, d, first = o.ops.front(), least = fast.min_results()](
                            Op of, const std::vector<Reference>& r, const Segmentation& sg) {
              const bool refused = stage_ahead.decided && stage_ahead.shape == sg.shape && stage_ahead.op == of;
              if (of == first && !refused) FastCheck::stage(r, sg, of, result_dtype(of, d), least, stage_ahead);
            };
          }
          refs_ahead.start(*next, [problem = o.problem, nx = *next, next_seed] { return segmentation(problem, nx, next_seed); },
                           x, y, sums, o.ops, std::move(then));
        }
        ++res.times.points;
        bool fast_tried = false; // the fast pass is prepared at the point's first checked launch
        Target t{d, op, info.cc(), info.max_threads_per_block, info.sm_count, o.allow_unsafe, o.problem};
        t.user = o.user.get();
        const db::OpKey op_key = o.user ? db::OpKey::user(o.user->hash) : db::OpKey(op);
        // Points this run already holds (a restarted worker), or any run (--resume), are done; their
        // times rank the twins and set the early stops as if this sweep had measured them.
        std::set<std::string> stored, sweep_keys;
        if (o.resume || o.run_id) // the keys of every job: only where stored rows are read
          for (const CompileJob& j : ordered)
            if (j.dtype == d && j.op == op) sweep_keys.insert(key(j.config));
        std::vector<db::Measurement> held;
        if (o.resume || o.run_id)
          for (db::Measurement& m : setup.store.measurements(info.uuid, {d, op_key, o.problem, shape}))
            if (o.resume || m.run_id == o.run_id) {
              stored.insert(m.key);
              held.push_back(std::move(m));
            }
        TwinFilter twins;
        twins.stored(held, sweep_keys);
        double best_us = 1e300;
        for (const db::Measurement& m : held)
          if (m.valid && sweep_keys.count(m.key)) best_us = std::min(best_us, m.median_us);
        // The point's measurements are committed together when it ends (one transaction, not
        // one a measurement), and before a fault ends the sweep: a crash or kill -9 loses at most
        // the point in progress, which a restarted worker measures again.
        std::vector<db::Measurement> pending;
        auto commit = [&] {
          if (pending.empty()) return;
          PhaseTimer t(res.times.store_s);
          setup.store.add_measurements(res.run_id, pending);
          pending.clear();
        };
        auto keep = [&](const db::Measurement& m) {
          pending.push_back(m);
          ++res.times.measured;
          res.measurements.push_back(m);
          eta.measured(bytes);
          if (setup.progress)
            setup.progress({.done = done, .total = total, .phase = "stored", .key = m.key, .dtype = d,
                            .op = op, .problem = o.problem, .count = shape.count, .n = shape.length,
                            .elapsed_s = now_s() - setup.started_s, .eta_s = eta.remaining_s()});
        };
        const PointId point{d, op, o.problem, shape};
        auto skip = [&](const std::string& k, const std::string& why) {
          res.skipped.push_back({k, std::string(name(d)), std::string(name(op)), shape.elements(),
                                 "pointless at " + std::to_string(shape.count) + " x " +
                                     std::to_string(shape.length) + ": " + why});
        };
        // A search chooses among the configurations that are not pointless at the shape (and
        // ranks the twins itself); the exhaustive sweep decides that one by one, in order.
        std::vector<const CompileJob*> point_jobs;
        std::vector<Config> candidates;
        for (const CompileJob& j : ordered) {
          if (j.dtype != d || j.op != op) continue;
          if (!exhaustive)
            if (const auto why = pointless(j.config, shape, longest)) {
              skip(key(j.config), *why);
              continue;
            }
          point_jobs.push_back(&j), candidates.push_back(j.config);
        }
        // One candidate: its time (infinity: it failed its check; NaN: not measured).
        auto measure_one = [&](std::size_t at) -> double {
          const CompileJob& j = *point_jobs[at];
          const std::string k = key(j.config);
          ++done;
          if (stored.count(k)) {
            eta.skipped(bytes);
            return NAN;
          }
          std::optional<std::string> why = pointless(j.config, shape, longest);
          if (!why && exhaustive && !o.every_twin) why = twins.skip(j.config);
          if (why) {
            skip(k, *why);
            eta.skipped(bytes);
            return NAN;
          }
          if (setup.progress)
            setup.progress({.done = done, .total = total, .phase = "measure", .key = k, .dtype = d,
                            .op = op, .problem = o.problem, .count = shape.count, .n = shape.length,
                            .elapsed_s = now_s() - setup.started_s, .eta_s = eta.remaining_s()});
          db::Measurement m;
          m.key = k;
          m.variant = j.config.variant;
          m.block = j.config.block, m.unroll = j.config.unroll, m.vec = j.config.vec, m.grid = j.config.grid;
          m.tail = name(j.config.tail), m.finish = name(j.config.finish);
          m.dtype = d, m.op = op, m.problem = o.problem;
          if (o.user) m.user = o.user->hash;
          m.count = shape.count, m.n = shape.length;
          m.seed = seed;
          m.cold = !o.hot;
          try {
            const Kernel kernel = [&] {
              PhaseTimer t(res.times.load_s);
              Kernel k = j.user ? setup.loader.load(j.config, d, j.user) : setup.loader.load(j.config, d, op);
              load_fully(k); // not at its first launch: that is held
              return k;
            }();
            const SegmentedPlan p = segmented_plan(j.config, t, shape);
            ws.reserve(p);
            auto queue_timed = [&](int r) {
              if (!o.hot) RT_CU(cuMemsetD32Async(flush.get(), unsigned(r), flush_bytes / 4, s));
              ev_start[r].record(s);
              enqueue(kernel, p, args, ws, s);
              ev_stop[r].record(s);
            };
            if (!fast_tried && !fast_off) {
              fast_tried = true;
              PhaseTimer pt(res.times.check_setup_s);
              try {
                if (!o.user && !use_stage) res.times.check_setup_s -= make_owed();
                if (o.user             ? fast.prepare(*o.user, d, user_ref, sd.seg)
                    : use_stage        ? fast.prepare(stage_now)
                                       : fast.prepare(refs, sd.seg, op, got.dtype)) {
                  ++res.times.check_setups;
                  res.times.check_staged += stage_made_ahead && !o.user;
                }
              } catch (const cuda::CudaError&) {
                throw;
              } catch (const std::exception&) { // the compare kernels do not build: the CPU checks all
                fast.clear();
                fast_off = true;
              }
            }
            // The checked launch, poisoned output first, timed (and held) like a repetition. The
            // GPU's fast pass decides where it applies and passes; else the results are read back
            // and the CPU check decides (and names the first wrong result). Both wait for the stream.
            const auto t_val = Clock::now();
            RT_CU(cuMemsetD8Async(d_out.get(), 0xA5, shape.count * rs, s));
            timed.hold(s);
            queue_timed(0);
            timed.release();
            const auto depth = [&](std::uint64_t len) { return segment_depth(j.config, t, shape, len); };
            const std::optional<FastVerdict> fv =
                fast.ready() ? fast.run(d_out.get(), depth, s) : std::nullopt;
            Check chk;
            double owed_s = 0; // the References made here for the CPU check: the reference's time
            if (fv && fv->passed()) {
              chk.ok = true; // as the CPU check's pass: no texts
              ++res.times.gpu_checked;
            } else {
              RT_CU(cuMemcpyDtoHAsync(got.bytes.data(), d_out.get(), shape.count * rs, s));
              if (!o.user) owed_s = make_owed(); // while the results are copied
              RT_CU(cuStreamSynchronize(s));
              chk = o.user ? check_user_segmented(*o.user, d, user_ref, got, sd.seg, depth)
                           : check_segmented(refs, got, sd.seg, op, depth);
              ++res.times.cpu_checked;
              if (fv) ++res.times.cpu_after_gpu;
            }
            res.times.validate_s += std::chrono::duration<double>(Clock::now() - t_val).count() - owed_s;
            if (!record_check(chk, m)) {
              keep(m);
              commit(); // stored before the input check may end the sweep
              check_input(false);
              return INFINITY;
            }
            const auto t_time = Clock::now();
            // Its hold timed out: timed again (its results were checked).
            if (timed.timed_out())
              timed.rerun(s, [&] { queue_timed(0); }, [&] { RT_CU(cuEventSynchronize(ev_stop[0].get())); });
            std::vector<float> ms;
            // Repetitions [from, to): queued back to back behind one hold.
            auto batch = [&](int from, int to) {
              timed.batch(s, [&] { for (int r = from; r < to; ++r) queue_timed(r); },
                          [&] { RT_CU(cuEventSynchronize(ev_stop[to - 1].get())); });
              for (int r = from; r < to; ++r) ms.push_back(ev_stop[r].since(ev_start[r]));
            };
            const float check_ms = ev_stop[0].since(ev_start[0]);
            if (check_ms * 1e3 > std::max(4 * best_us, kSingleTimingUs)) {
              ms.push_back(check_ms);
            } else {
              batch(0, 3);
              if (median(ms) * 1e3 <= 4 * best_us) {
                batch(3, std::min(5, reps));
                if (median(ms) * 1e3 <= 1.25 * best_us) batch(std::min(5, reps), reps);
              }
            }
            res.times.timing_s += std::chrono::duration<double>(Clock::now() - t_time).count();
            record_times(ms, 0, bytes * inputs_of(op), info.peak_gbps(), m);
            best_us = std::min(best_us, m.median_us);
            twins.measured(j.config, m.median_us);
          } catch (const CompileError& e) {
            // Only where compiling lazily: the compile pass reports the others before measuring.
            res.skipped.push_back({k, std::string(name(d)), std::string(name(op)), shape.elements(),
                                   std::string("compile failed: ") + e.what()});
            return NAN;
          } catch (const cuda::CudaError& e) {
            m.valid = false;
            m.error = e.what();
            keep(m);
            commit();
            if (!o.run_id) setup.store.end_run(res.run_id, "failed");
            throw; // the context is lost: the supervisor restarts the worker
          }
          keep(m);
          return m.median_us;
        };
        PastDeadline past(o.deadline_s);
        auto measure_counted = [&](std::size_t at) { return past.count(measure_one(at)); };
        const std::size_t visited = search.run(point, candidates, measure_counted,
                                               [&] { return (setup.stop && setup.stop()) || past(); });
        commit();
        if (setup.stop && setup.stop()) res.interrupted = true;
        // What the search left unmeasured (or found pointless before it began) is done too.
        const auto counted = std::find_if(points.begin(), points.end(), [&](const auto& pc) {
          return !(pc.first < point) && !(point < pc.first);
        });
        const std::size_t planned = counted == points.end() ? 0 : search.limit(point, counted->second);
        if (visited < planned) {
          done += planned - visited;
          eta.skipped(bytes, planned - visited);
        }
        if (res.interrupted) break;
      }
    }
    check_input(true); // the dtype's last input
    retire_input();
  }
  res.times.seeds_s = seeds_before + search.seeding_s();
  res.times.data_s = res.times.input_s + res.times.reference_s;
  res.times.input_checks = input_check.count();
  res.times.inputs_hashed = input_check.hashed();
  res.times.inputs_ahead = ahead.ahead();
  res.times.held_batches = timed.holds(), res.times.hold_reruns = timed.reruns();
  res.times.hold_unprotected = timed.unprotected();
  res.times.upload_s = upload.seconds(), res.times.upload_bytes = upload.bytes(), res.times.upload_staged_bytes = upload.staged_bytes();
}

} // namespace reduce_tune
