// The eager torch call's small results: tensors of their own carved from blocks that torch
// allocates, handed to torch through DLPack. torch.empty_like costs the call more than the
// reduction's launch (its dispatch and the caching allocator: 1.8-3.7 us on H100 and H200 hosts);
// a tensor imported from a DLPack capsule costs ~0.5 us, and one block of torch's memory serves
// many results. Each result has its own storage and version counter (no view of the block), and
// the block goes back to torch's allocator, on the stream it was allocated on, when its last
// result is gone. A pool serves one kind of result (dtype, shape, GPU) on each stream: results are
// written on the stream their block was allocated on, as torch's own results are.
#include "python/src/dlpack.h"
#include "python/src/ext.h"

#include <nanobind/stl/vector.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <vector>

namespace reduce_tune::pyext {

using namespace dlpack;

namespace {

struct Block;

/// One result's DLPack description (its shape and strides in place).
struct Chunk {
  DLManagedTensor managed{};
  std::int64_t shape[kResultMaxDims]{};
  std::int64_t strides[kResultMaxDims]{};
  Block* block = nullptr;
};

/// A block of torch's memory and the results carved from it. `live` counts the results alive and
/// the pool while it hands the block out; the last one out releases the torch tensor.
struct Block {
  PyObject* owner = nullptr; ///< the torch tensor whose memory the results are
  std::atomic<int> live{1};
  std::vector<Chunk> chunks;
  std::size_t next = 0;

  void release() {
    if (live.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
    // torch calls a result's deleter where its storage dies: any thread, with or without the GIL.
    if (Py_IsInitialized()) {
      const PyGILState_STATE gil = PyGILState_Ensure();
      Py_XDECREF(owner);
      PyGILState_Release(gil);
    }
    delete this;
  }
};

void chunk_deleter(DLManagedTensor* m) { static_cast<Chunk*>(m->manager_ctx)->block->release(); }

/// A capsule that torch did not consume (its name is still "dltensor") gives its result back.
void capsule_destructor(PyObject* capsule) {
  if (!PyCapsule_IsValid(capsule, "dltensor")) return;
  auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, "dltensor"));
  if (m && m->deleter) m->deleter(m);
}

} // namespace

ResultPool::ResultPool(int device_type, int device, int code, int bits,
                       std::vector<std::int64_t> shape, std::size_t block_bytes, nb::object allocate,
                       nb::object import)
    : device_type_(device_type), device_(device), code_(code), bits_(bits), shape_(std::move(shape)),
      allocate_(std::move(allocate)), import_(std::move(import)) {
  if (shape_.size() > kResultMaxDims)
    throw nb::value_error("reduce_tune: a pooled result has at most 8 dimensions");
  if (bits <= 0 || bits % 8 != 0 || block_bytes == 0)
    throw nb::value_error("reduce_tune: a pooled result needs elements of whole bytes and a block "
                          "size above 0");
  std::size_t elements = 1;
  for (std::int64_t d : shape_) elements *= std::size_t(d);
  // Each result on a 16-byte boundary, as an allocation of its own would be (a kernel may store
  // vectors of results).
  stride_ = (elements * std::size_t(bits / 8) + 15) / 16 * 16;
  per_block_ = std::clamp<std::size_t>(block_bytes / stride_, 1, kResultsPerBlock);
}

ResultPool::~ResultPool() {
  for (const Current& c : current_) static_cast<Block*>(c.block)->release();
}

