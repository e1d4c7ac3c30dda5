// reduce-tune: whether a user reduction adds, as a compiler would see it. An additive reduction
// combines like the built-in sum (an atomic add into its scalar accumulator gives what its
// combine gives), so it takes the sum's atomic and first-block finishes and its __reduce_add_sync
// tail (kernels/user_op.h, UserOp::traits). The test is strict: a spelling it does not know is
// not additive, which only costs speed.
#pragma once

#include "reduce_tune/config.h"
#include "reduce_tune/reduction.h"

#include <optional>
#include <string>

namespace reduce_tune {

/// Why `r` is not additive, or nullopt where it is: its combine, white space and enclosing
/// parentheses removed, is `a+b` or `b+a`; its accumulator a scalar spelling (float, double,
/// int, unsigned, unsigned int, long long, unsigned long long) or empty (the element's wide type);
/// its identity a zero literal (`0`, `0u`, `0ll`, `0.0`, `0.f`, ...; no sign, no exponent); it is
/// declared commutative; and its preamble defines no macro named `a`, `b` or a word of the
/// accumulator's spelling (which would change what the combine means).
std::optional<std::string> not_additive(const Reduction& r);

/// Whether the post-map is the accumulator itself: `a`, white space and enclosing parentheses
/// removed (the preamble's macros as for not_additive). An atomic finish into the result then
/// gives the post-map's value where the result has the accumulator's type.
bool plain_post(const Reduction& r);

/// The dtype a scalar accumulator spelling adds as for elements of `element`: "" is the element's
/// wide type (float for bf16 and f16), "unsigned long long" adds as int64 (the same bits in two's
/// complement; there is no uint64 dtype); nullopt where `spelling` is not a scalar one.
std::optional<DType> scalar_accumulator(const std::string& spelling, DType element);

/// Whether `text`, white space and enclosing parentheses removed as above, is a zero literal.
bool is_zero_literal(const std::string& text);

} // namespace reduce_tune
