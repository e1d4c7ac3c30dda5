// Offsets segments of any length mix, load-balanced in two kernels that bin segments by length:
//   rt_segmented: a group of RT_WIDTH lanes per segment reduces the short ones (up to
//     RT_SHORT elements) and writes them; a longer one it cuts into chunks of RT_CHUNK elements
//     and appends the chunks to a work list in `work` (up to `aux` chunks; when the list is full
//     the group reduces the segment itself, so the result is right whatever the lengths).
//   rt_segmented_chunks: a grid-stride loop of whole blocks over the list; a chunk that is its
//     segment's only one is written, the others are combined atomically into the result, which
//     rt_segmented set to the identity.
// `work` = {chunks listed, entries consumed, chunk 0, chunk 1, ...}; a chunk is
// (segment << 24 | index), ~0 a slot of a reservation that did not fit.
// On sm_90+ the chunks kernel is launched programmatically (its blocks are resident and waiting
// when rt_segmented ends, instead of launched after it).
// The block that consumes the last listed entry sets both counters back to zero (no block reads
// them after that: every entry has been read), so the state is ready for the next launch with no
// host step; with no entry listed they are zero already.

#define RT_SHORT (RT_WIDTH * RT_VEC * RT_UNROLL * 8)
#define RT_CHUNK (RT_BLOCK * RT_VEC * RT_UNROLL * 8)

extern "C" __global__ void __launch_bounds__(RT_BLOCK) rt_segmented(RT_SEGMENTED_PARAMS) {
  rt_pdl_trigger(); // the chunks kernel may start; it waits for this one before reading the list
  const rt_size s = (rt_size(blockIdx.x) * RT_BLOCK + threadIdx.x) / RT_WIDTH;
  const unsigned lane = threadIdx.x % RT_WIDTH;
  rt_size begin = 0, len = 0;
  if (s < count) rt_segment(s, offsets, length, stride, &begin, &len);
  // The group's first lane reserves the chunks; the whole warp takes part in the shuffle.
  const rt_size chunks = len > RT_SHORT ? (len + RT_CHUNK - 1) / RT_CHUNK : 0;
  unsigned long long first = 0;
  if (chunks && lane == 0) first = atomicAdd(work, (unsigned long long)chunks);
  first = __shfl_sync(0xffffffffu, first, (threadIdx.x & 31u) & ~(RT_WIDTH - 1u));
  const bool listed = chunks && first + chunks <= aux && chunks < (1u << 24);
  if (listed) {
    for (rt_size k = lane; k < chunks; k += RT_WIDTH) work[2 + first + k] = (s << 24) | k;
  } else if (chunks) { // did not fit: mark the part of the reservation inside the list as empty
    for (rt_size k = first + lane; k < aux && k < first + chunks; k += RT_WIDTH) work[2 + k] = ~0ull;
  }
  A v = listed ? rt_identity() : rt_lanes_reduce(in + begin, len, lane, RT_WIDTH);
  v = rt_group_reduce(v);
  if (lane == 0 && s < count && (!listed || chunks > 1))
    out[s] = rt_result(v); // listed in several chunks: the identity, which the chunks combine into
}

extern "C" __global__ void __launch_bounds__(RT_BLOCK)
rt_segmented_chunks(RT_SEGMENTED_PARAMS) {
  __shared__ bool rt_last;
  rt_pdl_wait(); // launched programmatically on sm_90+: until rt_segmented's list is complete
  rt_size listed = *(volatile unsigned long long*)work;
  if (listed > aux) listed = aux; // a full list: the overflowing segments were reduced in place
  unsigned long long taken = 0;   // list entries this block consumed
  for (rt_size c = blockIdx.x; c < listed; c += gridDim.x) {
    ++taken;
    const unsigned long long item = work[2 + c];
    if (item == ~0ull) continue; // the same for the whole block
    const rt_size s = item >> 24, k = item & 0xffffffu;
    rt_size begin, len;
    rt_segment(s, offsets, length, stride, &begin, &len);
    const rt_size lo = k * RT_CHUNK;
    const rt_size n = len - lo < RT_CHUNK ? len - lo : RT_CHUNK;
    const A v = rt_block_reduce(rt_lanes_reduce(in + begin + lo, n, threadIdx.x, RT_BLOCK));
    if (threadIdx.x == 0) {
      if (len <= RT_CHUNK) out[s] = rt_result(v);
      else rt_atomic_out(out + s, v);
    }
  }
  // Blocks without an entry (most of the grid on a small problem) leave at once, with no atomic.
  if (taken == 0) return; // the same for the whole block
  if (threadIdx.x == 0) {
    __threadfence();
    rt_last = atomicAdd(work + 1, taken) + taken == listed;
  }
  __syncthreads();
  if (rt_last && threadIdx.x == 0) {
    work[0] = 0;
    work[1] = 0;
  }
}
