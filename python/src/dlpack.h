// The ABI of dlpack.h (versions 0.x and 1.x), as the extension reads and writes it: capsules of
// other arrays read in place (dlpack.cpp) and the eager torch call's results handed to torch
// (results.cpp). Internal to the extension.
#pragma once

#include <cstdint>

namespace reduce_tune::pyext::dlpack {

struct DLDevice { std::int32_t device_type, device_id; };
struct DLDataType { std::uint8_t code, bits; std::uint16_t lanes; };
struct DLTensor {
  void* data;
  DLDevice device;
  std::int32_t ndim;
  DLDataType dtype;
  std::int64_t* shape;
  std::int64_t* strides;
  std::uint64_t byte_offset;
};
struct DLManagedTensor { DLTensor dl_tensor; void* manager_ctx; void (*deleter)(DLManagedTensor*); };
struct DLPackVersion { std::uint32_t major, minor; };
struct DLManagedTensorVersioned {
  DLPackVersion version;
  void* manager_ctx;
  void (*deleter)(DLManagedTensorVersioned*);
  std::uint64_t flags;
  DLTensor dl_tensor;
};

} // namespace reduce_tune::pyext::dlpack
