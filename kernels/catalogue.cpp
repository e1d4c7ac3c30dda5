// reduce-tune: the variant catalogue, its validity rules, launch geometry and rendering.
#include "kernels/catalogue.h"

#include "kernels/ops.h"
#include "kernels/segmented.h"
#include "kernels/templates.h"
#include "kernels/user_op.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <mutex>
#include <stdexcept>

namespace reduce_tune {
namespace {

constexpr int kBlocks[] = {32, 64, 128, 256, 512, 1024};
constexpr int kVectorBlocks[] = {128, 256, 512};
constexpr int kVecs[] = {1, 2, 4, 8}; // at most 16 bytes: 8 only for bf16 and f16
// 1 is valid, but never faster than a vector; 8 is the 16-byte load of the 2-byte types (invalid,
// and reported so, for the others).
constexpr int kSweptVecs[] = {2, 4, 8};
constexpr int kMultiSeqGrids[] = {2, 8, 32};
constexpr int kVectorGrids[] = {0, 4, 8}; // 0 = data-sized

constexpr int kU1[] = {1};
constexpr int kU248[] = {2, 4, 8};
constexpr int kU1248[] = {1, 2, 4, 8};
constexpr Tail kNoTail[] = {Tail::none};
constexpr Tail kWarpTails[] = {Tail::shfl, Tail::volatile_, Tail::syncwarp, Tail::redux};
constexpr Tail kBlockTails[] = {Tail::shfl, Tail::none, Tail::volatile_, Tail::syncwarp,
                                Tail::redux};
constexpr Tail kShuffleTails[] = {Tail::shfl, Tail::redux};
constexpr Finish kMaterialFinishes[] = {Finish::host, Finish::atomic};
constexpr Finish kAtomicOnly[] = {Finish::atomic};
constexpr Finish kModernFinishes[] = {Finish::lastblock, Finish::twopass, Finish::atomic,
                                      Finish::host, Finish::firstblock};
// The sweep's finishes for the vector variants: the first-block finish saves the atomic finish's
// memset, but its ticket is one more same-address atomic per block, which costs more than the
// memset from a few thousand blocks (bench/probes/finishes.cu, "self"). Grid-stride grids stay
// under 8 blocks per SM (and are data-sized below that), so they take it; data-sized grids, which
// win only at large n with many blocks, keep the memset.
constexpr Finish kSweptDataGridFinishes[] = {Finish::lastblock, Finish::atomic};
constexpr Finish kSweptStrideGridFinishes[] = {Finish::lastblock, Finish::firstblock};

constexpr unsigned kTree = P_BLOCK | P_FINISH;
constexpr unsigned kUnrolled = P_BLOCK | P_UNROLL | P_TAIL | P_FINISH;

// The catalogue. Order is the material's: the order `variants` and `compare` print.
constexpr Variant kVariants[] = {
    {"neighbored_gmem", "divergent neighbored pairs, in place in global memory (on a copy)",
     kTree, kU1, kNoTail, kMaterialFinishes, false, true, 32},
    {"neighbored", "divergent neighbored pairs (tid % (2*stride)) in shared memory", kTree, kU1,
     kNoTail, kMaterialFinishes, false, false, 32},
    {"neighbored_less", "neighbored pairs with a contiguous index (2*stride*tid)", kTree, kU1,
     kNoTail, kMaterialFinishes, false, false, 32},
    {"interleaved", "stride halving, sequential addressing", kTree, kU1, kNoTail,
     kMaterialFinishes, false, false, 32},
    {"unrolling", "each block folds U data blocks while loading, then the interleaved tree",
     P_BLOCK | P_UNROLL | P_FINISH, kU248, kNoTail, kMaterialFinishes, false, false, 32},
    {"unroll_warps", "unrolling, tree down to 64, then a warp tail", kUnrolled, kU1248,
     kWarpTails, kMaterialFinishes, false, false, 64},
    {"complete_unroll", "tree fully unrolled with run-time blockDim checks, then a warp tail",
     kUnrolled, kU1248, kWarpTails, kMaterialFinishes, false, false, 64},
    {"complete_unroll_template", "complete_unroll with the block size a compile-time constant",
     kUnrolled, kU1248, kWarpTails, kMaterialFinishes, true, false, 64},
    {"atomic_global", "every thread combines its element into the result atomically", P_BLOCK | P_FINISH,
     kU1, kNoTail, kAtomicOnly, false, false, 32},
    {"atomic_shared", "shared-memory atomics per block, one global atomic per block", P_BLOCK | P_FINISH,
     kU1, kNoTail, kAtomicOnly, false, false, 32},
    {"multi_seq", "grid-stride sequential accumulation (grid = g blocks per SM), block reduce",
     P_BLOCK | P_GRID | P_TAIL | P_FINISH, kU1, kBlockTails, kMaterialFinishes, false, false,
     32},
    {"vectorized",
     "vector loads (v elements), u loads in flight, data-sized (g0) or grid-stride grid, "
     "two-level shuffle reduce",
     P_BLOCK | P_UNROLL | P_VEC | P_GRID | P_TAIL | P_FINISH, kU1248, kShuffleTails,
     kModernFinishes, true, false, 32},
    {"streaming",
     "vectorized with evict-first loads (ld.global.cs): the input leaves L2 first instead of "
     "pushing out other lines, dirty ones above all",
     P_BLOCK | P_UNROLL | P_VEC | P_GRID | P_TAIL | P_FINISH, kU1248, kShuffleTails,
     kModernFinishes, true, false, 32, "array/vectorized.cu", "RT_EVICT_FIRST"},
};

// The registered variants (register_variants): a list only ever replaced by a longer copy and
// never freed, so that a lookup may go on reading the one it loaded. Registrations are few.
std::mutex g_extra_mu;
std::atomic<const std::vector<const ExtraVariant*>*> g_extra{nullptr};

const ExtraVariant* find_extra(std::string_view name) {
  if (const auto* extra = g_extra.load(std::memory_order_acquire))
    for (const ExtraVariant* e : *extra)
      if (e->variant.name == name) return e;
  return nullptr;
}

bool takes(const Variant& v, Param p) { return (v.params & p) != 0; }

template <typename E>
bool contains(std::span<const E> s, E e) {
  return std::find(s.begin(), s.end(), e) != s.end();
}

std::string list(std::span<const int> s) {
  std::string r;
  for (int x : s) r += (r.empty() ? "" : ", ") + std::to_string(x);
  return r;
}

std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return (a + b - 1) / b; }

// Whether the finish combines each block's value into the result with an atomic (so it needs the
// hardware's atomics, and floating-point sums depend on the arrival order).
bool atomic_finish(Finish f) { return f == Finish::atomic || f == Finish::firstblock; }

// Elements one block covers in one pass of a data-sized grid.
std::uint64_t block_span(const Config& c) {
  const Variant& v = *find_variant(c.variant);
  return std::uint64_t(c.block) * (takes(v, P_UNROLL) ? c.unroll : 1) * (takes(v, P_VEC) ? c.vec : 1);
}

bool grid_stride(const Config& c) {
  return c.variant == "multi_seq" || (takes(*find_variant(c.variant), P_VEC) && c.grid > 0);
}

std::uint64_t grid_for(const Config& c, const Target& t, std::uint64_t n) {
  const std::uint64_t data = std::max<std::uint64_t>(1, ceil_div(n, block_span(c)));
  if (!grid_stride(c)) return data;
  return std::min<std::uint64_t>(data, std::uint64_t(c.grid) * t.sm_count);
}

bool uses_smem_warp_tail(const Config& c) {
  return c.tail == Tail::volatile_ || c.tail == Tail::syncwarp;
}

// Why `c` may combine a result's elements out of their order, or nullopt: the one rule for a
// non-commutative combine (a user reduction's, Reduction::commutative). Every tree of the
// catalogue pairs partials a stride apart (interleaved), the shuffle trees too, and strided,
// vector and grid-stride loads give a thread elements of other threads' between its own; an
// unaligned head or a tail goes to a thread after its vectors. What is left: a lane per row or
// segment that reads it element by element in order (the group mappings with w1, u1 and v1: a
// group of one lane does no shuffle); the columns mappings, which a non-commutative combine
// renders with contiguous rows a thread and a tree of neighbours (RT_ORDERED,
// templates/segmented/columns.cu), finished directly or by an ordered finish, whose post pass
// (twopass) or last block of a stripe (lastblock) combines the row slices in order; and the flat mapping with the carry and the ordered finish
// (its threads' elements, scan and carry keep the order; the blocks' pieces are combined in it).
std::optional<std::string> reorders(const Config& c, const Variant& v) {
  const bool lane_per_result =
      (v.problem == Problem::rows || v.problem == Problem::segments) && takes(v, P_WIDTH) &&
      !takes(v, P_GRID) && c.width == 1 && c.unroll == 1 && c.vec == 1;
  if (lane_per_result) return std::nullopt;
  const bool ordered_finish =
      c.finish == Finish::direct || c.finish == Finish::twopass || c.finish == Finish::lastblock;
  if (v.problem == Problem::columns && ordered_finish) return std::nullopt;
  const bool flat_ordered = v.problem == Problem::segments && v.source == "segmented/flat.cu" &&
                            v.define == "RT_FLAT_CARRY" && c.finish == Finish::twopass;
  if (flat_ordered) return std::nullopt;
  if (v.problem == Problem::array)
    return "every array variant combines elements out of their order (trees of strided partials)";
  if (v.problem == Problem::columns)
    return std::string(v.name) + " with the " + std::string(name(c.finish)) +
           " finish combines the row slices out of their order; the direct, twopass and lastblock finishes keep it";
  return std::string(v.name) + " combines elements out of their order; only a lane per " +
         (v.problem == Problem::rows ? "row" : "segment") + " (the group mappings with w1.u1.v1)" +
         (v.problem == Problem::segments ? " and segments_flat_carry with the twopass finish" : "") +
         " keep it";
}

} // namespace

