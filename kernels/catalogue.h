// reduce-tune: the variant catalogue. A variant is data plus one template: its name, the template
// file, the parameters it takes, and a validity rule that says why a point is invalid.
#pragma once

#include "reduce_tune/config.h"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace reduce_tune {

struct UserOp; // kernels/user_op.h

/// What a configuration may be checked against: the problem and the device's limits.
struct Target {
  DType dtype = DType::f32;
  Op op = Op::sum;
  int cc = 90;                  ///< compute capability as major*10+minor
  int max_block = 1024;         ///< threads per block
  int sm_count = 132;
  bool allow_unsafe = false;    ///< admit the volatile tail where it is unsafe (for study)
  Problem problem = Problem::array;
  /// bf16 and f16, the array problem: the result is written as the float32 accumulator, not
  /// rounded to the element type (Reducer::reduce_async with DType::f32), which lets their sums
  /// finish atomically.
  bool wide_result = false;
  /// A user reduction (kernels/user_op.h) in place of `op`; it must outlive the target.
  const UserOp* user = nullptr;
};

/// The parameters a variant takes (bit set).
enum Param : unsigned {
  P_BLOCK = 1, P_UNROLL = 2, P_VEC = 4, P_GRID = 8, P_TAIL = 16, P_FINISH = 32, P_WIDTH = 64
};

/// One catalogue entry.
struct Variant {
  std::string_view name;
  std::string_view summary;
  unsigned params;                          ///< Param bits
  std::span<const int> unrolls;             ///< values of u it takes
  std::span<const Tail> tails;              ///< tails it takes (first = default)
  std::span<const Finish> finishes;         ///< finishes it takes (first = default)
  bool block_compile_time;                  ///< block size is baked into the source
  bool in_place;                            ///< works on a scratch copy of the input
  int min_block;                            ///< smallest block its tree handles
  std::string_view source = {};             ///< template file when not <name>.cu
  std::string_view define = {};             ///< macros (space-separated) the template is
                                            ///< rendered with, if any
  Problem problem = Problem::array;         ///< the problem kind it solves
  bool evict_first = false;                 ///< rendered with RT_EVICT_FIRST after `define`: a
                                            ///< segmented `_streaming` twin (kernels/segmented.h)
  bool one_input = false;                   ///< stages its elements in shared memory: reads one
                                            ///< input only (no op of two, OpTraits::two_inputs)
};

/// The catalogue of one problem kind, in its listing order.
std::span<const Variant> variants(Problem problem = Problem::array);
/// Any problem's variant by name, a registered one's too.
const Variant* find_variant(std::string_view name);

/// A variant outside the catalogue, with its template's text: registered by the program that
/// needs it (the tuner's deliberately failing kernels, tuner/test_variants.h). find_variant finds
/// it and render renders it as the catalogue's; variants() never lists it, so no default sweep
/// and no lookup picks it.
struct ExtraVariant {
  Variant variant;
  std::string_view template_text; ///< rendered after common.cuh, in place of a template file
};
/// Adds `extra`, which must outlive every use of the catalogue (static data). Thread-safe.
void register_variants(std::span<const ExtraVariant> extra);

/// The ordered finish of a segmented problem is Finish::twopass (columns_split, segments_flat_carry
/// and their twins): the blocks that share a result leave partial accumulators in a workspace
/// (SegmentedPlan::post_bytes) and rt_segmented_post combines each result's in block order and
/// writes it. No atomic, no fill: valid for every op, struct accumulators and user reductions
/// included (non-commutative ones too: the elements keep their order), and deterministic.
/// Finish::lastblock on columns_split does the same in one kernel (SegmentedPlan::ticket_bytes):
/// the block that takes the last ticket of a group of row slices folds the group's partials, and
/// the one that takes the stripe's last ticket folds the groups' and writes the results.
///
/// Whether the atomic finish of a segmented problem (rows_split, columns_split, the offsets
/// mappings that combine cut segments) reduces (op, dtype) through a post pass: the blocks combine
/// into accumulators (the results themselves where the accumulator is the result's type, else a
/// workspace of them), filled with the identity first, and rt_segmented_post then writes each
/// result as rt_post(accumulator, count). For the ops whose accumulator has an atomic but that
/// cannot combine into their result: a post-map that needs the count or is not the conversion
/// (mean, norm2), a result of another type (any/all's uint8 of a 32-bit accumulator, the bf16 and
/// f16 sums that accumulate in float32). The validity rules, the plan and the rendering read it.
bool atomic_post_pass(Op op, DType dtype, Problem problem);
/// The same for a user reduction: an additive one (kernels/additive.h) whose post-map is not `a`
/// or whose result is not of its accumulator's type.
bool atomic_post_pass(const UserOp& op, DType dtype, Problem problem);
/// The same for the target's op (built-in or the user's) on its problem.
bool atomic_post_pass(const Target& t);

/// Why `c` is not a valid point for `t` (its problem included), or nullopt when it is.
std::optional<std::string> invalid_reason(const Config& c, const Target& t);

