// Columns: one result per column of a row-major matrix (`length` rows, `count` columns, rows
// `stride` elements apart). A block is a tile of TX x TY threads: TX threads side by side over
// TX * RT_VEC adjacent columns (RT_VEC per thread, so a warp's loads are coalesced along a row),
// TY of them down the rows, RT_UNROLL rows in flight per thread. Narrow matrices get a small TX
// and a tall TY, so a warp still reads whole stretches of memory. The TY partials of a column meet
// in shared memory. `aux` = ysplit << 11 | TX: the rows are cut into ysplit slices, one block each
// (RT_FINISH_DIRECT: ysplit is 1 and the block writes its columns; RT_FINISH_ATOMIC: the slices
// combine atomically into out, filled with the identity first; RT_FINISH_TWOPASS: each block leaves
// its partials in the workspace `out`, [column][slice], and rt_segmented_post below combines each
// column's slices in order; RT_FINISH_LASTBLOCK: the same order in one kernel, see rt_last_slices
// below). RT_EVICT_FIRST: the vector loads are evict-first (rt_load).
// RT_ORDERED (a combine that is not commutative): a thread reads a contiguous run of its slice's
// rows, in order, and the tree over TY pairs neighbours, so each column's elements combine in row
// order; otherwise the TY threads of a column take rows TY apart (neighbouring rows in flight
// together) and the tree pairs halves.

#if defined(RT_FINISH_LASTBLOCK)
// The last-block finish: the ordered finish's partials without its second kernel. `work` holds
// RT_TICKETS 32-bit counters (zeroed once by the host; each is back at 0 when its launch ends, so
// the next launch and a graph's replays find it so), then the partials, [slice][column] (a block's
// stores and the finishing block's loads are coalesced). The ysplit slices of a stripe form groups
// of about sqrt(ysplit) consecutive ones: the block that takes a group's last ticket folds the
// group's partials, in slice order, into the group's first slot; the block that then takes the
// stripe's last ticket folds the groups' in order, applies the post-map and writes the results.
// Two levels, because one block folding every slice of a stripe reads them alone while the GPU
// idles (at 256 columns and 1056 slices: 4 MiB of 16-byte partials through one SM); each level
// reads about sqrt(ysplit) partials a column. Deterministic, and in row order for a combine that is
// not commutative.
#define RT_TICKETS 65536 // kernels/segmented_plan.cpp, kTicketCounters
#define RT_TICKET_BYTES (RT_TICKETS * 4)

// Folds the slices [k0, k1) of this stripe's columns, in order, `step` partials apart, by groups of
// `width` lanes a column (rt_group_ordered); returns through `emit` (column, value), lane 0 of its
// group. Every thread of the block calls it.
template <class Emit>
__device__ __forceinline__ void rt_fold_slices(const A* p, rt_size k0, rt_size k1, rt_size step,
                                               rt_size first, rt_size cols, Emit emit) {
  unsigned width = 1; // lanes a column: the block's threads over the stripe's columns, up to a warp
  while (width < 32 && width * 2 * cols <= RT_BLOCK && width < k1 - k0) width <<= 1;
  const unsigned lane = threadIdx.x & (width - 1u), shift = unsigned(__ffs(int(width)) - 1); // t / width
  // Whole warps go round together (the shuffles take every lane).
  for (rt_size t = threadIdx.x; t - (threadIdx.x & 31u) < cols * width; t += RT_BLOCK) {
    const rt_size c = t >> shift;
    const A* const q = p + k0 * step + first + c;
    const A v = rt_group_ordered([=](rt_size k) { return rt_ldcg(q + k * step); },
                                 c < cols ? k1 - k0 : 0, lane, width);
    if (c < cols && lane == 0) emit(first + c, v);
  }
}