std::span<const Variant> variants(Problem problem) {
  return problem == Problem::array ? std::span<const Variant>(kVariants) : segmented_variants(problem);
}

const Variant* find_variant(std::string_view name) {
  for (Problem p : {Problem::array, Problem::rows, Problem::columns, Problem::segments})
    for (const Variant& v : variants(p))
      if (v.name == name) return &v;
  const ExtraVariant* e = find_extra(name);
  return e ? &e->variant : nullptr;
}

void register_variants(std::span<const ExtraVariant> extra) {
  const std::lock_guard lock(g_extra_mu);
  const auto* old = g_extra.load(std::memory_order_relaxed);
  auto* list = old ? new std::vector<const ExtraVariant*>(*old) : new std::vector<const ExtraVariant*>();
  for (const ExtraVariant& e : extra) list->push_back(&e);
  g_extra.store(list, std::memory_order_release);
}

bool atomic_post_pass(Op op, DType dtype, Problem problem) {
  const OpTraits& traits = describe(op).traits;
  // argmax and argmin: their ordered keys, combined by atomicMax in the columns' workspace; var
  // and std: their float64 sums about each column's first element, by atomicAdd.
  if (struct_atomic(traits.atomic))
    return problem == Problem::columns && (keyed_atomic(op, dtype) || shifted_atomic(op, dtype));
  if (problem == Problem::array || traits.atomic == OpAtomic::none || traits.compound) return false;
  const DType acc = accumulator_dtype(op, dtype), result = result_dtype(op, dtype);
  // Those that combine into the result directly: a plain post-map into a result of the
  // accumulator's type, or rounded exactly to a bf16 or f16 one (min and max, a 16-bit CAS).
  const bool direct = traits.plain_post && (result == acc || (is_half(result) && traits.exact));
  return !direct;
}

