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
// A post-map that needs the count or rounds (mean, norm2): no host finish, and no atomic finish
// into the result; the segmented problems' atomic finishes add into accumulators and end with a
// post pass (atomic_post_pass, kernels/catalogue.h).
constexpr OpTraits kPosted{OpAtomic::add, false, false, false, false, false};
// 0/1 accumulators: any is their maximum, all their minimum.
constexpr OpTraits kAny{OpAtomic::max, true, true, false, true, true};
constexpr OpTraits kAll{OpAtomic::min, true, true, false, true, true};

// Compound accumulators (a struct): no atomic, redux, host or in-place path; argmax and argmin
// also have no result for nothing, and an atomic through their ordered key (keyed_atomic); var and
// std one through float64 sums about a shift (shifted_atomic).
constexpr OpTraits kCompound{OpAtomic::none, false, false, false, false, false, true, false};
constexpr OpTraits kArg{OpAtomic::key, false, false, false, false, false, true, true};
constexpr OpTraits kMoments{OpAtomic::shifted, false, false, false, false, false, true, false};
// A mapped sum of two inputs (dot): as kMappedSum, reading x[i] and y[i].
constexpr OpTraits kTwoInputSum{OpAtomic::add, true, true, false, true, false, false, false, true};

constexpr std::array<OpDescription, 18> kOps{{
    {Op::sum, "sum", "the sum (integers wrap; bf16 and f16 accumulate in float32)", kSum, Op::sum},
    {Op::min, "min", "the minimum (floats: IEEE minimum, NaN wins, -0.0 below +0.0)", kMin, Op::min},
    {Op::max, "max", "the maximum (floats: IEEE maximum, NaN wins, -0.0 below +0.0)", kMax, Op::min},
    {Op::mean, "mean", "the sum over the count (integers: float64; empty: NaN)", kPosted, Op::sum},
    {Op::sumsq, "sumsq", "the sum of squares (integers wrap)", kMappedSum, Op::sumsq},
    {Op::norm1, "norm1", "the sum of absolute values (floats)", kMappedSum, Op::norm1},
    {Op::norm2, "norm2", "the square root of the sum of squares (floats)", kPosted, Op::sumsq},
    {Op::count_nonzero, "count_nonzero", "the number of non-zero elements (int64; NaN counts)",
     kMappedSum, Op::count_nonzero},
    {Op::any, "any", "1 where any element is non-zero, else 0 (uint8)", kAny, Op::any},
    {Op::all, "all", "1 where every element is non-zero, else 0 (uint8; empty: 1)", kAll, Op::any},
    {Op::argmax, "argmax",
     "the int64 index of the first maximum in its row, column or segment (NaN wins; empty: error, "
     "an empty offsets segment -1)", kArg, Op::argmax},
    {Op::argmin, "argmin",
     "the int64 index of the first minimum in its row, column or segment (NaN wins; empty: error, "
     "an empty offsets segment -1)", kArg, Op::argmax},
    {Op::logsumexp, "logsumexp",
     "log(sum(exp(x))) in one pass, a running maximum and a rescaled sum (floats; empty: -inf)",
     kCompound, Op::logsumexp},
    {Op::var, "var", "the variance with correction 1, over n - 1 (integers: float64; n <= 1: NaN)",
     kMoments, Op::var},
    {Op::std_, "std", "the square root of var (integers: float64; n <= 1: NaN)", kMoments, Op::var},
    {Op::var_population, "var_population",
     "the variance with correction 0, over n (integers: float64; empty: NaN)", kMoments, Op::var},
    {Op::std_population, "std_population", "the square root of var_population", kMoments, Op::var},
    {Op::dot, "dot",
     "the sum of x[i] * y[i] over two inputs of one shape (integers wrap; bf16 and f16 in float32)",
     kTwoInputSum, Op::dot},
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
  case Op::dot:
    // Products of the widened elements (bf16 and f16: exact in float32); integers wrap, as sumsq.
    s += fn("A rt_identity()", "return A(0);");
    if (is_float(acc)) {
      s += fn("A rt_map2(T x, T y, rt_size)", "return A(rt_widen(x)) * A(rt_widen(y));");
    } else {
      const std::string u = unsigned_of(acc);
      s += fn("A rt_map2(T x, T y, rt_size)", "return A((" + u + ")(x) * (" + u + ")(y));");
    }
    s += fn("A rt_combine(A a, A b)", "return " + add(acc, "a", "b") + ";");
    break;
  case Op::any:
  case Op::all:
    s += fn("A rt_identity()", op == Op::any ? "return 0u;" : "return 1u;");
    s += fn("A rt_map(T x, rt_size)", "return rt_widen(x) != 0 ? 1u : 0u;");
    s += fn("A rt_combine(A a, A b)", op == Op::any ? "return a | b;" : "return a & b;");
    break;
  default: break; // the compound ops: compound_source
  }
  s += fn("R rt_post(A a, rt_size)", "return " + to_result(result) + ";");
  return s;
}

