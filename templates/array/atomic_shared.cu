// 004 #2 "atomic shared": shared-memory atomics within the block, one global atomic per block.
extern "C" __global__ void rt_reduce(RT_REDUCE_PARAMS) {
  A* x = rt_smem();
  const rt_size idx = rt_size(blockIdx.x) * blockDim.x + threadIdx.x;
  if (threadIdx.x == 0) *x = rt_identity();
  __syncthreads();
  if (idx < n) rt_atomic_combine(x, rt_pair_map(in[idx], in2[idx], idx));
  __syncthreads();
  if (threadIdx.x == 0) rt_atomic_out(out, *x);
}
