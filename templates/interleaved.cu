// 000 #4 / 002 reduceInterleaved / 001 kernel 3 / 004 "anti conflicts": the stride halves from
// blockDim/2 (sequential addressing, no bank conflicts).
extern "C" __global__ void rt_reduce(const T* __restrict__ in, T* __restrict__ work,
                                     T* __restrict__ partials, T* __restrict__ out, rt_size n,
                                     unsigned* counter) {
  T* smem = rt_smem();
  const unsigned tid = threadIdx.x;
  const rt_size idx = rt_size(blockIdx.x) * blockDim.x + tid;
  smem[tid] = idx < n ? in[idx] : rt_identity();
  __syncthreads();
  for (unsigned stride = blockDim.x / 2; stride > 0; stride >>= 1) {
    if (tid < stride) smem[tid] = rt_combine(smem[tid], smem[tid + stride]);
    __syncthreads();
  }
  rt_finish_block(smem[0], partials, out, counter);
}