// torch's correction of var and std: the squared deviations are divided by max(n - correction, 0).
int correction(Op op) { return op == Op::var || op == Op::std_ ? 1 : 0; }
bool is_variance(Op op) {
  return op == Op::var || op == Op::std_ || op == Op::var_population || op == Op::std_population;
}

// `v` (a scalar of the accumulator's float type, W) converted to the result: rounded once to a
// bf16 or f16 result.
std::string scalar_result(DType result, const char* v) {
  return is_half(result) ? std::string("rt_narrow(") + v + ")" : std::string("R(") + v + ")";
}

// argmax's and argmin's ordered key (OpAtomic::key) for a 32-bit value W: rt_key(a) is above
// rt_key(b) exactly where rt_combine(b, a) takes a, so atomicMax of keys combines as rt_combine.
// High word: the value's order, reversed for argmin; -0.0 as +0.0 (they tie, as the combine's ==);
// a NaN the largest word (it wins, either way). Low word: 2^32 - 1 - index, the smaller index the
// larger; the identity's index (INT64_MAX) gives 0, which no index reaches (kKeyedMaxLength), so
// rt_unkey gives the identity's index back. rt_unkey(rt_key(a)) has a's index and an equal value
// (a NaN: some NaN).
std::string key_source(DType acc, bool max) {
  std::string order; // u: the value's bits, increasing with the value
  if (acc == DType::f32)
    order = "unsigned u = __float_as_uint(a.v == 0.0f ? 0.0f : a.v); u = (u & 0x80000000u) ? ~u : (u | 0x80000000u);";
  else if (acc == DType::i32)
    order = "unsigned u = unsigned(a.v) ^ 0x80000000u;";
  else
    order = "unsigned u = a.v;";
  if (!max) order += " u = ~u;";
  if (acc == DType::f32) order += " if (a.v != a.v) u = 0xffffffffu;";
  std::string s = fn("unsigned long long rt_key(A a)",
                     order + " return (unsigned long long)u << 32 | (0xffffffffu - unsigned(a.i));");
  std::string value = max ? "unsigned u = unsigned(k >> 32);" : "unsigned u = ~unsigned(k >> 32);";
  if (acc == DType::f32)
    value += std::string(" a.v = __uint_as_float((u & 0x80000000u) ? (u ^ 0x80000000u) : ~u);");
  else if (acc == DType::i32)
    value += " a.v = int(u ^ 0x80000000u);";
  else
    value += " a.v = u;";
  s += fn("A rt_unkey(unsigned long long k)",
          "A a; " + value + " const unsigned low = unsigned(k); a.i = low ? (long long)(0xffffffffu - low) : "
          "9223372036854775807ll; return a;");
  return s;
}

// var's and std's float64 sums about a shift (OpAtomic::shifted), for the float32 fields W of its
// accumulator: rt_shift(a, k) gives a's elements' deviations from k summed, n (mean - k), and
// their squares summed, M2 + n (mean - k)^2; sums of partials about one k add, and rt_unshift
// takes a column's back to its count and M2 = s2 - s1^2 / n (the mean is left shifted: the post-map
// reads n and M2 alone). With k an element of the column, s1^2 / n is at most n M2 (no element lies
// further than sqrt(M2) from the mean), so the cancellation errs by about n 2^-53 of M2. A partial
// of nothing is zeros, whatever k (an infinite one too); M2's rounding below 0 is taken to 0 (a
// NaN stays).
std::string shifted_source(const std::string& W) {
  std::string s = "struct rt_sums { double s1; double s2; };\n";
  s += fn("rt_sums rt_shift(A a, double k)",
          "rt_sums s; s.s1 = 0.0; s.s2 = 0.0; if (a.n == 0) return s; const double n = double(a.n), "
          "d = double(a.mean) - k; s.s1 = n * d; s.s2 = double(a.m2) + n * d * d; return s;");
  s += fn("A rt_unshift(rt_sums s, rt_size count)",
          "A a; a.n = (long long)count; const double n = count ? double(count) : 1.0, m2 = s.s2 - s.s1 * (s.s1 / n); "
          "a.mean = " + W + "(s.s1 / n); a.m2 = " + W + "(m2 < 0.0 ? 0.0 : m2); return a;");
  return s;
}

