// libFuzzer target: size expressions (tuner/sizes.cpp), as users type them after --sizes and --n.
// Besides "no crash, no undefined behaviour, no hang", it checks what the parser promises: an
// accepted size lies in 1..kMaxSize, format_size() of it parses back to it, and a list has one
// size per comma-separated field. Built and run by scripts/ci/fuzz.sh.
#include "tuner/sizes.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

using namespace reduce_tune;

namespace {
[[noreturn]] void broken(const char* what, std::string_view text) {
  std::fprintf(stderr, "fuzz_sizes: %s for input '%.*s'\n", what, int(text.size()), text.data());
  std::abort();
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::string why;
  if (const auto n = parse_size(text, &why)) {
    if (*n < 1 || *n > kMaxSize) broken("accepted size out of 1..kMaxSize", text);
    const auto again = parse_size(format_size(*n));
    if (!again || *again != *n) broken("format_size does not parse back", text);
  } else if (why.empty()) {
    broken("refused without a reason", text);
  }
  why.clear();
  if (const auto list = parse_sizes(text, &why)) {
    const auto fields = std::size_t(std::count(text.begin(), text.end(), ',')) + 1;
    if (list->size() != fields) broken("list length is not the number of fields", text);
    for (const auto n : *list)
      if (n < 1 || n > kMaxSize) broken("accepted list size out of 1..kMaxSize", text);
  } else if (why.empty()) {
    broken("list refused without a reason", text);
  }
  return 0;
}