bool atomic_post_pass(const UserOp& op, DType dtype, Problem problem) {
  const std::optional<DType> acc = op.accumulator_dtype(dtype); // additive ones only
  if (problem == Problem::array || !acc || op.unsupported(dtype)) return false;
  // No rounding combine is exact: a bf16 or f16 result always takes the post pass.
  return !(op.plain_post && op.result_dtype(dtype) == *acc);
}

bool atomic_post_pass(const Target& t) {
  return t.user ? atomic_post_pass(*t.user, t.dtype, t.problem) : atomic_post_pass(t.op, t.dtype, t.problem);
}

std::optional<std::string> invalid_reason(const Config& c, const Target& t) {
  if (auto why = t.user ? t.user->unsupported(t.dtype) : op_unsupported(t.op, t.dtype)) return why;
  const Variant* vp = find_variant(c.variant);
  if (!vp) return "unknown variant '" + c.variant + "'";
  const Variant& v = *vp;
  if (v.problem != t.problem)
    return std::string(v.name) + " reduces " + std::string(name(v.problem)) + ", not " +
           std::string(name(t.problem));
  if (c.block < 32 || c.block > 1024 || !std::has_single_bit(unsigned(c.block)))
    return "block size " + std::to_string(c.block) + " is not a power of two in 32..1024";
  if (c.block > t.max_block)
    return "block size " + std::to_string(c.block) + " exceeds the device limit of " +
           std::to_string(t.max_block);
  const bool smem_tail = v.min_block >= 64 || (takes(v, P_TAIL) && uses_smem_warp_tail(c));
  if (smem_tail && c.block < 64)
    return "the warp tail reads smem[tid + 32]: needs a block of at least 64 threads";
  if (takes(v, P_UNROLL) ? !contains(v.unrolls, c.unroll) : c.unroll != 1)
    return "unroll " + std::to_string(c.unroll) + " is not one of " + list(v.unrolls) +
           " for " + std::string(v.name);
  if (takes(v, P_VEC)) {
    if (!contains(std::span<const int>(kVecs), c.vec))
      return "vector width " + std::to_string(c.vec) + " is not one of 1, 2, 4, 8";
    if (c.vec * size_of(t.dtype) > 16)
      return "a vector of " + std::to_string(c.vec) + " " + std::string(name(t.dtype)) +
             " exceeds the 16-byte load";
  } else if (c.vec != 1) {
    return std::string(v.name) + " takes no vector width";
  }
  if (takes(v, P_WIDTH)) {
    if (c.width < 1 || c.width > 32 || !std::has_single_bit(unsigned(c.width)))
      return "group width " + std::to_string(c.width) + " is not a power of two in 1..32";
  } else if (c.width != 0) {
    return std::string(v.name) + " takes no group width";
  }
  if (takes(v, P_GRID)) {
    const int lo = c.variant == "multi_seq" || v.problem != Problem::array ? 1 : 0;
    if (c.grid < lo || c.grid > 64)
      return "grid " + std::to_string(c.grid) + " blocks per SM is outside " +
             std::to_string(lo) + "..64";
  } else if (c.grid != 0) {
    return std::string(v.name) + " takes no grid parameter";
  }
  if (!contains(v.tails, c.tail))
    return "tail " + std::string(name(c.tail)) + " is not available for " + std::string(v.name);
  if (c.tail == Tail::volatile_ && t.cc >= 70 && !t.allow_unsafe)
    return "the volatile warp-synchronous tail is unsafe under independent thread scheduling "
           "(sm_70+); --unsafe-tails admits it for study";
  // The op's facts: a built-in op's description, or a user reduction's (conservative traits,
  // sum's atomic for an additive one).
  const OpDescription op = t.user ? OpDescription{Op::sum, t.user->name, {}, t.user->traits(), Op::sum} : describe(t.op);
  const std::string op_name(op.name);
  // A user reduction's accumulator as a dtype where it is additive; the others' is never read
  // (they have no atomic and no redux).
  const DType acc = t.user ? t.user->accumulator_dtype(t.dtype).value_or(accumulator_of(t.dtype))
                           : accumulator_dtype(t.op, t.dtype);
  const DType own_result = t.user ? t.user->result_dtype(t.dtype) : result_dtype(t.op, t.dtype);
  const DType result = t.user ? own_result : result_dtype(t.op, t.dtype, t.wide_result);
  if (c.tail == Tail::redux) {
    if (!op.traits.redux) return op_name + " has no __reduce_*_sync";
    if (acc != DType::i32 && acc != DType::u32) return "__reduce_*_sync takes 32-bit integers only";
    if (t.cc < 80) return "__reduce_*_sync needs sm_80";
  }
  if (!contains(v.finishes, c.finish))
    return "finish " + std::string(name(c.finish)) + " is not available for " +
           std::string(v.name);
  const bool atomic = atomic_finish(c.finish);
  // The post pass makes the result's type and post-map irrelevant to the atomic: only the
  // accumulator's atomic and the device's support for it below remain (v.problem is t.problem).
  const bool post_pass = atomic && atomic_post_pass(t);
  if (t.wide_result && !is_half(t.dtype))
    return "a float32 result is for bf16 and f16 reductions; " + std::string(name(t.dtype)) +
           " results have the element type";
  if (t.wide_result && (t.user || own_result != t.dtype))
    return "a float32 result is for built-in ops whose result has the element type; " + op_name +
           " gives " + std::string(name(own_result));
  if (t.wide_result && v.problem != Problem::array)
    return "a float32 result of a bf16 or f16 reduction is offered for the array problem only";
  if (op.traits.compound && c.tail == Tail::volatile_)
    return op_name + "'s accumulator is a struct: the volatile tail copies scalars only";
  // Dynamic shared memory past the 48 KiB a launch gets without opting in: the columns tile keeps
  // block x vec accumulators (the compound ones are 16 to 24 bytes).
  if (v.problem != Problem::array &&
      std::uint64_t(c.block) * c.vec * accumulator_bytes(t) > 48 * 1024)
    return std::to_string(c.block) + " x " + std::to_string(c.vec) + " accumulators of " +
           std::to_string(accumulator_bytes(t)) + " bytes exceed 48 KiB of shared memory";
  if (t.user && t.user->ordered())
    if (auto why = reorders(c, v)) return op_name + "'s combine is not commutative: " + *why;
  // The flat and merge mappings do not track an element's index in its segment (the flat one's
  // ordered finish maps with the index in the input and takes it back, rt_rebase, for the
  // library's ops alone); both take an additive reduction's atomic finish.
  if (t.user && t.user->reads_index() && (v.source == "segmented/flat.cu" || v.source == "segmented/merge.cu"))
    return op_name + "'s map reads the index `i`, which " + std::string(v.name) +
           " does not track in its segment";
  if (c.finish == Finish::host && !op.traits.host_combine)
    return "the host finish cannot apply " + op_name + "'s post-map (it needs the count or rounds)";
  if (v.in_place && !op.traits.plain_map)
    return op_name + " maps each element: in place, the partials would be mapped again";
  // Ops of two inputs (dot) read x[i] and y[i] wherever a template reads an element: every
  // variant but those that stage one input's elements in shared memory (Variant::one_input) and
  // the in-place ones (excluded above: their map is not the element itself).
  if (op.traits.two_inputs && v.one_input)
    return op_name + " reads two inputs; " + std::string(v.name) +
           " stages one input's elements in shared memory";
  if (atomic && !post_pass && !t.user && struct_atomic(op.traits.atomic))
    return op_name + " has no atomic combine here: its " +
           (op.traits.atomic == OpAtomic::key
                ? "ordered 64-bit key (a 32-bit value and a 32-bit index) serves the columns problem's "
                  "atomic finish only, for float32, int32, uint32, bf16 and f16"
                : "float64 sums about a column's first element serve the columns problem's atomic "
                  "finish only, for float32, bf16 and f16");
  if (atomic && !post_pass) {
    if (t.user && t.user->not_additive)
      return op_name + " has no atomic combine: " + *t.user->not_additive;
    if (t.user && !t.user->plain_post)
      return op_name + "'s post-map is not `a`: an atomic finish adds into the result itself";
    if (op.traits.atomic == OpAtomic::none || !op.traits.plain_post)
      return op_name + " has no atomic combine into its result (its post-map needs the count or rounds)";
    if (result != acc && !is_half(result))
      return "the " + op_name + " result (" + std::string(name(result)) + ") is not its accumulator (" +
             std::string(name(acc)) + "): no atomic combine into it";
  }
  // bf16 and f16 sums accumulate in float32 and round once; an atomic finish would round the
  // result to the element type at every block's combine (unless the result is the float32
  // accumulator itself), an in-place variant every partial.
  if (is_half(result) && !op.traits.exact && atomic && !post_pass)
    return "a " + std::string(name(t.dtype)) + " " + op_name +
           " would round at every atomic combine into the result: it accumulates in float32 "
           "and rounds once (a float32 result may finish atomically)";
  if (is_half(t.dtype) && !op.traits.exact && v.in_place)
    return "a " + std::string(name(t.dtype)) + " " + op_name +
           " in place would round every partial to the element type: it accumulates in "
           "float32 and rounds once";
  if (is_half(result) && atomic && !post_pass && t.cc < 70)
    return "the 16-bit atomicCAS of " + std::string(name(t.dtype)) + " min/max needs sm_70";
  if (atomic && t.cc < 60 &&
      ((acc == DType::f64 && op.traits.atomic == OpAtomic::add) || op.traits.atomic == OpAtomic::shifted))
    return "double-precision atomicAdd needs sm_60";
  // 64-bit min/max: of int64 accumulators, and of argmax's and argmin's keys.
  if (atomic && t.cc < 35 &&
      ((acc == DType::i64 && op.traits.atomic != OpAtomic::add) || op.traits.atomic == OpAtomic::key))
    return "64-bit atomicMin/atomicMax need sm_35";
  if (v.problem != Problem::array) return segmented_invalid(c, t);
  return std::nullopt;
}

