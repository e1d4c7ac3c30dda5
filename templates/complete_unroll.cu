// 000 #7 / 002 reduceCompleteUnrollWarps8: the barrier tree written out step by step, each step
// guarded by a run-time blockDim check, then the warp tail.
extern "C" __global__ void rt_reduce(const T* __restrict__ in, T* __restrict__ work,
                                     T* __restrict__ partials, T* __restrict__ out, rt_size n,
                                     unsigned* counter) {
  T* smem = rt_smem();
  const unsigned tid = threadIdx.x;
  const rt_size base = rt_size(blockIdx.x) * blockDim.x * RT_UNROLL + tid;
  T v = rt_identity();
#pragma unroll
  for (int k = 0; k < RT_UNROLL; ++k) {
    const rt_size idx = base + rt_size(k) * blockDim.x;
    if (idx < n) v = rt_combine(v, in[idx]);
  }
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
  rt_finish_block(v, partials, out, counter);
}
