// Tests of supplied check data (tuner/npy.h, tuner/check_data.h): .npy files written here read
// back bit for bit, every refusal of the reader, the index's parsing and its errors, and the
// inputs and expected results a sweep takes from them.
#include <catch2/catch.hpp>

#include "kernels/half.h"
#include "tests/fixtures.h"
#include "tuner/check_data.h"
#include "tuner/npy.h"

#include <cstring>
#include <fstream>

using namespace reduce_tune;
using reduce_tune::testing::TempDir;

namespace {

template <typename T> NpyArray array_of(DType d, std::vector<std::uint64_t> shape, const std::vector<T>& v) {
  NpyArray a;
  a.dtype = d;
  a.shape = std::move(shape);
  a.bytes.resize(v.size() * sizeof(T));
  std::memcpy(a.bytes.data(), v.data(), a.bytes.size());
  return a;
}

/// A .npy file with the header `dict` (version 1.0, padded as NumPy pads it) and `data` bytes.
std::vector<unsigned char> raw_npy(const std::string& dict, std::size_t data, int major = 1) {
  std::string header = dict;
  const std::size_t len_bytes = major == 1 ? 2 : 4;
  const std::size_t total = (8 + len_bytes + header.size() + 1 + 63) / 64 * 64;
  header.append(total - 8 - len_bytes - header.size() - 1, ' ');
  header += '\n';
  std::vector<unsigned char> f = {0x93, 'N', 'U', 'M', 'P', 'Y', static_cast<unsigned char>(major), 0};
  for (std::size_t b = 0; b < len_bytes; ++b) f.push_back(static_cast<unsigned char>((header.size() >> (8 * b)) & 0xff));
  f.insert(f.end(), header.begin(), header.end());
  f.resize(f.size() + data, 0);
  return f;
}

void write_file(const std::string& path, const std::vector<unsigned char>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
}

void write_text(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

} // namespace

TEST_CASE("npy: every supported dtype round-trips through a file, bit for bit") {
  TempDir dir;
  const std::vector<NpyArray> arrays = {
      array_of<float>(DType::f32, {2, 3}, {1.5f, -2.0f, 0.1f, 3e30f, -0.0f, 7.0f}),
      array_of<double>(DType::f64, {3}, {0.1, -1e300, 2.5}),
      array_of<std::int32_t>(DType::i32, {2, 2}, {-7, 8, 2147483647, -2147483647 - 1}),
      array_of<std::int64_t>(DType::i64, {1}, {-(std::int64_t(1) << 62)}),
      array_of<std::uint32_t>(DType::u32, {4}, {0u, 1u, 4000000000u, 17u}),
      array_of<std::uint16_t>(DType::f16, {2}, {0x3c00, 0xc000}), // 1.0, -2.0
      array_of<double>(DType::f64, {}, {42.0}),                  // 0-d: one element
      array_of<float>(DType::f32, {0}, {}),
  };
  for (std::size_t i = 0; i < arrays.size(); ++i) {
    const std::string path = dir.file("a" + std::to_string(i) + ".npy");
    write_npy(path, arrays[i]);
    const NpyArray back = read_npy(path);
    CHECK(back.dtype == arrays[i].dtype);
    CHECK(back.shape == arrays[i].shape);
    CHECK(back.bytes == arrays[i].bytes);
    CHECK(back.elements() == arrays[i].elements());
  }
  const NpyArray h = read_npy(dir.file("a5.npy"));
  CHECK(h.at(0) == 1.0);
  CHECK(h.at(1) == -2.0);
  CHECK(read_npy(dir.file("a2.npy")).at(3) == -2147483648.0);
  CHECK(read_npy(dir.file("a4.npy")).at(2) == 4000000000.0);
  CHECK(read_npy(dir.file("a6.npy")).at(0) == 42.0);
  // The data starts 64-byte aligned, as NumPy writes it.
  CHECK(npy_bytes(arrays[0]).size() % 64 == arrays[0].bytes.size() % 64);
}

TEST_CASE("npy: headers as NumPy writes them, version 2.0 and keys in any order") {
  TempDir dir;
  std::vector<unsigned char> f = raw_npy("{'shape': (2,), 'fortran_order': False, 'descr': '<i8'}", 16, 2);
  std::int64_t v = -3;
  std::memcpy(f.data() + f.size() - 8, &v, 8);
  const NpyArray a = parse_npy(f, "x.npy");
  CHECK(a.dtype == DType::i64);
  CHECK(a.shape == std::vector<std::uint64_t>{2});
  CHECK(a.at(1) == -3.0);
  CHECK(parse_npy(raw_npy("{\"descr\":\"<f8\",\"fortran_order\":False,\"shape\":(1,1,),}", 8), "y").shape ==
        std::vector<std::uint64_t>{1, 1});
  CHECK(shape_text({5}) == "(5,)");
  CHECK(shape_text({3, 4}) == "(3, 4)");
  CHECK(shape_text({}) == "()");
}

TEST_CASE("npy: what is not supported is refused, naming the file and the problem") {
  TempDir dir;
  const std::string ok = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
  REQUIRE_NOTHROW(parse_npy(raw_npy(ok, 8), "f.npy"));
  auto refused = [](const std::vector<unsigned char>& f) {
    try {
      parse_npy(f, "f.npy");
    } catch (const NpyError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  using Catch::Matchers::Contains;
  using Catch::Matchers::StartsWith;
  CHECK_THAT(refused({'P', 'K', 3, 4, 0, 0, 0, 0, 0, 0, 0}), StartsWith("f.npy: not a .npy file"));
  std::vector<unsigned char> v3 = raw_npy(ok, 8);
  v3[6] = 3;
  CHECK_THAT(refused(v3), Contains("version 3.0 is not supported"));
  CHECK_THAT(refused(raw_npy("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", 8)),
             Contains("dtype '>f4' is not supported"));
  CHECK_THAT(refused(raw_npy("{'descr': '|b1', 'fortran_order': False, 'shape': (2,), }", 2)),
             Contains("dtype '|b1' is not supported"));
  CHECK_THAT(refused(raw_npy("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }", 8)),
             Contains("malformed .npy header (expected a quoted string"));
  CHECK_THAT(refused(raw_npy("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", 16)),
             Contains("Fortran order is not supported"));
  CHECK_THAT(refused(raw_npy(ok, 4)), Contains("f.npy: 4 data bytes, but shape (2,) of <f4 needs 8"));
  CHECK_THAT(refused(raw_npy(ok, 12)), Contains("12 data bytes"));
  CHECK_THAT(refused(raw_npy("{'descr': '<f4', 'shape': (2,), }", 8)), Contains("descr, fortran_order and shape are required"));
  CHECK_THAT(refused(raw_npy("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,)}", 8)),
             Contains("unexpected or repeated key 'descr'"));
  CHECK_THAT(refused(raw_npy("{'descr': '<f4', 'fortran_order': Maybe, 'shape': (2,)}", 8)),
             Contains("expected True or False"));
  CHECK_THAT(refused(raw_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, -1)}", 8)),
             Contains("expected a dimension"));
  CHECK_THAT(refused(raw_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2,)} x", 8)),
             Contains("unexpected text after the dict"));
  CHECK_THAT(refused(raw_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,)}", 8)),
             Contains("overflows 64 bits"));
  std::vector<unsigned char> cut = raw_npy(ok, 0);
  cut.resize(20);
  CHECK_THAT(refused(cut), Contains("truncated .npy header"));
  try {
    read_npy(dir.file("missing.npy"));
    FAIL("read a missing file");
  } catch (const NpyError& e) {
    CHECK_THAT(e.what(), Contains("missing.npy: cannot read"));
  }
  CHECK_THROWS_AS(write_npy(dir.file("no/such/dir/x.npy"), array_of<float>(DType::f32, {1}, {1.0f})), NpyError);
}

