// 000 #5 / 002 reduceUnrolling2/4/8 / 001 kernel 4 / 004 "dual load": each block first folds
// RT_UNROLL data blocks while loading, then the interleaved tree. Every element is loaded,
// including a last group shorter than RT_UNROLL blocks (the material skipped those).
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
  for (unsigned stride = blockDim.x / 2; stride > 0; stride >>= 1) {
    if (tid < stride) smem[tid] = rt_combine(smem[tid], smem[tid + stride]);
    __syncthreads();
  }
  rt_finish_block(smem[0], partials, out, counter);
}