bool valid_wide_only(const Config& c, const Target& t) {
  if (t.wide_result || !is_half(t.dtype) || t.problem != Problem::array || !invalid_reason(c, t))
    return false;
  Target wide = t;
  wide.wide_result = true;
  return !invalid_reason(c, wide);
}

std::vector<Config> space(const Variant& v) {
  if (v.problem != Problem::array) return segmented_space(v);
  const int smallest[] = {v.min_block}; // a registered variant: its smallest block only
  const std::span<const int> blocks =
      takes(v, P_VEC)      ? std::span<const int>(kVectorBlocks)
      : find_extra(v.name) ? std::span<const int>(smallest)
                           : std::span<const int>(kBlocks);
  const std::span<const int> vecs =
      takes(v, P_VEC) ? std::span<const int>(kSweptVecs) : std::span<const int>(kU1);
  const std::span<const int> grids =
      !takes(v, P_GRID) ? std::span<const int>(kU1)
      : v.name == "multi_seq" ? std::span<const int>(kMultiSeqGrids)
                              : std::span<const int>(kVectorGrids);
  std::vector<Config> out;
  for (int b : blocks)
    for (int u : v.unrolls)
      for (int x : vecs)
        for (int g : grids)
          for (Tail tail : v.tails)
            for (Finish f : !takes(v, P_VEC) ? v.finishes
                            : g == 0         ? std::span<const Finish>(kSweptDataGridFinishes)
                                             : std::span<const Finish>(kSweptStrideGridFinishes))
              out.push_back(Config{std::string(v.name), b, u, x, takes(v, P_GRID) ? g : 0, tail, f});
  return out;
}

