// 000 #6 / 002 reduceUnrollWarps8 / 001 kernel 5 / 004 "unrolled last": unrolling, the tree down
// to 64 partials, then the last warp by the chosen tail (volatile, __syncwarp or shuffle).
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
  for (unsigned stride = blockDim.x / 2; stride > 32; stride >>= 1) {
    if (tid < stride) smem[tid] = rt_combine(smem[tid], smem[tid + stride]);
    __syncthreads();
  }
  if (tid < 32) v = rt_warp_tail(smem, tid);
  rt_finish_block(v, partials, out, counter);
}
