// reduce-tune: NVRTC, loaded at run time (any CUDA 11.2+ NVRTC), and an on-disk compile cache.
#pragma once

#include <atomic>
#include <filesystem>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

namespace reduce_tune {

/// A failed compile: carries the full NVRTC log and the options used.
class CompileError : public std::runtime_error {
public:
  CompileError(const std::string& what, std::string log, std::string options)
      : std::runtime_error(what), log_(std::move(log)), options_(std::move(options)) {}
  const std::string& log() const { return log_; }
  const std::string& options() const { return options_; }
private:
  std::string log_, options_;
};

/// What ptxas reported for the kernel (-1 where not reported, e.g. for PTX targets).
struct Resources {
  int registers = -1, spill_stores = -1, spill_loads = -1, smem_bytes = -1, stack_bytes = -1;
};

/// What to compile for: "sm_90" (cubin) or "compute_90" (PTX the driver compiles at load).
struct ArchTarget {
  std::string arch;
  bool cubin = true;
  /// The architecture's number: 90 for "sm_90" and "compute_90".
  int number() const;
};

/// A compiled module image and what the compiler said about it.
struct Compiled {
  std::string image;   ///< cubin bytes or NUL-terminated PTX
  ArchTarget target;
  std::string log;
  Resources resources; ///< of the kernel rt_reduce
  bool from_cache = false;
};

/// One NVRTC library. Compiles are thread-safe (one nvrtcProgram per call).
class Nvrtc {
public:
  /// Loads `path` (a libnvrtc.so file or soname); empty = $REDUCE_TUNE_NVRTC, else the NVRTC
  /// this build was made against. Throws std::runtime_error naming the path when it fails.
  explicit Nvrtc(const std::string& path = "");
  ~Nvrtc();
  Nvrtc(const Nvrtc&) = delete;
  Nvrtc& operator=(const Nvrtc&) = delete;

  const std::string& path() const { return path_; }
  int major() const { return major_; }
  int minor() const { return minor_; }
  std::string version() const { return std::to_string(major_) + "." + std::to_string(minor_); }
  /// SM numbers this NVRTC targets (e.g. 75, 80, ..., 121).
  const std::vector<int>& archs() const { return archs_; }

  /// The device's SM as cubin when supported; else the nearest lower SM of the same major as
  /// cubin; else the highest lower SM as PTX for the driver to compile. Throws when `cc` is below
  /// every supported SM, naming the CUDA version whose NVRTC is needed.
  ArchTarget target_for(int cc) const;
  /// Parses "sm_90" / "compute_90" / "90"; throws std::invalid_argument when unsupported.
  ArchTarget parse_target(const std::string& text) const;

  /// Compiles `source`; throws CompileError with the log on failure.
  Compiled compile(const std::string& source, const std::string& name,
                   const ArchTarget& target) const;
  /// The options compile() passes for `target`.
  std::vector<std::string> options(const ArchTarget& target) const;

  struct Api; ///< the loaded entry points

private:
  std::unique_ptr<Api> api_;
  std::string path_;
  int major_ = 0, minor_ = 0;
  std::vector<int> archs_;
};

/// Compiled modules on disk, keyed by source, options, NVRTC version and architecture; a cache
/// file holds its whole key, so a hash collision is a miss, never a wrong module. Writes are
/// atomic (write then rename), so concurrent tuners can share a directory.
class CompileCache {
public:
  /// `dir` empty disables the cache. Creates `dir` (without write access for others); throws
  /// UntrustedDirectory (kernels/trust.h) when other users may write it.
  explicit CompileCache(std::filesystem::path dir);
  /// $REDUCE_TUNE_CACHE, else $XDG_CACHE_HOME/reduce-tune/kernels, else ~/.cache/reduce-tune/kernels.
  static std::filesystem::path default_dir();

  /// Loads the module from disk, or compiles and stores it.
  Compiled get(const Nvrtc& nvrtc, const std::string& source, const ArchTarget& target);

  const std::filesystem::path& dir() const { return dir_; }
  std::size_t hits() const { return hits_; }
  std::size_t misses() const { return misses_; }

private:
  std::filesystem::path dir_;
  std::atomic<std::size_t> hits_{0}, misses_{0};
};

/// Parses the ptxas -v report of NVRTC's log for `kernel`.
Resources parse_resources(const std::string& log, const std::string& kernel);
/// The reduction kernel a rendered source defines: "rt_segmented" for the segmented problems,
/// else "rt_reduce" (the one whose resources a compile reports).
const char* entry_kernel(const std::string& source);

} // namespace reduce_tune
