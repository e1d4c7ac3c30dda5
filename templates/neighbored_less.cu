// 000 #3 / 002 reduceNeighboredLess / 001 kernel 2 / 004 "anti divergence": the neighbored-pair tree
// with a contiguous index (2*stride*tid), so whole warps retire together.
extern "C" __global__ void rt_reduce(const T* __restrict__ in, T* __restrict__ work,
                                     T* __restrict__ partials, T* __restrict__ out, rt_size n,
                                     unsigned* counter) {
  T* smem = rt_smem();
  const unsigned tid = threadIdx.x;
  const rt_size idx = rt_size(blockIdx.x) * blockDim.x + tid;
  smem[tid] = idx < n ? in[idx] : rt_identity();
  __syncthreads();
  for (unsigned stride = 1; stride < blockDim.x; stride *= 2) {
    const unsigned index = 2 * stride * tid;
    if (index < blockDim.x) smem[index] = rt_combine(smem[index], smem[index + stride]);
    __syncthreads();
  }
  rt_finish_block(smem[0], partials, out, counter);
}
