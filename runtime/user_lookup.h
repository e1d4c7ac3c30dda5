// reduce-tune: the configuration of a user reduction's call (reduce_tune/reduction.h): its own
// rows, stored under its hash by `reduce-tune tune --reduction`, then the rows of a built-in op
// with an accumulator of its size (related), then the built-in defaults, each checked against the
// reduction's rules. A pure function of the stores and the device, as lookup() is.
#pragma once

#include "runtime/lookup.h"

#include <optional>
#include <string>

namespace reduce_tune {

/// The built-in op whose tuning a user reduction of `dtype` takes where it has none of its own:
/// the first of sum, logsumexp, count_nonzero, mean, any, argmax and var that reduces the dtype
/// with an accumulator of the user's size (its shared memory, partials and shuffles cost the
/// same), or nullopt. An additive reduction (kernels/additive.h) passes over the struct
/// accumulators (logsumexp, argmax, var), whose rows have no atomic finish, for a scalar sum's
/// (count_nonzero's for 8 bytes of a 4-byte dtype), whose atomic finishes it may take.
std::optional<Op> related_op(const UserOp& u, DType dtype);

/// The graded choice for `u` on (dtype, problem, shape): its own rows (lookup_own: exact,
/// nearest_size, shipped, same_arch; the note names the reduction), else the related op's rows
/// by lookup() (graded `related` for the reduction, the note naming the op and the GPU), else
/// the built-in default; a choice the reduction's rules refuse (an atomic finish of a combine that
/// is not additive, a non-commutative combine's reordering) falls back to the ordered finish (partials combined in block order), else
/// a lane per row or segment in order. `req.user` is set to `u` here. Throws
/// ReductionError where no variant serves the problem; a store that cannot be read is passed over
/// for the defaults, the note says why.
Choice lookup_user(const db::Store* store, const db::Store* shipped, const DeviceKey& device, const UserOp& u,
                   DType dtype, Problem problem, Shape shape, Requirements req,
                   const std::string& why_none = "no tuning store");

} // namespace reduce_tune
