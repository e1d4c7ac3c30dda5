// 004 #1 "atomic global": every thread combines its element straight into the result.
extern "C" __global__ void rt_reduce(RT_REDUCE_PARAMS) {
  const rt_size idx = rt_size(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx < n) rt_atomic_out(out, rt_pair_map(in[idx], in2[idx], idx));
}