bool deterministic(const Config& c, DType dtype) {
  // Integer arithmetic is associative; floating-point atomics combine in arrival order.
  return !(is_float(dtype) && atomic_finish(c.finish));
}

bool deterministic(const Config& c, const Target& t) {
  // A keyed combine (argmax, argmin) compares keys: the same whatever the order.
  if (!t.user) return deterministic(c, t.dtype) || describe(t.op).traits.atomic == OpAtomic::key;
  const std::optional<DType> acc = t.user->accumulator_dtype(t.dtype); // only additive ones have atomics
  return !(acc && is_float(*acc) && atomic_finish(c.finish));
}

LaunchPlan plan(const Config& c, const Target& t, std::uint64_t n) {
  const Variant& v = *find_variant(c.variant);
  LaunchPlan p;
  const std::uint64_t grid = grid_for(c, t, n);
  if (grid > 0x7fffffffull)
    throw std::invalid_argument(key(c) + ": " + std::to_string(n) +
                                " elements need more than 2^31-1 blocks");
  p.grid = unsigned(grid);
  p.block = unsigned(c.block);
  p.smem_bytes = unsigned(c.block * accumulator_bytes(t));
  p.accumulator_bytes = unsigned(accumulator_bytes(t));
  p.init_out = c.finish == Finish::atomic;
  p.partials = c.finish == Finish::host || c.finish == Finish::twopass ||
               c.finish == Finish::lastblock;
  p.second_pass = c.finish == Finish::twopass && p.grid > 1; // one block writes the result
  p.counter = c.finish == Finish::lastblock || c.finish == Finish::firstblock;
  p.host_finish = c.finish == Finish::host;
  p.scratch = v.in_place;
  return p;
}

