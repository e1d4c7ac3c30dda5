// The extension's reducers, one per GPU (and a second one per GPU that never tunes on first use),
// their options as the package sets them, and the NVRTC they open.
#include "python/src/ext.h"

#include "kernels/nvrtc.h"
#include "runtime/autotune.h"
#include "runtime/record.h"

#include <dlfcn.h>

#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>

namespace reduce_tune::pyext {

namespace {

std::mutex g_reducers_mu;
std::vector<Reducer*> g_reducers; // index: ordinal; leaked on purpose (ext.h)
std::string g_shipped_path;       // the package's copy of the shipped tuning (set_shipped_path)
bool g_record = false; // Options::record of the reducers (set_record); g_reducers_mu held
bool g_autotune = false; // Options::autotune of the reducers (set_autotune); g_reducers_mu held
/// Per GPU, the reducer without first-use tuning (own_reducer); made on first use, leaked as the
/// others. g_reducers_mu held.
std::vector<Reducer*> g_own;
std::vector<std::string> g_nvrtc_candidates; // NVRTCs of pip wheels the package found (set_nvrtc_candidates)

/// The NVRTC the reducers open: "" for the library's own choice ($REDUCE_TUNE_NVRTC, else the
/// soname this build was made against, on the loader path or in the build's toolkit) where that
/// loads, else the first of the package's candidates that loads (the nvidia-cuda-nvrtc wheels).
/// Its builtins library (libnvrtc-builtins.so.X.Y) is opened from the same folder first, so that
/// NVRTC finds it by name without LD_LIBRARY_PATH. g_reducers_mu held.
std::string nvrtc_path() {
  const char* env = std::getenv("REDUCE_TUNE_NVRTC");
  if (env && *env) return "";
  // Left open: the Reducer opens the same library next.
  if (dlopen(RT_DEFAULT_NVRTC, RTLD_NOW | RTLD_LOCAL)) return "";
  std::error_code ec;
  if (std::filesystem::exists(std::filesystem::path(RT_NVRTC_FALLBACK_DIR) / RT_DEFAULT_NVRTC, ec))
    return "";
  for (const std::string& c : g_nvrtc_candidates) {
    const std::filesystem::path dir = std::filesystem::path(c).parent_path();
    for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
      const std::string name = e.path().filename().string();
      if (name.rfind("libnvrtc-builtins.so.", 0) == 0) dlopen(e.path().c_str(), RTLD_NOW | RTLD_LOCAL);
    }
    if (dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL)) return c;
  }
  return "";
}

/// A Reducer of GPU `ordinal` with the package's options; `own_tuning`: never tuning on first use
/// (the package tunes those calls itself). g_reducers_mu held.
Reducer* new_reducer(int ordinal, bool own_tuning = false) {
  Options o;
  o.shipped_path = g_shipped_path;
  o.nvrtc_path = nvrtc_path();
  o.record = g_record;
  o.autotune = own_tuning ? false : g_autotune;
  o.autotune_from_env = !own_tuning;
  Reducer* r = nullptr;
  try {
    r = new Reducer(ordinal, o);
  } catch (const std::runtime_error& e) {
    rethrow_nvrtc(e);
  }
  g_stats.reducers.fetch_add(1, std::memory_order_relaxed);
  if (!own_tuning && ordinal < kFastGpus) g_fast[ordinal].store(r, std::memory_order_release);
  return r;
}

} // namespace

std::atomic<Reducer*> g_fast[kFastGpus];

std::string reducers_nvrtc_path() {
  std::lock_guard lock(g_reducers_mu);
  return nvrtc_path();
}

void rethrow_nvrtc(const std::exception& e) {
  const std::string what = e.what();
  if (what.rfind("cannot load NVRTC", 0) == 0)
    throw std::runtime_error("reduce_tune: " + what + ". Install the CUDA toolkit's NVRTC, or "
                             "`pip install nvidia-cuda-nvrtc` (or nvidia-cuda-nvrtc-cu12), or set "
                             "REDUCE_TUNE_NVRTC to a libnvrtc.so");
  throw;
}