__device__ __noinline__ void rt_last_slices(const A* acc, bool writer, rt_size c0, rt_size bx,
                                            rt_size by, rt_size ysplit, rt_size count,
                                            rt_size length, unsigned tx_count, R* out,
                                            unsigned long long* work) {
  __shared__ bool rt_is_last;
  unsigned* const tickets = reinterpret_cast<unsigned*>(work);
  A* const part = reinterpret_cast<A*>(reinterpret_cast<char*>(work) + RT_TICKET_BYTES);
  rt_size group = 1;
  while (group * group < ysplit) ++group;
  const rt_size groups = (ysplit + group - 1) / group;
  const rt_size g = by / group, g0 = g * group, g1 = g0 + group < ysplit ? g0 + group : ysplit;
  // The stripe's counters: the stripe's own, then a group's each.
  unsigned* const mine = tickets + bx * (groups + 1);
  const rt_size first = bx * tx_count * RT_VEC; // the stripe's first column
  const rt_size cols = count - first < rt_size(tx_count) * RT_VEC ? count - first : rt_size(tx_count) * RT_VEC;
  if (writer)
#pragma unroll
    for (int e = 0; e < RT_VEC; ++e)
      if (c0 + e < count) part[by * count + c0 + e] = acc[e];
  // Each writer's stores are ordered before the ticket: a fence by each, then the barrier, then
  // thread 0's fence and atomic.
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    rt_is_last = atomicAdd(mine + 1 + g, 1u) == unsigned(g1 - g0 - 1);
  }
  __syncthreads();
  if (!rt_is_last) return;
  __threadfence();
  if (groups == 1) { // one group: this block finishes the stripe
    rt_fold_slices(part, g0, g1, count, first, cols,
                   [=](rt_size c, A v) { out[c] = rt_post(v, length); });
    if (threadIdx.x == 0) mine[1] = 0; // ready for the next launch
    return;
  }
  if (g1 - g0 > 1)
    rt_fold_slices(part, g0, g1, count, first, cols,
                   [=](rt_size c, A v) { part[g0 * count + c] = v; });
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) {
    mine[1 + g] = 0;
    __threadfence();
    rt_is_last = atomicAdd(mine, 1u) == unsigned(groups - 1);
  }
  __syncthreads();
  if (!rt_is_last) return;
  __threadfence();
  // The groups' values lie in their first slices' slots, `group` slices apart.
  rt_fold_slices(part, 0, groups, group * count, first, cols,
                 [=](rt_size c, A v) { out[c] = rt_post(v, length); });
  if (threadIdx.x == 0) mine[0] = 0;
}
#endif

