// Offsets segments by merge path (the merge-based decomposition of Merrill and Garland's CSR
// SpMV). The ends of the `count` segments and the n elements between offsets[0] and
// offsets[count] form one ordered sequence of count + n items (a segment's end comes after its
// last element and before the next segment's first), and the sequence is split evenly: every
// block gets the same number of items whatever the lengths, empty segments included, and reads
// its elements and segment ends with coalesced loads.
//   rt_segmented_partition: a warp per split point b = 0..aux finds, by a 32-way search, how many
//     segment ends lie among the first b * (count + n) / aux items, writes that coordinate
//     (segments ended, elements consumed) to work[2b], work[2b+1], and sets the result of a
//     segment that a split point cuts to the identity.
//   rt_segmented: `aux` blocks; each walks its share in tiles of RT_TILE items staged in shared
//     memory. Each thread merges RT_UNROLL items of the tile; a segmented scan over the block's
//     threads joins the pieces of segments that cross threads, and the running value of the
//     segment still open at a tile's end is carried into the next tile. A segment that a split
//     point cuts is combined atomically into its result; every other one is written once.
// The offsets must be non-decreasing (reducer.h): merging needs ordered ends. Others give wrong
// results but no read outside [offsets[0], offsets[count]) and offsets[0..count].

#if defined(RT_TWO_INPUTS)
#error "segments_merge stages one input's elements in shared memory (kernels/catalogue.cpp)"
#endif

#define RT_TILE (RT_BLOCK * RT_UNROLL)

// The end of segment x relative to the first element, clamped to [0, n].
__device__ __forceinline__ long long rt_end(const long long* __restrict__ offsets, long long x,
                                            long long base, long long n) {
  const long long e = offsets[x + 1] - base;
  return e < 0 ? 0 : (e > n ? n : e);
}
// Where segment x starts: the previous one's end.
__device__ __forceinline__ long long rt_start(const long long* __restrict__ offsets, long long x,
                                              long long base, long long n) {
  return x == 0 ? 0 : rt_end(offsets, x - 1, base, n);
}

// Whether the split point (x segment ends, y elements) cuts segment x: it has elements on both
// sides. The partition kernel sets exactly these results to the identity, and only these are
// combined atomically, so both kernels ask this one question.
__device__ __forceinline__ bool rt_cuts(const long long* __restrict__ offsets, long long x,
                                        long long y, long long segs, long long base, long long n) {
  return x < segs && y > rt_start(offsets, x, base, n);
}

// The number of segment ends among the first d items, known to lie in [lo, hi]: the smallest x
// whose end comes after element d - x - 1. A whole warp calls it.
__device__ long long rt_merge_search(const long long* __restrict__ offsets, long long base,
                                     long long n, long long d, long long lo, long long hi) {
  return rt_warp_search(lo, hi,
                        [=](long long p) { return rt_end(offsets, p, base, n) <= d - p - 1; });
}

// The first element and the element count of the merged problem.
__device__ __forceinline__ void rt_merge_extent(const long long* __restrict__ offsets,
                                                rt_size count, long long* base, long long* n) {
  *base = offsets[0];
  const long long e = offsets[count] - *base;
  *n = e > 0 ? e : 0;
}

extern "C" __global__ void __launch_bounds__(RT_BLOCK) rt_segmented_partition(RT_SEGMENTED_PARAMS) {
  rt_pdl_trigger(); // rt_segmented may start; it waits for this kernel before reading `work`
  const rt_size b = (rt_size(blockIdx.x) * RT_BLOCK + threadIdx.x) / 32;
  if (b > aux) return; // whole warps
  long long base, n;
  rt_merge_extent(offsets, count, &base, &n);
  const long long segs = (long long)count, total = segs + n;
  const long long d = (total / (long long)aux) * (long long)b + (total % (long long)aux) * (long long)b / (long long)aux;
  const long long lo = d - n > 0 ? d - n : 0, hi = d < segs ? d : segs;
  const long long x = rt_merge_search(offsets, base, n, d, lo, hi), y = d - x;
  if ((threadIdx.x & 31u) == 0) {
    long long* coord = reinterpret_cast<long long*>(work);
    coord[2 * b] = x;
    coord[2 * b + 1] = y;
    if (b > 0 && b < aux && rt_cuts(offsets, x, y, segs, base, n))
      out[x] = rt_result(rt_identity()); // cut here: both blocks combine into it
  }
}

// (flag, value) pairs of the segmented scan: a flag starts a new segment, whose value does not
// take the values before it.
__device__ __forceinline__ void rt_seg_combine(bool pf, A pv, bool* f, A* v) {
  if (!*f) *v = rt_combine(pv, *v);
  *f = *f || pf;
}