// The struct, its typedefs and its functions: argmax/argmin, logsumexp, var/std. W is the type of
// the float fields (the value for argmax).
std::string compound_source(Op op, DType dtype, DType acc, DType result) {
  const ScalarText wt = text_of(acc);
  const std::string W = wt.ctype;
  std::string s;
  if (op == Op::argmax || op == Op::argmin) {
    const bool max = op == Op::argmax;
    s += "struct rt_acc { " + W + " v; long long i; };\ntypedef rt_acc A;\ntypedef long long R;\n";
    s += "#define RT_MAP_INDEXED 1\n";
    // The identity's index is the largest: an element equal to its value wins the tie.
    s += fn("A rt_identity()", "A a; a.v = " + std::string(max ? wt.lowest : wt.max) +
                                   "; a.i = 9223372036854775807ll; return a;");
    s += fn("A rt_map(T x, rt_size i)", "A a; a.v = rt_widen(x); a.i = (long long)i; return a;");
    // Elements mapped at their index in the input, taken back to their segment's, which begins
    // at `begin` (the flat mapping's ordered finish, templates/segmented/segmented.cuh).
    s += fn("A rt_rebase(A a, rt_size begin)", "a.i -= (long long)begin; return a;");
    // b wins with a better value, or an equal one at a smaller index; a NaN beats any number and
    // the first NaN beats later ones. The result does not depend on the order of combining.
    const std::string better = max ? "b.v > a.v" : "b.v < a.v";
    const std::string tie = "(b.v == a.v && b.i < a.i)";
    if (is_float(acc))
      s += fn("A rt_combine(A a, A b)",
              "const bool an = a.v != a.v, bn = b.v != b.v; const bool take = bn ? (!an || b.i < a.i) : "
              "(!an && (" + better + " || " + tie + ")); return take ? b : a;");
    else
      s += fn("A rt_combine(A a, A b)", "return " + better + " || " + tie + " ? b : a;");
    // The fold (templates/common.cuh, rt_fold): i is above every index in `a`, so an equal value
    // keeps `a` without comparing indices; only the identity (index INT64_MAX, whose value an
    // element may equal: -inf, the lowest integer) is replaced whatever the element. Floats: the
    // unordered compare is true for a NaN element (or a NaN `a`, which the !an keeps): the first
    // NaN replaces a number and stays. The same result as rt_combine(a, rt_map(x, i)).
    s += "#define RT_FOLD 1\n";
    const std::string x_better = is_float(acc) ? (max ? "!(x <= a.v)" : "!(x >= a.v)") : (max ? "x > a.v" : "x < a.v");
    s += fn("A rt_fold(A a, T e, rt_size i)",
            "const " + W + " x = rt_widen(e); const bool take = " +
                (is_float(acc) ? std::string("a.v == a.v && ") : std::string()) + "(" + x_better +
                " || a.i == 9223372036854775807ll); a.v = take ? x : a.v; a.i = take ? (long long)i : a.i; return a;");
    s += fn("R rt_post(A a, rt_size count)", "return count ? a.i : -1ll;");
    if (keyed_atomic(op, dtype)) s += key_source(acc, max);
    return s;
  }
  const bool f64 = acc == DType::f64;
  const char* exp = f64 ? "exp" : "expf";
  const char* log = f64 ? "log" : "logf";
  const std::string R = result == dtype ? "T" : text_of(result).ctype;
  if (op == Op::logsumexp) {
    s += "struct rt_acc { " + W + " m; " + W + " s; };\ntypedef rt_acc A;\ntypedef " + R + " R;\n";
    s += fn("A rt_identity()", "A a; a.m = " + std::string(wt.lowest) + "; a.s = " + W + "(0); return a;");
    s += fn("A rt_map(T x, rt_size)", "A a; a.m = rt_widen(x); a.s = " + W + "(1); return a;");
    // The larger maximum (a NaN wins); each side's sum rescaled to it. A side whose maximum is
    // the new one keeps its sum as it is: +inf and -inf maxima never meet exp(inf - inf).
    s += fn("A rt_combine(A a, A b)",
            "A r; r.m = (a.m != a.m || a.m > b.m) ? a.m : b.m; const " + W + " ea = a.m == r.m ? " + W +
                "(1) : " + exp + "(a.m - r.m); const " + W + " eb = b.m == r.m ? " + W + "(1) : " + exp +
                "(b.m - r.m); r.s = a.s * ea + b.s * eb; return r;");
    // The fold of one element x (rt_fold): one exp where rt_combine(a, rt_map(x, i)) takes two,
    // with the same arithmetic: x above the maximum (or a NaN x, which makes the maximum NaN as
    // the combine does) rescales the sum, s * exp(m - x) + 1; else s + exp(x - m). Equal maxima
    // (+inf and +inf, -inf and -inf) add 1 and never meet exp(inf - inf).
    s += "#define RT_FOLD 1\n";
    s += fn("A rt_fold(A a, T e, rt_size)",
            "const " + W + " x = " + W + "(rt_widen(e)); const bool up = x > a.m || x != x; const " + W +
                " hi = up ? x : a.m, lo = up ? a.m : x; const " + W + " d = lo == hi ? " + W + "(1) : " +
                exp + "(lo - hi); a.s = up ? a.s * d + " + W + "(1) : a.s + d; a.m = hi; return a;");
    s += fn("R rt_post(A a, rt_size)", "const " + W + " v = a.m + " + log + "(a.s); return " +
                                           scalar_result(result, "v") + ";");
    return s;
  }
  // var and std: the count, the mean and the sum of squared deviations M2, merged by Chan's
  // formula. An element maps to {1, x, x - x}: M2 is NaN for an infinity, as torch's var gives.
  s += "struct rt_acc { long long n; " + W + " mean; " + W + " m2; };\ntypedef rt_acc A;\ntypedef " + R +
       " R;\n";
  s += fn("A rt_identity()", "A a; a.n = 0; a.mean = " + W + "(0); a.m2 = " + W + "(0); return a;");
  s += fn("A rt_map(T x, rt_size)",
          "A a; a.n = 1; a.mean = " + W + "(rt_widen(x)); a.m2 = a.mean - a.mean; return a;");
  // q = 1 / n of a count n (n >= 1, never subnormal): float32: rcp.approx refined by one Newton
  // step (within an ulp of the rounded one), where rcp.rn's slow-path call kept a register
  // spilled in the columns loop (b512.u4.v1 on sm_90: 8 bytes) and took ~20% more instructions.
  auto reciprocal = [&](const std::string& n) {
    return f64 ? "double q; asm(\"rcp.rn.f64 %0, %1;\" : \"=d\"(q) : \"d\"(double(" + n + ")));"
               : "const float nf = float(" + n + "); float q; asm(\"rcp.approx.ftz.f32 %0, %1;\" : \"=f\"(q) : "
                 "\"f\"(nf)); q = fmaf(q, fmaf(-nf, q, 1.0f), q);";
  };
  // The merge takes b's weight in the merged count through the same reciprocal: no division's
  // slow-path branch in the trees and post passes that are chains of merges.
  s += fn("A rt_combine(A a, A b)",
          "if (b.n == 0) return a; if (a.n == 0) return b; A r; r.n = a.n + b.n; " + reciprocal("r.n") +
              " const " + W + " wb = " + W + "(b.n) * q; const " + W + " d = b.mean - a.mean; r.mean = a.mean + d * wb; "
              "r.m2 = a.m2 + b.m2 + d * d * " + W + "(a.n) * wb; return r;");
  // The fold of one element (rt_fold): Welford's update, with no branch and one conversion (the
  // count's): the mean moves by d / n, d times the reciprocal of n above, and M2 grows by
  // d * (x - the new mean). From the identity it gives {1, x, x * (x - x)}: 0, NaN for an
  // infinity, as the map's {1, x, x - x}.
  s += "#define RT_FOLD 1\n";
  s += fn("A rt_fold(A a, T e, rt_size)",
          "const " + W + " x = " + W + "(rt_widen(e)); a.n += 1; " + reciprocal("a.n") + " const " + W +
              " d = x - a.mean; a.mean = a.mean + d * q; a.m2 = a.m2 + d * (x - a.mean); return a;");
  if (shifted_atomic(op, dtype)) s += shifted_source(W);
  const bool root = op == Op::std_ || op == Op::std_population;
  std::string post = "const " + W + " c = " + W + "(a.n) - " + W + "(" + std::to_string(correction(op)) +
                     "); " + W + " v = a.m2 / (c > " + W + "(0) ? c : " + W + "(0));";
  if (root)
    post += f64 ? " asm(\"sqrt.rn.f64 %0, %1;\" : \"=d\"(v) : \"d\"(v));"
                : " asm(\"sqrt.rn.f32 %0, %1;\" : \"=f\"(v) : \"f\"(v));";
  s += fn("R rt_post(A a, rt_size)", post + " return " + scalar_result(result, "v") + ";");
  return s;
}

} // namespace

