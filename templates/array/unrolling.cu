// 000 #5 / 002 reduceUnrolling2/4/8 / 001 kernel 4 / 004 "dual load": each block first folds
// RT_UNROLL data blocks while loading, then the interleaved tree. Every element is loaded,
// including a last group shorter than RT_UNROLL blocks (the material skipped those).
extern "C" __global__ void rt_reduce(RT_REDUCE_PARAMS) {
  A* smem = rt_smem();
  const unsigned tid = threadIdx.x;
  A v = rt_load_unrolled(in, n, blockDim.x RT_IN2_ARG(in2));
  smem[tid] = v;
  __syncthreads();
  for (unsigned stride = blockDim.x / 2; stride > 0; stride >>= 1) {
    if (tid < stride) smem[tid] = rt_combine(smem[tid], smem[tid + stride]);
    __syncthreads();
  }
  rt_finish_block(smem[0], partials, out, counter, n);
}
