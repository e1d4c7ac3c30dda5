// Columns: one result per column of a row-major matrix (`length` rows, `count` columns, rows
// `stride` elements apart). A block is a tile of TX x TY threads: TX threads side by side over
// TX * RT_VEC adjacent columns (RT_VEC per thread, so a warp's loads are coalesced along a row),
// TY of them down the rows, RT_UNROLL rows in flight per thread. Narrow matrices get a small TX
// and a tall TY, so a warp still reads whole stretches of memory. The TY partials of a column meet
// in shared memory. `aux` = ysplit << 11 | TX: the rows are cut into ysplit slices, one block each
// (RT_FINISH_DIRECT: ysplit is 1 and the block writes its columns; RT_FINISH_ATOMIC: the slices
// combine atomically into out, filled with the identity first). RT_EVICT_FIRST: the vector loads
// are evict-first (rt_load).

extern "C" __global__ void __launch_bounds__(RT_BLOCK) rt_segmented(RT_SEGMENTED_PARAMS) {
  const unsigned tx_count = unsigned(aux & 2047u), ty_count = RT_BLOCK / tx_count;
  const rt_size ysplit = aux >> 11;
  const rt_size xblocks = (count + rt_size(tx_count) * RT_VEC - 1) / (rt_size(tx_count) * RT_VEC);
  const rt_size bx = blockIdx.x % xblocks, by = blockIdx.x / xblocks;
  const unsigned tx = threadIdx.x % tx_count, ty = threadIdx.x / tx_count;
  const rt_size c0 = (bx * tx_count + tx) * RT_VEC;
  const rt_size slice = (length + ysplit - 1) / ysplit;
  const rt_size r0 = by * slice, r1 = r0 + slice < length ? r0 + slice : length;

  A acc[RT_VEC];
#pragma unroll
  for (int e = 0; e < RT_VEC; ++e) acc[e] = rt_identity();
  // Whole vectors where the columns start vector-aligned in every row (always for RT_VEC 1);
  // scalars otherwise. Either way RT_UNROLL rows are in flight per thread, and the rows left
  // after the last whole round (fewer than RT_UNROLL) are read in one predicated round: a
  // thread's rows cost ceil(rows / RT_UNROLL) memory round trips, not one a row.
  const bool vector = c0 + RT_VEC <= count && stride % RT_VEC == 0 &&
                      (reinterpret_cast<rt_size>(in) / sizeof(T)) % RT_VEC == 0
                      RT_IN2_ONLY(&& rt_same_misalign(in, in2));
  const T* const mine = in + c0; // this thread's columns of row 0
  auto row_vec = [&](rt_size row) {
    return rt_load(reinterpret_cast<const rt_vec*>(mine + row * stride));
  };
  RT_IN2_ONLY(const T* const mine2 = in2 + c0; // the second input's
              auto row_vec2 = [&](rt_size row) {
                return rt_load(reinterpret_cast<const rt_vec*>(mine2 + row * stride));
              };)
  rt_size r = r0 + ty;
  const rt_size step = rt_size(ty_count) * RT_UNROLL;
  if (vector) {
    for (; r + rt_size(RT_UNROLL - 1) * ty_count < r1; r += step) {
      rt_vec v[RT_UNROLL];
      RT_IN2_ONLY(rt_vec v2[RT_UNROLL];)
#pragma unroll
      for (int k = 0; k < RT_UNROLL; ++k) {
        v[k] = row_vec(r + rt_size(k) * ty_count);
        RT_IN2_ONLY(v2[k] = row_vec2(r + rt_size(k) * ty_count);)
      }
#pragma unroll
      for (int k = 0; k < RT_UNROLL; ++k)
#pragma unroll
        for (int e = 0; e < RT_VEC; ++e)
          acc[e] = rt_combine(acc[e],
                              rt_pair_map(v[k].x[e], v2[k].x[e], r + rt_size(k) * ty_count));
    }
    if (RT_UNROLL > 1 && r < r1) { // fewer than RT_UNROLL rows left
      rt_vec v[RT_UNROLL];
      RT_IN2_ONLY(rt_vec v2[RT_UNROLL];)
#pragma unroll
      for (int k = 0; k < RT_UNROLL - 1; ++k)
        if (r + rt_size(k) * ty_count < r1) {
          v[k] = row_vec(r + rt_size(k) * ty_count);
          RT_IN2_ONLY(v2[k] = row_vec2(r + rt_size(k) * ty_count);)
        }
#pragma unroll
      for (int k = 0; k < RT_UNROLL - 1; ++k)
        if (r + rt_size(k) * ty_count < r1)
#pragma unroll
          for (int e = 0; e < RT_VEC; ++e)
          acc[e] = rt_combine(acc[e],
                              rt_pair_map(v[k].x[e], v2[k].x[e], r + rt_size(k) * ty_count));
    }
  } else if (c0 < count) {
    const int width = count - c0 < RT_VEC ? int(count - c0) : RT_VEC;
    for (; r < r1; r += step) {
      T v[RT_UNROLL][RT_VEC];
      RT_IN2_ONLY(T v2[RT_UNROLL][RT_VEC];)
#pragma unroll
      for (int k = 0; k < RT_UNROLL; ++k)
#pragma unroll
        for (int e = 0; e < RT_VEC; ++e)
          if (r + rt_size(k) * ty_count < r1 && e < width) {
            v[k][e] = mine[(r + rt_size(k) * ty_count) * stride + e];
            RT_IN2_ONLY(v2[k][e] = mine2[(r + rt_size(k) * ty_count) * stride + e];)
          }
#pragma unroll
      for (int k = 0; k < RT_UNROLL; ++k)
#pragma unroll
        for (int e = 0; e < RT_VEC; ++e)
          if (r + rt_size(k) * ty_count < r1 && e < width)
            acc[e] = rt_combine(acc[e], rt_pair_map(v[k][e], v2[k][e], r + rt_size(k) * ty_count));
    }
  }

  // The TY partials of each column: a tree over ty in shared memory.
  if (ty_count > 1) {
    A* smem = rt_smem();
    const unsigned row = tx_count * RT_VEC;
#pragma unroll
    for (int e = 0; e < RT_VEC; ++e) smem[ty * row + tx * RT_VEC + e] = acc[e];
    __syncthreads();
    for (unsigned s = ty_count / 2; s > 0; s >>= 1) {
      if (ty < s)
#pragma unroll
        for (int e = 0; e < RT_VEC; ++e) {
          const unsigned i = ty * row + tx * RT_VEC + e;
          smem[i] = rt_combine(smem[i], smem[i + s * row]);
        }
      __syncthreads();
    }
#pragma unroll
    for (int e = 0; e < RT_VEC; ++e) acc[e] = smem[tx * RT_VEC + e];
  }
  if (ty != 0) return;
#if defined(RT_FINISH_ATOMIC)
  rt_pdl_wait(); // launched programmatically after the fill on sm_90+: until out holds the identity
#endif
#pragma unroll
  for (int e = 0; e < RT_VEC; ++e) {
    if (c0 + e >= count) break;
#if defined(RT_FINISH_ATOMIC)
    rt_atomic_out(out + c0 + e, acc[e]);
#else
    out[c0 + e] = rt_post(acc[e], length);
#endif
  }
}
