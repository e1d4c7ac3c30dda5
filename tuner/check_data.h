// reduce-tune: check data a user supplies for a reduction's sweep (`tune --reduction FILE
// --check-data DIR`): per point, the input to measure on and the expected results with their
// magnitudes, made by the user's own CPU evaluation (Python: a NumPy function), so that a
// reduction described in a file, which carries no CPU evaluation, is still checked.
//
// DIR holds .npy files (tuner/npy.h) and an index, DIR/index.txt, one point a line:
//
//   # problem shape dtype input expected magnitude
//   array 4096 float32 x0.npy e0.npy m0.npy
//   rows 333x77 float32 x1.npy e1.npy m1.npy
//
// shape: N for the array problem (input (N,), expected () or (1,)); ROWSxCOLS for rows and columns
// (input (ROWS, COLS) in C order; expected (ROWS,) for rows, (COLS,) for columns). The input's
// dtype is the point's; bfloat16 inputs come as float32 values that are each a bfloat16. Expected
// and magnitude: any dtype tuner/npy.h reads, widened to double (the magnitude is the evaluation
// over the elements' absolute values: the scale of the rounding bound). One problem per index.
#pragma once

#include "kernels/values.h"
#include "reduce_tune/config.h"
#include "tuner/user_check.h"

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace reduce_tune {

/// Check data that cannot be read or does not fit; the message names the file (and line).
struct CheckDataError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// One point of the index: its problem and shape, dtype and files (paths joined to the directory).
struct CheckPoint {
  Problem problem = Problem::array;
  Shape shape;               ///< results x elements each (columns: COLS x ROWS, as --shapes)
  DType dtype = DType::f32;
  std::string input, expected, magnitude;
};

struct CheckData {
  std::string dir;
  Problem problem = Problem::array;
  std::vector<CheckPoint> points;
  /// The point of (dtype, shape), or nullptr.
  const CheckPoint* find(DType dtype, Shape shape) const;
};

/// The point of (dtype, shape) (never nullptr): CheckDataError naming the index where it has none.
const CheckPoint* supplied_point(const CheckData& data, DType dtype, Shape shape);

/// The name of the index file in a check-data directory.
inline constexpr const char* kCheckIndex = "index.txt";

/// Parses an index's text; files are taken relative to `dir`. CheckDataError naming `dir`'s index
/// and the line for an unknown problem or dtype, a malformed shape, a missing field, a repeated
/// point, points of more than one problem, segments (not supported: their offsets are not
/// supplied) or no point at all.
CheckData parse_check_index(const std::string& text, const std::string& dir);
/// Reads DIR/index.txt (no .npy file is read yet).
CheckData read_check_data(const std::string& dir);

/// The input of `p` as the sweep uploads it, from its .npy file: CheckDataError naming the file
/// where its shape or dtype is not the point's (or a float32 value of a bfloat16 point is not a
/// bfloat16).
HostArray load_check_input(const CheckPoint& p);
/// The expected results of `p` and their magnitudes (checked = true), one per result.
UserExpected load_check_expected(const CheckPoint& p);

} // namespace reduce_tune