std::span<const OpDescription> op_descriptions() { return kOps; }

const OpDescription& describe(Op op) {
  // kOps is in Op's order: op's own entry, checked; a search otherwise.
  if (const auto i = std::size_t(op); i < kOps.size() && kOps[i].op == op) return kOps[i];
  for (const OpDescription& d : kOps)
    if (d.op == op) return d;
  throw std::invalid_argument("unknown op " + std::to_string(static_cast<int>(op)));
}

std::optional<std::string> op_unsupported(Op op, DType dtype) {
  if (dtype == DType::u8) return "uint8 is a result type (any, all), not an element type";
  if ((op == Op::norm1 || op == Op::norm2) && !is_float(dtype))
    return std::string(name(op)) + " reduces floating-point elements (torch's vector norms do)";
  if (op == Op::logsumexp && !is_float(dtype))
    return "logsumexp reduces floating-point elements";
  return std::nullopt;
}

DType accumulator_dtype(Op op, DType dtype) {
  switch (op) {
  case Op::mean:
  case Op::var:
  case Op::std_:
  case Op::var_population:
  case Op::std_population: return is_float(dtype) ? accumulator_of(dtype) : DType::f64;
  case Op::count_nonzero: return DType::i64;
  case Op::any:
  case Op::all: return DType::u32;
  default: return accumulator_of(dtype);
  }
}

