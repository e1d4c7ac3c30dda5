// reduce-tune: a user reduction (reduce_tune/reduction.h) as the catalogue and the templates see
// it: the same pieces a built-in op's description renders (kernels/ops.h: A, R, rt_identity,
// rt_map, rt_combine, rt_post, the trait macros), made from the user's expressions, with
// conservative traits: no host or in-place path, and the atomic and redux ones only for a combine
// the library can read as an addition (kernels/additive.h).
#pragma once

#include "kernels/ops.h"
#include "reduce_tune/reduction.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace reduce_tune {

/// Follows each user field in the source: render() turns it into a #line directive that gives the
/// generated source its own line numbers again (the fields are under #line directives of their
/// own, so NVRTC's log names the field: `map(1): error: ...`).
inline constexpr std::string_view kUserLineMarker = "#line RT_USER_LINE";

/// A checked user reduction. Immutable; shared by the kernels compiled from it.
struct UserOp {
  Reduction description;
  std::uint64_t hash = 0;
  std::string name;           ///< "user:<16 hex>" (Reduction::name)
  bool compound = false;      ///< the accumulator is not a scalar spelling: a struct
  /// Why the combine is not an addition of a scalar accumulator (kernels/additive.h), or nullopt
  /// where it is: then it has the built-in sum's atomic add and __reduce_add_sync.
  std::optional<std::string> not_additive;
  /// The post-map is `a`: an atomic finish may add into the result where the result has the
  /// accumulator's type (OpTraits::plain_post).
  bool plain_post = false;

  /// The catalogue's traits: an additive combine's atomic add and redux (and plain_post), none of
  /// the other fast paths (the host finish, in place), the volatile tail refused for a struct (it
  /// copies scalars), and whether elements may be reordered (OpTraits has no field for it: see
  /// ordered()).
  OpTraits traits() const;
  bool additive() const { return !not_additive; }
  /// The scalar dtype the accumulator adds as for elements of `dtype` (scalar_accumulator), for
  /// an additive op; nullopt for the others.
  std::optional<DType> accumulator_dtype(DType dtype) const;
  /// A non-commutative combine: only variants that keep each result's elements in order.
  bool ordered() const { return !description.commutative; }
  /// Whether the map may read the element's index `i` (the identifier appears in the map or the
  /// preamble): only mappings that track each element's index in its segment are admitted then.
  bool reads_index() const;
  /// Why it does not reduce `dtype`, or nullopt.
  std::optional<std::string> unsupported(DType dtype) const;
  /// Bytes of one accumulator for elements of `dtype`.
  std::size_t accumulator_bytes(DType dtype) const;
  DType result_dtype(DType dtype) const;
  /// The CUDA source of the op for elements of `dtype`, rendered where a built-in op's
  /// op_source goes (after templates/element.cuh).
  std::string source(DType dtype) const;
};

/// Checks `r` (non-empty expressions, an accumulator whose size is known, dtypes in place) and
/// makes its UserOp. Throws ReductionError naming the field.
std::shared_ptr<const UserOp> make_user_op(const Reduction& r);

} // namespace reduce_tune
