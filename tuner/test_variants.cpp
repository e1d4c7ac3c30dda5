// reduce-tune: the test-only variants and their registration.
#include "tuner/test_variants.h"

#include "kernels/catalogue.h"

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <span>

namespace reduce_tune {
namespace {

constexpr int kU1[] = {1};
constexpr Tail kNoTail[] = {Tail::none};
constexpr Finish kAtomicOnly[] = {Finish::atomic};
constexpr Finish kLastBlockOnly[] = {Finish::lastblock};

std::span<const ExtraVariant> test_variants() {
  static const ExtraVariant kTestVariants[] = {
      {{"test_fault", "test only: writes to an unmapped address", P_BLOCK | P_FINISH, kU1, kNoTail,
        kAtomicOnly, false, false, 32},
       test_template_source("test/test_fault.cu")},
      {{"test_hang", "test only: never returns", P_BLOCK | P_FINISH, kU1, kNoTail, kLastBlockOnly,
        false, false, 32},
       test_template_source("test/test_hang.cu")},
  };
  return kTestVariants;
}

} // namespace

bool register_test_variants_from_env() {
  static std::once_flag once;
  static std::atomic<bool> registered{false};
  const char* e = std::getenv("REDUCE_TUNE_TEST_VARIANTS");
  if (e && std::string_view(e) == "1")
    std::call_once(once, [] {
      register_variants(test_variants());
      registered = true;
    });
  return registered;
}

} // namespace reduce_tune
