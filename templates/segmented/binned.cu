// Offsets segments of any length mix, load-balanced in two kernels that bin segments by length:
//   rt_segmented: a group of RT_WIDTH lanes per segment reduces the short ones (up to
//     RT_SHORT elements) and writes them; a longer one it cuts into chunks of RT_CHUNK elements
//     and appends the chunks to a work list in `work` (up to `aux` chunks; when the list is full
//     the group reduces the segment itself, so the result is right whatever the lengths).
//     With RT_STAGED (segments_staged), a block takes RT_STAGE_SEGS consecutive segments instead
//     and stages their offsets and elements in shared memory (below).
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

// Chunks of 8 rounds of a block's loads; staged: of 2 (its long segments are few and among
// blocks of short ones: more, shorter chunks spread them wider; 4-5 % faster at 1-2 elements a
// segment on an H100).
#if defined(RT_STAGED)
#define RT_CHUNK (RT_BLOCK * RT_VEC * RT_UNROLL * 2)
#else
#define RT_CHUNK (RT_BLOCK * RT_VEC * RT_UNROLL * 8)
#endif

// Lists segment s's `chunks` chunks (several lanes may share the writing: `lane` of `lanes`);
// `first` is the reservation's first slot. False where the list cannot hold them all (the slots
// it can hold are marked empty): the caller reduces the segment itself.
__device__ __forceinline__ bool rt_list_chunks(unsigned long long* __restrict__ work, rt_size aux,
                                               rt_size s, rt_size chunks, unsigned long long first,
                                               unsigned lane, unsigned lanes) {
  if (first + chunks <= aux && chunks < (1u << 24)) {
    for (rt_size k = lane; k < chunks; k += lanes) work[2 + first + k] = (s << 24) | k;
    return true;
  }
  for (rt_size k = first + lane; k < aux && k < first + chunks; k += lanes) work[2 + k] = ~0ull;
  return false;
}

#if !defined(RT_STAGED)
#define RT_SHORT (RT_WIDTH * RT_VEC * RT_UNROLL * 8)

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
  const bool listed = chunks && rt_list_chunks(work, aux, s, chunks, first, lane, RT_WIDTH);
  A v = listed ? rt_identity()
               : rt_lanes_reduce(in + begin, len, lane, RT_WIDTH RT_IN2_ARG(in2 + begin));
  v = rt_group_reduce(v);
  if (lane == 0 && s < count && (!listed || chunks > 1))
    out[s] = rt_result(v); // listed in several chunks: the identity, which the chunks combine into
}
#else // RT_STAGED
#if defined(RT_TWO_INPUTS)
#error "segments_staged stages one input's elements in shared memory (kernels/catalogue.cpp)"
#endif
// segments_staged: block b takes segments [b * RT_STAGE_SEGS, ...) (RT_UNROLL a thread) and copies
// their offsets into shared memory, then, where their elements fit in RT_STAGE_ELEMS (a mean of 4
// a segment), those too, every copy in flight at once (cp.async on sm_80+: no register holds
// them, one wait for all); thread t then reduces segments t, t + RT_BLOCK, ... from shared memory
// and the block writes its results together. Where segments average an element or two, results
// and offsets are most of the bytes, and the flat mapping's passes over each tile's offsets cost
// more than the copies. A block whose elements do not fit (a long segment among its own): each
// thread reads its segments of up to RT_STAGE_MID elements from global memory (up to
// RT_STAGE_SMALL all loads at once) and lists the longer ones' chunks (a chunk a block: listing
// every segment past RT_STAGE_SMALL made means of 4 elements 1.3-2.6x, of 8 6-10x slower on an
// H100).
#define RT_STAGE_SEGS (RT_BLOCK * RT_UNROLL)
#define RT_COPY (16 / (int)sizeof(T)) // elements in a 16-byte copy
#define RT_STAGE_ELEMS (4 * RT_STAGE_SEGS + RT_COPY)
#define RT_STAGE_SMALL 8
#define RT_STAGE_MID 256

// A 16- or 8-byte copy from global into shared memory; in flight until rt_copy_wait (sm_80+), a
// load and a store before.
template <int Bytes> __device__ __forceinline__ void rt_copy(void* dst, const void* src) {
#if __CUDA_ARCH__ >= 800
  const unsigned d = unsigned(__cvta_generic_to_shared(dst));
  if constexpr (Bytes == 16)
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(d), "l"(src) : "memory");
  else
    asm volatile("cp.async.ca.shared.global [%0], [%1], 8;" ::"r"(d), "l"(src) : "memory");
#else
  if constexpr (Bytes == 16) *reinterpret_cast<int4*>(dst) = *reinterpret_cast<const int4*>(src);
  else *reinterpret_cast<int2*>(dst) = *reinterpret_cast<const int2*>(src);
#endif
}
// This thread's copies have landed; the caller's barrier makes every thread's visible.
__device__ __forceinline__ void rt_copy_wait() {
#if __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_all;" ::: "memory");
#endif
}

