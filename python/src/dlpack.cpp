// DLPack capsules read in place (the ABI of dlpack.h, versions 0.x and 1.x): the package's view of
// an array that offers __dlpack__ and no other protocol it reads.
#include "python/src/ext.h"

#include <cstdint>

namespace reduce_tune::pyext {

namespace {

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

} // namespace

/// What a DLPack capsule describes: (data pointer incl. byte offset, shape, strides in elements or
/// None for compact row-major, (type code, bits, lanes), (device type, device id)). The capsule is
/// read, not consumed: its destructor releases the producer's bookkeeping; the data stays owned by
/// the array it came from.
nb::tuple dlpack_view(nb::handle capsule) {
  PyObject* c = capsule.ptr();
  const DLTensor* t = nullptr;
  if (PyCapsule_IsValid(c, "dltensor")) {
    t = &static_cast<DLManagedTensor*>(PyCapsule_GetPointer(c, "dltensor"))->dl_tensor;
  } else if (PyCapsule_IsValid(c, "dltensor_versioned")) {
    auto* v = static_cast<DLManagedTensorVersioned*>(PyCapsule_GetPointer(c, "dltensor_versioned"));
    if (v->version.major > 1)
      throw nb::type_error("reduce_tune: DLPack version too new (major version > 1)");
    t = &v->dl_tensor;
  } else {
    throw nb::type_error("reduce_tune: not a DLPack capsule (or one already consumed)");
  }
  nb::list shape, strides;
  for (int i = 0; i < t->ndim; ++i) {
    shape.append(t->shape[i]);
    if (t->strides) strides.append(t->strides[i]);
  }
  const Ptr data = reinterpret_cast<Ptr>(t->data) + Ptr(t->byte_offset);
  return nb::make_tuple(data, nb::tuple(shape), t->strides ? nb::object(nb::tuple(strides)) : nb::none(),
                        nb::make_tuple(t->dtype.code, t->dtype.bits, t->dtype.lanes),
                        nb::make_tuple(t->device.device_type, t->device.device_id));
}

} // namespace reduce_tune::pyext
