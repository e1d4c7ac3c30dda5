// Rows and offsets segments: each segment is contiguous. Three mappings of lanes to segments:
//   RT_MAP_GROUP  a group of RT_WIDTH lanes of a warp per segment (1: a thread, 32: a warp);
//   RT_MAP_BLOCK  a block per segment;
//   RT_MAP_SPLIT  `aux` blocks per segment, combined atomically into out (filled with the
//                 identity first), for segments too long for one block.
// The grid has one group, block or `aux` blocks per segment (kernels/segmented_plan.cpp).

extern "C" __global__ void __launch_bounds__(RT_BLOCK) rt_segmented(RT_SEGMENTED_PARAMS) {
#if defined(RT_MAP_GROUP)
  const rt_size s = (rt_size(blockIdx.x) * RT_BLOCK + threadIdx.x) / RT_WIDTH;
  const unsigned lane = threadIdx.x % RT_WIDTH;
  A v = rt_identity();
  rt_size begin = 0, len = 0;
  if (s < count) {
    rt_segment(s, offsets, length, stride, &begin, &len);
    v = rt_lanes_reduce(in + begin, len, lane, RT_WIDTH RT_IN2_ARG(in2 + begin));
  }
  v = rt_group_reduce(v); // the whole warp takes part, past the last segment too
  if (lane == 0 && s < count) out[s] = rt_post(v, len);
#elif defined(RT_MAP_BLOCK)
  const rt_size s = blockIdx.x;
  rt_size begin, len;
  rt_segment(s, offsets, length, stride, &begin, &len);
  const A v = rt_block_reduce(
      rt_lanes_reduce(in + begin, len, threadIdx.x, RT_BLOCK RT_IN2_ARG(in2 + begin)));
  if (threadIdx.x == 0) out[s] = rt_post(v, len);
#elif defined(RT_MAP_SPLIT)
  const rt_size s = blockIdx.x / aux, part = blockIdx.x % aux;
  rt_size begin, len;
  rt_segment(s, offsets, length, stride, &begin, &len);
  const A v = rt_block_reduce(
      rt_lanes_reduce(in + begin, len, part * RT_BLOCK + threadIdx.x,
                      aux * RT_BLOCK RT_IN2_ARG(in2 + begin)));
  if (threadIdx.x == 0) {
    rt_pdl_wait(); // launched programmatically after the fill on sm_90+: until out holds the identity
    rt_atomic_out(out + s, v);
  }
#else
#error "contiguous.cu needs RT_MAP_GROUP, RT_MAP_BLOCK or RT_MAP_SPLIT"
#endif
}
