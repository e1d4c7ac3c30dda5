// reduce-tune: NumPy's .npy files (format versions 1.0 and 2.0), read and written strictly: the
// inputs and expected results a user supplies for checking a sweep (tuner/check_data.h). Only what
// those need: little-endian (or one-byte) numbers in C order; anything else is refused by name.
#pragma once

#include "kernels/host_bytes.h"
#include "reduce_tune/config.h"

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace reduce_tune {

/// A .npy file that cannot be read, or holds what is not supported; the message names the file.
struct NpyError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// The element types a .npy file may hold here (NumPy's descr): '<f4' float32, '<f8' float64,
/// '<f2' float16, '<i4' int32, '<i8' int64, '<u4' uint32. bfloat16 has no NumPy dtype: its values
/// come as float32 (tuner/check_data.h).
struct NpyArray {
  DType dtype = DType::f32;
  std::vector<std::uint64_t> shape;  ///< empty: a 0-d array (one element)
  HostBytes bytes;                   ///< elements() * size_of(dtype), C order, little-endian
  std::uint64_t elements() const;
  /// Element i widened to double.
  double at(std::uint64_t i) const;
};

/// "(3, 4)", "(5,)", "()": a shape as NumPy prints it, for messages.
std::string shape_text(const std::vector<std::uint64_t>& shape);

/// Reads `path`; NpyError naming it for what is not a .npy file of version 1.0 or 2.0, a dtype
/// not listed above (big-endian, structured, object, ...), Fortran order, a malformed header, or
/// fewer data bytes than the shape says (or more).
NpyArray read_npy(const std::string& path);
/// The same from the bytes of a file; `path` names it in messages.
NpyArray parse_npy(const std::vector<unsigned char>& file, const std::string& path);

/// Writes `a` as a version 1.0 file (NpyError naming the path where it cannot).
void write_npy(const std::string& path, const NpyArray& a);
/// The bytes of that file.
std::vector<unsigned char> npy_bytes(const NpyArray& a);

} // namespace reduce_tune