nb::dict nvrtc_info(const std::string& arch) {
  const std::string path = reducers_nvrtc_path();
  nb::dict d;
  nb::gil_scoped_release nogil;
  try {
    const Nvrtc n(path);
    std::string bytes;
    if (!arch.empty())
      bytes = n.compile("extern \"C\" __global__ void rt_probe(float* p) {\n"
                        "  __shared__ float s[32];\n  s[threadIdx.x] = p[threadIdx.x];\n"
                        "  __syncthreads();\n  if (threadIdx.x == 0) atomicAdd(p, s[31]);\n}\n",
                        "rt_probe.cu", n.parse_target(arch)).image;
    nb::gil_scoped_acquire gil;
    d["path"] = n.path();
    d["version"] = nb::make_tuple(n.major(), n.minor());
    d["archs"] = n.archs();
    if (!arch.empty()) d["compiled_bytes"] = bytes.size();
  } catch (const std::runtime_error& e) {
    rethrow_nvrtc(e);
  }
  return d;
}

void set_nvrtc_candidates(std::vector<std::string> paths) {
  std::lock_guard lock(g_reducers_mu);
  g_nvrtc_candidates = std::move(paths);
}

void set_shipped_path(const std::string& path) {
  std::lock_guard lock(g_reducers_mu);
  g_shipped_path = path;
}

std::string shipped_path() {
  std::lock_guard lock(g_reducers_mu);
  return g_shipped_path;
}

Reducer& create_reducer(int ordinal) {
  std::lock_guard lock(g_reducers_mu);
  if (ordinal < 0 || std::size_t(ordinal) >= g_reducers.size() || !g_reducers[ordinal]) {
    std::string why;
    if (!gpu_available(&why)) throw std::runtime_error("reduce_tune: " + why);
    const int count = cuda::device_count();
    if (ordinal < 0 || ordinal >= count)
      throw std::invalid_argument("reduce_tune: no GPU " + std::to_string(ordinal) + " (this machine has " +
                                  std::to_string(count) + ")");
    if (g_reducers.size() < std::size_t(count)) g_reducers.resize(count, nullptr);
    if (!g_reducers[ordinal]) g_reducers[ordinal] = new_reducer(ordinal);
  }
  return *g_reducers[ordinal];
}

Reducer& own_reducer(int ordinal) {
  reducer(ordinal);
  std::lock_guard lock(g_reducers_mu);
  if (g_own.size() <= std::size_t(ordinal)) g_own.resize(std::size_t(ordinal) + 1, nullptr);
  if (!g_own[ordinal]) g_own[ordinal] = new_reducer(ordinal, true);
  return *g_own[ordinal];
}

void renew_own_reducer(int ordinal) {
  reducer(ordinal);
  std::lock_guard lock(g_reducers_mu);
  if (g_own.size() <= std::size_t(ordinal)) g_own.resize(std::size_t(ordinal) + 1, nullptr);
  g_own[ordinal] = new_reducer(ordinal, true);
}

// The old reducers are left alive, never destroyed, since another thread may be inside a call on
// one; the new ones load their kernels again (from the compile cache).
void set_record(bool on) {
  std::lock_guard lock(g_reducers_mu);
  if (on == g_record) return;
  g_record = on;
  for (std::size_t i = 0; i < g_reducers.size(); ++i)
    if (g_reducers[i]) g_reducers[i] = new_reducer(int(i));
  for (std::size_t i = 0; i < g_own.size(); ++i)
    if (g_own[i]) g_own[i] = new_reducer(int(i), true);
  g_warm.clear();
}

std::pair<bool, bool> record_setting() {
  std::lock_guard lock(g_reducers_mu);
  return {g_record, record_from_env()};
}

void set_autotune(bool on) {
  std::lock_guard lock(g_reducers_mu);
  if (on == g_autotune) return;
  g_autotune = on;
  for (std::size_t i = 0; i < g_reducers.size(); ++i)
    if (g_reducers[i]) g_reducers[i] = new_reducer(int(i));
  g_warm.clear();
}

std::pair<bool, bool> autotune_setting() {
  std::lock_guard lock(g_reducers_mu);
  return {g_autotune, detail::autotune_from_env()};
}

} // namespace reduce_tune::pyext
