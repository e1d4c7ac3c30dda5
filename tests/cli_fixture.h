// The CLI of this build, for GPU tests that run it (first-use tuning's worker, `tune --recorded`):
// beside the tests' folder (a build folder copied to a GPU host keeps that), else where it was
// built (RT_TEST_CLI, defined for each such source in tests/CMakeLists.txt).
#pragma once

#include <cstdio>
#include <filesystem>
#include <string>

namespace reduce_tune::testing {

inline std::string cli() {
  std::error_code ec;
  const auto beside = std::filesystem::read_symlink("/proc/self/exe", ec).parent_path().parent_path() / "reduce-tune";
  return !ec && std::filesystem::is_regular_file(beside, ec) ? beside.string() : std::string(RT_TEST_CLI);
}

/// Runs `command` through the shell; its standard output and error, and its exit status in *rc.
inline std::string run_command(const std::string& command, int* rc = nullptr) {
  std::string out;
  FILE* p = popen((command + " 2>&1").c_str(), "r");
  if (!p) {
    if (rc) *rc = -1;
    return out;
  }
  char buf[512];
  while (std::fgets(buf, sizeof buf, p)) out += buf;
  const int status = pclose(p);
  if (rc) *rc = status;
  return out;
}

} // namespace reduce_tune::testing
