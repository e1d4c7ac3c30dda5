// Offsets segments as one flat stream of elements: the n elements between offsets[0] and
// offsets[count] are cut into tiles of RT_TILE, the tiles shared evenly by the grid (contiguous
// runs of tiles per block; a tile each for the first blocks where tiles are fewer), so every block
// reads the same number of elements whatever the lengths. Each thread holds RT_PER consecutive
// elements of a tile in registers (RT_UNROLL vector loads of RT_VEC); the segments that begin in
// the tile mark their first element in shared memory (`head`); a segmented scan over the block's
// threads joins the pieces of a segment that crosses threads. A segment that begins and ends in one
// tile is written once; the piece of a segment that a tile boundary cuts is combined atomically
// into its result, which rt_fill_identity set first (on sm_90+ this kernel starts programmatically
// and waits for the fill before its first write). Tiles start at a vector-aligned element at or
// before offsets[0], so every load of a tile inside [offsets[0], offsets[count]) is a vector load;
// the tiles at the two ends load scalars. Unlike the merge mapping, segment ends are not items: the
// elements alone are split, and an empty segment costs one offset read (its result is the fill's
// identity). The offsets must be non-decreasing (reducer.h); others give wrong results but no read
// outside the problem.

#define RT_PER (RT_VEC * RT_UNROLL)
#define RT_TILE (RT_BLOCK * RT_PER)
#define RT_NO_HEAD 0xffffffffu
#define RT_OFF_BATCH 2 // offsets a thread loads before it reads them
static_assert(RT_PER <= 32, "a thread's heads are the bits of one word");

// Segment numbers inside a tile are held relative to the first one the tile visits (32 bits:
// kernels/segmented.cpp admits fewer than 2^32 - 1 segments). Where bit k of heads[t] is set,
// head[k * RT_BLOCK + t] is the segment that begins at element t * RT_PER + k of the tile: thread t
// reads its own column of the array without bank conflicts.

// The number of segments s < count with offsets[s + 1] <= pos: the first one holding an element at
// or after pos. The whole block calls it; each step probes RT_BLOCK points.
__device__ long long rt_flat_search(const long long* __restrict__ offsets, long long count,
                                    long long pos) {
  long long lo = 0, hi = count;
  while (lo < hi) { // the same in every thread
    const long long span = hi - lo;
    const long long p = lo + span * (long long)threadIdx.x / RT_BLOCK;
    const int c = __syncthreads_count(offsets[p + 1] <= pos);
    const long long last = lo + span * (long long)(c - 1) / RT_BLOCK;
    const long long next = lo + span * (long long)c / RT_BLOCK;
    if (c < RT_BLOCK) hi = next;
    if (c > 0) lo = last + 1 < hi ? last + 1 : hi;
    if (c == 0) break; // the answer is lo
  }
  return lo;
}

// (segment, value) of the segmented scan: a head (rel != RT_NO_HEAD) starts a segment, whose value
// does not take the values before it.
__device__ __forceinline__ void rt_flat_combine(unsigned prel, A pv, unsigned* rel, A* v) {
  if (*rel == RT_NO_HEAD) {
    *v = rt_combine(pv, *v);
    *rel = prel;
  }
}

// This thread's elements of the tile at `a`: a + threadIdx.x * RT_PER + [0, RT_PER), as accumulators
// (the identity outside [base, end)).
__device__ __forceinline__ void rt_flat_load(const T* __restrict__ in, long long a, long long base,
                                             long long end, A (&x)[RT_PER]) {
  const long long mine = a + (long long)threadIdx.x * RT_PER;
  if (a >= base && a + RT_TILE <= end) {
    const rt_vec* p = reinterpret_cast<const rt_vec*>(in + mine);
    rt_vec r[RT_UNROLL];
#pragma unroll
    for (int u = 0; u < RT_UNROLL; ++u) r[u] = rt_load(p + u);
#pragma unroll
    for (int u = 0; u < RT_UNROLL; ++u)
#pragma unroll
      for (int e = 0; e < RT_VEC; ++e) x[u * RT_VEC + e] = rt_to_acc(r[u].x[e]);
  } else {
#pragma unroll
    for (int k = 0; k < RT_PER; ++k)
      x[k] = mine + k >= base && mine + k < end ? rt_to_acc(in[mine + k]) : rt_identity();
  }
}

