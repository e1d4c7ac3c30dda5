// reduce-tune: the DType of a C++ element type, for the typed helpers of reduce_tune/reducer.h.
// CUDA's 2-byte floats are named by a declaration of their own (as CUDA's headers declare them
// before defining them), so the helpers take __nv_bfloat16 and __half whether <cuda_bf16.h> and
// <cuda_fp16.h> come before or after this header: a type need only be complete where a helper
// is called with it, and no CUDA header is needed otherwise.
#pragma once

#include "reduce_tune/config.h"

#include <type_traits>

// CUDA's bfloat16 (cuda_bf16.h) and IEEE binary16 (cuda_fp16.h) types, declared as CUDA does.
struct __nv_bfloat16;
struct __half;

namespace reduce_tune {

/// Element types beyond the built-in ones: a specialization with `defined = true` and `value`
/// names the DType of T for the typed helpers (dtype_of).
template <typename T> struct element_dtype {
  static constexpr bool defined = false;
};
template <> struct element_dtype<::__nv_bfloat16> {
  static constexpr bool defined = true;
  static constexpr DType value = DType::bf16;
};
template <> struct element_dtype<::__half> {
  static constexpr bool defined = true;
  static constexpr DType value = DType::f16;
};

/// The DType of a C++ element type: int32, uint32, int64, float, double, __nv_bfloat16 and
/// __half (and any type element_dtype names).
template <typename T> constexpr DType dtype_of() {
  if constexpr (element_dtype<T>::defined) return element_dtype<T>::value;
  else if constexpr (std::is_same_v<T, float>) return DType::f32;
  else if constexpr (std::is_same_v<T, double>) return DType::f64;
  else if constexpr (std::is_integral_v<T> && sizeof(T) == 4 && std::is_signed_v<T>) return DType::i32;
  else if constexpr (std::is_integral_v<T> && sizeof(T) == 4) return DType::u32;
  else if constexpr (std::is_integral_v<T> && sizeof(T) == 8 && std::is_signed_v<T>) return DType::i64;
  else static_assert(!sizeof(T), "reduce_tune reduces int32, uint32, int64, float, double, "
                                 "__nv_bfloat16 and __half");
}

} // namespace reduce_tune
