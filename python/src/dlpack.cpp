// DLPack capsules read in place (the ABI of dlpack.h, versions 0.x and 1.x): the package's view of
// an array that offers __dlpack__ and no other protocol it reads.
#include "python/src/ext.h"
#include "python/src/dlpack.h"

#include <cstdint>

namespace reduce_tune::pyext {

using namespace dlpack;

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
