// reduce-tune: configuration lookup from the store, graded, with the built-in default.
#include "runtime/lookup.h"

#include "runtime/defaults.h"

#include "kernels/catalogue.h"
#include "kernels/driver.h"
#include "kernels/ops.h"
#include "kernels/segmented.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <utility>
#include <vector>

namespace reduce_tune {
namespace {

/// One device's stored measurements for (dtype, op, problem), held by the store's rows in memory
/// (runtime/store_rows.h) or by the lookup's own copy of a store's (Rows).
struct Source {
  std::string uuid, name;
  std::vector<const db::Measurement*> rows;
  double distance = 0; ///< gpu_distance from the GPU looked up for
};

/// The rows a lookup read from a store (its queries return copies): kept at stable addresses for
/// the lookup's Sources. Rows in memory (StoreRows) are not copied.
using Rows = std::deque<db::Measurement>;

/// f(m) for each of the rows of device `uuid` in `s` that `filter` passes, in the store's order.
template <typename F>
void for_rows(const db::Store& s, const std::string& uuid, const db::MeasurementFilter& filter, Rows& keep, F&& f) {
  for (db::Measurement& m : s.measurements(uuid, filter)) f(keep.emplace_back(std::move(m)));
}
template <typename F>
void for_rows(const StoreRows& s, const std::string& uuid, const db::MeasurementFilter& filter, Rows&, F&& f) {
  s.each(uuid, filter, f);
}

/// A measurement and the device it came from.
struct Row {
  const db::Measurement* m;
  const Source* source;
  bool other_family = false; ///< of an op outside the call's family (OpDescription::family)
};

/// A usable row and the configuration its key names.
struct Pick {
  Row row;
  Config config;
};

} // namespace

Config translated(Config c, DType from, DType to) {
  const std::size_t bytes = std::size_t(c.vec) * size_of(from);
  if (bytes % size_of(to) == 0) c.vec = int(bytes / size_of(to));
  return c;
}

namespace {

/// Why a stored row cannot be used for `t` under `req`, or nullopt (and its configuration in *out).
/// A row of another dtype (the related grade) is tried with its vector width translated, then as
/// it is.
std::optional<std::string> unusable(const db::Measurement& m, const Target& t,
                                    const Requirements& req, Config* out) {
  std::string why;
  std::optional<Config> c = parse_key(m.key, &why);
  if (!c) return "not a configuration this build knows: " + why;
  if (m.dtype != t.dtype) {
    const Config scaled = translated(*c, m.dtype, t.dtype);
    if (!(scaled == *c) && !invalid_reason(scaled, t)) c = scaled;
  }
  if (auto why = config_unusable(*c, t, req)) return why;
  *out = *c;
  return std::nullopt;
}

/// The rows passed over, as "key (reason)", each once, in the order met.
class PassedOver {
public:
  void add(const std::string& key, const std::string& reason) {
    if (seen_.insert(key).second) items_.push_back(key + " (" + reason + ")");
  }
  bool empty() const { return items_.empty(); }
  std::string text() const {
    constexpr std::size_t kShown = 5;
    std::string s;
    for (std::size_t i = 0; i < std::min(items_.size(), kShown); ++i)
      s += (i ? "; " : "") + items_[i];
    if (items_.size() > kShown) s += "; and " + std::to_string(items_.size() - kShown) + " more";
    return s;
  }

private:
  std::set<std::string> seen_;
  std::vector<std::string> items_;
};

/// The fastest usable row at the shape nearest to `at` that has one, rows of the call's op family
/// (OpDescription::family) before the others' there. Rows met before it (at nearer shapes, or
/// before it at its shape) are recorded in `passed`. `valid_rows` counts the candidates.
std::optional<Pick> pick(std::span<const Source> sources, Shape at, const Target& t,
                         const Requirements& req, PassedOver& passed, std::size_t& valid_rows) {
  const auto order = [](Shape a, Shape b) {
    return std::pair(a.count, a.length) < std::pair(b.count, b.length);
  };
  std::map<Shape, std::vector<Row>, decltype(order)> by_shape(order);
  for (const Source& s : sources)
    for (const db::Measurement* m : s.rows)
      if (m->valid && std::isfinite(m->median_us))
        by_shape[m->shape()].push_back({m, &s, !t.user && !same_family(m->op, t.op)});
  std::vector<Shape> shapes;
  for (auto& [shape, rows] : by_shape) {
    shapes.push_back(shape);
    valid_rows += rows.size();
    // The call's op family first (a related op's rows: std takes var's before argmax's, which
    // may be faster for argmax and slower for std); then fastest first, equal medians in the
    // store's order (oldest first), as best() does.
    std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
      return std::pair(a.other_family, a.m->median_us) < std::pair(b.other_family, b.m->median_us);
    });
  }
  db::order_by_nearness(shapes, at, t.problem);
  for (const Shape shape : shapes)
    for (const Row& r : by_shape[shape]) {
      Config c;
      std::optional<std::string> why = unusable(*r.m, t, req, &c);
      if (!why && t.problem == Problem::segments && at.length == 0) why = needs_mean(c);
      if (!why) why = shape_invalid(c, t, at);
      if (why) {
        passed.add(r.m->key, *why);
        continue;
      }
      return Pick{r, c};
    }
  return std::nullopt;
}

