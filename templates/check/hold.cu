// reduce-tune: the hold kernel of a timed batch (tuner/hold.h). One thread spins until the host
// has queued the whole batch behind it and writes `generation` into *release (mapped host
// memory), so the batch then runs back to back and no host delay falls between a start event and
// its launch. It gives up after `timeout_ns` of %globaltimer (a host that blocked on the GPU while
// queueing would otherwise wait forever) and then writes `generation` into *timed_out, so the host
// knows the batch ran unprotected. No CUDA header is needed.

typedef unsigned long long rt_u64;

__device__ __forceinline__ rt_u64 rt_global_ns() {
  rt_u64 t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

extern "C" __global__ void rt_hold(const volatile rt_u64* release, volatile rt_u64* timed_out,
                                   rt_u64 generation, rt_u64 timeout_ns) {
  const rt_u64 start = rt_global_ns();
  while (*release < generation) {
    if (rt_global_ns() - start > timeout_ns) {
      *timed_out = generation;
      __threadfence_system();
      return;
    }
#if __CUDA_ARCH__ >= 700
    __nanosleep(1000); // one read of host memory a microsecond is plenty
#endif
  }
}
