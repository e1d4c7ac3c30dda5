// reduce-tune: the shells of query, devices and nvrtc. Each takes the arguments after the command
// name and returns the exit code; usage errors are thrown (exit code 2 in main).
#pragma once

#include "db/store.h"
#include "runtime/lookup.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace reduce_tune {

/// What a lookup from the command line reads: the user's store at `path` if it exists (never
/// created), the shipped tuning, each with the reason where it is missing, and the GPU: an
/// ordinal's own, or a UUID as one of the stores describes it. nullopt, with a line on stderr, for
/// a UUID neither holds.
struct LookupSources {
  std::unique_ptr<db::Store> store, shipped;
  std::string why_store, why_shipped;
  DeviceKey gpu;
};
std::optional<LookupSources> lookup_sources(const std::string& path, const std::string& uuid, int device);

/// reduce-tune query: the stored best configuration for (GPU, dtype, op, problem, size or shape).
int cmd_query(const std::vector<std::string>& args);
/// reduce-tune devices: the GPUs of this machine.
int cmd_devices(const std::vector<std::string>& args);
/// reduce-tune nvrtc: the NVRTC library's version and the architectures it targets.
int cmd_nvrtc(const std::vector<std::string>& args);

} // namespace reduce_tune
