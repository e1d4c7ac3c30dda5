// 000 #2 reduceNeighboredSmem / 001 kernel 1 / 004 "reduction": the divergent neighbored-pair tree
// (tid % (2*stride)) in shared memory. Elements past n load as the identity.
extern "C" __global__ void rt_reduce(const T* __restrict__ in, T* __restrict__ work,
                                     T* __restrict__ partials, T* __restrict__ out, rt_size n,
                                     unsigned* counter) {
  T* smem = rt_smem();
  const unsigned tid = threadIdx.x;
  const rt_size idx = rt_size(blockIdx.x) * blockDim.x + tid;
  smem[tid] = idx < n ? in[idx] : rt_identity();
  __syncthreads();
  for (unsigned stride = 1; stride < blockDim.x; stride *= 2) {
    if ((tid % (2 * stride)) == 0) smem[tid] = rt_combine(smem[tid], smem[tid + stride]);
    __syncthreads();
  }
  rt_finish_block(smem[0], partials, out, counter);
}