TEST_CASE("check data: the index's points, problems and shapes") {
  const CheckData c = parse_check_index("# problem shape dtype input expected magnitude\n"
                                        "array 4096 float32 x0.npy e0.npy m0.npy\n"
                                        "\n"
                                        "array 2^20 float64 x1.npy e1.npy /abs/m1.npy  # a comment\n",
                                        "dir");
  CHECK(c.problem == Problem::array);
  REQUIRE(c.points.size() == 2);
  CHECK(c.points[0].shape == Shape{1, 4096});
  CHECK(c.points[0].dtype == DType::f32);
  CHECK(c.points[0].input == "dir/x0.npy");
  CHECK(c.points[1].shape == Shape{1, 1u << 20});
  CHECK(c.points[1].magnitude == "/abs/m1.npy");
  CHECK(c.find(DType::f64, Shape{1, 1u << 20}) == &c.points[1]);
  CHECK(c.find(DType::f32, Shape{1, 1u << 20}) == nullptr);
  CHECK(supplied_point(c, DType::f32, Shape{1, 4096}) == &c.points[0]);
  CHECK_THROWS_WITH(supplied_point(c, DType::i32, Shape{1, 4096}),
                    Catch::Matchers::Contains("dir/index.txt: no point int32 array (4096,)"));
  // Columns are COLS results of ROWS elements, as --shapes reads them.
  const CheckData cols = parse_check_index("columns 333x77 bfloat16 x e m\n", "d/");
  CHECK(cols.problem == Problem::columns);
  CHECK(cols.points[0].shape == Shape{77, 333});
  CHECK(cols.points[0].input == "d/x");
  CHECK(parse_check_index("rows 333x77 int32 x e m\n", "d").points[0].shape == Shape{333, 77});
}