extern "C" __global__ void __launch_bounds__(RT_BLOCK) rt_segmented(RT_SEGMENTED_PARAMS) {
#if defined(RT_FINISH_TWOPASS)
  // The post pass may be scheduled now; it waits (rt_pdl_wait) until this grid has completed, so
  // its launch overlaps this kernel rather than following it.
  rt_pdl_trigger();
#endif
  const unsigned tx_count = unsigned(aux & 2047u), ty_count = RT_BLOCK / tx_count;
  const rt_size ysplit = aux >> 11;
  const rt_size xblocks = (count + rt_size(tx_count) * RT_VEC - 1) / (rt_size(tx_count) * RT_VEC);
  const rt_size bx = blockIdx.x % xblocks, by = blockIdx.x / xblocks;
  const unsigned tx = threadIdx.x % tx_count, ty = threadIdx.x / tx_count;
  const rt_size c0 = (bx * tx_count + tx) * RT_VEC;
  const rt_size slice = (length + ysplit - 1) / ysplit;
  const rt_size r0 = by * slice, r1 = r0 + slice < length ? r0 + slice : length;
  // This thread's rows: from `rs` below `re`, `gap` apart.
#if defined(RT_ORDERED)
  const rt_size rows = r1 > r0 ? r1 - r0 : 0; // a slice past the last row has none
  const rt_size run = (rows + ty_count - 1) / ty_count;
  const rt_size rs = r0 + rt_size(ty) * run, gap = 1;
  const rt_size re = rs + run < r1 ? rs + run : r1;
#else
  const rt_size rs = r0 + ty, re = r1, gap = ty_count;
#endif

  A acc[RT_VEC];
#pragma unroll
  for (int e = 0; e < RT_VEC; ++e) acc[e] = rt_identity();
  // Whole vectors where the columns start vector-aligned in every row (always for RT_VEC 1);
  // scalars otherwise. A round is RT_UNROLL rows in flight a thread; the rows left after the last
  // whole round (fewer than RT_UNROLL) are read in one predicated round: a thread's rows cost
  // ceil(rows / RT_UNROLL) memory round trips, not one a row. Each element is folded into its
  // column's accumulator (rt_fold) in increasing row order, as the fold's precondition asks
  // (templates/common.cuh), and in the same order with or without the pipeline below.
  // The ops that give their own fold (RT_FOLD: argmax, var, logsumexp), whose per-element work is
  // long, software-pipeline the rounds: the next round's loads are issued before this round's
  // elements are combined, so loads stay in flight while a thread combines (var and logsumexp
  // 5-7 % faster at 65536 x 256 on an H100). The others keep the plain rounds: for sum the
  // pipeline only cost time (2-2.5 % at the same shape).
#if defined(RT_FOLD)
  const bool vector = c0 + RT_VEC <= count && stride % RT_VEC == 0 &&
                      (reinterpret_cast<rt_size>(in) / sizeof(T)) % RT_VEC == 0
                      RT_IN2_ONLY(&& rt_same_misalign(in, in2));
  const T* const mine = in + c0; // this thread's columns of row 0
  RT_IN2_ONLY(const T* const mine2 = in2 + c0;) // the second input's
  rt_size r = rs;
  const rt_size step = gap * RT_UNROLL;
  if (vector) {
    auto row_vec = [&](rt_size row) {
      return rt_load(reinterpret_cast<const rt_vec*>(mine + row * stride));
    };
    RT_IN2_ONLY(auto row_vec2 = [&](rt_size row) {
      return rt_load(reinterpret_cast<const rt_vec*>(mine2 + row * stride));
    };)
    // The round at `at` into v (and v2): every row where the whole round lies before `re`, else
    // those that do (none where at >= re).
    auto load_round = [&](rt_size at, rt_vec* v RT_IN2_ONLY(, rt_vec* v2)) {
      if (at + rt_size(RT_UNROLL - 1) * gap < re) {
#pragma unroll
        for (int k = 0; k < RT_UNROLL; ++k) {
          v[k] = row_vec(at + rt_size(k) * gap);
          RT_IN2_ONLY(v2[k] = row_vec2(at + rt_size(k) * gap);)
        }
      } else {
#pragma unroll
        for (int k = 0; k < RT_UNROLL - 1; ++k)
          if (at + rt_size(k) * gap < re) {
            v[k] = row_vec(at + rt_size(k) * gap);
            RT_IN2_ONLY(v2[k] = row_vec2(at + rt_size(k) * gap);)
          }
      }
    };
    auto combine_round = [&](rt_size at, const rt_vec* v RT_IN2_ONLY(, const rt_vec* v2)) {
      if (at + rt_size(RT_UNROLL - 1) * gap < re) {
#pragma unroll
        for (int k = 0; k < RT_UNROLL; ++k)
#pragma unroll
          for (int e = 0; e < RT_VEC; ++e)
            acc[e] = rt_pair_fold(acc[e], v[k].x[e], v2[k].x[e], at + rt_size(k) * gap);
      } else {
#pragma unroll
        for (int k = 0; k < RT_UNROLL - 1; ++k)
          if (at + rt_size(k) * gap < re)
#pragma unroll
            for (int e = 0; e < RT_VEC; ++e)
              acc[e] = rt_pair_fold(acc[e], v[k].x[e], v2[k].x[e], at + rt_size(k) * gap);
      }
    };
    rt_vec v[RT_UNROLL];
    RT_IN2_ONLY(rt_vec v2[RT_UNROLL];)
    load_round(r, v RT_IN2_ONLY(, v2));
    for (; r < re; r += step) {
      rt_vec w[RT_UNROLL];
      RT_IN2_ONLY(rt_vec w2[RT_UNROLL];)
      load_round(r + step, w RT_IN2_ONLY(, w2)); // in flight while this round combines
      combine_round(r, v RT_IN2_ONLY(, v2));
#pragma unroll
      for (int k = 0; k < RT_UNROLL; ++k) {
        v[k] = w[k];
        RT_IN2_ONLY(v2[k] = w2[k];)
      }
    }
  } else if (c0 < count) {
    const int width = count - c0 < RT_VEC ? int(count - c0) : RT_VEC;
    auto load_round = [&](rt_size at, T (*v)[RT_VEC] RT_IN2_ONLY(, T (*v2)[RT_VEC])) {
#pragma unroll
      for (int k = 0; k < RT_UNROLL; ++k)
#pragma unroll
        for (int e = 0; e < RT_VEC; ++e)
          if (at + rt_size(k) * gap < re && e < width) {
            v[k][e] = mine[(at + rt_size(k) * gap) * stride + e];
            RT_IN2_ONLY(v2[k][e] = mine2[(at + rt_size(k) * gap) * stride + e];)
          }
    };
    auto combine_round = [&](rt_size at, const T (*v)[RT_VEC] RT_IN2_ONLY(, const T (*v2)[RT_VEC])) {
#pragma unroll
      for (int k = 0; k < RT_UNROLL; ++k)
#pragma unroll
        for (int e = 0; e < RT_VEC; ++e)
          if (at + rt_size(k) * gap < re && e < width)
            acc[e] = rt_pair_fold(acc[e], v[k][e], v2[k][e], at + rt_size(k) * gap);
    };
    T v[RT_UNROLL][RT_VEC];
    RT_IN2_ONLY(T v2[RT_UNROLL][RT_VEC];)
    load_round(r, v RT_IN2_ONLY(, v2));
    for (; r < re; r += step) {
      T w[RT_UNROLL][RT_VEC];
      RT_IN2_ONLY(T w2[RT_UNROLL][RT_VEC];)
      load_round(r + step, w RT_IN2_ONLY(, w2)); // in flight while this round combines
      combine_round(r, v RT_IN2_ONLY(, v2));
#pragma unroll
      for (int k = 0; k < RT_UNROLL; ++k)
#pragma unroll
        for (int e = 0; e < RT_VEC; ++e) {
          v[k][e] = w[k][e];
          RT_IN2_ONLY(v2[k][e] = w2[k][e];)
        }
    }
  }
#else
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
  rt_size r = rs;
  const rt_size step = gap * RT_UNROLL;
  if (vector) {
    for (; r + rt_size(RT_UNROLL - 1) * gap < re; r += step) {
      rt_vec v[RT_UNROLL];
      RT_IN2_ONLY(rt_vec v2[RT_UNROLL];)
#pragma unroll
      for (int k = 0; k < RT_UNROLL; ++k) {
        v[k] = row_vec(r + rt_size(k) * gap);
        RT_IN2_ONLY(v2[k] = row_vec2(r + rt_size(k) * gap);)
      }
#pragma unroll
      for (int k = 0; k < RT_UNROLL; ++k)
#pragma unroll
        for (int e = 0; e < RT_VEC; ++e)
          acc[e] = rt_pair_fold(acc[e], v[k].x[e], v2[k].x[e], r + rt_size(k) * gap);
    }
    if (RT_UNROLL > 1 && r < re) { // fewer than RT_UNROLL rows left
      rt_vec v[RT_UNROLL];
      RT_IN2_ONLY(rt_vec v2[RT_UNROLL];)
#pragma unroll
      for (int k = 0; k < RT_UNROLL - 1; ++k)
        if (r + rt_size(k) * gap < re) {
          v[k] = row_vec(r + rt_size(k) * gap);
          RT_IN2_ONLY(v2[k] = row_vec2(r + rt_size(k) * gap);)
        }
#pragma unroll
      for (int k = 0; k < RT_UNROLL - 1; ++k)
        if (r + rt_size(k) * gap < re)
#pragma unroll
          for (int e = 0; e < RT_VEC; ++e)
          acc[e] = rt_pair_fold(acc[e], v[k].x[e], v2[k].x[e], r + rt_size(k) * gap);
    }
  } else if (c0 < count) {
    const int width = count - c0 < RT_VEC ? int(count - c0) : RT_VEC;
    for (; r < re; r += step) {
      T v[RT_UNROLL][RT_VEC];
      RT_IN2_ONLY(T v2[RT_UNROLL][RT_VEC];)
#pragma unroll
      for (int k = 0; k < RT_UNROLL; ++k)
#pragma unroll
        for (int e = 0; e < RT_VEC; ++e)
          if (r + rt_size(k) * gap < re && e < width) {
            v[k][e] = mine[(r + rt_size(k) * gap) * stride + e];
            RT_IN2_ONLY(v2[k][e] = mine2[(r + rt_size(k) * gap) * stride + e];)
          }
#pragma unroll
      for (int k = 0; k < RT_UNROLL; ++k)
#pragma unroll
        for (int e = 0; e < RT_VEC; ++e)
          if (r + rt_size(k) * gap < re && e < width)
            acc[e] = rt_pair_fold(acc[e], v[k][e], v2[k][e], r + rt_size(k) * gap);
    }
  }
#endif

  // The TY partials of each column: a tree over ty in shared memory.
  if (ty_count > 1) {
    A* smem = rt_smem();
    const unsigned row = tx_count * RT_VEC;
#pragma unroll
    for (int e = 0; e < RT_VEC; ++e) smem[ty * row + tx * RT_VEC + e] = acc[e];
    __syncthreads();
#if defined(RT_ORDERED)
    for (unsigned s = 1; s < ty_count; s <<= 1) { // ty with ty + s, the runs after it
      if (ty % (2 * s) == 0)
#else
    for (unsigned s = ty_count / 2; s > 0; s >>= 1) {
      if (ty < s)
#endif
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
#if defined(RT_FINISH_LASTBLOCK)
  if (ysplit > 1) { // every thread takes part: the finish may fall to this block
    rt_last_slices(acc, ty == 0, c0, bx, by, ysplit, count, length, tx_count, out, work);
    return;
  }
#endif
  if (ty != 0) return;
#if defined(RT_FINISH_ATOMIC)
  rt_pdl_wait(); // launched programmatically after the fill on sm_90+: until out holds the identity
#endif
#pragma unroll
  for (int e = 0; e < RT_VEC; ++e) {
    if (c0 + e >= count) break;
#if defined(RT_FINISH_ATOMIC) && defined(RT_ATOMIC_SHIFTED)
    // Sums about the column's first element, which every slice's block reads alike.
    rt_atomic_shifted(out + c0 + e, acc[e], double(rt_widen(in[c0 + e])));
#elif defined(RT_FINISH_ATOMIC)
    rt_atomic_out(out + c0 + e, acc[e]);
#elif defined(RT_FINISH_TWOPASS)
    out[(c0 + e) * ysplit + by] = acc[e];
#else // direct, and the last-block finish of a single slice
    out[c0 + e] = rt_post(acc[e], length);
#endif
  }
}

#if defined(RT_FINISH_TWOPASS)
// The ordered finish's post pass: result[c] = the post-map of column c's slices combined in
// order, by a group of lanes per column (as many as the slices, up to a warp; `aux` as above).
extern "C" __global__ void rt_segmented_post(const A* __restrict__ acc, rt_result_type* __restrict__ result,
                                             const long long* __restrict__, rt_size count,
                                             rt_size length, const T* __restrict__, rt_size aux) {
  rt_pdl_wait(); // launched programmatically on sm_90+: until the kernel before it has completed
  const rt_size ysplit = aux >> 11;
  unsigned width = 1;
  while (width < 32 && width < ysplit) width <<= 1;
  const unsigned lane = threadIdx.x & (width - 1u), shift = unsigned(__ffs(int(width)) - 1); // t / width
  const rt_size threads = rt_size(gridDim.x) * blockDim.x;
  // Whole warps go round together (the shuffles take every lane); a lane past the columns folds
  // nothing.
  for (rt_size t = rt_size(blockIdx.x) * blockDim.x + threadIdx.x; t - (threadIdx.x & 31u) < count * width;
       t += threads) {
    const rt_size c = t >> shift;
    const A* const p = acc + c * ysplit;
    const A v = rt_group_ordered([=](rt_size k) { return p[k]; }, c < count ? ysplit : 0, lane, width);
    if (c < count && lane == 0) result[c] = rt_result_post(v, length);
  }
}
#endif
