// reduce-tune: names, keys and their parsers.
#include "reduce_tune/config.h"

#include "kernels/catalogue.h"
#include "kernels/ops.h"

#include <array>
#include <charconv>

namespace reduce_tune {
namespace {

template <typename E, std::size_t N>
std::optional<E> lookup(const std::array<std::pair<E, std::string_view>, N>& table,
                        std::string_view text) {
  for (const auto& [e, n] : table)
    if (n == text) return e;
  return std::nullopt;
}

template <typename E, std::size_t N>
std::string_view lookup(const std::array<std::pair<E, std::string_view>, N>& table, E e) {
  for (const auto& [x, n] : table)
    if (x == e) return n;
  return "?";
}

constexpr std::array<std::pair<DType, std::string_view>, 8> kDTypes{{
    {DType::i32, "int32"}, {DType::u32, "uint32"}, {DType::i64, "int64"},
    {DType::f32, "float32"}, {DType::f64, "float64"}, {DType::bf16, "bfloat16"},
    {DType::f16, "float16"}, {DType::u8, "uint8"}}};
constexpr std::array<std::pair<Tail, std::string_view>, 5> kTails{{
    {Tail::none, "none"}, {Tail::volatile_, "volatile"}, {Tail::syncwarp, "syncwarp"},
    {Tail::shfl, "shfl"}, {Tail::redux, "redux"}}};
constexpr std::array<std::pair<Finish, std::string_view>, 6> kFinishes{{
    {Finish::host, "host"}, {Finish::atomic, "atomic"}, {Finish::twopass, "twopass"},
    {Finish::lastblock, "lastblock"}, {Finish::firstblock, "firstblock"},
    {Finish::direct, "direct"}}};
constexpr std::array<std::pair<Problem, std::string_view>, 4> kProblems{{
    {Problem::array, "array"}, {Problem::rows, "rows"}, {Problem::columns, "columns"},
    {Problem::segments, "segments"}}};

// "b256" -> 256 when the prefix matches and the rest is a plain positive decimal.
std::optional<int> number_after(std::string_view tok, char prefix) {
  if (tok.size() < 2 || tok[0] != prefix) return std::nullopt;
  int v = 0;
  auto [p, ec] = std::from_chars(tok.data() + 1, tok.data() + tok.size(), v);
  if (ec != std::errc() || p != tok.data() + tok.size() || v < 0) return std::nullopt;
  return v;
}

} // namespace

std::string_view name(DType d) { return lookup(kDTypes, d); }
std::string_view name(Op o) {
  for (const OpDescription& d : op_descriptions())
    if (d.op == o) return d.name;
  return "?";
}
std::string_view name(Tail t) { return lookup(kTails, t); }
std::string_view name(Finish f) { return lookup(kFinishes, f); }
std::string_view name(Problem p) { return lookup(kProblems, p); }
std::optional<DType> parse_dtype(std::string_view s) { return lookup(kDTypes, s); }
std::optional<Op> parse_op(std::string_view s) {
  for (const OpDescription& d : op_descriptions())
    if (d.name == s) return d.op;
  return std::nullopt;
}
std::optional<Tail> parse_tail(std::string_view s) { return lookup(kTails, s); }
std::optional<Finish> parse_finish(std::string_view s) { return lookup(kFinishes, s); }
std::optional<Problem> parse_problem(std::string_view s) { return lookup(kProblems, s); }

std::size_t size_of(DType d) {
  return d == DType::i64 || d == DType::f64 ? 8 : is_half(d) ? 2 : d == DType::u8 ? 1 : 4;
}
bool is_float(DType d) { return d == DType::f32 || d == DType::f64 || is_half(d); }
bool is_half(DType d) { return d == DType::bf16 || d == DType::f16; }
DType accumulator_of(DType d) { return is_half(d) ? DType::f32 : d; }

std::string key(const Config& c) {
  const Variant* v = find_variant(c.variant);
  const unsigned p = v ? v->params : P_BLOCK | P_UNROLL | P_VEC | P_GRID | P_TAIL | P_FINISH;
  // Appended piece by piece (no temporary concatenations: GCC 12 warns of a false overlap in them
  // at -O3, -Wrestrict).
  std::string k = c.variant;
  const auto part = [&k](std::string_view tag, std::string_view value) {
    k += tag;
    k += value;
  };
  if (p & P_BLOCK) part(".b", std::to_string(c.block));
  if (p & P_WIDTH) part(".w", std::to_string(c.width));
  if (p & P_UNROLL) part(".u", std::to_string(c.unroll));
  if (p & P_VEC) part(".v", std::to_string(c.vec));
  if (p & P_GRID) part(".g", std::to_string(c.grid));
  if (p & P_TAIL) part(".", name(c.tail));
  part(".", name(c.finish));
  return k;
}

std::optional<Config> parse_key(std::string_view text, std::string* why) {
  auto fail = [&](std::string msg) -> std::optional<Config> {
    if (why) *why = std::move(msg);
    return std::nullopt;
  };
  const auto dot = text.find('.');
  Config c;
  c.variant = std::string(text.substr(0, dot));
  const Variant* v = find_variant(c.variant);
  if (!v) return fail("unknown variant '" + c.variant + "' in key '" + std::string(text) + "'");
  c.tail = v->tails.front();
  c.finish = v->finishes.front();
  unsigned seen = 0;
  std::string_view rest = dot == std::string_view::npos ? "" : text.substr(dot + 1);
  while (!rest.empty()) {
    const auto next = rest.find('.');
    const std::string_view tok = rest.substr(0, next);
    rest = next == std::string_view::npos ? "" : rest.substr(next + 1);
    unsigned param = 0;
    if (auto b = number_after(tok, 'b')) c.block = *b, param = P_BLOCK;
    else if (auto w = number_after(tok, 'w')) c.width = *w, param = P_WIDTH;
    else if (auto u = number_after(tok, 'u')) c.unroll = *u, param = P_UNROLL;
    else if (auto x = number_after(tok, 'v')) c.vec = *x, param = P_VEC;
    else if (auto g = number_after(tok, 'g')) c.grid = *g, param = P_GRID;
    else if (auto t = parse_tail(tok)) c.tail = *t, param = P_TAIL;
    else if (auto f = parse_finish(tok)) c.finish = *f, param = P_FINISH;
    else return fail("unknown token '" + std::string(tok) + "' in key '" + std::string(text) + "'");
    if (seen & param)
      return fail("token '" + std::string(tok) + "' repeats a parameter in key '" +
                  std::string(text) + "'");
    if (!(v->params & param))
      return fail("variant '" + c.variant + "' takes no parameter '" + std::string(tok) + "'");
    seen |= param;
  }
  return c;
}

} // namespace reduce_tune