/// Whether op b's configurations serve op a (the related grade): accumulators of one size that
/// combine alike (both a struct or neither; both with a scalar atomic finish or neither: min takes
/// sum's rows, count_nonzero never logsumexp's; argmax's keyed atomic and var's shifted one are a
/// struct's, and each may take the other's rows, whose atomic finishes the lookup passes over
/// where they are invalid for it).
bool alike(Op a, Op b, DType dtype) {
  const OpTraits &x = describe(a).traits, &y = describe(b).traits;
  const auto scalar_atomic = [](const OpTraits& o) { return o.atomic != OpAtomic::none && !struct_atomic(o.atomic); };
  return accumulator_bytes(a, dtype) == accumulator_bytes(b, dtype) && x.compound == y.compound &&
         scalar_atomic(x) == scalar_atomic(y);
}

/// Whether the shipped rows of `d` are this GPU's own (the shipped grade): the same model name
/// and architecture, and the same SM count where both are known.
bool same_model(const DeviceKey& device, const db::DeviceRecord& d) {
  return !device.name.empty() && d.name == device.name && d.cc_major == device.cc_major &&
         d.cc_minor == device.cc_minor &&
         (device.sm_count <= 0 || d.sm_count <= 0 || d.sm_count == device.sm_count);
}

/// Why the shipped tuning does not serve `device`, or nullopt where it may: it holds the GPU's
/// model only at another SM count (a GPU limited to part of its SMs, e.g. a CUDA MPS client).
/// Its rows are then neither this GPU's own nor a better guess than the defaults: on an H100
/// limited to 32 and 66 SMs, the built-in defaults, derived per SM with sweeps at those counts,
/// came nearer each point's best than the H100's 132-SM rows, and than the fastest shipped row of
/// the architecture at every worst point and all medians but one (docs/DEFAULTS.md).
template <typename S>
std::optional<std::string> shipped_for_other_size(const S& shipped, const DeviceKey& device) {
  if (device.name.empty() || device.sm_count <= 0) return std::nullopt;
  int sms = 0;
  for (const db::DeviceRecord& d : shipped.devices()) {
    if (same_model(device, d)) return std::nullopt;
    if (d.name == device.name && d.cc_major == device.cc_major && d.cc_minor == device.cc_minor)
      sms = d.sm_count;
  }
  if (sms <= 0) return std::nullopt;
  return "the shipped tuning of " + device.name + " is for " + std::to_string(sms) +
         " SMs, this GPU has " + std::to_string(device.sm_count) +
         ": the built-in defaults, derived per SM, serve it";
}

/// Whether a row tuned at `tuned` answers `at` exactly.
bool exact(Shape tuned, Shape at) {
  return at.length == 0 ? tuned.count == at.count : tuned == at;
}

Choice choice_of(const Pick& p, Match match, const PassedOver& passed) {
  Choice c;
  c.config = p.config;
  c.match = match;
  c.problem = p.row.m->problem;
  c.tuned_shape = p.row.m->shape();
  c.tuned_n = c.problem == Problem::array ? c.tuned_shape.length : c.tuned_shape.elements();
  c.median_us = p.row.m->median_us;
  c.gbps = p.row.m->gbps;
  c.device_name = p.row.source->name;
  if (!passed.empty()) c.note = "stored configurations passed over: " + passed.text();
  return c;
}

} // namespace

std::string_view name(Match m) {
  switch (m) {
  case Match::exact: return "exact";
  case Match::nearest_size: return "nearest_size";
  case Match::shipped: return "shipped";
  case Match::same_arch: return "same_arch";
  case Match::carried: return "carried";
  case Match::related: return "related";
  case Match::builtin: return "builtin";
  }
  return "?";
}