std::uint64_t summation_depth(const Config& c, const Target& t, std::uint64_t n) {
  const std::uint64_t grid = grid_for(c, t, n);
  const std::uint64_t log_block = std::bit_width(unsigned(c.block)) - 1;
  std::uint64_t thread = 0, block = log_block, finish = 0;
  if (c.variant == "atomic_global") return n;
  if (c.variant == "atomic_shared") block = c.block;
  if (c.variant == "multi_seq") thread = ceil_div(n, grid * c.block);
  if (c.variant == "unrolling" || c.variant == "unroll_warps" || c.variant.starts_with("complete"))
    thread = c.unroll;
  if (takes(*find_variant(c.variant), P_VEC))
    thread = ceil_div(n, grid * c.block * c.unroll * c.vec) * c.vec + c.unroll;
  switch (c.finish) {
  case Finish::host: finish = 1; break; // partials combined in double, then rounded once
  case Finish::atomic:
  case Finish::firstblock: finish = grid; break;
  case Finish::twopass:
  case Finish::lastblock: finish = ceil_div(grid, c.block) + log_block; break;
  case Finish::direct: break; // segmented only (segment_depth)
  }
  return thread + block + finish + 1;
}

std::size_t accumulator_bytes(const Target& t) {
  return t.user ? t.user->accumulator_bytes(t.dtype) : accumulator_bytes(t.op, t.dtype);
}

