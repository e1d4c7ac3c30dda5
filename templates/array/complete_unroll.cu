// 000 #7 / 002 reduceCompleteUnrollWarps8: the barrier tree written out step by step, each step
// guarded by a run-time blockDim check, then the warp tail.
extern "C" __global__ void rt_reduce(RT_REDUCE_PARAMS) {
  A* smem = rt_smem();
  const unsigned tid = threadIdx.x;
  A v = rt_load_unrolled(in, n, blockDim.x RT_IN2_ARG(in2));
  smem[tid] = v;
  __syncthreads();
  if (blockDim.x >= 1024 && tid < 512) smem[tid] = rt_combine(smem[tid], smem[tid + 512]);
  __syncthreads();
  if (blockDim.x >= 512 && tid < 256) smem[tid] = rt_combine(smem[tid], smem[tid + 256]);
  __syncthreads();
  if (blockDim.x >= 256 && tid < 128) smem[tid] = rt_combine(smem[tid], smem[tid + 128]);
  __syncthreads();
  if (blockDim.x >= 128 && tid < 64) smem[tid] = rt_combine(smem[tid], smem[tid + 64]);
  __syncthreads();
  if (tid < 32) v = rt_warp_tail(smem, tid);
  rt_finish_block(v, partials, out, counter, n);
}
