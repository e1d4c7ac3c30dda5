// Test only (the tuner registers it when REDUCE_TUNE_TEST_VARIANTS=1: tuner/test_variants.h): spins
// until the counter reaches a value nothing writes, so the launch never returns. Proves the sweep's
// per-configuration time-out.
extern "C" __global__ void rt_reduce(RT_REDUCE_PARAMS) {
  volatile unsigned* c = counter;
  while (*c != 0xfffffff0u) {
  }
  rt_finish_block(rt_map(in[0], 0), partials, out, counter, n);
}
