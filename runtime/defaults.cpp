// reduce-tune: the built-in defaults: the generated table of shape classes, and the checks that
// make its choice valid for the device and the call's requirements.
#include "runtime/defaults.h"

#include "kernels/catalogue.h"
#include "kernels/segmented.h"
#include "kernels/values.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <optional>
#include <utility>

namespace reduce_tune {
namespace {

constexpr int kOpen = kDefaultOpen;

constexpr DefaultClass kClasses[] = {
#include "runtime/defaults_table.inc"
};

/// The table's derivation measured GPUs of 132 SMs; a key without one is taken as such.
constexpr int kReferenceSms = 132;

/// Whether 2^lo <= x < 2^hi.
bool within(double x, const int (&bound)[2]) {
  return x >= std::ldexp(1.0, bound[0]) && x < std::ldexp(1.0, bound[1]);
}

/// The Target a configuration is checked against for a call, as lookup() builds it.
Target target_for(Problem problem, DType dtype, Op op, const Requirements& req,
                  const DeviceKey& device) {
  Target t = target_of(device, dtype, op, problem, req);
  if (t.sm_count <= 0) t.sm_count = kReferenceSms;
  // A float32 result is asked of bf16 and f16 1-D reductions only (Reducer: result_kind).
  t.wide_result = req.wide_result && is_half(dtype) && problem == Problem::array;
  return t;
}

/// Whether `c` may serve the call: valid for the device, meets `req`, and (offsets whose mean is
/// unknown) needs no mean length.
bool serves(const Config& c, const Target& t, const Requirements& req, Shape at) {
  if (invalid_reason(c, t)) return false;
  if (req.deterministic && !deterministic(c, t)) return false;
  if (req.device_result && c.finish == Finish::host) return false;
  if (!req.allow_in_place && find_variant(c.variant)->in_place) return false;
  if (t.problem == Problem::segments && at.length == 0 && needs_mean(c)) return false;
  if (shape_invalid(c, t, at)) return false;
  return true;
}

/// A table key for the call's dtype: the vector width scaled to load the same bytes as the
/// 4-byte rows it was chosen from, where that is valid (as the lookup's related grade does), and
/// a block no larger than the device allows.
std::optional<Config> fitted(const char* key, const Target& t) {
  std::optional<Config> c = parse_key(key);
  if (!c) return std::nullopt;
  if (c->block > t.max_block && t.max_block >= 32)
    c->block = int(std::bit_floor(unsigned(t.max_block)));
  const Config scaled = translated(*c, DType::f32, t.dtype);
  if (!invalid_reason(scaled, t)) c = scaled;
  return c;
}

/// The last resort, chosen by what each mapping is for rather than measured: a vectorized
/// last-block 1-D reduction, a group of lanes or a block per row, a tile of columns, a warp per
/// segment. No atomics, no host finish, 256 threads or the device's limit: it serves every call.
Config safe_config(Problem problem, DType dtype, const Target& t) {
  Config c;
  c.block = std::min(256, int(std::bit_floor(unsigned(std::max(t.max_block, 32)))));
  c.tail = Tail::shfl;
  c.finish = Finish::direct;
  c.unroll = 2;
  c.vec = int(std::min<std::size_t>(4, 16 / size_of(dtype)));
  switch (problem) {
  case Problem::array:
    c.variant = "vectorized", c.vec = int(16 / size_of(dtype)), c.unroll = 4, c.grid = 8;
    c.finish = Finish::lastblock;
    break;
  case Problem::rows: c.variant = "rows_block"; break;
  case Problem::columns: c.variant = "columns_tile"; break;
  case Problem::segments: c.variant = "segments_group", c.width = 32; break;
  }
  return c;
}

/// Whether `c` has each block of a data-sized 1-D grid (thousands of blocks at the sizes it is
/// chosen for) combine into the one result with an atomic that is not a single hardware
/// reduction: min/max of 8-byte elements (several instructions) and of bf16/f16 with an
/// element-type result (a CAS loop). The table's rows are sums; on an H100 such float64 max
/// finishes took 1.3-1.5x the time of a grid-stride last-block one at 2^24-2^26
/// (docs/PERFORMANCE.md), where 4-byte min/max (integer atomics) kept the sums' gains.
bool serialised_atomics(const Config& c, const Target& t) {
  const bool atomic = c.finish == Finish::atomic || c.finish == Finish::firstblock;
  const bool slow_combine =
      combine_kind(t.op) != OpAtomic::add && (size_of(t.dtype) == 8 || (is_half(t.dtype) && !t.wide_result));
  return t.problem == Problem::array && c.grid == 0 && atomic && slow_combine;
}

} // namespace

std::span<const DefaultClass> default_classes() { return kClasses; }

const DefaultClass* default_class(Problem problem, DType dtype, Shape shape, int sm_count) {
  const Shape at = lookup_point(shape);
  const bool mean_known = problem != Problem::segments || at.length != 0;
  const double sms = sm_count > 0 ? sm_count : kReferenceSms;
  const double size = double(size_of(dtype));
  const double length = double(std::max<std::uint64_t>(at.length, 1));
  const double count = double(std::max<std::uint64_t>(at.count, 1));
  const double x[kDefaultFeatures] = {length * size, count / sms, count * length * size / sms};
  for (const DefaultClass& k : kClasses) {
    if (k.problem != problem || k.mean_known != mean_known) continue;
    bool in = true;
    for (int f = 0; f < kDefaultFeatures && in; ++f)
      in = (!mean_known && f != kCountPerSm) || within(x[f], k.bounds[f]);
    if (in) return &k;
  }
  return nullptr;
}

Config builtin_config(Problem problem, DType dtype, Op op, Shape shape, const Requirements& req,
                      const DeviceKey& device) {
  const Target t = target_for(problem, dtype, op, req, device);
  const Shape at = lookup_point(shape);
  if (const DefaultClass* k = default_class(problem, dtype, at, t.sm_count)) {
    std::optional<Config> fast = fitted(k->fast, t), exact = fitted(k->exact, t);
    if (fast && !serves(*fast, t, req, at)) fast.reset();
    if (exact && !serves(*exact, t, req, at)) exact.reset();
    // The classes are in bytes, some of the catalogue's limits in elements (a staged block holds
    // 4 elements a segment, a flat tile pays per element): where the fast configuration, scaled
    // to the dtype, is one the sweep would not measure at this shape (kernels/segmented.h,
    // pointless) and the exact one is not, the exact one.
    const bool shaped = problem != Problem::array && at.length != 0;
    if (fast && exact && shaped && pointless(*fast, at) && !pointless(*exact, at)) return *exact;
    if (fast && exact && serialised_atomics(*fast, t)) return *exact;
    if (fast) return *fast;
    if (exact) return *exact;
  }
  return safe_config(problem, dtype, t);
}

Choice builtin_choice(Problem problem, DType dtype, Op op, Shape shape, const Requirements& req,
                      const DeviceKey& device, std::string note) {
  Choice c;
  c.config = builtin_config(problem, dtype, op, shape, req, device);
  c.problem = problem;
  c.match = Match::builtin;
  c.note = std::move(note);
  return c;
}

} // namespace reduce_tune
