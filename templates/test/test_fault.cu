// Test only (the tuner registers it when REDUCE_TUNE_TEST_VARIANTS=1: tuner/test_variants.h):
// writes to an unmapped address, so the launch fails with an illegal-address error that leaves the
// context unusable. Proves the sweep survives it.
extern "C" __global__ void rt_reduce(RT_REDUCE_PARAMS) {
  volatile T* bad = reinterpret_cast<volatile T*>(rt_size(0xdead0000ull) + n % 2);
  if (threadIdx.x == 0) *bad = in[0];
}
