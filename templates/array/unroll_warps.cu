// 000 #6 / 002 reduceUnrollWarps8 / 001 kernel 5 / 004 "unrolled last": unrolling, the tree down
// to 64 partials, then the last warp by the chosen tail (volatile, __syncwarp or shuffle).
extern "C" __global__ void rt_reduce(RT_REDUCE_PARAMS) {
  A* smem = rt_smem();
  const unsigned tid = threadIdx.x;
  A v = rt_load_unrolled(in, n, blockDim.x RT_IN2_ARG(in2));
  smem[tid] = v;
  __syncthreads();
  for (unsigned stride = blockDim.x / 2; stride > 32; stride >>= 1) {
    if (tid < stride) smem[tid] = rt_combine(smem[tid], smem[tid + stride]);
    __syncthreads();
  }
  if (tid < 32) v = rt_warp_tail(smem, tid);
  rt_finish_block(v, partials, out, counter, n);
}
