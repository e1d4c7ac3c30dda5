// reduce-tune: the ops as data. An op is a description the templates consume, not a branch per op
// in them: the accumulator type, its identity, the map of an element to an accumulator, the
// combine of two accumulators and the post-map of an accumulator to the result, as CUDA source
// (rendered between templates/element.cuh and templates/common.cuh), plus the traits the
// catalogue's validity rules read. Adding an op is one description here, its host side
// (kernels/values.h), its CPU reference (tuner/reference.cpp) and tests.
#pragma once

#include "reduce_tune/config.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace reduce_tune {

/// The atomic an op's accumulator combines with in memory: the atomic and first-block finishes,
/// the shared-memory atomics of atomic_shared and the segmented variants that combine into their
/// results (with plain_post false or a result of another type than the accumulator, only the
/// segmented ones, through a post pass: atomic_post_pass, kernels/catalogue.h). `key`: a struct
/// accumulator with an ordered 64-bit key (argmax and argmin of 32-bit values: keyed_atomic) that
/// atomicMax combines, in the columns problem's atomic finish alone. `shifted`: var's count, mean
/// and M2 as two float64 sums about a shift, the column's first element (float32 fields:
/// shifted_atomic), that atomicAdd combines field by field, in the columns problem's atomic finish
/// alone. `none`: no such finish or variant for the op.
enum class OpAtomic { none, add, min, max, key, shifted };
/// Whether `a` combines a struct accumulator through a form of its own (`key`, `shifted`): the
/// columns problem's atomic finish alone, through its post pass.
inline bool struct_atomic(OpAtomic a) { return a == OpAtomic::key || a == OpAtomic::shifted; }

/// What the catalogue and the launch path need to know of an op, beyond its source.
struct OpTraits {
  OpAtomic atomic = OpAtomic::none;
  /// Its combine is one of __reduce_{add,min,max}_sync (the redux tail, 32-bit integer
  /// accumulators): the same `atomic` kind.
  bool redux = false;
  /// The host finish may combine the partials on the CPU (kernels/values.h, combine_on_host).
  bool host_combine = false;
  /// The map is the element itself, widened: the in-place variant, which stores partials as
  /// elements and combines them again, gives the same result.
  bool plain_map = false;
  /// The post-map is the accumulator converted to the result, whatever the count: an atomic
  /// finish, which combines into the result itself, gives the same result.
  bool plain_post = false;
  /// Combining rounds nothing (min, max): an accumulator may be rounded to a bf16 or f16 result
  /// at every combine (the 16-bit atomic CAS) without changing the result.
  bool exact = false;
  /// The accumulator is a struct of several fields (argmax's value and index, logsumexp's maximum
  /// and rescaled sum, var's count, mean and squared deviations): shuffled word by word, never
  /// through volatile shared memory (the volatile tail copies scalars only).
  bool compound = false;
  /// Reducing no elements has no result (argmax: no identity, as torch): the calls throw; an empty
  /// offsets segment, known only on the device, gets the post-map of the identity (-1).
  bool empty_error = false;
  /// The op reads two inputs of one shape (dot: x[i] * y[i]): its source defines RT_TWO_INPUTS and
  /// rt_map2(x, y, i) instead of rt_map, every kernel takes the second input as its last
  /// parameter, and only variants that can read two inputs are admitted (kernels/catalogue.cpp).
  bool two_inputs = false;
};

/// One op: its stable name (the store keys an op by it; never renamed) and traits.
struct OpDescription {
  Op op;
  std::string_view name;
  std::string_view summary; ///< one line for the CLI's listing and the docs
  OpTraits traits;
  /// Its family: ops of one family run the same kernels but for the post-map or the sense of a
  /// comparison (mean is sum's, std is var's, argmin argmax's), so one's timings are the nearest
  /// guess for another's; the lookup's related grade takes them first (runtime/lookup.cpp).
  Op family;
};

/// Every op, in Op's order.
std::span<const OpDescription> op_descriptions();
const OpDescription& describe(Op op);
/// Whether a and b are of one family (OpDescription::family).
inline bool same_family(Op a, Op b) { return describe(a).family == describe(b).family; }

/// Why `op` does not reduce `dtype` (an op of floats given integers), or nullopt.
std::optional<std::string> op_unsupported(Op op, DType dtype);
/// The accumulator's type: a scalar of this dtype (float32 for bf16 and f16 sums, ...); for a
/// compound accumulator (OpTraits::compound) the type of its floating-point fields, or of
/// argmax's value (the index is int64).
DType accumulator_dtype(Op op, DType dtype);
/// Whether the op combines through its accumulator's ordered 64-bit key (OpAtomic::key) for
/// elements of `dtype`: the value's order in the high 32 bits, the index's reverse in the low, so
/// the accumulator's value must fit 32 bits (float32, int32, uint32; bf16 and f16 as float32) and
/// the index 32 bits (kKeyedMaxLength).
bool keyed_atomic(Op op, DType dtype);
/// The longest segment the keyed atomic finish indexes: indices 0 .. 2^32 - 2 (the index word of
/// the identity's key is the one left).
inline constexpr std::uint64_t kKeyedMaxLength = 0xffffffffull;
/// Whether the op combines through float64 sums about a shift (OpAtomic::shifted) for elements of
/// `dtype`: the sums of the deviations from the column's first element and of their squares, which
/// give M2 back within about rows * 2^-53 of it; for float32 fields (float32, bf16 and f16
/// elements), whose own rounding is far coarser.
bool shifted_atomic(Op op, DType dtype);
/// Bytes of one accumulator: partials, shared memory.
std::size_t accumulator_bytes(Op op, DType dtype);
/// The dtype of the result. `wide_result`: the float32 accumulator of a bf16 or f16 reduction.
DType result_dtype(Op op, DType dtype, bool wide_result = false);

/// The op's CUDA source for elements of `dtype`: A, R, rt_identity(), rt_map(x, i) (two-input ops:
/// rt_map2(x, y, i)), rt_combine(a, b), for argmax, argmin, logsumexp, var and std rt_fold(a, x, i)
/// (with RT_FOLD; templates/common.cuh),
/// rt_post(a, count), for a keyed op (keyed_atomic) rt_key(a) and rt_unkey(k), for a shifted one
/// (shifted_atomic) rt_sums, rt_shift(a, k) and rt_unshift(s, count), and the trait
/// macros templates/common.cuh reads (RT_ATOMIC_*, RT_REDUX_*,
/// RT_ACC_*, RT_HALF_RESULT, RT_WIDE_RESULT, RT_TWO_INPUTS). Rendered after templates/element.cuh.
std::string op_source(Op op, DType dtype, bool wide_result = false);

} // namespace reduce_tune
