// Offsets segments as one flat stream of elements: the n elements between offsets[0] and
// offsets[count] are cut into tiles of RT_TILE, the tiles shared evenly by the grid (contiguous
// runs of tiles per block; a tile each for the first blocks where tiles are fewer), so every block
// reads the same number of elements whatever the lengths. Each thread holds RT_PER consecutive
// elements of a tile in registers (RT_UNROLL vector loads of RT_VEC); the segments that begin in
// the tile mark their first element in shared memory (`head`); a segmented scan over the block's
// threads joins the pieces of a segment that crosses threads. A segment that begins and ends in one
// tile is written once. Where a tile boundary cuts a segment:
//   segments_flat: each piece is combined atomically into its result, which rt_fill_identity set
//     first (on sm_90+ this kernel starts programmatically and waits for the fill before its
//     first write; an empty segment's result is the fill's);
//   segments_flat_carry (RT_FLAT_CARRY): the value so far is carried into the block's next tile
//     and written where the segment ends, an empty segment's identity by the offsets pass that
//     meets it; only the segments that a block's run of tiles starts inside are set to the
//     identity first (rt_segmented_partition: a warp per run, not a fill of every result), and
//     each run combines its two end pieces into them atomically (waiting for the partition there
//     alone). No fill of every result: ahead where results are many (means of 1-4 elements),
//     behind elsewhere (more work per tile; docs/PERFORMANCE.md);
//   segments_flat_carry with the ordered finish (RT_FINISH_TWOPASS): as the carry variant, but
//     `out` is a workspace of accumulators (templates/segmented/post.cuh) and a run's two end
//     pieces go to the partials after them (2 a block), no atomic and no partition kernel;
//     rt_segmented_post (below) writes every result, combining a cut segment's pieces in block
//     order. Elements are combined in their order throughout (each thread's in registers, the
//     scan, the carry), so a combine that is not commutative keeps its meaning; an op that reads
//     the element's index maps it with its index in the input, taken back to the segment's there.
// Tiles start at a vector-aligned element at or before offsets[0], so every load of a tile inside
// [offsets[0], offsets[count]) is a vector load; the tiles at the two ends load scalars. Unlike the
// merge mapping, segment ends are not items: the elements alone are split, and an empty segment
// costs one offset read. The offsets must be non-decreasing (reducer.h); others give wrong results
// but no read outside the problem.

#define RT_PER (RT_VEC * RT_UNROLL)
#define RT_TILE (RT_BLOCK * RT_PER)
#define RT_NO_HEAD 0xffffffffu
#define RT_OFF_BATCH 2 // offsets a thread loads before it reads them
static_assert(RT_PER <= 32, "a thread's heads are the bits of one word");
// An element at index i of the input as an accumulator: only the ordered finish passes the index
// (templates/common.cuh, rt_map_unindexed).
#if defined(RT_MAP_INDEXED)
#define rt_flat_map(x, y, i) rt_pair_map(x, y, rt_size(i))
#else
#define rt_flat_map(x, y, i) rt_pair_map_unindexed(x, y)
#endif

// Segment numbers inside a tile are held relative to the first one the tile visits (32 bits:
// kernels/segmented_plan.cpp admits fewer than 2^32 - 1 segments). Where bit k of heads[t] is set,
// head[k * RT_BLOCK + t] is the segment that begins at element t * RT_PER + k of the tile: thread t
// reads its own column of the array without bank conflicts.