DeviceKey device_key(const cuda::DeviceInfo& info) {
  DeviceKey k;
  k.uuid = info.uuid;
  k.name = info.name;
  k.cc_major = info.cc_major;
  k.cc_minor = info.cc_minor;
  k.max_block = info.max_threads_per_block;
  k.sm_count = info.sm_count;
  k.l2_bytes = info.l2_bytes;
  k.peak_gbps = info.peak_gbps();
  return k;
}

DeviceKey device_key(const db::DeviceRecord& d) {
  DeviceKey k;
  k.uuid = d.uuid;
  k.name = d.name;
  k.cc_major = d.cc_major;
  k.cc_minor = d.cc_minor;
  k.sm_count = d.sm_count;
  k.l2_bytes = d.l2_bytes;
  k.peak_gbps = d.peak_gbps;
  return k;
}

Shape lookup_point(Shape shape) {
  return {std::bit_floor(std::max<std::uint64_t>(shape.count, 1)),
          shape.length ? std::bit_floor(shape.length) : 0};
}

std::optional<std::string> config_unusable(const Config& c, const Target& t, const Requirements& req) {
  if (valid_wide_only(c, t))
    return "measured with a float32 result (an atomic finish of a " + std::string(name(t.dtype)) +
           " sum); this call's result has the element type";
  if (auto reason = invalid_reason(c, t)) return "invalid on this device: " + *reason;
  if (req.deterministic && !deterministic(c, t))
    return "not deterministic (floating-point atomic finish)";
  if (!req.allow_in_place && find_variant(c.variant)->in_place)
    return "works in place (in-place variants not allowed)";
  if (req.device_result && c.finish == Finish::host)
    return "finishes on the host (the result must stay on the device)";
  return std::nullopt;
}

Target target_of(const DeviceKey& device, DType dtype, Op op, Problem problem, const Requirements& req) {
  Target t;
  t.dtype = dtype;
  t.op = op;
  t.problem = problem;
  t.cc = device.cc_major * 10 + device.cc_minor;
  t.max_block = device.max_block;
  t.sm_count = device.sm_count;
  t.wide_result = req.wide_result;
  t.user = req.user;
  return t;
}

double gpu_distance(const DeviceKey& a, const db::DeviceRecord& b) {
  // |log2| of a ratio: each factor of 2 apart counts 1; a figure unknown on either side counts 1.
  const auto apart = [](double x, double y) { return x > 0 && y > 0 ? std::abs(std::log2(x / y)) : 1.0; };
  return apart(a.sm_count, b.sm_count) + apart(a.peak_gbps, b.peak_gbps) +
         apart(double(a.l2_bytes), double(b.l2_bytes)) + std::abs(a.cc_major - b.cc_major) +
         (a.cc_major == b.cc_major ? 0.25 * (a.cc_minor != b.cc_minor) : 0.0);
}