bool keyed_atomic(Op op, DType dtype) {
  return describe(op).traits.atomic == OpAtomic::key && !op_unsupported(op, dtype) &&
         size_of(accumulator_dtype(op, dtype)) == 4;
}

bool shifted_atomic(Op op, DType dtype) {
  return describe(op).traits.atomic == OpAtomic::shifted && !op_unsupported(op, dtype) &&
         accumulator_dtype(op, dtype) == DType::f32;
}

std::size_t accumulator_bytes(Op op, DType dtype) {
  const std::size_t w = size_of(accumulator_dtype(op, dtype));
  if (op == Op::argmax || op == Op::argmin) return 16; // {value, int64 index}, 8-byte aligned
  if (op == Op::logsumexp) return 2 * w;               // {maximum, rescaled sum}
  if (is_variance(op)) return 8 + 2 * w;                // {int64 count, mean, M2}
  return w;
}

DType result_dtype(Op op, DType dtype, bool wide_result) {
  switch (op) {
  case Op::mean:
  case Op::var:
  case Op::std_:
  case Op::var_population:
  case Op::std_population: return is_float(dtype) ? (wide_result ? DType::f32 : dtype) : DType::f64;
  case Op::count_nonzero:
  case Op::argmax:
  case Op::argmin: return DType::i64;
  case Op::any:
  case Op::all: return DType::u8;
  default: return wide_result ? accumulator_dtype(op, dtype) : dtype;
  }
}

std::string op_source(Op op, DType dtype, bool wide_result) {
  const OpDescription& d = describe(op);
  const DType acc = accumulator_dtype(op, dtype), result = result_dtype(op, dtype, wide_result);
  std::string s = "// op: " + std::string(d.name) + "\n";
  if (d.traits.compound) {
    if (wide_result) s += "#define RT_WIDE_RESULT 1\n";
    return s + compound_source(op, dtype, acc, result);
  }
  s += "typedef " + std::string(text_of(acc).ctype) + " A;\n";
  s += result == dtype  ? std::string("typedef T R;\n")
       : result == acc ? std::string("typedef A R;\n")
                       : "typedef " + std::string(text_of(result).ctype) + " R;\n";
  if (wide_result) s += "#define RT_WIDE_RESULT 1\n";
  if (is_half(result)) s += "#define RT_HALF_RESULT 1\n";
  if (d.traits.two_inputs) s += "#define RT_TWO_INPUTS 1\n";
  s += "#define RT_ACC_" + std::string(text_of(acc).suffix) + " 1\n";
  static constexpr const char* kAtomic[] = {nullptr, "ADD", "MIN", "MAX", nullptr, nullptr};
  // An op whose post-map is not the plain conversion uses its atomic only in the segmented post
  // pass, whose renders declare it (kernels/catalogue.cpp, render): its other sources stay as
  // they were, and so do their entries in the compile cache.
  if (const char* a = kAtomic[static_cast<int>(d.traits.atomic)]; a && d.traits.plain_post) {
    s += "#define RT_ATOMIC_" + std::string(a) + " 1\n";
    if (d.traits.redux) s += "#define RT_REDUX_" + std::string(a) + " 1\n";
  }
  return s + functions(op, acc, result);
}

} // namespace reduce_tune
