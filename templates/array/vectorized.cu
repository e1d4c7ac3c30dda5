// Streams the input with RT_VEC-wide vector loads (16 bytes: 4 floats or ints, 2 doubles, 8 bf16),
// RT_UNROLL independent loads in flight per thread, over a data-sized grid (one pass) or a
// grid-stride loop (grid from the SM count), then a two-level block reduction and the finish.
// An unaligned head (input not 16-byte aligned) and a tail shorter than a vector are read as
// scalars, so every n >= 1 and every element-aligned pointer works. The loads are rt_load
// (common.cuh): evict-first for the `streaming` variant.
extern "C" __global__ void __launch_bounds__(RT_BLOCK)
rt_reduce(RT_REDUCE_PARAMS) {
  rt_pdl_trigger(); // the two-pass finish's second kernel may launch now (it waits for this one)
  rt_ticket ticket = rt_finish_start(out, counter);
  const unsigned tid = threadIdx.x;
  // Elements before the first vector-aligned address.
  const rt_size misalign = (reinterpret_cast<rt_size>(in) / sizeof(T)) % RT_VEC;
  rt_size head = misalign ? RT_VEC - misalign : 0;
  if (head > n) head = n;
  rt_size vn = n; // the elements read as head, vectors and tail (below: all of them)
#if defined(RT_TWO_INPUTS)
  // The second input at another offset from a vector boundary: every element a scalar, over the
  // whole grid (no vectors, head or tail).
  const bool apart = !rt_same_misalign(in, in2);
  if (apart) head = vn = 0;
#endif
  const rt_vec* body = reinterpret_cast<const rt_vec*>(in + head);
  const rt_size nvec = (vn - head) / RT_VEC;
  const rt_size tail_begin = head + nvec * RT_VEC;

  A acc[RT_UNROLL];
#pragma unroll
  for (int k = 0; k < RT_UNROLL; ++k) acc[k] = rt_identity();

  const rt_size step = rt_size(gridDim.x) * RT_BLOCK * RT_UNROLL;
  rt_vec_accumulate(body, nvec, rt_size(blockIdx.x) * RT_BLOCK * RT_UNROLL + tid, RT_BLOCK, step, acc,
                    head RT_IN2_ARG(in2 + head));
  // Head and tail: fewer than RT_VEC elements each, read by block 0. The head lies below the body
  // folded before it: combined, not folded (rt_fold's precondition); the tail above both.
  if (blockIdx.x == 0) {
    if (tid < head) acc[0] = rt_combine(acc[0], rt_pair_map(in[tid], in2[tid], tid));
    if (tid < vn - tail_begin)
      acc[0] = rt_pair_fold(acc[0], in[tail_begin + tid], in2[tail_begin + tid], tail_begin + tid);
  }
#if defined(RT_TWO_INPUTS)
  if (apart)
    for (rt_size i = rt_size(blockIdx.x) * RT_BLOCK + tid; i < n;
         i += rt_size(gridDim.x) * RT_BLOCK)
      acc[0] = rt_combine(acc[0], rt_map2(in[i], in2[i], i));
#endif
  A v = acc[0];
#pragma unroll
  for (int k = 1; k < RT_UNROLL; ++k) v = rt_combine(v, acc[k]);
  ticket = rt_finish_peek(ticket, counter);
  rt_finish_block(rt_block_reduce(v), partials, out, counter, n, ticket);
}