// Every thread resident (32 registers a thread): the copies in flight per SM are what hides their
// latency (44 registers unbounded: 10 blocks of 128 per H100 SM instead of 16; 2^24 one-element
// segments took 152-158 us instead of 143-145).
extern "C" __global__ void __launch_bounds__(RT_BLOCK, 2048 / RT_BLOCK) rt_segmented(RT_SEGMENTED_PARAMS) {
  __shared__ __align__(16) long long so[RT_STAGE_SEGS + 2];
  __shared__ __align__(16) T se[RT_STAGE_ELEMS];
  rt_pdl_trigger(); // the chunks kernel may start; it waits for this one before reading the list
  const rt_size s0 = rt_size(blockIdx.x) * RT_STAGE_SEGS;
  const int n = count - s0 < RT_STAGE_SEGS ? int(count - s0) : RT_STAGE_SEGS;
  // offsets[s0 .. s0 + n]: in pairs where they are 16-byte aligned (s0 is even).
  if (reinterpret_cast<rt_size>(offsets) % 16 == 0) {
    for (int i = threadIdx.x; 2 * i + 1 <= n; i += RT_BLOCK) rt_copy<16>(so + 2 * i, offsets + s0 + 2 * i);
    if (n % 2 == 0 && threadIdx.x == 0) rt_copy<8>(so + n, offsets + s0 + n);
  } else {
    for (int i = threadIdx.x; i <= n; i += RT_BLOCK) rt_copy<8>(so + i, offsets + s0 + i);
  }
  rt_copy_wait();
  __syncthreads();
  const long long lo = so[0], hi = so[n];
  // The elements from the 16-byte boundary at or before lo: se[j] is in[a0 + j].
  const long long a0 = lo - (long long)((reinterpret_cast<rt_size>(in + lo) / sizeof(T)) % RT_COPY);
  const long long span = hi > lo ? hi - a0 : 0;
  if ((span + RT_COPY - 1) / RT_COPY * RT_COPY <= RT_STAGE_ELEMS) {
    // Whole 16-byte pieces inside [lo, hi) are copied as such; the elements of the two end
    // pieces one by one (no read outside the problem).
    const int pieces = int((span + RT_COPY - 1) / RT_COPY);
    for (int v = threadIdx.x; v < pieces; v += RT_BLOCK) {
      const long long at = a0 + (long long)v * RT_COPY;
      if (at >= lo && at + RT_COPY <= hi) {
        rt_copy<16>(se + v * RT_COPY, in + at);
      } else {
        for (int e = 0; e < RT_COPY; ++e)
          if (at + e >= lo && at + e < hi) se[v * RT_COPY + e] = in[at + e];
      }
    }
    rt_copy_wait();
    __syncthreads();
    for (int i = threadIdx.x; i < n; i += RT_BLOCK) {
      // Clamped to what was staged: offsets out of order give wrong results, no read outside.
      const long long b = so[i] - a0, e = so[i + 1] - a0;
      const int first = int(b < 0 ? 0 : b > span ? span : b), last = int(e < 0 ? 0 : e > span ? span : e);
      A v = rt_identity();
      for (int j = first; j < last; ++j) v = rt_fold(v, se[j], rt_size(j - first));
      out[s0 + i] = rt_result(v);
    }
    return;
  }
  for (int i = threadIdx.x; i < n; i += RT_BLOCK) {
    const long long b = so[i], e = so[i + 1];
    const rt_size len = e > b ? rt_size(e - b) : 0, s = s0 + i;
    A v = rt_identity();
    bool listed = false;
    rt_size chunks = 0;
    if (len <= RT_STAGE_SMALL) {
      A x[RT_STAGE_SMALL];
#pragma unroll
      for (int j = 0; j < RT_STAGE_SMALL; ++j) x[j] = rt_size(j) < len ? rt_map(in[b + j], j) : rt_identity();
#pragma unroll
      for (int j = 0; j < RT_STAGE_SMALL; ++j) v = rt_combine(v, x[j]);
    } else {
      if (len > RT_STAGE_MID) {
        chunks = (len + RT_CHUNK - 1) / RT_CHUNK;
        listed = rt_list_chunks(work, aux, s, chunks, atomicAdd(work, (unsigned long long)chunks), 0, 1);
      }
      if (!listed) // up to RT_STAGE_MID, or the list is full (as binned's group of one would)
        for (rt_size j = 0; j < len; ++j) v = rt_fold(v, in[b + j], j);
    }
    if (!listed || chunks > 1) out[s] = rt_result(v); // listed in one chunk: that one writes it
  }
}
#endif

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
    const A v = rt_block_reduce(rt_lanes_reduce(in + begin + lo, n, threadIdx.x,
                                                RT_BLOCK RT_IN2_ARG(in2 + begin + lo), lo));
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
