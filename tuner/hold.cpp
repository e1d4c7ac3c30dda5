// reduce-tune: the timed batches' hold (tuner/hold.h).
#include "tuner/hold.h"

#include "tuner/fast_check.h"

#include <atomic>
#include <string>

namespace reduce_tune {

Hold::Hold(const Nvrtc& nvrtc, CompileCache& cache, ArchTarget target, double timeout_s, bool on)
    : nvrtc_(nvrtc), cache_(cache), target_(std::move(target)),
      timeout_ns_(std::uint64_t(timeout_s * 1e9)), on_(on) {}

Hold::~Hold() {
  if (!words_) return;
  const cuda::Driver& d = cuda::driver(); // not checked: a destructor
  if (words_[0] < generation_) {
    // A kernel still waiting (an exception between hold and release): it stops at once, and has
    // stopped before its words are freed.
    words_[0] = ~std::uint64_t(0);
    d.cuCtxSynchronize();
  }
  d.cuMemFreeHost(const_cast<std::uint64_t*>(words_));
}

void Hold::hold(CUstream s) {
  if (!on_) return;
  if (!device_words_) {
    if (!words_) {
      void* p = nullptr;
      RT_CU(cuMemHostAlloc(&p, 2 * sizeof(std::uint64_t), CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE));
      words_ = static_cast<volatile std::uint64_t*>(p);
      words_[0] = 0;
      words_[1] = 0;
    }
    RT_CU(cuMemHostGetDevicePointer(&device_words_, const_cast<std::uint64_t*>(words_), 0));
  }
  if (!module_) {
    const std::string source = "// reduce-tune: hold\n" + std::string(check_template_source("check/hold.cu"));
    auto m = std::make_unique<cuda::Module>(cache_.get(nvrtc_, source, target_).image);
    kernel_ = m->function("rt_hold");
    module_ = std::move(m);
  }
  ++generation_, ++holds_;
  CUdeviceptr release = device_words_, timed_out = device_words_ + sizeof(std::uint64_t);
  unsigned long long generation = generation_, timeout = timeout_ns_;
  void* args[] = {&release, &timed_out, &generation, &timeout};
  cuda::launch(kernel_, 1, 1, 0, s, args);
}

void Hold::release() {
  if (!on_ || !words_) return;
  // What was queued before is ordered before the store (the queueing calls are the driver's
  // own; the fence keeps the compiler and CPU from moving the store up).
  std::atomic_thread_fence(std::memory_order_seq_cst);
  words_[0] = generation_;
}

bool Hold::timed_out() const {
  return on_ && words_ && words_[1] == generation_;
}

void load_fully(const Kernel& k) {
  const cuda::Driver& d = cuda::driver();
  if (!d.cuFuncLoad) return;
  for (CUfunction f : {k.reduce, k.combine, k.fill, k.chunks, k.partition, k.post})
    if (f) cuda::check(d.cuFuncLoad(f), "cuFuncLoad");
}

} // namespace reduce_tune