extern "C" __global__ void __launch_bounds__(RT_BLOCK) rt_segmented(RT_SEGMENTED_PARAMS) {
  unsigned* head = reinterpret_cast<unsigned*>(rt_smem_raw); // RT_TILE entries
  __shared__ A warp_v[RT_BLOCK / 32];
  __shared__ unsigned warp_rel[RT_BLOCK / 32];
  __shared__ unsigned cut_rel; // the first segment (relative) that begins past the tile's end
  __shared__ unsigned heads[RT_BLOCK]; // bit k of heads[t]: element t * RT_PER + k has a head
  const unsigned tid = threadIdx.x, lane = tid & 31u, warp = tid / 32;

  const long long segs = (long long)count;
  const long long base = offsets[0], end = offsets[count];
  if (end <= base) return; // no element: every result is the fill's identity
  const long long origin = base - (long long)((reinterpret_cast<rt_size>(in + base) / sizeof(T)) % RT_VEC);
  const long long tiles = (end - origin + RT_TILE - 1) / RT_TILE;
  // Runs of whole tiles, one a block; with fewer tiles than blocks the first blocks take one
  // each, so the work is in the first wave and the others end at once.
  const long long runs = tiles < (long long)gridDim.x ? tiles : (long long)gridDim.x;
  if ((long long)blockIdx.x >= runs) return; // the same for the whole block
  const long long t_lo = tiles * blockIdx.x / runs, t_hi = tiles * (blockIdx.x + 1) / runs;
  A x[RT_PER];
  rt_flat_load(in, origin + t_lo * RT_TILE, base, end, x);
  heads[tid] = 0;
  if (tid == 0) cut_rel = RT_NO_HEAD;
  // `first`: the segment holding the tile's first element, or the first that begins after it;
  // `open`: the same if it began before the tile (-1: it did not).
  long long first = rt_flat_search(offsets, segs, origin + t_lo * RT_TILE); // a barrier too
  long long open = -1;
  int m = 1; // the first pass of a tile reads m offsets a thread
  if (first < segs && origin + t_lo * RT_TILE > offsets[first]) open = first;

  for (long long tile = t_lo; tile < t_hi; ++tile) {
    const long long a = origin + tile * RT_TILE, z = a + RT_TILE;
    // Mark the heads of the segments that begin in the tile, from `first` until one begins past
    // the tile (or the segments end): passes of m * RT_BLOCK (+1) segments, m sized from the
    // previous tile's count (a pass reads its offsets whether they are in the tile or not), then
    // doubled. A pass issues its offset loads in batches of RT_OFF_BATCH per thread before it
    // looks at any of them, so it waits for memory once per batch, not once per offset.
    long long c0 = first;
    for (;; c0 += (long long)m * RT_BLOCK, m = 2 * m < RT_PER ? 2 * m : RT_PER) {
      const unsigned width = unsigned(m) * RT_BLOCK;
      unsigned cut = RT_NO_HEAD;
      // The segment after the pass: where it begins at or past the tile's end, the pass holds the cut.
      const long long after = tid == 0 && c0 + width < segs ? offsets[c0 + width] : z;
#pragma unroll
      for (int k0 = 0; k0 < RT_PER; k0 += RT_OFF_BATCH) {
        if (k0 >= m) break;
        long long b[RT_OFF_BATCH], e[RT_OFF_BATCH];
#pragma unroll
        for (int j = 0; j < RT_OFF_BATCH; ++j) { // past the segments: both read offsets[count]
          const long long s = c0 + (long long)(k0 + j) * RT_BLOCK + tid;
          const long long sb = s < segs ? s : segs, se = s < segs ? s + 1 : segs;
          b[j] = k0 + j < m ? offsets[sb] : z;
          e[j] = k0 + j < m ? offsets[se] : z;
        }
#pragma unroll
        for (int j = 0; j < RT_OFF_BATCH; ++j) {
          const unsigned i = unsigned(k0 + j) * RT_BLOCK + tid;
          const long long s = c0 + i;
          if (k0 + j >= m) break;
          // Both offsets decide, without a branch between: a branch lets the compiler sink the
          // second load past the first one's wait.
          const bool past = (s >= segs) | (b[j] >= z);
          const bool starts = !past & (e[j] > b[j]) & (b[j] >= a); // a non-empty segment begins here
          cut = past && i < cut ? i : cut;
          if (starts) {
            const unsigned h = unsigned(b[j] - a);
            head[(h % RT_PER) * RT_BLOCK + h / RT_PER] = unsigned(s - first);
            atomicOr(&heads[h / RT_PER], 1u << (h % RT_PER));
          }
        }
      }
      if (tid == 0 && after >= z) cut = cut < width ? cut : width;
      if (cut != RT_NO_HEAD) atomicMin(&cut_rel, cut);
      __syncthreads();
      if (cut_rel != RT_NO_HEAD) break; // the same in every thread
      __syncthreads(); // every thread has read cut_rel before it may change
    }
    const long long next = c0 + cut_rel; // segments [first, next) begin before the tile's end

    // This thread's elements: a segment that begins and ends among them is written here; `lead`
    // is the value before the first head (the segment open at the thread's start), `v` after the
    // last head.
    rt_pdl_wait(); // launched programmatically after the fill on sm_90+: until out holds the identity
    A v = rt_identity(), lead = rt_identity();
    unsigned rel = RT_NO_HEAD, first_rel = RT_NO_HEAD;
    const unsigned mask = heads[tid];
    heads[tid] = 0; // for the next tile (this thread is its only reader)
    R* const seg_out = out + first;
    if (__all_sync(0xffffffffu, mask == 0)) { // the warp holds no head: one branch for all of it
#pragma unroll
      for (int k = 0; k < RT_PER; ++k) v = rt_combine(v, x[k]);
    } else { // predicated, not branched: most warps of short segments hold a head at most k
#pragma unroll
      for (int k = 0; k < RT_PER; ++k) {
        const bool at = (mask >> k) & 1u;
        const unsigned h = at ? head[k * RT_BLOCK + tid] : rel;
        if (at && rel != RT_NO_HEAD) seg_out[rel] = rt_result(v); // began and ended in this thread
        const bool lead_ends = at && rel == RT_NO_HEAD;
        lead = lead_ends ? v : lead;
        first_rel = lead_ends ? h : first_rel;
        rel = h;
        v = rt_combine(at ? rt_identity() : v, x[k]);
      }
    }
    // The next tile's elements are in flight during the scan.
    if (tile + 1 < t_hi) rt_flat_load(in, z, base, end, x);

    // Inclusive segmented scan of (last head, value after it) over the block.
    unsigned srel = rel;
    A sv = v;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
      const A pv = __shfl_up_sync(0xffffffffu, sv, o);
      const unsigned prel = __shfl_up_sync(0xffffffffu, srel, o);
      if (lane >= unsigned(o)) rt_flat_combine(prel, pv, &srel, &sv);
    }
    if (lane == 31) {
      warp_v[warp] = sv;
      warp_rel[warp] = srel;
    }
    __syncthreads();
    if (tid == 0) cut_rel = RT_NO_HEAD; // every thread has read it (before the barrier above)
    unsigned wrel = RT_NO_HEAD; // what precedes this warp
    A wv = rt_identity();
    for (unsigned w = 0; w < warp; ++w) {
      unsigned r = warp_rel[w];
      A val = warp_v[w];
      rt_flat_combine(wrel, wv, &r, &val);
      wrel = r;
      wv = val;
    }
    rt_flat_combine(wrel, wv, &srel, &sv); // inclusive, from the tile's start
    // Exclusive: what precedes this thread.
    const A up_v = __shfl_up_sync(0xffffffffu, sv, 1);
    const unsigned up_rel = __shfl_up_sync(0xffffffffu, srel, 1);
    const A before_v = lane == 0 ? wv : up_v;
    const unsigned before_rel = lane == 0 ? wrel : up_rel;
    if (first_rel != RT_NO_HEAD) { // the segment open at this thread's start ends at its first head
      const A r = rt_combine(before_v, lead);
      if (before_rel != RT_NO_HEAD) seg_out[before_rel] = rt_result(r); // within the tile
      else if (open >= 0) rt_atomic_out(out + open, r); // began in an earlier tile
    }
    if (tid == RT_BLOCK - 1) { // the segment open at the tile's end may go on: combined
      const long long s = srel != RT_NO_HEAD ? first + srel : open;
      if (s >= 0) rt_atomic_out(out + s, sv);
    }
    // The next tile starts at the last segment that began before it if that one goes on into it.
    const long long nb = next < segs ? offsets[next] : end;
    open = next > first && nb > z ? next - 1 : -1;
    // The next tile's first pass: this tile's segments and up to a pass more.
    const long long m_more = (next - first) / RT_BLOCK + 1;
    m = m_more < RT_PER ? int(m_more) : RT_PER;
    first = open >= 0 ? open : next;
    __syncthreads(); // warp_v and warp_rel are rewritten by the next tile
  }
}