PyObject* ResultPool::take(std::uintptr_t stream, std::uintptr_t* data) {
  Current* cur = nullptr;
  for (Current& c : current_)
    if (c.stream == stream) cur = &c;
  Block* block = cur ? static_cast<Block*>(cur->block) : nullptr;
  if (!block || block->next == block->chunks.size()) {
    // A new block, allocated by torch on the current stream (the caller's `stream`).
    PyObject* owner = PyObject_CallFunction(allocate_.ptr(), "n", Py_ssize_t(per_block_ * stride_));
    if (!owner) return nullptr;
    PyObject* ptr = PyObject_CallMethod(owner, "data_ptr", nullptr);
    if (!ptr) {
      Py_DECREF(owner);
      return nullptr;
    }
    const std::uintptr_t base = PyLong_AsUnsignedLongLong(ptr);
    Py_DECREF(ptr);
    if (PyErr_Occurred()) {
      Py_DECREF(owner);
      return nullptr;
    }
    auto* fresh = new Block;
    fresh->owner = owner;
    fresh->chunks.resize(per_block_);
    const auto ndim = std::int32_t(shape_.size());
    for (std::size_t i = 0; i < per_block_; ++i) {
      Chunk& c = fresh->chunks[i];
      c.block = fresh;
      std::int64_t step = 1;
      for (std::int32_t d = ndim - 1; d >= 0; --d) {
        c.shape[d] = shape_[std::size_t(d)];
        c.strides[d] = step;
        step *= shape_[std::size_t(d)];
      }
      DLTensor& t = c.managed.dl_tensor;
      t.data = reinterpret_cast<void*>(base + i * stride_);
      t.device = {device_type_, device_};
      t.ndim = ndim;
      t.dtype = {std::uint8_t(code_), std::uint8_t(bits_), 1};
      t.shape = c.shape;
      t.strides = c.strides;
      t.byte_offset = 0;
      c.managed.manager_ctx = &c;
      c.managed.deleter = chunk_deleter;
    }
    if (cur) {
      static_cast<Block*>(cur->block)->release(); // the pool's hold on the spent block
      cur->block = fresh;
    } else {
      current_.push_back({stream, fresh});
    }
    block = fresh;
    g_stats.result_blocks.fetch_add(1, std::memory_order_relaxed);
  }
  Chunk& c = block->chunks[block->next++];
  block->live.fetch_add(1, std::memory_order_relaxed);
  PyObject* capsule = PyCapsule_New(&c.managed, "dltensor", capsule_destructor);
  if (!capsule) {
    block->release();
    return nullptr;
  }
  PyObject* args[2] = {nullptr, capsule};
  PyObject* tensor =
      PyObject_Vectorcall(import_.ptr(), args + 1, 1 | PY_VECTORCALL_ARGUMENTS_OFFSET, nullptr);
  Py_DECREF(capsule); // consumed by torch, or its destructor gives the result back
  if (!tensor) return nullptr;
  *data = reinterpret_cast<std::uintptr_t>(c.managed.dl_tensor.data);
  return tensor;
}

void bind_results(nb::module_& m) {
  using namespace nb::literals;
  nb::class_<ResultPool>(m, "ResultPool",
                         "The eager torch call's results of one kind (dtype, shape, GPU): tensors "
                         "of their own from blocks of at most `block_bytes` (64 results at most) "
                         "that `allocate(nbytes)` makes (torch.empty on the current stream), handed "
                         "over by `import_(capsule)` (torch's DLPack import). A block per stream. "
                         "device_type: DLPack's (2: CUDA; 1: the CPU, for tests).")
      .def("take", [](ResultPool& p, std::uintptr_t stream) {
        std::uintptr_t data = 0;
        PyObject* t = p.take(stream, &data);
        if (!t) throw nb::python_error();
        return nb::steal(t);
      }, "stream"_a, "A new result tensor from the block of `stream` (tests: the eager call takes "
                     "them through hot_pooled).")
      .def(nb::init<int, int, int, int, std::vector<std::int64_t>, std::size_t, nb::object,
                    nb::object>(),
           "device_type"_a, "device"_a, "code"_a, "bits"_a, "shape"_a, "block_bytes"_a, "allocate"_a,
           "import_"_a)
      .def_prop_ro("stride", &ResultPool::stride, "bytes between two results of a block")
      .def_prop_ro("per_block", &ResultPool::per_block, "results a block holds")
      .def_prop_ro("streams", &ResultPool::streams, "the streams it holds a block for");
}

} // namespace reduce_tune::pyext
