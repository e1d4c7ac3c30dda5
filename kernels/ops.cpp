// reduce-tune: the op descriptions (kernels/ops.h) and their CUDA source.
#include "kernels/ops.h"

#include <array>
#include <stdexcept>

namespace reduce_tune {
namespace {

//                                 atomic         redux  host   map    post   exact
constexpr OpTraits kSum{OpAtomic::add, true, true, true, true, false};
constexpr OpTraits kMin{OpAtomic::min, true, true, true, true, true};
constexpr OpTraits kMax{OpAtomic::max, true, true, true, true, true};
// Sums of a mapped element: the atomic add and the redux add apply, the in-place variant does not
// (it would map its partials again).
constexpr OpTraits kMappedSum{OpAtomic::add, true, true, false, true, false};
// A post-map that needs the count or rounds (mean, norm2): no atomic or host finish.
constexpr OpTraits kPosted{OpAtomic::none, false, false, false, false, false};
// 0/1 accumulators: any is their maximum, all their minimum.
constexpr OpTraits kAny{OpAtomic::max, true, true, false, true, true};
constexpr OpTraits kAll{OpAtomic::min, true, true, false, true, true};

constexpr std::array<OpDescription, 10> kOps{{
    {Op::sum, "sum", "the sum (integers wrap; bf16 and f16 accumulate in float32)", kSum},
    {Op::min, "min", "the minimum (floats: IEEE minimum, NaN wins, -0.0 below +0.0)", kMin},
    {Op::max, "max", "the maximum (floats: IEEE maximum, NaN wins, -0.0 below +0.0)", kMax},
    {Op::mean, "mean", "the sum over the count (integers: float64; empty: NaN)", kPosted},
    {Op::sumsq, "sumsq", "the sum of squares (integers wrap)", kMappedSum},
    {Op::norm1, "norm1", "the sum of absolute values (floats)", kMappedSum},
    {Op::norm2, "norm2", "the square root of the sum of squares (floats)", kPosted},
    {Op::count_nonzero, "count_nonzero", "the number of non-zero elements (int64; NaN counts)",
     kMappedSum},
    {Op::any, "any", "1 where any element is non-zero, else 0 (uint8)", kAny},
    {Op::all, "all", "1 where every element is non-zero, else 0 (uint8; empty: 1)", kAll},
}};

// The CUDA spelling of a scalar dtype, its macro suffix, and its largest and lowest values
// (+-infinity for floats).
struct ScalarText {
  const char *ctype, *suffix, *max, *lowest;
};
ScalarText text_of(DType d) {
  switch (d) {
  case DType::i32: return {"int", "I32", "2147483647", "(-2147483647 - 1)"};
  case DType::u32: return {"unsigned int", "U32", "4294967295u", "0u"};
  case DType::i64:
    return {"long long", "I64", "9223372036854775807ll", "(-9223372036854775807ll - 1)"};
  case DType::f64:
    return {"double", "F64", "__longlong_as_double(0x7ff0000000000000ll)",
            "__longlong_as_double(0xfff0000000000000ull)"};
  case DType::u8: return {"unsigned char", "U8", "255", "0"};
  case DType::f32:
  case DType::bf16:
  case DType::f16: break;
  }
  return {"float", "F32", "__int_as_float(0x7f800000)", "__int_as_float(0xff800000)"};
}

// One function of the description.
std::string fn(const std::string& sig, const std::string& body) {
  return "__device__ __forceinline__ " + sig + " { " + body + " }\n";
}

const char* unsigned_of(DType d) { return size_of(d) == 8 ? "unsigned long long" : "unsigned int"; }

// `a` (an accumulator) converted to the result: rounded once to a bf16 or f16 result.
std::string to_result(DType result) { return is_half(result) ? "rt_narrow(a)" : "R(a)"; }

// a + b in the accumulator: signed integers wrap in two's complement (added as unsigned), as the
// CPU reference does.
std::string add(DType acc, const char* a, const char* b) {
  if (acc == DType::i32 || acc == DType::i64)
    return std::string("A((") + unsigned_of(acc) + ")(" + a + ") + (" + unsigned_of(acc) + ")(" + b + "))";
  return std::string(a) + " + " + b;
}

// min or max of two accumulators: IEEE minimum/maximum for floats (templates/element.cuh).
std::string min_max(DType acc, bool min) {
  if (is_float(acc))
    return std::string("return rt_float_min_max<") + (min ? "true" : "false") + ">(a, b);";
  return min ? "return b < a ? b : a;" : "return a < b ? b : a;";
}

// The identity, map, combine and post of each op.
std::string functions(Op op, DType acc, DType result) {
  const ScalarText at = text_of(acc);
  std::string s;
  switch (op) {
  case Op::sum:
    s += fn("A rt_identity()", "return A(0);");
    s += fn("A rt_map(T x, rt_size)", "return rt_widen(x);");
    s += fn("A rt_combine(A a, A b)", "return " + add(acc, "a", "b") + ";");
    break;
  case Op::min:
  case Op::max:
    s += fn("A rt_identity()", std::string("return ") + (op == Op::min ? at.max : at.lowest) + ";");
    s += fn("A rt_map(T x, rt_size)", "return rt_widen(x);");
    s += fn("A rt_combine(A a, A b)", min_max(acc, op == Op::min));
    break;
  case Op::mean:
    s += fn("A rt_identity()", "return A(0);");
    s += fn("A rt_map(T x, rt_size)", "return A(rt_widen(x));");
    s += fn("A rt_combine(A a, A b)", "return a + b;");
    // Empty: 0 / 0, a NaN, as torch.mean of nothing.
    s += fn("R rt_post(A a, rt_size count)", "a = a / A(count); return " + to_result(result) + ";");
    return s;
  case Op::sumsq:
    s += fn("A rt_identity()", "return A(0);");
    s += fn("A rt_map(T x, rt_size)", is_float(acc) ? "const A v = rt_widen(x); return v * v;"
                                          : std::string("return A((") + unsigned_of(acc) + ")(x) * (" +
                                                unsigned_of(acc) + ")(x));");
    s += fn("A rt_combine(A a, A b)", "return " + add(acc, "a", "b") + ";");
    break;
  case Op::norm1:
    // |x| as the sign bit cleared: a NaN stays a NaN.
    s += fn("A rt_identity()", "return A(0);");
    s += fn("A rt_map(T x, rt_size)", acc == DType::f64
                                 ? "return __longlong_as_double(__double_as_longlong(x) & 0x7fffffffffffffffll);"
                                 : "return __uint_as_float(__float_as_uint(rt_widen(x)) & 0x7fffffffu);");
    s += fn("A rt_combine(A a, A b)", "return a + b;");
    break;
  case Op::norm2:
    s += fn("A rt_identity()", "return A(0);");
    s += fn("A rt_map(T x, rt_size)", "const A v = rt_widen(x); return v * v;");
    s += fn("A rt_combine(A a, A b)", "return a + b;");
    s += fn("R rt_post(A a, rt_size)",
            std::string(acc == DType::f64 ? "asm(\"sqrt.rn.f64 %0, %1;\" : \"=d\"(a) : \"d\"(a));"
                                          : "asm(\"sqrt.rn.f32 %0, %1;\" : \"=f\"(a) : \"f\"(a));") +
                " return " + to_result(result) + ";");
    return s;
  case Op::count_nonzero:
    // NaN counts (it is not zero), -0.0 does not, as torch.count_nonzero.
    s += fn("A rt_identity()", "return 0;");
    s += fn("A rt_map(T x, rt_size)", "return rt_widen(x) != 0 ? 1 : 0;");
    s += fn("A rt_combine(A a, A b)", "return a + b;");
    break;
  case Op::any:
  case Op::all:
    s += fn("A rt_identity()", op == Op::any ? "return 0u;" : "return 1u;");
    s += fn("A rt_map(T x, rt_size)", "return rt_widen(x) != 0 ? 1u : 0u;");
    s += fn("A rt_combine(A a, A b)", op == Op::any ? "return a | b;" : "return a & b;");
    break;
  }
  s += fn("R rt_post(A a, rt_size)", "return " + to_result(result) + ";");
  return s;
}

} // namespace

std::span<const OpDescription> op_descriptions() { return kOps; }

const OpDescription& describe(Op op) {
  for (const OpDescription& d : kOps)
    if (d.op == op) return d;
  throw std::invalid_argument("unknown op " + std::to_string(static_cast<int>(op)));
}

std::optional<std::string> op_unsupported(Op op, DType dtype) {
  if (dtype == DType::u8) return "uint8 is a result type (any, all), not an element type";
  if ((op == Op::norm1 || op == Op::norm2) && !is_float(dtype))
    return std::string(name(op)) + " reduces floating-point elements (torch's vector norms do)";
  return std::nullopt;
}

DType accumulator_dtype(Op op, DType dtype) {
  switch (op) {
  case Op::mean: return is_float(dtype) ? accumulator_of(dtype) : DType::f64;
  case Op::count_nonzero: return DType::i64;
  case Op::any:
  case Op::all: return DType::u32;
  default: return accumulator_of(dtype);
  }
}

std::size_t accumulator_bytes(Op op, DType dtype) { return size_of(accumulator_dtype(op, dtype)); }

DType result_dtype(Op op, DType dtype, bool wide_result) {
  switch (op) {
  case Op::mean: return is_float(dtype) ? (wide_result ? DType::f32 : dtype) : DType::f64;
  case Op::count_nonzero: return DType::i64;
  case Op::any:
  case Op::all: return DType::u8;
  default: return wide_result ? accumulator_dtype(op, dtype) : dtype;
  }
}

std::string op_source(Op op, DType dtype, bool wide_result) {
  const OpDescription& d = describe(op);
  const DType acc = accumulator_dtype(op, dtype), result = result_dtype(op, dtype, wide_result);
  std::string s = "// op: " + std::string(d.name) + "\n";
  s += "typedef " + std::string(text_of(acc).ctype) + " A;\n";
  s += result == dtype  ? std::string("typedef T R;\n")
       : result == acc ? std::string("typedef A R;\n")
                       : "typedef " + std::string(text_of(result).ctype) + " R;\n";
  if (wide_result) s += "#define RT_WIDE_RESULT 1\n";
  if (is_half(result)) s += "#define RT_HALF_RESULT 1\n";
  s += "#define RT_ACC_" + std::string(text_of(acc).suffix) + " 1\n";
  static constexpr const char* kAtomic[] = {nullptr, "ADD", "MIN", "MAX"};
  if (const char* a = kAtomic[static_cast<int>(d.traits.atomic)]) {
    s += "#define RT_ATOMIC_" + std::string(a) + " 1\n";
    if (d.traits.redux) s += "#define RT_REDUX_" + std::string(a) + " 1\n";
  }
  return s + functions(op, acc, result);
}

} // namespace reduce_tune
