// reduce-tune: the Reducer's private state: the GPU, its primary context, the stores, NVRTC and
// the compile cache.
#include "runtime/reducer_state.h"

#include "runtime/autotune.h"
#include "runtime/record.h"
#include "runtime/shipped.h"

#include <atomic>
#include <filesystem>

namespace reduce_tune {
namespace {

/// The user's compile cache, or none (every first use compiles) where it cannot be created: a
/// read-only home must not stop the library.
CompileCache open_cache() {
  try {
    return CompileCache(CompileCache::default_dir());
  } catch (const std::filesystem::filesystem_error&) {
    return CompileCache({});
  }
}

} // namespace

std::uint64_t Reducer::Impl::next_serial() {
  static std::atomic<std::uint64_t> next{1}; // 0: no reducer (an empty warm-call slot)
  return next.fetch_add(1, std::memory_order_relaxed);
}

Reducer::Impl::Impl(int gpu, Options opts)
    : options(std::move(opts)), info(cuda::device_info(gpu)), device(device_key(info)),
      context(gpu), ordinal(gpu), nvrtc(options.nvrtc_path), cache(open_cache()),
      loader(nvrtc, cache, nvrtc.target_for(info.cc())) {
  RT_CU(cuCtxGetCurrent(&ctx)); // the Context made it current
  store = open_existing_store(
      options.store_path.empty() ? db::default_store_path() : options.store_path, &no_store);
  std::string no_shipped;
  shipped = open_shipped_store(&no_shipped, options.shipped_path);
  if (!shipped) no_store += "; " + no_shipped;
  record = options.record || record_from_env();
  autotune = options.autotune || (options.autotune_from_env && autotune_from_env());
}

} // namespace reduce_tune
