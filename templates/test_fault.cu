// Test only (REDUCE_TUNE_TEST_VARIANTS=1): writes to an unmapped address, so the launch fails with
// an illegal-address error that leaves the context unusable. Proves the sweep survives it.
extern "C" __global__ void rt_reduce(const T* __restrict__ in, T* __restrict__ work,
                                     T* __restrict__ partials, T* __restrict__ out, rt_size n,
                                     unsigned* counter) {
  volatile T* bad = reinterpret_cast<volatile T*>(rt_size(0xdead0000ull) + n % 2);
  if (threadIdx.x == 0) *bad = in[0];
}
