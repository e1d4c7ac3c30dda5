// reduce-tune: user reductions: their canonical text and hash, their checks and their CUDA source.
#include "kernels/user_op.h"

#include "kernels/additive.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>

namespace reduce_tune {
namespace {

std::string trimmed(const std::string& s) {
  const char* ws = " \t\r\n\f\v";
  const std::size_t b = s.find_first_not_of(ws);
  if (b == std::string::npos) return {};
  return s.substr(b, s.find_last_not_of(ws) - b + 1);
}

constexpr std::array<DType, 7> kElementTypes = {DType::i32, DType::u32, DType::i64, DType::f32,
                                                DType::f64, DType::bf16, DType::f16};

// The element dtypes a reduction takes, sorted and each once (the canonical order).
std::vector<DType> inputs_of(const Reduction& r) {
  std::vector<DType> v = r.inputs.empty() ? std::vector<DType>(kElementTypes.begin(), kElementTypes.end())
                                          : r.inputs;
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

// The CUDA spelling of a dtype as a result (bf16 and f16 are stored as unsigned short).
const char* ctype_of(DType d) {
  switch (d) {
  case DType::i32: return "int";
  case DType::u32: return "unsigned int";
  case DType::i64: return "long long";
  case DType::f32: return "float";
  case DType::f64: return "double";
  case DType::bf16:
  case DType::f16: return "unsigned short";
  case DType::u8: return "unsigned char";
  }
  return "float";
}

// sizeof of the scalar spellings an accumulator may have without accumulator_bytes; 0: not one.
std::size_t scalar_bytes(const std::string& acc) {
  static constexpr std::pair<const char*, std::size_t> kScalars[] = {
      {"float", 4}, {"double", 8}, {"int", 4}, {"unsigned", 4}, {"unsigned int", 4},
      {"long long", 8}, {"unsigned long long", 8}};
  for (const auto& [spelling, bytes] : kScalars)
    if (acc == spelling) return bytes;
  return 0;
}

// `A rt_v = EXPR;` under a #line of the field, so NVRTC's log names the field and its line; a
// marker after it, which render() turns into the line of the generated source again.
std::string body(const char* field, const std::string& expr, const char* type = "A") {
  const std::string init = expr.starts_with('{') ? expr : "(" + expr + ")";
  return std::string("\n#line 1 \"") + field + "\"\n" + type + " rt_v = " + init + ";\n" +
         std::string(kUserLineMarker) + "\n";
}

} // namespace

std::string Reduction::canonical() const {
  std::string inputs_text;
  for (DType d : inputs_of(*this)) inputs_text += (inputs_text.empty() ? "" : ",") + std::string(reduce_tune::name(d));
  const std::pair<const char*, std::string> fields[] = {
      {"inputs", inputs_text},
      {"accumulator", trimmed(accumulator)},
      {"accumulator_bytes", std::to_string(accumulator_bytes)},
      {"preamble", trimmed(preamble)},
      {"map", trimmed(map)},
      {"combine", trimmed(combine)},
      {"identity", trimmed(identity)},
      {"post", trimmed(post)},
      {"result", result ? std::string(reduce_tune::name(*result)) : std::string()},
      {"commutative", commutative ? "1" : "0"},
  };
  std::string s = "reduce-tune reduction 1\n";
  for (const auto& [field, value] : fields)
    s += std::string(field) + " " + std::to_string(value.size()) + "\n" + value + "\n";
  return s;
}

std::uint64_t Reduction::hash() const {
  std::uint64_t h = 1469598103934665603ull; // FNV-1a, 64 bits
  for (unsigned char c : canonical()) h = (h ^ c) * 1099511628211ull;
  return h;
}

std::string Reduction::name() const {
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(hash()));
  return std::string("user:") + hex;
}

DType Reduction::result_dtype(DType dtype) const {
  const std::vector<DType> in = inputs_of(*this);
  if (std::find(in.begin(), in.end(), dtype) == in.end()) {
    std::string list;
    for (DType d : in) list += (list.empty() ? "" : ", ") + std::string(reduce_tune::name(d));
    throw ReductionError("reduce_tune: the reduction " + name() + " takes " + list + ", not " +
                         std::string(reduce_tune::name(dtype)));
  }
  const DType r = result.value_or(dtype);
  if (is_half(r) && r != dtype)
    throw ReductionError("reduce_tune: a " + std::string(reduce_tune::name(r)) +
                         " result is for elements of that type (the post-map's value is rounded "
                         "to the element type), not " + std::string(reduce_tune::name(dtype)));
  return r;
}

std::shared_ptr<const UserOp> make_user_op(const Reduction& r) {
  auto op = std::make_shared<UserOp>();
  op->description = r;
  const std::pair<const char*, const std::string*> needed[] = {
      {"map", &r.map}, {"combine", &r.combine}, {"identity", &r.identity}, {"post", &r.post}};
  for (const auto& [field, text] : needed)
    if (trimmed(*text).empty())
      throw ReductionError(std::string("reduce_tune: the reduction's ") + field + " is empty");
  for (DType d : r.inputs)
    if (static_cast<unsigned>(d) > static_cast<unsigned>(DType::f16) || d == DType::u8)
      throw ReductionError("reduce_tune: the reduction's inputs name " +
                           (d == DType::u8 ? std::string("uint8, a result type only")
                                           : "dtype " + std::to_string(static_cast<int>(d))));
  if (r.result && static_cast<unsigned>(*r.result) > static_cast<unsigned>(DType::u8))
    throw ReductionError("reduce_tune: the reduction's result is not a dtype");
  const std::string acc = trimmed(r.accumulator);
  const std::size_t scalar = acc.empty() ? 8 : scalar_bytes(acc);
  if (!scalar && r.accumulator_bytes == 0)
    throw ReductionError("reduce_tune: the accumulator '" + acc +
                         "' is not a scalar spelling (float, double, int, unsigned, long long, "
                         "...): give its size in accumulator_bytes");
  if (r.accumulator_bytes % 4 != 0)
    throw ReductionError("reduce_tune: accumulator_bytes " + std::to_string(r.accumulator_bytes) +
                         " is not a multiple of 4 (accumulators are shuffled as 32-bit words)");
  op->compound = !acc.empty() && !scalar;
  op->not_additive = reduce_tune::not_additive(r);
  op->plain_post = reduce_tune::plain_post(r);
  op->hash = r.hash();
  op->name = r.name();
  return op;
}

OpTraits UserOp::traits() const {
  OpTraits t; // no host combine, in-place; no error for nothing
  t.compound = compound;
  if (additive()) {
    t.atomic = OpAtomic::add; // as the built-in sum's; the catalogue checks the result's type
    t.redux = true;           // __reduce_add_sync: the catalogue admits 32-bit integers only
    t.plain_post = plain_post;
  }
  return t;
}

std::optional<DType> UserOp::accumulator_dtype(DType dtype) const {
  if (!additive()) return std::nullopt;
  return scalar_accumulator(description.accumulator, dtype);
}

std::optional<std::string> UserOp::unsupported(DType dtype) const {
  try {
    description.result_dtype(dtype);
  } catch (const ReductionError& e) {
    return std::string(e.what()).substr(std::string("reduce_tune: ").size());
  }
  return std::nullopt;
}

std::size_t UserOp::accumulator_bytes(DType dtype) const {
  if (description.accumulator_bytes) return description.accumulator_bytes;
  const std::string acc = trimmed(description.accumulator);
  return acc.empty() ? size_of(accumulator_of(dtype)) : scalar_bytes(acc);
}

DType UserOp::result_dtype(DType dtype) const { return description.result_dtype(dtype); }

bool UserOp::reads_index() const {
  // The identifier `i` anywhere in the map or the preamble (a macro there may expand to it): a
  // token test, so a string or comment that spells it counts too, which only errs towards
  // tracking the index.
  auto names_i = [](const std::string& text) {
    auto ident = [](char ch) { return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_'; };
    for (std::size_t k = 0; k < text.size(); ++k)
      if (text[k] == 'i' && (k == 0 || !ident(text[k - 1])) && (k + 1 == text.size() || !ident(text[k + 1])))
        return true;
    return false;
  };
  return names_i(description.map) || names_i(description.preamble);
}

std::string UserOp::source(DType dtype) const {
  const Reduction& r = description;
  const DType result = result_dtype(dtype);
  const std::string acc = trimmed(r.accumulator);
  std::string s = "// op: " + name + "\n";
  // A map that reads the element's index gets it; the flat and merge mappings, which do not track
  // it, are admitted only for maps that do not (reads_index).
  if (reads_index()) s += "#define RT_MAP_INDEXED 1\n";
  // A combine that is not commutative: the templates that can keep each result's elements in
  // order do (templates/segmented/columns.cu).
  if (ordered()) s += "#define RT_ORDERED 1\n";
  // An additive combine: the atomic the atomic finishes add with, the redux tail's
  // __reduce_add_sync, and the accumulator's type they take (templates/common.cuh). Declared
  // whatever the post-map; the catalogue admits an atomic into the result only where it is `a`
  // (else, on the segmented problems, through the post pass).
  if (const std::optional<DType> acc = accumulator_dtype(dtype)) {
    static constexpr const char* kSuffix[] = {"I32", "U32", "I64", "F32", "F64"};
    s += "#define RT_ATOMIC_ADD 1\n#define RT_REDUX_ADD 1\n#define RT_ACC_" +
         std::string(kSuffix[static_cast<int>(*acc)]) + " 1\n";
  }
  // The <math.h> constants, which NVRTC has without any header only as builtins.
  s += "#ifndef INFINITY\n#define INFINITY __int_as_float(0x7f800000)\n#endif\n"
       "#ifndef NAN\n#define NAN __int_as_float(0x7fffffff)\n#endif\n";
  if (!trimmed(r.preamble).empty())
    s += "\n#line 1 \"preamble\"\n" + trimmed(r.preamble) + "\n" + std::string(kUserLineMarker) + "\n";
  s += "typedef " + (acc.empty() ? std::string("rt_wide") : acc) + " A;\n";
  s += result == dtype ? std::string("typedef T R;\n") : "typedef " + std::string(ctype_of(result)) + " R;\n";
  s += "static_assert(sizeof(A) == " + std::to_string(accumulator_bytes(dtype)) +
       ", \"the accumulator's size is not accumulator_bytes\");\n";
  s += "__device__ __forceinline__ A rt_identity() {" + body("identity", trimmed(r.identity)) +
       "return rt_v; }\n";
  s += "__device__ __forceinline__ A rt_map(T rt_element, rt_size i) { const rt_wide x = "
       "rt_widen(rt_element); (void)x; (void)i;" +
       body("map", trimmed(r.map)) + "return rt_v; }\n";
  s += "__device__ __forceinline__ A rt_combine(A a, A b) {" + body("combine", trimmed(r.combine)) +
       "return rt_v; }\n";
  // The post-map's value converted to the result once (rounded for a bf16 or f16 result).
  const std::string post_type = is_half(result) ? "float" : "R";
  s += "__device__ __forceinline__ R rt_post(A a, rt_size count) { (void)count;" +
       body("post", trimmed(r.post), post_type.c_str()) +
       (is_half(result) ? "return rt_narrow(rt_v); }\n" : "return rt_v; }\n");
  return s;
}

} // namespace reduce_tune