namespace {

// Header, element.cuh, the op's source (`op_text`), common.cuh and the variant's template;
// `atomic_post`: the atomic finish ends with the post pass (atomic_post_pass), whose atomic
// `post_atomic` declares where the op's source does not (a built-in op whose post-map is not the
// plain conversion).
std::string render_with(const Config& c, DType dtype, std::string_view op_name, const std::string& op_text,
                        bool atomic_post, const std::string& post_atomic = {}) {
  const Variant& v = *find_variant(c.variant);
  // The element type (bf16 and f16 stored as unsigned short) and its macro.
  static constexpr std::array<std::pair<const char*, const char*>, 8> kTypes{{
      {"int", "RT_DTYPE_I32"}, {"unsigned int", "RT_DTYPE_U32"}, {"long long", "RT_DTYPE_I64"},
      {"float", "RT_DTYPE_F32"}, {"double", "RT_DTYPE_F64"}, {"unsigned short", "RT_DTYPE_BF16"},
      {"unsigned short", "RT_DTYPE_F16"}, {"unsigned char", "RT_DTYPE_U8"}}};
  const auto& [ctype, macro] = kTypes[static_cast<int>(dtype)];
  auto upper = [](std::string_view s) {
    std::string r(s);
    for (char& ch : r) ch = char(std::toupper(static_cast<unsigned char>(ch)));
    return r;
  };
  std::string s;
  s += "// reduce-tune: " + std::string(v.name) + " " + std::string(name(dtype)) + " " +
       std::string(op_name) + "\n";
  s += "typedef " + std::string(ctype) + " T;\n";
  s += "#define " + std::string(macro) + " 1\n";
  if (is_half(dtype)) s += "#define RT_HALF 1\n";
  s += "#define RT_TAIL_" + upper(name(c.tail)) + " 1\n";
  s += "#define RT_FINISH_" + upper(name(c.finish)) + " 1\n";
  s += "#define RT_UNROLL " + std::to_string(c.unroll) + "\n";
  s += "#define RT_VEC " + std::to_string(c.vec) + "\n";
  if (v.block_compile_time) s += "#define RT_BLOCK " + std::to_string(c.block) + "\n";
  if (takes(v, P_WIDTH)) s += "#define RT_WIDTH " + std::to_string(c.width) + "\n";
  if (v.problem != Problem::array) s += "#define RT_PROBLEM_" + upper(name(v.problem)) + " 1\n";
  for (std::string_view d = v.define; !d.empty();) { // space-separated macros
    const std::size_t end = std::min(d.find(' '), d.size());
    if (end) s += "#define " + std::string(d.substr(0, end)) + " 1\n";
    d.remove_prefix(std::min(end + 1, d.size()));
  }
  if (v.evict_first) s += "#define RT_EVICT_FIRST 1\n";
  s += template_source("element.cuh");
  // The post pass (templates/segmented/post.cuh): the op's result type and post-map under other
  // names, the mapping working on accumulators. Only pairs the atomic finish admitted through it
  // are rendered so; every other source is unchanged.
  // The ordered finish of a segmented problem (Finish::twopass) always ends with it, for any op.
  const bool post = atomic_post || (c.finish == Finish::twopass && v.problem != Problem::array);
  if (post) s += "#define RT_POST_PASS 1\n#define R rt_result_type\n#define rt_post rt_result_post\n";
  s += op_text;
  if (atomic_post) s += post_atomic;
  if (post) s += template_source("segmented/post.cuh");
  s += template_source("common.cuh");
  if (v.problem != Problem::array) s += template_source("segmented/segmented.cuh");
  const ExtraVariant* extra = find_extra(v.name);
  if (extra && &extra->variant == &v) s += extra->template_text;
  else s += template_source(v.source.empty() ? "array/" + std::string(v.name) + ".cu" : std::string(v.source));
  return s;
}

} // namespace

