// reduce-tune: the shells of query, devices and nvrtc. Each takes the arguments after the command
// name and returns the exit code; usage errors are thrown (exit code 2 in main).
#pragma once

#include <string>
#include <vector>

namespace reduce_tune {

/// reduce-tune query: the stored best configuration for (GPU, dtype, op, problem, size or shape).
int cmd_query(const std::vector<std::string>& args);
/// reduce-tune devices: the GPUs of this machine.
int cmd_devices(const std::vector<std::string>& args);
/// reduce-tune nvrtc: the NVRTC library's version and the architectures it targets.
int cmd_nvrtc(const std::vector<std::string>& args);

} // namespace reduce_tune
