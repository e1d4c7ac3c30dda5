// libFuzzer target: configuration keys (kernels/config.cpp parse_key), as they come from --keys,
// the database and the library's lookup. Besides "no crash, no undefined behaviour", it checks
// what keys promise: an accepted key's canonical form key(c) parses back to the same
// configuration, and a configuration the validity rules admit has a launch plan (grid >= 1, the
// block size asked for) and a summation depth for every problem size. Built and run by
// scripts/ci/fuzz.sh, linked with kernels/catalogue.cpp and the embedded templates.
#include "kernels/catalogue.h"
#include "reduce_tune/config.h"
#include "tuner/sizes.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>

using namespace reduce_tune;

namespace {
[[noreturn]] void broken(const char* what, std::string_view text) {
  std::fprintf(stderr, "fuzz_key: %s for input '%.*s'\n", what, int(text.size()), text.data());
  std::abort();
}

constexpr std::uint64_t kSizes[] = {1, 31, 1000, (1u << 20) + 1, 3u * (1u << 22) + 5, kMaxSize};
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::string why;
  const auto c = parse_key(text, &why);
  if (!c) {
    if (why.empty()) broken("refused without a reason", text);
    return 0;
  }
  const std::string canonical = key(*c);
  const auto again = parse_key(canonical);
  if (!again || !(*again == *c)) broken("key() does not parse back to the same configuration", text);
  if (key(*again) != canonical) broken("key() is not canonical", text);

  for (DType d : {DType::i32, DType::f32, DType::i64, DType::f64})
    for (Op op : {Op::sum, Op::max})
      for (int cc : {60, 75, 90})
        for (bool unsafe : {false, true}) {
          const Target t{d, op, cc, cc >= 90 ? 1024 : 512, 132, unsafe};
          const auto invalid = invalid_reason(*c, t);
          if (invalid) {
            if (invalid->empty()) broken("invalid without a reason", text);
            continue;
          }
          for (std::uint64_t n : kSizes) {
            LaunchPlan p;
            try {
              p = plan(*c, t, n);
            } catch (const std::invalid_argument&) {
              continue; // more than 2^31-1 blocks: refused, by design
            }
            if (p.grid < 1 || p.block != unsigned(c->block)) broken("bad launch plan", text);
            if (summation_depth(*c, t, n) < 1) broken("summation depth 0", text);
          }
        }
  return 0;
}
