// Test only (REDUCE_TUNE_TEST_VARIANTS=1): spins until the counter reaches a value nothing writes,
// so the launch never returns. Proves the sweep's per-configuration time-out.
extern "C" __global__ void rt_reduce(const T* __restrict__ in, T* __restrict__ work,
                                     T* __restrict__ partials, T* __restrict__ out, rt_size n,
                                     unsigned* counter) {
  volatile unsigned* c = counter;
  while (*c != 0xfffffff0u) {
  }
  rt_finish_block(in[0], partials, out, counter);
}