// The number of segments s < count with offsets[s + 1] <= pos: the first one holding an element at
// or after pos; with RT_FLAT_CARRY, offsets[s + 1] < pos: the first one that ends at or after pos
// (an empty segment at pos included, so the tile at pos writes it). The whole block calls it; each
// step probes RT_BLOCK points.
__device__ long long rt_flat_search(const long long* __restrict__ offsets, long long count,
                                    long long pos) {
  long long lo = 0, hi = count;
  while (lo < hi) { // the same in every thread
    const long long span = hi - lo;
    const long long p = lo + span * (long long)threadIdx.x / RT_BLOCK;
#if defined(RT_FLAT_CARRY)
    const int c = __syncthreads_count(offsets[p + 1] < pos);
#else
    const int c = __syncthreads_count(offsets[p + 1] <= pos);
#endif
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

// A thread's element of a tile in registers until it is combined: mapped as it is loaded (an
// accumulator, the identity outside [base, end)) where the accumulator is a scalar; as loaded
// (the element, and the second input's) where it is larger (argmax's 16 bytes, var's 24: 3-6
// registers an element, which spilled at the carry variant's 64), mapped where it is combined
// (rt_flat_value).
struct rt_flat_raw {
  T x;
  RT_IN2_ONLY(T y;)
};
template <bool Raw> struct rt_flat_pick { typedef A type; };
template <> struct rt_flat_pick<true> { typedef rt_flat_raw type; };
typedef rt_flat_pick<(sizeof(A) > 8)>::type rt_flat_slot;

// Slot k of the thread whose first element is at `mine`, as an accumulator. (Templates: the
// branch not taken is not compiled.)
template <class S>
__device__ __forceinline__ A rt_flat_value(const S& slot, long long mine, int k,
                                           long long base, long long end) {
  if constexpr (sizeof(A) > 8)
    return mine + k >= base && mine + k < end ? rt_flat_map(slot.x, slot.y, mine + k) : rt_identity();
  else
    return slot;
}
// The slot of element i of the input (x, and y: the second input's).
template <class S>
__device__ __forceinline__ void rt_flat_put(S& slot, T x, T y, long long i, bool inside) {
  if constexpr (sizeof(A) > 8) {
    slot.x = x;
    RT_IN2_ONLY(slot.y = y;)
    (void)y, (void)i, (void)inside;
  } else {
    slot = inside ? rt_flat_map(x, y, i) : rt_identity();
  }
}
// The second input's element is an argument only where there is one (otherwise never compiled).
#if defined(RT_TWO_INPUTS)
#define RT_FLAT_PUT(slot, x, y, i, inside) rt_flat_put(slot, x, y, i, inside)
#else
#define RT_FLAT_PUT(slot, x, y, i, inside) rt_flat_put(slot, x, T(0), i, inside)
#endif

// This thread's elements of the tile at `a`: a + threadIdx.x * RT_PER + [0, RT_PER), as slots
// (above).
// With two inputs, the tiles' vectors are the second input's too where it lies at the first's
// offset from a vector boundary; elsewhere every element is a scalar.
__device__ __forceinline__ void rt_flat_load(const T* __restrict__ in, long long a, long long base,
                                             long long end, rt_flat_slot (&x)[RT_PER] RT_IN2_DECL(in2)) {
  const long long mine = a + (long long)threadIdx.x * RT_PER;
  if (a >= base && a + RT_TILE <= end RT_IN2_ONLY(&& rt_same_misalign(in, in2))) {
    const rt_vec* p = reinterpret_cast<const rt_vec*>(in + mine);
    rt_vec r[RT_UNROLL];
    RT_IN2_ONLY(const rt_vec* p2 = reinterpret_cast<const rt_vec*>(in2 + mine);
                rt_vec r2[RT_UNROLL];)
#pragma unroll
    for (int u = 0; u < RT_UNROLL; ++u) {
      r[u] = rt_load(p + u);
      RT_IN2_ONLY(r2[u] = rt_load(p2 + u);)
    }
#pragma unroll
    for (int u = 0; u < RT_UNROLL; ++u)
#pragma unroll
      for (int e = 0; e < RT_VEC; ++e)
        RT_FLAT_PUT(x[u * RT_VEC + e], r[u].x[e], r2[u].x[e], mine + u * RT_VEC + e, true);
  } else {
#pragma unroll
    for (int k = 0; k < RT_PER; ++k)
      if (mine + k >= base && mine + k < end) RT_FLAT_PUT(x[k], in[mine + k], in2[mine + k], mine + k, true);
      else RT_FLAT_PUT(x[k], T(0), T(0), mine + k, false);
  }
}

// The stream's geometry, the same in both kernels: where the tiles start (vector-aligned, at or
// before offsets[0]), how many there are, and the runs of them, one a block of rt_segmented's
// `grid` (fewer where tiles are fewer).
struct rt_flat_geometry {
  long long origin, tiles, runs;
};
__device__ __forceinline__ rt_flat_geometry rt_flat_layout(const T* __restrict__ in, long long base,
                                                          long long end, long long grid) {
  rt_flat_geometry g;
  g.origin = base - (long long)((reinterpret_cast<rt_size>(in + base) / sizeof(T)) % RT_VEC);
  g.tiles = (end - g.origin + RT_TILE - 1) / RT_TILE;
  g.runs = g.tiles < grid ? g.tiles : grid;
  return g;
}
// The first element of block b's run.
__device__ __forceinline__ long long rt_flat_run_start(rt_flat_geometry g, long long b) {
  return g.origin + g.tiles * b / g.runs * RT_TILE;
}

// segments_flat_carry: the segments that a run starts inside (first element before the run's, last
// one in or after it) get the identity, for the main kernel to combine their pieces into them
// atomically. A warp per run (aux: the main kernel's grid) finds its segment by a 32-way search;
// the main kernel starts programmatically on sm_90+ and waits for this one only before its first
// atomic, at the end of its run. (Compiled for segments_flat too, which does not launch it.)
extern "C" __global__ void rt_segmented_partition(RT_SEGMENTED_PARAMS) {
  rt_pdl_trigger();
  const long long segs = (long long)count, base = offsets[0], end = offsets[count];
  const long long b = ((long long)blockIdx.x * blockDim.x + threadIdx.x) / 32;
  const unsigned lane = threadIdx.x & 31u;
  if (end <= base) return;
  const rt_flat_geometry g = rt_flat_layout(in, base, end, (long long)aux);
  if (b == 0 || b >= g.runs) return; // the same in the whole warp
  const long long pos = rt_flat_run_start(g, b);
  // The first segment that ends at or after pos (offsets[s + 1] >= pos).
  const long long lo = rt_warp_search(0, segs, [=](long long p) { return offsets[p + 1] < pos; });
  if (lane == 0 && lo < segs && offsets[lo] < pos && offsets[lo + 1] > pos)
    out[lo] = rt_result(rt_identity());
}

// The carry variant at most 64 registers (1024 resident threads), as segments_flat takes by itself:
// 8 blocks of 128 or 4 of 256 on an H100 (its u4.v4 takes 70 unbounded; 64 costs a 16-byte frame).
// Not for a struct accumulator (argmax's 16 bytes, var's 24): a thread's RT_PER mapped elements
// alone would fill those registers, and the rest would spill.
#if defined(RT_FLAT_CARRY)
#define RT_FLAT_BOUNDS __launch_bounds__(RT_BLOCK, sizeof(A) <= 8 ? 1024 / RT_BLOCK : 1)
#else
#define RT_FLAT_BOUNDS __launch_bounds__(RT_BLOCK)
#endif
extern "C" __global__ void RT_FLAT_BOUNDS rt_segmented(RT_SEGMENTED_PARAMS) {
  unsigned* head = reinterpret_cast<unsigned*>(rt_smem_raw); // RT_TILE entries
  __shared__ A warp_v[RT_BLOCK / 32];
  __shared__ unsigned warp_rel[RT_BLOCK / 32];
  __shared__ unsigned cut_rel; // the first segment (relative) that begins past the tile's end
  __shared__ unsigned heads[RT_BLOCK]; // bit k of heads[t]: element t * RT_PER + k has a head
#if defined(RT_FLAT_CARRY)
  // The run's state, in shared memory rather than registers (thread RT_BLOCK - 1 keeps most of it,
  // but a register is held by every thread: 16 more cost a quarter of the resident blocks).
  __shared__ A carry_v[2]; // by tile parity: the value so far of the segment open at a tile's start
  __shared__ A run_head_v, run_tail_v; // the pieces of the segments open at the run's ends
  __shared__ long long run_open, run_tail; // those segments (-1: none)
#endif
  const unsigned tid = threadIdx.x, lane = tid & 31u, warp = tid / 32;

  const long long segs = (long long)count;
  const long long base = offsets[0], end = offsets[count];
  if (end <= base) { // no element: every result is the identity (the fill's, without RT_FLAT_CARRY)
#if defined(RT_FLAT_CARRY)
    for (long long s = (long long)blockIdx.x * RT_BLOCK + tid; s < segs;
         s += (long long)gridDim.x * RT_BLOCK)
      out[s] = rt_result(rt_identity());
#endif
    return;
  }
  // Runs of whole tiles, one a block; with fewer tiles than blocks the first blocks take one
  // each, so the work is in the first wave and the others end at once. rt_flat_layout's geometry,
  // spelled out: through the struct, NVRTC schedules the carry kernel (at its 64-register bound)
  // differently from the code that was measured.
  const long long origin = base - (long long)((reinterpret_cast<rt_size>(in + base) / sizeof(T)) % RT_VEC);
  const long long tiles = (end - origin + RT_TILE - 1) / RT_TILE;
  const long long runs = tiles < (long long)gridDim.x ? tiles : (long long)gridDim.x;
  if ((long long)blockIdx.x >= runs) return; // the same for the whole block
  const long long t_lo = tiles * blockIdx.x / runs, t_hi = tiles * (blockIdx.x + 1) / runs;
  rt_flat_slot x[RT_PER];
  rt_flat_load(in, origin + t_lo * RT_TILE, base, end, x RT_IN2_ARG(in2));
  heads[tid] = 0;
  if (tid == 0) {
    cut_rel = RT_NO_HEAD;
#if defined(RT_FLAT_CARRY)
    carry_v[t_lo & 1] = rt_identity();
    run_tail = -1;
#endif
  }
  // `first`: the segment holding the tile's first element, or the first that begins after it (with
  // RT_FLAT_CARRY: the first that ends at or after that element; segments_flat, after its run's
  // first tile: or the one before, ended with the tile before); `open`: the same if it began
  // before the tile and goes on into it (-1: it did not).
  long long first = rt_flat_search(offsets, segs, origin + t_lo * RT_TILE); // a barrier too
  long long open = -1;
  int m = 1; // the first pass of a tile reads m offsets a thread
#if defined(RT_FLAT_CARRY)
  if (first < segs && origin + t_lo * RT_TILE > offsets[first] &&
      offsets[first + 1] > origin + t_lo * RT_TILE)
    open = first;
  if (tid == RT_BLOCK - 1) run_open = open; // rt_segmented_partition set it to the identity
#else
  // segments_flat learns `open` in each tile's first offsets pass (thread 0 reads `first`'s
  // offsets there): no load of its own between the search, or the tile before, and that pass.
  __shared__ long long open_s;
#endif

  for (long long tile = t_lo; tile < t_hi; ++tile) {
    const long long a = origin + tile * RT_TILE, z = a + RT_TILE;
    const long long mine = a + (long long)tid * RT_PER; // this thread's first element
    // Mark the heads of the segments that begin in the tile, from `first` until one begins past
    // the tile (or the segments end), and (RT_FLAT_CARRY) write the identity of the empty ones:
    // passes of m * RT_BLOCK (+1) segments, m sized from the previous tile's count (a pass reads its
    // offsets whether they are in the tile or not), then doubled. A pass issues its offset loads in
    // batches of RT_OFF_BATCH per thread before it looks at any of them, so it waits for memory
    // once per batch, not once per offset.
    long long c0 = first;
    for (;; c0 += (long long)m * RT_BLOCK, m = 2 * m < RT_PER ? 2 * m : RT_PER) {
      const unsigned width = unsigned(m) * RT_BLOCK;
      unsigned cut = RT_NO_HEAD;
      // The segment after the pass: where it begins at or past the tile's end, the pass holds the cut.
      const long long after = tid == 0 && c0 + width < segs ? offsets[c0 + width] : z;
      // The pass's segments c0 + i in 32 bits (fewer than 2^32 - 1 in all): `left` of them remain,
      // their offsets and results from c0 on.
      const unsigned left = unsigned(segs - c0);
      const long long* const pass_off = offsets + c0;
#if defined(RT_FLAT_CARRY)
      R* const pass_out = out + c0;
#endif
      const unsigned rel0 = unsigned(c0 - first); // head[] holds segments relative to `first`
#pragma unroll
      for (int k0 = 0; k0 < RT_PER; k0 += RT_OFF_BATCH) {
        if (k0 >= m) break;
        long long b[RT_OFF_BATCH], e[RT_OFF_BATCH];
#pragma unroll
        for (int j = 0; j < RT_OFF_BATCH; ++j) { // past the segments: both read offsets[count]
          const unsigned i = unsigned(k0 + j) * RT_BLOCK + tid;
          const unsigned ib = i < left ? i : left, ie = i < left ? i + 1 : left;
          b[j] = k0 + j < m ? pass_off[ib] : z;
          e[j] = k0 + j < m ? pass_off[ie] : z;
        }
#if !defined(RT_FLAT_CARRY)
        // `first` is open if it began before the tile and goes on into it.
        if (k0 == 0 && tid == 0 && c0 == first) open_s = b[0] < a && e[0] > a ? first : -1;
#endif
#pragma unroll
        for (int j = 0; j < RT_OFF_BATCH; ++j) {
          const unsigned i = unsigned(k0 + j) * RT_BLOCK + tid;
          if (k0 + j >= m) break;
          // Both offsets decide, without a branch between: a branch lets the compiler sink the
          // second load past the first one's wait. `d`: where the segment begins in the tile.
          const long long d = b[j] - a;
          const bool past = (i >= left) | (d >= RT_TILE);
          const bool starts = !past & (e[j] > b[j]) & (d >= 0); // a non-empty segment begins here
          cut = past && i < cut ? i : cut;
          if (starts) {
            const unsigned h = unsigned(d);
            head[(h % RT_PER) * RT_BLOCK + h / RT_PER] = rel0 + i;
            atomicOr(&heads[h / RT_PER], 1u << (h % RT_PER));
          }
#if defined(RT_FLAT_CARRY)
          else if (!past & (d >= 0)) { // an empty one
            pass_out[i] = rt_result(rt_identity());
          }
#endif
        }
      }
      if (tid == 0 && after >= z) cut = cut < width ? cut : width;
      if (cut != RT_NO_HEAD) atomicMin(&cut_rel, cut);
      __syncthreads();
      if (cut_rel != RT_NO_HEAD) break; // the same in every thread
      __syncthreads(); // every thread has read cut_rel before it may change
    }
    const long long next = c0 + cut_rel; // segments [first, next) begin before the tile's end
#if !defined(RT_FLAT_CARRY)
    open = open_s; // thread 0 wrote it before the first pass's barrier
#endif

    // This thread's elements: a segment that begins and ends among them is written here; `lead`
    // is the value before the first head (the segment open at the thread's start), `v` after the
    // last head.
#if !defined(RT_FLAT_CARRY)
    rt_pdl_wait(); // launched programmatically after the fill on sm_90+: until out holds the identity
#endif
    A v = rt_identity(), lead = rt_identity();
    unsigned rel = RT_NO_HEAD, first_rel = RT_NO_HEAD;
    const unsigned mask = heads[tid];
    heads[tid] = 0; // for the next tile (this thread is its only reader)
    // The tile's results from a pointer the compiler cannot re-associate: each head's store is
    // then one wide multiply-add, not the 64-bit add of first + rel and the address rebuilt.
    R* seg_out = out + first;
    asm("" : "+l"(seg_out));
    __builtin_assume(__isGlobal(seg_out));
    if (__all_sync(0xffffffffu, mask == 0)) { // the warp holds no head: one branch for all of it
#pragma unroll
      for (int k = 0; k < RT_PER; ++k) v = rt_combine(v, rt_flat_value(x[k], mine, k, base, end));
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
        v = rt_combine(at ? rt_identity() : v, rt_flat_value(x[k], mine, k, base, end));
      }
    }
    // The next tile's elements are in flight during the scan.
    if (tile + 1 < t_hi) rt_flat_load(in, z, base, end, x RT_IN2_ARG(in2));

    // Inclusive segmented scan of (last head, value after it) over the block.
    unsigned srel = rel;
    A sv = v;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
      const A pv = rt_shfl_up(sv, o);
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
    const A up_v = rt_shfl_up(sv, 1);
    const unsigned up_rel = __shfl_up_sync(0xffffffffu, srel, 1);
    const A before_v = lane == 0 ? wv : up_v;
    const unsigned before_rel = lane == 0 ? wrel : up_rel;
    if (first_rel != RT_NO_HEAD) { // the segment open at this thread's start ends at its first head
      const A r = rt_combine(before_v, lead);
      if (before_rel != RT_NO_HEAD) {
        seg_out[before_rel] = rt_result(r); // within the tile
      } else if (open >= 0) { // began in an earlier tile
#if defined(RT_FLAT_CARRY)
        const A whole = rt_combine(carry_v[tile & 1], r); // with the value carried from there
        if (open == run_open) run_head_v = whole; // began before the run: its piece
        else out[open] = rt_result(whole);
#else
        rt_atomic_out(out + open, r);
#endif
      }
    }
#if defined(RT_FLAT_CARRY)
    // The next tile starts at the last segment that began before it if that one goes on into it.
    const long long nb = next < segs ? offsets[next] : end;
    const long long open_next = next > first && nb > z ? next - 1 : -1;
    if (tid == RT_BLOCK - 1) { // the segment open at the tile's end: carried, finished or a piece
      const long long s = srel != RT_NO_HEAD ? first + srel : open;
      const A value = srel != RT_NO_HEAD ? sv : rt_combine(carry_v[tile & 1], sv);
      if (s >= 0 && open_next < 0) { // it ends with the tile
        if (s == run_open) run_head_v = value;
        else out[s] = rt_result(value);
      } else if (s >= 0 && tile + 1 == t_hi) { // it goes on past the run
        if (s == run_open) run_head_v = value;
        else {
          run_tail = s;
          run_tail_v = value;
        }
      }
      carry_v[(tile + 1) & 1] = value; // read in the next tile, after its barriers
    }
    open = open_next;
#else
    if (tid == RT_BLOCK - 1) { // the segment open at the tile's end may go on: combined
      const long long s = srel != RT_NO_HEAD ? first + srel : open;
      if (s >= 0) rt_atomic_out(out + s, sv);
    }
#endif
    // The next tile's first pass: this tile's segments and up to a pass more.
    const long long m_more = (next - first) / RT_BLOCK + 1;
    m = m_more < RT_PER ? int(m_more) : RT_PER;
#if defined(RT_FLAT_CARRY)
    first = open >= 0 ? open : next;
#else
    // The next tile starts at the last segment that began before it (its first pass tells whether
    // that one goes on into it) or, where none did, at the first that begins after.
    first = next > first ? next - 1 : next;
#endif
    __syncthreads(); // warp_v and warp_rel are rewritten for the next tile
  }

#if defined(RT_FLAT_CARRY)
  // The last run writes the identity of the empty segments at the end (they begin at or past its
  // last tile's end, so no offsets pass met them); `first` is the first of them.
  if ((long long)blockIdx.x == runs - 1)
    for (long long s = first + tid; s < segs; s += RT_BLOCK) out[s] = rt_result(rt_identity());

#if defined(RT_FINISH_TWOPASS)
  // The pieces of the segments open at the run's two ends, for rt_segmented_post: the one that
  // began before the run (its piece is all of the run where it goes on past it) and the one that
  // begins in it and goes on past it.
  if (tid == RT_BLOCK - 1) {
    A* const pieces = out + segs;
    if (run_open >= 0) pieces[2 * blockIdx.x] = run_head_v;
    if (run_tail >= 0) pieces[2 * blockIdx.x + 1] = run_tail_v;
  }
#else
  // The pieces of the segments open at the run's two ends, combined into their results, which
  // rt_segmented_partition set to the identity (on sm_90+ this kernel started programmatically:
  // its first wait for that kernel is here).
  if (tid == RT_BLOCK - 1) {
    const long long seg[2] = {run_open, run_tail};
    const A piece[2] = {run_head_v, run_tail_v};
    if (seg[0] >= 0 || seg[1] >= 0) rt_pdl_wait();
#pragma unroll
    for (int k = 0; k < 2; ++k)
      if (seg[k] >= 0) rt_atomic_out(out + seg[k], piece[k]);
  }
#endif
#endif
}

#if defined(RT_FINISH_TWOPASS) && defined(RT_FLAT_CARRY)
// The run that holds element pos (at or after the origin): the last b with rt_flat_run_start(g, b)
// at or before it, as the main kernel cuts the tiles (tiles * b / runs).
__device__ __forceinline__ long long rt_flat_run_of(rt_flat_geometry g, long long pos) {
  const long long tile = (pos - g.origin) / RT_TILE;
  return ((tile + 1) * g.runs - 1) / g.tiles;
}

// The ordered finish's post pass. A thread per segment writes those that lie in one run (their
// accumulator is in acc) and the empty ones; a warp per boundary between runs writes the segment
// open across it, where it begins in the run before (a segment across several boundaries is the
// first one's): its piece at the end of that run and those at the start of the runs after it, up
// to the run of its last element, combined in order (rt_group_ordered). `aux`: the main kernel's
// grid, as there.
extern "C" __global__ void rt_segmented_post(const A* __restrict__ acc, rt_result_type* __restrict__ result,
                                             const long long* __restrict__ offsets, rt_size count,
                                             rt_size, const T* __restrict__ in, rt_size aux) {
  rt_pdl_wait(); // launched programmatically on sm_90+: until the kernel before it has completed
  const long long segs = (long long)count, base = offsets[0], end = offsets[count];
  const rt_size threads = rt_size(gridDim.x) * blockDim.x;
  const rt_size t0 = rt_size(blockIdx.x) * blockDim.x + threadIdx.x;
  rt_flat_geometry g = {base, 1, 1};
  if (end > base) g = rt_flat_layout(in, base, end, (long long)aux);
  for (rt_size s = t0; s < count; s += threads) {
    const long long b = offsets[s], e = offsets[s + 1];
    if (e <= b) result[s] = rt_result_post(rt_identity(), 0);
    else if (rt_flat_run_of(g, b) == rt_flat_run_of(g, e - 1)) result[s] = rt_segment_result(acc[s], b, rt_size(e - b));
  }
  if (end <= base) return;
  const A* const pieces = acc + count;
  const unsigned lane = threadIdx.x & 31u;
  for (long long j = (long long)(t0 / 32) + 1; j < g.runs; j += (long long)(threads / 32)) {
    const long long z = rt_flat_run_start(g, j), before = rt_flat_run_start(g, j - 1);
    // The first segment that ends at or after z: the one open across z, if any is.
    const long long s = rt_warp_search(0, segs, [=](long long p) { return offsets[p + 1] < z; });
    if (s >= segs) continue; // the same in the whole warp
    const long long b = offsets[s], e = offsets[s + 1];
    if (!(b < z && e > z) || b < before) continue; // none open, or an earlier boundary's
    const long long first = j - 1, n = rt_flat_run_of(g, e - 1) - first + 1;
    const A v = rt_group_ordered(
        [=](rt_size k) { return k == 0 ? pieces[2 * first + 1] : pieces[2 * (first + (long long)k)]; },
        rt_size(n), lane, 32);
    if (lane == 0) result[s] = rt_segment_result(v, b, rt_size(e - b));
  }
}
#endif