namespace {

// lookup() over stores or their rows in memory (runtime/store_rows.h): S has devices() and
// measurements(uuid, filter).
template <typename S>
Choice lookup_in(const S* store, const S* shipped, const DeviceKey& device, DType dtype, Op op,
                 Problem problem, Shape shape, const Requirements& req, const std::string& why_none) {
  shape.count = std::max<std::uint64_t>(shape.count, 1);
  std::string other_size; // why the shipped tuning is set aside, where it is
  if (shipped)
    if (auto why = shipped_for_other_size(*shipped, device)) other_size = *why, shipped = nullptr;
  if (!store && !shipped)
    return builtin_choice(problem, dtype, op, shape, req, device, other_size.empty() ? why_none : other_size);
  const Target t = target_of(device, dtype, op, problem, req);

  // This GPU in the user's store; the same model in the shipped one; other GPUs of the
  // architecture in either. `related`: their rows of the problem for another dtype or op, by rank
  // (0: the same dtype; then 1 + |log2| of the element sizes' ratio: a float64 call takes 4-byte
  // rows before 2-byte ones, whose times are for half the bytes), read only where none of this
  // call's own is usable.
  // kCarried: GPUs of other compute capabilities, the most similar first (gpu_distance); their
  // grids are in blocks per SM, so a configuration carries to another SM count as it is.
  enum Tier { kOwn, kModel, kArch, kCarried, kTiers };
  constexpr int kRanks = 4; // element sizes 2, 4 and 8
  const auto rank = [&](const db::Measurement& m) {
    if (m.dtype == dtype) return 0;
    const std::size_t a = size_of(m.dtype), b = size_of(dtype);
    return int(std::bit_width(std::max(a, b) / std::min(a, b))); // 1, 2 or 3
  };
  Rows kept; // a store's rows the Sources below point into
  // alike(o, op, dtype) for each op o, asked once.
  std::vector<signed char> alike_of(op_descriptions().size(), -1);
  const auto alike_op = [&](Op o) {
    signed char& a = alike_of.at(std::size_t(o));
    if (a < 0) a = alike(o, op, dtype);
    return a == 1;
  };
  // Rows of ranks [0, ranks) into into[rank][tier]: this call's own (rank 0 only), or the related.
  const auto gather = [&](bool related, int ranks, std::vector<Source> (&into)[kRanks][kTiers]) {
    db::MeasurementFilter filter;
    filter.problem = problem;
    if (!related) filter.dtype = dtype, filter.op = op;
    for (const auto& [s, is_shipped] : {std::pair(store, false), std::pair(shipped, true)}) {
      if (!s) continue;
      for (const db::DeviceRecord& d : s->devices()) {
        const bool same_arch = d.cc_major == device.cc_major && d.cc_minor == device.cc_minor;
        const int tier = !is_shipped && d.uuid == device.uuid      ? kOwn
                         : is_shipped && same_model(device, d)     ? kModel
                         : same_arch                               ? kArch
                                                                   : kCarried;
        const std::string source = is_shipped ? d.name + " (shipped)" : d.name;
        for (int r = 0; r < ranks; ++r) into[r][tier].push_back({d.uuid, source, {}, gpu_distance(device, d)});
        for_rows(*s, d.uuid, filter, kept, [&](const db::Measurement& m) {
          const int r = rank(m);
          if ((related && m.dtype == dtype && m.op == op) || r >= ranks) return;
          // Another op's rows only where its accumulator, on this call's dtype, is as large as
          // this op's (the partials, shared memory and registers a configuration was tuned
          // with: argmax's 16-byte value and index never takes a sum's 4-byte rows) and combines
          // alike (a struct, or the same atomic): count_nonzero's 8-byte atomic add never takes
          // logsumexp's rows, tuned among mappings without atomics.
          if (related && m.op != op && !alike_op(m.op)) return;
          into[r][tier].back().rows.push_back(&m);
        });
      }
    }
    for (auto& tiers : into)
      std::stable_sort(tiers[kCarried].begin(), tiers[kCarried].end(),
                       [](const Source& a, const Source& b) { return a.distance < b.distance; });
  };
  // The carried tier one GPU at a time, the most similar first: its nearest shape, before
  // another GPU's.
  const auto pick_carried = [&](const std::vector<Source>& sources, PassedOver& over, std::size_t& rows) {
    for (const Source& one : sources)
      if (auto p = pick(std::span(&one, 1), shape, t, req, over, rows)) return p;
    return std::optional<Pick>();
  };

  std::vector<Source> mine[kRanks][kTiers];
  gather(false, 1, mine);
  PassedOver passed;
  std::size_t valid_rows = 0;
  if (auto p = pick(mine[0][kOwn], shape, t, req, passed, valid_rows))
    return choice_of(*p, exact(p->row.m->shape(), shape) ? Match::exact : Match::nearest_size, passed);
  if (auto p = pick(mine[0][kModel], shape, t, req, passed, valid_rows))
    return choice_of(*p, Match::shipped, passed);
  if (auto p = pick(mine[0][kArch], shape, t, req, passed, valid_rows))
    return choice_of(*p, Match::same_arch, passed);
  {
    PassedOver unused; // rows invalid on this architecture are not this call's to report
    if (auto p = pick_carried(mine[0][kCarried], unused, valid_rows)) {
      Choice c = choice_of(*p, Match::carried, passed);
      c.note = "carried from " + p->row.source->name + (c.note.empty() ? "" : "; " + c.note);
      return c;
    }
  }
  // Tuned for another op or dtype of the problem: the same dtype first (another op streams the
  // same bytes), then dtypes of its element size, then the nearest sizes (vector width translated
  // in unusable()); each from this GPU, the same model, the architecture, in that order.
  // The 1-D reduction stops at dtypes of the call's size: its built-in default is near CUB, and
  // another size's rows were not reliably better (H100, fresh install: float64 max from the
  // float32 sums' data-sized grids 0.65-0.77x at 2^24-2^26, float64 sum 0.85-1.17x;
  // docs/history/), where the segmented defaults are one mapping for every shape.
  const int ranks = problem == Problem::array ? 2 : kRanks;
  std::vector<Source> related[kRanks][kTiers];
  gather(true, ranks, related);
  for (int r = 0; r < ranks; ++r)
    for (int tier = kOwn; tier < kTiers; ++tier) {
      PassedOver unused; // other dtypes' and ops' rows are not this call's to report
      std::size_t rows = 0;
      if (auto p = tier == kCarried ? pick_carried(related[r][tier], unused, rows)
                                    : pick(related[r][tier], shape, t, req, unused, rows)) {
        Choice c = choice_of(*p, Match::related, passed);
        c.note = "tuned for " + std::string(name(p->row.m->dtype)) + " " +
                 std::string(name(p->row.m->op)) +
                 (tier == kCarried ? " on " + p->row.source->name : std::string()) +
                 (c.note.empty() ? "" : "; " + c.note);
        return c;
      }
    }

  std::string where(name(dtype));
  where += " " + std::string(name(op));
  if (problem != Problem::array) where += " " + std::string(name(problem));
  where += " on this GPU or any other";
  const std::string also = other_size.empty() ? "" : "; " + other_size;
  if (valid_rows == 0)
    return builtin_choice(problem, dtype, op, shape, req, device, "no tuning for " + where + also);
  return builtin_choice(problem, dtype, op, shape, req, device,
                        "no stored configuration for " + where + " is usable here: passed over " +
                            passed.text() + also);
}

} // namespace

