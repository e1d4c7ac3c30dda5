// reduce-tune: .npy files (tuner/npy.h). The header is a Python dict literal with three keys;
// it is parsed here as exactly that, not as Python.
#include "tuner/npy.h"

#include "kernels/half.h"

#include <cctype>
#include <cstring>
#include <fstream>
#include <iterator>
#include <optional>

namespace reduce_tune {
namespace {

constexpr unsigned char kMagic[] = {0x93, 'N', 'U', 'M', 'P', 'Y'};

struct Descr {
  const char* text;
  DType dtype;
};
constexpr Descr kDescrs[] = {{"<f4", DType::f32}, {"<f8", DType::f64}, {"<f2", DType::f16},
                             {"<i4", DType::i32}, {"<i8", DType::i64}, {"<u4", DType::u32}};

std::optional<DType> dtype_of(const std::string& descr) {
  for (const Descr& d : kDescrs)
    if (descr == d.text) return d.dtype;
  return std::nullopt;
}

const char* descr_of(DType d) {
  for (const Descr& x : kDescrs)
    if (x.dtype == d) return x.text;
  return nullptr;
}

/// The header dict, read left to right; each failure says what was expected where.
class Header {
public:
  Header(std::string text, const std::string& path) : s_(std::move(text)), path_(path) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw NpyError(path_ + ": malformed .npy header (" + what + " at character " + std::to_string(i_) +
                   "): " + s_.substr(0, s_.find_last_not_of(" \n") + 1));
  }
  void space() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t')) ++i_;
  }
  bool take(char c) {
    space();
    if (i_ < s_.size() && s_[i_] == c) return ++i_, true;
    return false;
  }
  void expect(char c) {
    if (!take(c)) fail(std::string("expected '") + c + "'");
  }
  std::string quoted() {
    space();
    if (i_ >= s_.size() || (s_[i_] != '\'' && s_[i_] != '"')) fail("expected a quoted string");
    const char q = s_[i_++];
    const std::size_t end = s_.find(q, i_);
    if (end == std::string::npos) fail("unterminated string");
    std::string v = s_.substr(i_, end - i_);
    i_ = end + 1;
    return v;
  }
  bool boolean() {
    space();
    for (const auto& [word, value] : {std::pair{"True", true}, std::pair{"False", false}})
      if (s_.compare(i_, std::strlen(word), word) == 0) {
        i_ += std::strlen(word);
        return value;
      }
    fail("expected True or False");
  }
  std::uint64_t integer() {
    space();
    const std::size_t from = i_;
    std::uint64_t v = 0;
    while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) {
      const std::uint64_t digit = std::uint64_t(s_[i_++] - '0');
      if (v > (~std::uint64_t(0) - digit) / 10) fail("dimension overflows 64 bits");
      v = v * 10 + digit;
    }
    if (i_ == from) fail("expected a dimension");
    return v;
  }
  std::vector<std::uint64_t> tuple() {
    expect('(');
    std::vector<std::uint64_t> dims;
    while (!take(')')) {
      dims.push_back(integer());
      if (take(')')) break;
      expect(',');
    }
    return dims;
  }
  /// The rest must be blank but for the newline the format ends the header with.
  void end() {
    space();
    if (i_ < s_.size() && s_[i_] == '\n') ++i_;
    if (i_ != s_.size()) fail("unexpected text after the dict");
  }

private:
  std::string s_;
  const std::string& path_;
  std::size_t i_ = 0;
};

} // namespace

std::uint64_t NpyArray::elements() const {
  std::uint64_t n = 1;
  for (std::uint64_t d : shape) n *= d;
  return n;
}

double NpyArray::at(std::uint64_t i) const {
  const unsigned char* p = bytes.data() + i * size_of(dtype);
  auto load = [&](auto t) {
    decltype(t) v;
    std::memcpy(&v, p, sizeof v);
    return double(v);
  };
  switch (dtype) {
  case DType::i32: return load(std::int32_t{});
  case DType::u32: return load(std::uint32_t{});
  case DType::i64: return load(std::int64_t{});
  case DType::f32: return load(float{});
  case DType::f64: return load(double{});
  case DType::f16: return double(load(f16_t{}));
  case DType::bf16: return double(load(bf16_t{}));
  case DType::u8: return double(*p);
  }
  return 0;
}