std::string render(const Config& c, DType dtype, Op op, bool wide_result) {
  const Variant& v = *find_variant(c.variant);
  const OpTraits& traits = describe(op).traits;
  const bool atomic_post = c.finish == Finish::atomic && atomic_post_pass(op, dtype, v.problem);
  std::string post_atomic; // its atomic, which op_source declares not
  if (!traits.plain_post) {
    static constexpr const char* kAtomic[] = {"", "ADD", "MIN", "MAX", "KEY", "SHIFTED"};
    post_atomic = "#define RT_ATOMIC_" + std::string(kAtomic[static_cast<int>(traits.atomic)]) + " 1\n";
  }
  return render_with(c, dtype, name(op), op_source(op, dtype, wide_result), atomic_post, post_atomic);
}

std::string render(const Config& c, DType dtype, const UserOp& op) {
  // An additive op's source declares its atomic whatever its post-map (UserOp::source).
  const bool atomic_post = c.finish == Finish::atomic && atomic_post_pass(op, dtype, find_variant(c.variant)->problem);
  std::string s = render_with(c, dtype, op.name, op.source(dtype), atomic_post);
  // Each user field is under a #line of its own (NVRTC's log names it); after it the generated
  // source takes its own line numbers again, as NVRTC names the program.
  std::size_t line = 1, counted = 0;
  for (std::size_t at; (at = s.find(kUserLineMarker, counted)) != std::string::npos;) {
    line += std::count(s.begin() + std::ptrdiff_t(counted), s.begin() + std::ptrdiff_t(at), '\n');
    const std::string directive = "#line " + std::to_string(line + 1) + " \"reduce_tune.cu\"";
    s.replace(at, kUserLineMarker.size(), directive);
    counted = at + directive.size();
  }
  return s;
}

} // namespace reduce_tune
