// 000 #8 / 002 reduceCompleteUnroll<iBlockSize> / 004 "unrolled all": as complete_unroll, with the
// block size a compile-time constant, so the dead steps and their barriers vanish.
static_assert(RT_BLOCK >= 64 && RT_BLOCK <= 1024 && (RT_BLOCK & (RT_BLOCK - 1)) == 0,
              "block size must be a power of two in [64, 1024]");
extern "C" __global__ void __launch_bounds__(RT_BLOCK)
rt_reduce(RT_REDUCE_PARAMS) {
  A* smem = rt_smem();
  const unsigned tid = threadIdx.x;
  A v = rt_load_unrolled(in, n, RT_BLOCK RT_IN2_ARG(in2));
  smem[tid] = v;
  __syncthreads();
  if (RT_BLOCK >= 1024 && tid < 512) smem[tid] = rt_combine(smem[tid], smem[tid + 512]);
  if (RT_BLOCK >= 1024) __syncthreads();
  if (RT_BLOCK >= 512 && tid < 256) smem[tid] = rt_combine(smem[tid], smem[tid + 256]);
  if (RT_BLOCK >= 512) __syncthreads();
  if (RT_BLOCK >= 256 && tid < 128) smem[tid] = rt_combine(smem[tid], smem[tid + 128]);
  if (RT_BLOCK >= 256) __syncthreads();
  if (RT_BLOCK >= 128 && tid < 64) smem[tid] = rt_combine(smem[tid], smem[tid + 64]);
  if (RT_BLOCK >= 128) __syncthreads();
  if (tid < 32) v = rt_warp_tail(smem, tid);
  rt_finish_block(v, partials, out, counter, n);
}
