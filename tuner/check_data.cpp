// reduce-tune: supplied check data (tuner/check_data.h).
#include "tuner/check_data.h"

#include "kernels/half.h"
#include "tuner/npy.h"
#include "tuner/sizes.h"

#include <cstring>
#include <fstream>
#include <sstream>

namespace reduce_tune {
namespace {

std::string joined(const std::string& dir, const std::string& file) {
  if (file.empty() || file.front() == '/' || dir.empty()) return file;
  return dir.back() == '/' ? dir + file : dir + "/" + file;
}

std::string index_path(const std::string& dir) { return joined(dir, kCheckIndex); }

NpyArray read(const std::string& path) {
  try {
    return read_npy(path);
  } catch (const NpyError& e) {
    throw CheckDataError(e.what());
  }
}

/// The shape its input file must have: (N,) for the array, (ROWS, COLS) for rows and columns.
std::vector<std::uint64_t> input_shape(const CheckPoint& p) {
  if (p.problem == Problem::array) return {p.shape.length};
  if (p.problem == Problem::rows) return {p.shape.count, p.shape.length};
  return {p.shape.length, p.shape.count}; // columns: ROWS x COLS, one result a column
}

std::string point_text(const CheckPoint& p) {
  return std::string(name(p.dtype)) + " " + std::string(name(p.problem)) + " " + shape_text(input_shape(p));
}

} // namespace

const CheckPoint* CheckData::find(DType dtype, Shape shape) const {
  for (const CheckPoint& p : points)
    if (p.dtype == dtype && p.shape == shape) return &p;
  return nullptr;
}

const CheckPoint* supplied_point(const CheckData& data, DType dtype, Shape shape) {
  if (const CheckPoint* p = data.find(dtype, shape)) return p;
  CheckPoint missing;
  missing.problem = data.problem, missing.shape = shape, missing.dtype = dtype;
  throw CheckDataError(index_path(data.dir) + ": no point " + point_text(missing));
}

CheckData parse_check_index(const std::string& text, const std::string& dir) {
  const std::string where = index_path(dir);
  CheckData data;
  data.dir = dir;
  std::istringstream in(text);
  std::string line;
  int number = 0;
  for (; std::getline(in, line); ) {
    ++number;
    const auto fail = [&](const std::string& why) {
      throw CheckDataError(where + " line " + std::to_string(number) + ": " + why);
    };
    if (const auto hash = line.find('#'); hash != std::string::npos) line.erase(hash);
    std::istringstream fields(line);
    std::vector<std::string> f;
    for (std::string w; fields >> w; ) f.push_back(w);
    if (f.empty()) continue;
    if (f.size() != 6)
      fail("expected 6 fields (problem shape dtype input expected magnitude), found " + std::to_string(f.size()));
    CheckPoint p;
    const std::optional<Problem> problem = parse_problem(f[0]);
    if (!problem) fail("unknown problem '" + f[0] + "' (array, rows or columns)");
    if (*problem == Problem::segments)
      fail("segments are not supported in check data (their offsets are not supplied): array, rows or columns");
    p.problem = *problem;
    std::string why;
    if (p.problem == Problem::array) {
      const auto n = parse_size(f[1], &why);
      if (!n) fail("shape '" + f[1] + "': " + why); // (a size is at least 1)
      p.shape = Shape{1, *n};
    } else {
      const auto x = f[1].find('x');
      if (x == std::string::npos) fail("shape '" + f[1] + "' is not ROWSxCOLS");
      const auto rows = parse_size(f[1].substr(0, x), &why), cols = parse_size(f[1].substr(x + 1), &why);
      if (!rows || !cols) fail("shape '" + f[1] + "': " + why);
      if (*cols > ~std::uint64_t(0) / *rows) fail("shape '" + f[1] + "' overflows 64 bits");
      p.shape = p.problem == Problem::rows ? Shape{*rows, *cols} : Shape{*cols, *rows};
    }
    const std::optional<DType> dtype = parse_dtype(f[2]);
    if (!dtype || *dtype == DType::u8) fail("unknown dtype '" + f[2] + "'");
    p.dtype = *dtype;
    p.input = joined(dir, f[3]), p.expected = joined(dir, f[4]), p.magnitude = joined(dir, f[5]);
    if (data.points.empty()) data.problem = p.problem;
    else if (p.problem != data.problem)
      fail("a " + f[0] + " point among " + std::string(name(data.problem)) +
           " points (check data holds one problem: tune each separately)");
    if (data.find(p.dtype, p.shape)) fail("point " + point_text(p) + " is given twice");
    data.points.push_back(std::move(p));
  }
  if (data.points.empty()) throw CheckDataError(where + ": no points");
  return data;
}

CheckData read_check_data(const std::string& dir) {
  const std::string where = index_path(dir);
  std::ifstream in(where);
  if (!in) throw CheckDataError(where + ": cannot read (the check data's index)");
  std::ostringstream text;
  text << in.rdbuf();
  return parse_check_index(text.str(), dir);
}

HostArray load_check_input(const CheckPoint& p) {
  const NpyArray a = read(p.input);
  const std::vector<std::uint64_t> want = input_shape(p);
  if (a.shape != want)
    throw CheckDataError(p.input + ": shape " + shape_text(a.shape) + ", but the point " + point_text(p) +
                         " needs " + shape_text(want));
  HostArray h;
  h.dtype = p.dtype;
  h.n = p.shape.elements();
  if (p.dtype == DType::bf16 && a.dtype == DType::f32) {
    // NumPy has no bfloat16: its values come as float32, each of which must be one.
    h.bytes.resize(h.n * 2);
    for (std::uint64_t i = 0; i < h.n; ++i) {
      float v;
      std::memcpy(&v, a.bytes.data() + i * 4, 4);
      const bf16_t b{double(v)};
      if (v == v && float(b) != v) // NaN stays NaN
        throw CheckDataError(p.input + ": element " + std::to_string(i) + " (" + std::to_string(v) +
                             ") is not a bfloat16 value (the input of a bfloat16 point is float32 values "
                             "that are each a bfloat16)");
      std::memcpy(h.bytes.data() + i * 2, &b, 2);
    }
    return h;
  }
  if (a.dtype != p.dtype)
    throw CheckDataError(p.input + ": dtype " + std::string(name(a.dtype)) + ", but the point " + point_text(p) +
                         " is " + std::string(name(p.dtype)) +
                         (p.dtype == DType::bf16 ? " (give its values as float32)" : ""));
  h.bytes = a.bytes;
  return h;
}

UserExpected load_check_expected(const CheckPoint& p) {
  UserExpected e;
  e.checked = true;
  const std::uint64_t results = p.shape.count;
  for (const auto& [path, out] : {std::pair{&p.expected, &e.value}, std::pair{&p.magnitude, &e.magnitude}}) {
    const NpyArray a = read(*path);
    const bool fits = p.problem == Problem::array ? a.shape.empty() || a.shape == std::vector<std::uint64_t>{1}
                                                  : a.shape == std::vector<std::uint64_t>{results};
    if (!fits)
      throw CheckDataError(*path + ": shape " + shape_text(a.shape) + ", but the point " + point_text(p) + " has " +
                           (p.problem == Problem::array ? std::string("one result: () or (1,)")
                                                        : std::to_string(results) + " results: (" +
                                                              std::to_string(results) + ",)"));
    out->resize(results);
    for (std::uint64_t i = 0; i < results; ++i) (*out)[i] = a.at(i);
  }
  return e;
}

} // namespace reduce_tune
