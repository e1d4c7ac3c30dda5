// 000 #1 / 002 reduceNeighbored: the divergent neighbored-pair tree, in place in global memory.
// Works on `work`, a scratch copy of the input (the caller's input is never modified).
// Fixed from the material: 64-bit n; no early return before a barrier; the last block may be
// partial (pairs whose right element lies past n are skipped). Partials are stored as T, so for
// bf16 and f16 only min and max are admitted (kernels/catalogue.cpp): a sum would round each one.
extern "C" __global__ void rt_reduce(RT_REDUCE_PARAMS) {
  const unsigned tid = threadIdx.x;
  const rt_size base = rt_size(blockIdx.x) * blockDim.x;
  const rt_size count = n - base < blockDim.x ? n - base : blockDim.x;
  T* idata = work + base;
  for (unsigned stride = 1; stride < blockDim.x; stride *= 2) {
    if ((tid % (2 * stride)) == 0 && tid + stride < count)
      idata[tid] = rt_narrow(rt_combine(rt_widen(idata[tid]), rt_widen(idata[tid + stride])));
    __syncthreads();
  }
  rt_finish_block(rt_widen(idata[0]), partials, out, counter, n);
}