std::string shape_text(const std::vector<std::uint64_t>& shape) {
  std::string s = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

NpyArray parse_npy(const std::vector<unsigned char>& file, const std::string& path) {
  if (file.size() < 10 || std::memcmp(file.data(), kMagic, sizeof kMagic) != 0)
    throw NpyError(path + ": not a .npy file (no \\x93NUMPY magic)");
  const int major = file[6], minor = file[7];
  if ((major != 1 && major != 2) || minor != 0)
    throw NpyError(path + ": .npy format version " + std::to_string(major) + "." + std::to_string(minor) +
                   " is not supported (1.0 or 2.0)");
  const std::size_t len_bytes = major == 1 ? 2 : 4;
  if (file.size() < 8 + len_bytes) throw NpyError(path + ": truncated .npy header");
  std::size_t header_len = 0;
  for (std::size_t b = 0; b < len_bytes; ++b) header_len |= std::size_t(file[8 + b]) << (8 * b);
  const std::size_t data_at = 8 + len_bytes + header_len;
  if (file.size() < data_at) throw NpyError(path + ": truncated .npy header");
  Header h(std::string(file.begin() + std::ptrdiff_t(8 + len_bytes), file.begin() + std::ptrdiff_t(data_at)), path);

  std::optional<std::string> descr;
  std::optional<bool> fortran;
  std::optional<std::vector<std::uint64_t>> shape;
  h.expect('{');
  while (!h.take('}')) {
    const std::string key = h.quoted();
    h.expect(':');
    if (key == "descr" && !descr) descr = h.quoted();
    else if (key == "fortran_order" && !fortran) fortran = h.boolean();
    else if (key == "shape" && !shape) shape = h.tuple();
    else h.fail("unexpected or repeated key '" + key + "'");
    if (h.take('}')) break;
    h.expect(',');
  }
  h.end();
  if (!descr || !fortran || !shape) h.fail("descr, fortran_order and shape are required");

  NpyArray a;
  const std::optional<DType> dt = dtype_of(*descr);
  if (!dt)
    throw NpyError(path + ": dtype '" + *descr + "' is not supported (little-endian float32 '<f4', float64 "
                   "'<f8', float16 '<f2', int32 '<i4', int64 '<i8' or uint32 '<u4')");
  if (*fortran) throw NpyError(path + ": Fortran order is not supported (save a C-ordered array)");
  a.dtype = *dt;
  a.shape = *shape;
  std::uint64_t n = 1;
  for (std::uint64_t d : a.shape) {
    if (d && n > ~std::uint64_t(0) / d / 8) throw NpyError(path + ": shape " + shape_text(a.shape) + " is too large");
    n *= d;
  }
  const std::uint64_t want = n * size_of(a.dtype), have = file.size() - data_at;
  if (have != want)
    throw NpyError(path + ": " + std::to_string(have) + " data bytes, but shape " + shape_text(a.shape) + " of " +
                   *descr + " needs " + std::to_string(want));
  a.bytes.assign(file.begin() + std::ptrdiff_t(data_at), file.end());
  return a;
}

NpyArray read_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw NpyError(path + ": cannot read");
  std::vector<unsigned char> file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw NpyError(path + ": read failed");
  return parse_npy(file, path);
}

std::vector<unsigned char> npy_bytes(const NpyArray& a) {
  const char* descr = descr_of(a.dtype);
  if (!descr) throw NpyError(std::string("no .npy dtype for ") + std::string(name(a.dtype)));
  if (a.bytes.size() != a.elements() * size_of(a.dtype)) throw NpyError(".npy data does not match its shape");
  std::string header = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': " +
                       shape_text(a.shape) + ", }";
  // Padded with spaces and a newline so that the data starts 64-byte aligned, as NumPy writes it.
  const std::size_t total = (10 + header.size() + 1 + 63) / 64 * 64;
  header.append(total - 10 - header.size() - 1, ' ');
  header += '\n';
  std::vector<unsigned char> out(kMagic, kMagic + sizeof kMagic);
  out.push_back(1), out.push_back(0);
  out.push_back(static_cast<unsigned char>(header.size() & 0xff));
  out.push_back(static_cast<unsigned char>(header.size() >> 8));
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), a.bytes.begin(), a.bytes.end());
  return out;
}

void write_npy(const std::string& path, const NpyArray& a) {
  const std::vector<unsigned char> bytes = npy_bytes(a);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
  if (!out) throw NpyError(path + ": cannot write");
}

} // namespace reduce_tune