Choice lookup(const db::Store* store, const db::Store* shipped, const DeviceKey& device, DType dtype,
              Op op, Problem problem, Shape shape, const Requirements& req, const std::string& why_none) {
  return lookup_in(store, shipped, device, dtype, op, problem, shape, req, why_none);
}

Choice lookup_rows(const StoreRows* store, const StoreRows* shipped, const DeviceKey& device, DType dtype,
                   Op op, Problem problem, Shape shape, const Requirements& req, const std::string& why_none) {
  return lookup_in(store, shipped, device, dtype, op, problem, shape, req, why_none);
}

std::optional<Choice> lookup_own(const db::Store* store, const db::Store* shipped, const DeviceKey& device,
                                 DType dtype, const db::OpKey& op, Problem problem, Shape shape,
                                 const Requirements& req) {
  shape.count = std::max<std::uint64_t>(shape.count, 1);
  const Target t = target_of(device, dtype, op.builtin().value_or(Op::sum), problem, req);
  enum Tier { kOwn, kModel, kArch, kTiers };
  Rows kept; // the rows the Sources below point into
  std::vector<Source> tiers[kTiers];
  db::MeasurementFilter filter;
  filter.dtype = dtype, filter.op = op, filter.problem = problem;
  for (const auto& [s, is_shipped] : {std::pair(store, false), std::pair(shipped, true)}) {
    if (!s) continue;
    for (const db::DeviceRecord& d : s->devices()) {
      if (d.cc_major != device.cc_major || d.cc_minor != device.cc_minor) continue;
      const int tier = !is_shipped && d.uuid == device.uuid                                   ? kOwn
                       : is_shipped && !device.name.empty() && d.name == device.name ? kModel
                                                                                       : kArch;
      Source src{d.uuid, is_shipped ? d.name + " (shipped)" : d.name, {}, 0};
      for_rows(*s, d.uuid, filter, kept, [&](const db::Measurement& m) { src.rows.push_back(&m); });
      if (!src.rows.empty()) tiers[tier].push_back(std::move(src));
    }
  }
  PassedOver passed;
  std::size_t valid_rows = 0;
  if (auto p = pick(tiers[kOwn], shape, t, req, passed, valid_rows))
    return choice_of(*p, exact(p->row.m->shape(), shape) ? Match::exact : Match::nearest_size, passed);
  if (auto p = pick(tiers[kModel], shape, t, req, passed, valid_rows)) return choice_of(*p, Match::shipped, passed);
  if (auto p = pick(tiers[kArch], shape, t, req, passed, valid_rows)) return choice_of(*p, Match::same_arch, passed);
  return std::nullopt;
}

Choice lookup(const db::Store& store, const DeviceKey& device, DType dtype, Op op, Problem problem,
              Shape shape, const Requirements& req) {
  return lookup(&store, nullptr, device, dtype, op, problem, shape, req);
}

Choice lookup(const db::Store& store, const DeviceKey& device, DType dtype, Op op,
              std::uint64_t n, const Requirements& req) {
  return lookup(store, device, dtype, op, Problem::array, Shape{1, std::max<std::uint64_t>(n, 1)},
                req);
}

} // namespace reduce_tune
