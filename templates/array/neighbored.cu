// 000 #2 reduceNeighboredSmem / 001 kernel 1 / 004 "reduction": the divergent neighbored-pair tree
// (tid % (2*stride)) in shared memory. Elements past n load as the identity.
extern "C" __global__ void rt_reduce(RT_REDUCE_PARAMS) {
  A* smem = rt_smem();
  const unsigned tid = threadIdx.x;
  smem[tid] = rt_load_unrolled(in, n, blockDim.x RT_IN2_ARG(in2)); // RT_UNROLL is 1 here
  __syncthreads();
  for (unsigned stride = 1; stride < blockDim.x; stride *= 2) {
    if ((tid % (2 * stride)) == 0) smem[tid] = rt_combine(smem[tid], smem[tid + stride]);
    __syncthreads();
  }
  rt_finish_block(smem[0], partials, out, counter, n);
}
