// 004 "multi seq": a grid sized from the SM count (RT_GRID blocks per SM, chosen by the host);
// each thread accumulates a grid-stride sequence, then one block reduction and one finish.
extern "C" __global__ void rt_reduce(RT_REDUCE_PARAMS) {
  const rt_size stride = rt_size(gridDim.x) * blockDim.x;
  A v = rt_identity();
  for (rt_size idx = rt_size(blockIdx.x) * blockDim.x + threadIdx.x; idx < n; idx += stride)
    v = rt_pair_fold(v, in[idx], in2[idx], idx);
  rt_finish_block(rt_block_reduce(v), partials, out, counter, n);
}