/// Whether `c` is invalid for `t`, whose result has the element type, but valid with a float32
/// result (Target::wide_result: the atomic finishes of bf16 and f16 sums). The sweep measures
/// such points with that result; lookups for a float32 result take them, others pass them over.
bool valid_wide_only(const Config& c, const Target& t);

/// The configurations the sweep tries for a variant (valid or not, so that invalid points are
/// reported with their reason). For `vectorized` and `streaming` it is a subset of what the
/// validity rules admit (v1, b1024 and the host and two-pass finishes are valid but never won on
/// the GPUs measured; the atomic finish is tried with data-sized grids, the first-block finish
/// with grid-stride ones).
std::vector<Config> space(const Variant& v);

/// Whether the same input always gives the same bits (no floating-point atomics).
bool deterministic(const Config& c, DType dtype);
/// The same for the target's op: a user reduction's accumulator may be a float for integer
/// elements (a float accumulator adds in arrival order whatever the elements are).
bool deterministic(const Config& c, const Target& t);

/// How a configuration of the array problem is launched for n elements.
struct LaunchPlan {
  unsigned grid = 0;            ///< blocks (>= 1 for every n >= 1)
  unsigned block = 0;
  unsigned smem_bytes = 0;      ///< dynamic shared memory
  bool init_out = false;        ///< set the result to the identity first (atomic finish)
  bool partials = false;        ///< needs grid partials
  bool second_pass = false;     ///< run rt_combine_partials after (twopass over > 1 block)
  bool counter = false;         ///< needs the zeroed finish state (lastblock, firstblock)
  bool host_finish = false;     ///< partials combined on the host
  unsigned accumulator_bytes = 4; ///< one partial's bytes (the op's accumulator)
  bool scratch = false;         ///< in-place: runs on a copy of the input
};
LaunchPlan plan(const Config& c, const Target& t, std::uint64_t n);

/// How a configuration of a segmented problem (rows, columns, segments) is launched for a shape:
/// an optional fill of the results with the identity, for the merge variant rt_segmented_partition,
/// rt_segmented, and for the binned variant rt_segmented_chunks (templates/segmented/). For Problem::segments only shape.count is used (the
/// lengths are in device memory).
struct SegmentedPlan {
  unsigned grid = 0;            ///< blocks of rt_segmented (>= 1 for every count >= 1)
  unsigned block = 0;
  unsigned smem_bytes = 0;      ///< rt_segmented's dynamic shared memory
  std::uint64_t aux = 0;        ///< the template's launch parameter (templates/segmented/*.cu)
  bool fill = false;            ///< results set to the identity first (atomic finishes)
  unsigned chunk_grid = 0;      ///< blocks of rt_segmented_chunks; 0: not launched
  unsigned chunk_smem_bytes = 0; ///< rt_segmented_chunks' dynamic shared memory (its block reduce)
  unsigned partition_grid = 0;  ///< blocks of rt_segmented_partition, before; 0: not launched
  std::size_t work_bytes = 0;   ///< the variant's self-resetting state, zeroed once
  bool post = false;            ///< the atomic finish's post pass (atomic_post_pass):
                                ///< rt_segmented_post writes the results from accumulators
  std::size_t post_bytes = 0;   ///< those accumulators' workspace; 0: they are the results
                                ///< themselves (the accumulator is the result's type). The
                                ///< ordered finish (Finish::twopass): its partials, the columns'
                                ///< a column x slice, the flat mapping's a segment and two a block
  unsigned post_grid = 0;       ///< blocks of 256 of the ordered finish's rt_segmented_post; 0:
                                ///< a thread per result (the atomic finish's post pass)
  /// The columns' last-block finish (Finish::lastblock on columns_split, more than one row
  /// slice): its counters, zeroed once and reset by the kernel, then its partials; rt_segmented
  /// gets it as `work`. 0: none.
  std::size_t ticket_bytes = 0;
};
SegmentedPlan segmented_plan(const Config& c, const Target& t, Shape shape);

/// The longest chain of dependent roundings an element of one segment of `len` elements goes
/// through under a segmented configuration (see summation_depth).
std::uint64_t segment_depth(const Config& c, const Target& t, Shape shape, std::uint64_t len);

/// The longest chain of dependent roundings an element goes through (thread, block and finish
/// stages), which bounds the floating-point error: |got - exact| <= gamma(depth) * sum|x|.
std::uint64_t summation_depth(const Config& c, const Target& t, std::uint64_t n);

/// The CUDA C++ source for (configuration, dtype, op): generated header + common + template.
/// Parameters the template does not use are left out, so configurations that differ only in
/// them share one compiled module. `wide_result`: the result is the float32 accumulator of a bf16
/// or f16 reduction (Target::wide_result).
std::string render(const Config& c, DType dtype, Op op, bool wide_result = false);
/// The same for a user reduction.
std::string render(const Config& c, DType dtype, const UserOp& op);
/// Bytes of one accumulator of the target's op (built-in or the user's).
std::size_t accumulator_bytes(const Target& t);

} // namespace reduce_tune
