// Fixtures the CPU tests share: a scratch directory, and the description of an H100 as the store
// records it.
#pragma once

#include "db/store.h"

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <random>
#include <string>
#include <system_error>

namespace reduce_tune::testing {

/// A fresh directory under the system's temp directory, removed with everything in it when the
/// test ends.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    std::random_device rd;
    path = std::filesystem::temp_directory_path() /
           ("reduce-tune-test-" + std::to_string(rd()) + "-" + std::to_string(rd()));
    std::filesystem::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  /// A path for `name` inside the directory.
  std::string file(const std::string& name) const { return (path / name).string(); }
};

/// Sets an environment variable for a scope (unset: nullopt), restoring it after.
class EnvVar {
public:
  EnvVar(const char* name, std::optional<std::string> value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) setenv(name, value->c_str(), 1);
    else unsetenv(name);
  }
  ~EnvVar() {
    if (old_) setenv(name_, old_->c_str(), 1);
    else unsetenv(name_);
  }
  EnvVar(const EnvVar&) = delete;
  EnvVar& operator=(const EnvVar&) = delete;

private:
  const char* name_;
  std::optional<std::string> old_;
};

/// An H100 80GB HBM3 (sm_90, 132 SMs) on host "node7", as the tuner would record it.
inline db::DeviceRecord h100_record(const std::string& uuid) {
  db::DeviceRecord d;
  d.uuid = uuid;
  d.name = "NVIDIA H100 80GB HBM3";
  d.cc_major = 9;
  d.cc_minor = 0;
  d.sm_count = 132;
  d.l2_bytes = 50 << 20;
  d.total_mem_bytes = 85'000'000'000;
  d.mem_clock_khz = 2'619'000;
  d.bus_width_bits = 5120;
  d.peak_gbps = 3352.3;
  d.driver_version = 13000;
  d.host = "node7";
  return d;
}

} // namespace reduce_tune::testing