// Compiled for 1024 resident threads per SM (at most 64 registers): the grid is at most that.
extern "C" __global__ void __launch_bounds__(RT_BLOCK, 1024 / RT_BLOCK) rt_segmented(RT_SEGMENTED_PARAMS) {
  T* elem_s = reinterpret_cast<T*>(rt_smem_raw);                          // RT_TILE elements
  int* end_s = reinterpret_cast<int*>(rt_smem_raw + RT_TILE * sizeof(T)); // RT_TILE segment ends
  __shared__ A warp_v[RT_BLOCK / 32];
  __shared__ bool warp_f[RT_BLOCK / 32];
  __shared__ long long tile_end;
  __shared__ A carry_s;
  const unsigned tid = threadIdx.x, lane = tid & 31u, warp = tid / 32;

  rt_pdl_wait(); // launched programmatically on sm_90+: until the partition's coordinates are there
  long long base, n;
  rt_merge_extent(offsets, count, &base, &n);
  const long long segs = (long long)count;
  const long long* coord = reinterpret_cast<const long long*>(work);
  const long long xb = coord[2 * blockIdx.x], yb = coord[2 * blockIdx.x + 1];
  const long long xe = coord[2 * blockIdx.x + 2], ye = coord[2 * blockIdx.x + 3];
  // The segment open at the block's start began in an earlier block: its result is combined.
  const bool head_cut = blockIdx.x > 0 && rt_cuts(offsets, xb, yb, segs, base, n);

  long long x = xb, y = yb;
  A carry = rt_identity(); // the open segment's value so far, from earlier tiles of this block
  while (x + y < xe + ye) {
    const long long len = xe + ye - (x + y) < RT_TILE ? xe + ye - (x + y) : RT_TILE;
    if (warp == 0) {
      // The tile's end: between x and x + len segment ends, within the block's share.
      const long long d = x + y + len;
      long long lo = x + (len - (n - y) > 0 ? len - (n - y) : 0), hi = x + len;
      if (d - ye > lo) lo = d - ye;
      if (xe < hi) hi = xe;
      if (lo > hi) lo = hi;
      const long long xt = rt_merge_search(offsets, base, n, d, lo, hi);
      if (lane == 0) tile_end = xt;
    }
    __syncthreads();
    // Clamped so that offsets out of order (outside the contract) still read only inside the
    // problem and every tile makes progress.
    long long ends_ll = tile_end - x;
    if (ends_ll > segs - x) ends_ll = segs - x;
    if (ends_ll < 0) ends_ll = 0;
    const int ends = int(ends_ll);
    const int elems = int(len - ends < n - y ? len - ends : n - y);
    const int items = ends + elems;
    if (items <= 0) break; // the same in every thread
    const long long xt = x + ends, yt = y + elems;
    {
      T ev[RT_UNROLL];
      int rv[RT_UNROLL];
#pragma unroll
      for (int k = 0; k < RT_UNROLL; ++k) {
        const int i = k * RT_BLOCK + int(tid);
        if (i < elems) ev[k] = in[base + y + i];
        if (i < ends) rv[k] = int(rt_end(offsets, x + i, base, n) - y);
      }
#pragma unroll
      for (int k = 0; k < RT_UNROLL; ++k) {
        const int i = k * RT_BLOCK + int(tid);
        if (i < elems) elem_s[i] = ev[k];
        if (i < ends) end_s[i] = rv[k];
      }
    }
    __syncthreads();

    // This thread's RT_UNROLL items of the tile, found by a binary search of its diagonal.
    const int td = int(tid) * RT_UNROLL < items ? int(tid) * RT_UNROLL : items;
    int lo = td - elems > 0 ? td - elems : 0, hi = td < ends ? td : ends;
    while (lo < hi) {
      const int mid = (lo + hi) / 2;
      if (end_s[mid] <= td - mid - 1) lo = mid + 1;
      else hi = mid;
    }
    int i = lo, j = td - lo;
    const int steps = items - td < RT_UNROLL ? items - td : RT_UNROLL;
    A acc = rt_identity(), first = rt_identity();
    int first_end = -1; // the first segment that ends in this thread's items (local index)
#pragma unroll
    for (int k = 0; k < RT_UNROLL; ++k) {
      if (k < steps) {
        if (i < ends && (j >= elems || end_s[i] <= j)) {
          if (first_end < 0) {
            first_end = i;
            first = acc;
          } else {
            out[x + i] = rt_result(acc); // began and ended in this thread
          }
          acc = rt_identity();
          ++i;
        } else if (j < elems) {
          acc = rt_combine(acc, rt_map_unindexed(elem_s[j]));
          ++j;
        }
      }
    }

    // Segmented inclusive scan of (a segment ended here, the open segment's value) over the
    // block, after the carry as a flagged item before thread 0.
    bool f = first_end >= 0;
    A v = acc;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
      const A pv = rt_shfl_up(v, o);
      const bool pf = __shfl_up_sync(0xffffffffu, int(f), o) != 0;
      if (lane >= unsigned(o)) rt_seg_combine(pf, pv, &f, &v);
    }
    if (lane == 31) {
      warp_v[warp] = v;
      warp_f[warp] = f;
    }
    __syncthreads();
    bool wf = true; // what precedes this warp: the carry, then the earlier warps
    A wv = carry;
    for (unsigned w = 0; w < warp; ++w) {
      bool ff = warp_f[w];
      A fv = warp_v[w];
      rt_seg_combine(wf, wv, &ff, &fv);
      wf = ff;
      wv = fv;
    }
    rt_seg_combine(wf, wv, &f, &v); // inclusive, from the block's start
    const A up = rt_shfl_up(v, 1); // every lane: a shuffle names the full warp
    const A before = lane == 0 ? wv : up;
    if (first_end >= 0) {
      const A r = rt_combine(before, first);
      if (x + first_end == xb && head_cut) rt_atomic_out(out + xb, r);
      else out[x + first_end] = rt_result(r);
    }
    if (tid == RT_BLOCK - 1) carry_s = v;
    __syncthreads();
    carry = carry_s;
    x = xt;
    y = yt;
  }
  // The segment open at the block's end, if it has elements here, continues in the next block.
  if (tid == 0 && xe + ye > xb + yb && rt_cuts(offsets, xe, ye, segs, base, n))
    rt_atomic_out(out + xe, carry);
}
