// reduce-tune: a user reduction's lookup (runtime/user_lookup.h).
#include "runtime/user_lookup.h"

#include "kernels/catalogue.h"
#include "kernels/ops.h"
#include "kernels/user_op.h"
#include "runtime/defaults.h"

#include <algorithm>
#include <vector>

namespace reduce_tune {
namespace {

/// A configuration for a lookup whose answer the reduction's rules refuse (an atomic finish, a
/// mapping that reorders a non-commutative combine): the first of these that `t` admits. The
/// answer itself with the ordered finish (columns_split, segments_flat_carry: partials combined
/// in block order, for any combine); the split columns with it; the flat segments with it (a map
/// that does not read the index); last, a lane per row or segment reading its elements in order
/// (kernels/catalogue.cpp, reorders).
std::optional<Config> in_order(Problem problem, const Config& refused, const Target& t) {
  std::vector<Config> candidates;
  if (const Variant* v = find_variant(refused.variant);
      v && std::find(v->finishes.begin(), v->finishes.end(), Finish::twopass) != v->finishes.end()) {
    Config c = refused;
    c.finish = Finish::twopass;
    candidates.push_back(c);
  }
  for (int vec : {4, 2, 1}) {
    if (problem == Problem::columns)
      candidates.push_back(Config{"columns_split", 256, 2, vec, 4, Tail::shfl, Finish::twopass});
    if (problem == Problem::segments)
      candidates.push_back(Config{"segments_flat_carry", 128, 4, vec, 8, Tail::shfl, Finish::twopass});
  }
  if (problem == Problem::rows || problem == Problem::segments) {
    Config c;
    c.variant = problem == Problem::rows ? "rows_group" : "segments_group";
    c.block = 256;
    c.width = 1;
    c.tail = Tail::shfl;
    c.finish = Finish::direct;
    candidates.push_back(c);
  }
  for (const Config& c : candidates)
    if (!invalid_reason(c, t)) return c;
  return std::nullopt;
}

} // namespace

std::optional<Op> related_op(const UserOp& u, DType dtype) {
  static constexpr Op kOrder[] = {Op::sum,  Op::logsumexp, Op::count_nonzero, Op::mean,
                                  Op::any,  Op::argmax,    Op::var};
  const std::size_t bytes = u.accumulator_bytes(dtype);
  for (Op op : kOrder)
    if (!op_unsupported(op, dtype) && accumulator_bytes(op, dtype) == bytes &&
        !(u.additive() && describe(op).traits.compound))
      return op;
  return std::nullopt;
}

Choice lookup_user(const db::Store* store, const db::Store* shipped, const DeviceKey& device, const UserOp& u,
                   DType dtype, Problem problem, Shape shape, Requirements req, const std::string& why_none) {
  req.user = &u;
  const std::optional<Op> rel = related_op(u, dtype);
  Choice c;
  bool own = false;
  try {
    // The reduction's own rows (tuned under its hash) first; then the related op's.
    if (auto mine = lookup_own(store, shipped, device, dtype, db::OpKey::user(u.hash), problem, shape, req)) {
      c = std::move(*mine);
      own = true;
      c.note = "tuned for " + u.name + (c.note.empty() ? "" : "; " + c.note);
    } else {
      c = rel ? lookup(store, shipped, device, dtype, *rel, problem, shape, req, why_none)
              : builtin_choice(problem, dtype, Op::sum, shape, req, device,
                               "no built-in op has a " + std::to_string(u.accumulator_bytes(dtype)) +
                                   "-byte accumulator for " + std::string(name(dtype)));
    }
  } catch (const db::StoreError& e) {
    c = builtin_choice(problem, dtype, Op::sum, shape, req, device,
                       std::string("the tuning store could not be read: ") + e.what());
  }
  // Rows of the related op, whatever grade they had for it, are `related` for the reduction.
  if (!own && rel && c.match != Match::builtin && c.match != Match::related) {
    c.note = "tuned for " + std::string(name(dtype)) + " " + std::string(name(*rel)) +
             (c.device_name.empty() ? "" : " on " + c.device_name) + (c.note.empty() ? "" : "; " + c.note);
    c.match = Match::related;
  }
  const Target t = target_of(device, dtype, Op::sum, problem, req);
  if (auto why = invalid_reason(c.config, t)) {
    const std::optional<Config> fallback = in_order(problem, c.config, t);
    if (!fallback)
      throw ReductionError("reduce_tune: no variant serves the reduction " + u.name + " on the " +
                           std::string(name(problem)) + " problem: " + *why);
    c.config = *fallback;
    c.match = Match::builtin;
    c.note = fallback->finish == Finish::twopass
                 ? "the ordered finish, as the reduction's rules ask (" + key(*fallback) + ")"
                 : "a lane per " + std::string(problem == Problem::rows ? "row" : "segment") +
                       " in order, as the reduction's rules ask (" + key(*fallback) + ")";
  }
  return c;
}

} // namespace reduce_tune
