// 000 #3 / 002 reduceNeighboredLess / 001 kernel 2 / 004 "anti divergence": the neighbored-pair tree
// with a contiguous index (2*stride*tid), so whole warps retire together.
extern "C" __global__ void rt_reduce(RT_REDUCE_PARAMS) {
  A* smem = rt_smem();
  const unsigned tid = threadIdx.x;
  smem[tid] = rt_load_unrolled(in, n, blockDim.x RT_IN2_ARG(in2)); // RT_UNROLL is 1 here
  __syncthreads();
  for (unsigned stride = 1; stride < blockDim.x; stride *= 2) {
    const unsigned index = 2 * stride * tid;
    if (index < blockDim.x) smem[index] = rt_combine(smem[index], smem[index + stride]);
    __syncthreads();
  }
  rt_finish_block(smem[0], partials, out, counter, n);
}
