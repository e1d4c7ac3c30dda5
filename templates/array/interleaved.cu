// 000 #4 / 002 reduceInterleaved / 001 kernel 3 / 004 "anti conflicts": the stride halves from
// blockDim/2 (sequential addressing, no bank conflicts).
extern "C" __global__ void rt_reduce(RT_REDUCE_PARAMS) {
  A* smem = rt_smem();
  const unsigned tid = threadIdx.x;
  smem[tid] = rt_load_unrolled(in, n, blockDim.x RT_IN2_ARG(in2)); // RT_UNROLL is 1 here
  __syncthreads();
  for (unsigned stride = blockDim.x / 2; stride > 0; stride >>= 1) {
    if (tid < stride) smem[tid] = rt_combine(smem[tid], smem[tid + stride]);
    __syncthreads();
  }
  rt_finish_block(smem[0], partials, out, counter, n);
}