TEST_CASE("check data: a malformed index is refused, naming the line") {
  using Catch::Matchers::Contains;
  auto refused = [](const std::string& text) {
    try {
      parse_check_index(text, "cd");
    } catch (const CheckDataError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  CHECK_THAT(refused("array 10 float32 x e\n"), Contains("cd/index.txt line 1: expected 6 fields"));
  CHECK_THAT(refused("# nothing\n"), Contains("cd/index.txt: no points"));
  CHECK_THAT(refused("\narray 10 float32 x e m\nmatrix 3x4 float32 x e m\n"),
             Contains("line 3: unknown problem 'matrix'"));
  CHECK_THAT(refused("segments 3x4 float32 x e m\n"), Contains("segments are not supported"));
  CHECK_THAT(refused("array ten float32 x e m\n"), Contains("line 1: shape 'ten'"));
  CHECK_THAT(refused("array 0 float32 x e m\n"), Contains("line 1: shape '0': ") && Contains("at least 1"));
  CHECK_THAT(refused("rows 34 float32 x e m\n"), Contains("shape '34' is not ROWSxCOLS"));
  CHECK_THAT(refused("rows 3x0 float32 x e m\n"), Contains("line 1: shape '3x0': ") && Contains("at least 1"));
  CHECK_THAT(refused("rows 2^40x2^40 float32 x e m\n"), Contains("overflows 64 bits"));
  CHECK_THAT(refused("array 10 float128 x e m\n"), Contains("unknown dtype 'float128'"));
  CHECK_THAT(refused("array 10 uint8 x e m\n"), Contains("unknown dtype 'uint8'"));
  CHECK_THAT(refused("rows 3x4 float32 x e m\narray 12 float32 x e m\n"),
             Contains("line 2: a array point among rows points"));
  CHECK_THAT(refused("array 10 float32 x e m\narray 10 float32 y f n\n"), Contains("line 2: point float32 array (10,) is given twice"));
  TempDir dir;
  CHECK_THROWS_WITH(read_check_data(dir.path.string()), Contains("index.txt: cannot read"));
}

TEST_CASE("check data: inputs and expected results as the sweep takes them") {
  using Catch::Matchers::Contains;
  TempDir dir;
  const std::string d = dir.path.string();
  write_text(dir.file("index.txt"), "rows 2x3 float32 x.npy e.npy m.npy\n"
                                    "columns 2x3 float32 x.npy c.npy cm.npy\n");
  CHECK_THROWS_WITH(read_check_data(d), Contains("a columns point among rows points"));
  write_text(dir.file("index.txt"), "rows 2x3 float32 x.npy e.npy m.npy\n"
                                    "rows 1x3 float32 x13.npy e1.npy m.npy\n"
                                    "rows 3x2 bfloat16 xb.npy e3.npy m3.npy\n"
                                    "rows 1x2 bfloat16 xbad.npy e1.npy m.npy\n"
                                    "rows 2x2 float64 x.npy e.npy m.npy\n");
  const CheckData c = read_check_data(d);
  REQUIRE(c.points.size() == 5);
  write_npy(dir.file("x.npy"), array_of<float>(DType::f32, {2, 3}, {1, -2, 3, 4, 5, -6}));
  write_npy(dir.file("e.npy"), array_of<double>(DType::f64, {2}, {2.0, 3.0}));
  write_npy(dir.file("m.npy"), array_of<double>(DType::f64, {2}, {6.0, 15.0}));
  const HostArray x = load_check_input(c.points[0]);
  CHECK(x.dtype == DType::f32);
  CHECK(x.n == 6);
  CHECK(x.data<float>()[5] == -6.0f);
  const UserExpected e = load_check_expected(c.points[0]);
  CHECK(e.checked);
  CHECK(e.value == std::vector<double>{2.0, 3.0});
  CHECK(e.magnitude == std::vector<double>{6.0, 15.0});
  // A shape or dtype other than the point's, and expected results of another count.
  write_npy(dir.file("x13.npy"), array_of<float>(DType::f32, {3}, {1, 2, 3}));
  CHECK_THROWS_WITH(load_check_input(c.points[1]), Contains("x13.npy: shape (3,), but the point float32 rows (1, 3) needs (1, 3)"));
  CHECK_THROWS_WITH(load_check_input(c.points[4]), Contains("x.npy: shape (2, 3), but the point float64 rows (2, 2)"));
  write_npy(dir.file("x13.npy"), array_of<double>(DType::f64, {1, 3}, {1, 2, 3}));
  CHECK_THROWS_WITH(load_check_input(c.points[1]), Contains("x13.npy: dtype float64, but the point float32 rows (1, 3) is float32"));
  write_npy(dir.file("e1.npy"), array_of<double>(DType::f64, {2}, {1, 2}));
  CHECK_THROWS_WITH(load_check_expected(c.points[1]), Contains("e1.npy: shape (2,), but the point float32 rows (1, 3) has 1 results: (1,)"));
  CHECK_THROWS_WITH(load_check_expected(c.points[2]), Contains("e3.npy: cannot read"));
  // bfloat16: float32 values that are each a bfloat16, and nothing else.
  write_npy(dir.file("xb.npy"), array_of<float>(DType::f32, {3, 2}, {1.5f, -2.0f, 0.0078125f, 256.0f, -3.0f, 0.5f}));
  const HostArray b = load_check_input(c.points[2]);
  CHECK(b.dtype == DType::bf16);
  CHECK(b.bytes.size() == 12);
  CHECK(float(b.data<bf16_t>()[0]) == 1.5f);
  CHECK(float(b.data<bf16_t>()[5]) == 0.5f);
  write_npy(dir.file("xbad.npy"), array_of<float>(DType::f32, {1, 2}, {1.0f, 1.001f}));
  CHECK_THROWS_WITH(load_check_input(c.points[3]), Contains("xbad.npy: element 1") && Contains("is not a bfloat16 value"));
  write_npy(dir.file("xbad.npy"), array_of<std::uint16_t>(DType::f16, {1, 2}, {0x3c00, 0x3c00}));
  CHECK_THROWS_WITH(load_check_input(c.points[3]), Contains("dtype float16, but the point bfloat16 rows (1, 2) is bfloat16 (give its values as float32)"));
  // The array problem's one result: () or (1,), any dtype the reader takes.
  write_text(dir.file("index.txt"), "array 3 int32 xi.npy ei.npy mi.npy\n");
  const CheckData a = read_check_data(d);
  write_npy(dir.file("xi.npy"), array_of<std::int32_t>(DType::i32, {3}, {1, -2, 3}));
  write_npy(dir.file("ei.npy"), array_of<std::int64_t>(DType::i64, {}, {14}));
  write_npy(dir.file("mi.npy"), array_of<float>(DType::f32, {1}, {14.0f}));
  CHECK(load_check_input(a.points[0]).data<std::int32_t>()[1] == -2);
  CHECK(load_check_expected(a.points[0]).value == std::vector<double>{14.0});
  write_npy(dir.file("mi.npy"), array_of<float>(DType::f32, {2}, {14.0f, 1.0f}));
  CHECK_THROWS_WITH(load_check_expected(a.points[0]), Contains("mi.npy: shape (2,), but the point int32 array (3,) has one result: () or (1,)"));
}
