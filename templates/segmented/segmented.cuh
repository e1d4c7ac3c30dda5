// reduce-tune: what the segmented templates share (rows, columns, segments). Rendered after
// common.cuh, with RT_PROBLEM_ROWS, RT_PROBLEM_COLUMNS or RT_PROBLEM_SEGMENTS, RT_BLOCK, RT_VEC,
// RT_UNROLL and, for the group mappings, RT_WIDTH. Every segmented kernel has one signature:
//   rt_segmented(in, offsets, out, count, length, stride, aux, work)
// `count` results; rows: segment s is in[s*stride .. s*stride+length); segments: it is
// in[offsets[s] .. offsets[s+1]); columns: column c is in[r*stride + c] for r < length. `aux` is the
// variant's launch parameter (kernels/segmented_plan.cpp says which); `work` is the variant's
// self-resetting device state (zeroed once by the host).

#define RT_SEGMENTED_PARAMS                                                                       \
  const T *__restrict__ in, const long long *__restrict__ offsets, R *__restrict__ out,          \
      rt_size count, rt_size length, rt_size stride, rt_size aux,                                 \
      unsigned long long *__restrict__ work RT_IN2_PARAM


// Sets out[0..count) to the identity, before kernels that combine into it atomically. On sm_90+
// those start programmatically: they read their input while this runs and wait (rt_pdl_wait) before
// their first atomic.
extern "C" __global__ void rt_fill_identity(R* __restrict__ out, rt_size count) {
  rt_pdl_trigger();
  for (rt_size i = rt_size(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += rt_size(gridDim.x) * blockDim.x)
    out[i] = rt_result(rt_identity());
}

// The end of the prefix of [lo, hi) where pred holds (pred true on a prefix, false after it): the
// first p in [lo, hi) where it fails, or hi. A whole warp calls it; each step probes 32 points and
// every lane gets the answer.
template <class Pred>
__device__ __forceinline__ long long rt_warp_search(long long lo, long long hi, Pred pred) {
  const unsigned lane = threadIdx.x & 31u;
  while (lo < hi) {
    const long long p = lo + (hi - lo) * lane / 32;
    const int c = __popc(__ballot_sync(0xffffffffu, pred(p)));
    if (c == 0) break;
    const long long last = __shfl_sync(0xffffffffu, p, c - 1);
    const long long next = __shfl_sync(0xffffffffu, p, c & 31);
    hi = c == 32 ? hi : next;
    lo = last + 1 < hi ? last + 1 : hi;
  }
  return lo;
}

// The first element and the length of contiguous segment s (rows and segments).
__device__ __forceinline__ void rt_segment(rt_size s, const long long* __restrict__ offsets,
                                           rt_size length, rt_size stride, rt_size* begin,
                                           rt_size* len) {
#if defined(RT_PROBLEM_SEGMENTS)
  const long long b = offsets[s], e = offsets[s + 1];
  *begin = rt_size(b);
  *len = e > b ? rt_size(e - b) : 0; // decreasing offsets give an empty segment
#else
  *begin = s * stride;
  *len = length;
#endif
}

// This lane's share of p[0..len) when `lanes` lanes read it together: RT_VEC-wide vector loads,
// RT_UNROLL of them in flight, lane-interleaved so that neighbouring lanes read neighbouring
// vectors. A head before the first vector-aligned element and a tail shorter than a vector are read
// as scalars, so any element-aligned start (a row of odd length, an offset) is right. The result is
// an accumulator (A). `at`: the index of p[0] in its segment (a chunk of a long one starts past 0).
// `p2`: the second input's p (two inputs).
__device__ __forceinline__ A rt_lanes_reduce(const T* __restrict__ p, rt_size len, rt_size lane,
                                             rt_size lanes RT_IN2_DECL(p2), rt_size at = 0) {
  A acc[RT_UNROLL];
#pragma unroll
  for (int k = 0; k < RT_UNROLL; ++k) acc[k] = rt_identity();
  const rt_size misalign = (reinterpret_cast<rt_size>(p) / sizeof(T)) % RT_VEC;
  rt_size head = misalign ? RT_VEC - misalign : 0;
#if defined(RT_TWO_INPUTS)
  if (!rt_same_misalign(p, p2)) head = len; // no common vector boundary: every element a scalar
#endif
  if (head > len) head = len;
  const rt_vec* body = reinterpret_cast<const rt_vec*>(p + head);
  const rt_size nvec = (len - head) / RT_VEC;
  rt_vec_accumulate(body, nvec, lane, lanes, rt_size(RT_UNROLL) * lanes, acc, at + head
                    RT_IN2_ARG(p2 + head));
  if (RT_VEC > 1) {
    const rt_size tail = head + nvec * RT_VEC;
    // The head comes after the body, at indices below it: combined, not folded (rt_fold's
    // precondition); the tail lies above both.
    for (rt_size h = lane; h < head; h += lanes)
      acc[0] = rt_combine(acc[0], rt_pair_map(p[h], p2[h], at + h));
    for (rt_size t = tail + lane; t < len; t += lanes)
      acc[0] = rt_pair_fold(acc[0], p[t], p2[t], at + t);
  }
  A v = acc[0];
#pragma unroll
  for (int k = 1; k < RT_UNROLL; ++k) v = rt_combine(v, acc[k]);
  return v;
}

#if defined(RT_WIDTH)
// Reduces v over each aligned group of RT_WIDTH lanes of a full warp; the group's first lane gets
// the result. Every lane of the warp calls it.
__device__ __forceinline__ A rt_group_reduce(A v) {
#pragma unroll
  for (int offset = RT_WIDTH / 2; offset > 0; offset >>= 1)
    v = rt_combine(v, rt_shfl_down(v, offset, RT_WIDTH));
  return v;
}
#endif

#if defined(RT_FINISH_TWOPASS) || defined(RT_FINISH_LASTBLOCK)
// The ordered finish: the blocks that share a result leave their partial accumulators in a
// workspace, and the template's rt_segmented_post combines each result's partials in block order
// (no atomic: struct accumulators and non-commutative combines take it, and the bits do not depend
// on timing; the columns' last-block finish folds its partials so too, in the main kernel). at(k)
// is partial k of n; the `width` lanes of a group (a power of two up to 32,
// aligned in a full warp, every lane of which calls it) each fold a contiguous run of them, then
// a shuffle tree that pairs each group lane with the one `offset` after it folds the runs in order:
// the group's first lane gets at(0) + at(1) + ... + at(n - 1).
template <class At>
__device__ __forceinline__ A rt_group_ordered(At at, rt_size n, unsigned lane, unsigned width) {
  // A lane's run is loaded RT_GROUP_BATCH partials at a time before any is combined: the loads do
  // not wait on the combines (hundreds of row slices a column make runs of tens a lane). A whole
  // batch is combined as a tree of neighbours, (p0 p1) (p2 p3) ..., which keeps the order and
  // makes the combines three deep where a chain is eight: a post pass runs a warp a result, and
  // its time is the depth of its combines (var's at 256 columns x 264 slices on an H200: 9 cycles
  // an instruction, about half of them waiting on the results of the ones before). The run's
  // bounds shift by log2(width), with no 64-bit division. With the var merge's reciprocal
  // (kernels/ops.cpp), var and std on the columns ran 1.02-1.10x as fast at 16 to 1024 columns of
  // 2^24 elements on an H200, sum's ordered finish unchanged.
  constexpr int RT_GROUP_BATCH = 8;
  const unsigned shift = unsigned(__ffs(int(width)) - 1);
  A v = rt_identity();
  const rt_size e = (n * (lane + 1)) >> shift;
  rt_size k = (n * lane) >> shift;
  for (; k + RT_GROUP_BATCH <= e; k += RT_GROUP_BATCH) {
    A p[RT_GROUP_BATCH];
#pragma unroll
    for (int j = 0; j < RT_GROUP_BATCH; ++j) p[j] = at(k + j);
#pragma unroll
    for (int s = 1; s < RT_GROUP_BATCH; s <<= 1)
#pragma unroll
      for (int j = 0; j < RT_GROUP_BATCH; j += 2 * s) p[j] = rt_combine(p[j], p[j + s]);
    v = rt_combine(v, p[0]);
  }
  if (k < e) { // fewer than a batch left: loaded together, combined in turn
    A p[RT_GROUP_BATCH - 1];
#pragma unroll
    for (int j = 0; j < RT_GROUP_BATCH - 1; ++j)
      if (k + j < e) p[j] = at(k + j);
#pragma unroll
    for (int j = 0; j < RT_GROUP_BATCH - 1; ++j)
      if (k + j < e) v = rt_combine(v, p[j]);
  }
  for (unsigned offset = 1; offset < width; offset <<= 1)
    v = rt_combine(v, rt_shfl_down(v, offset, int(width)));
  return v;
}
#endif

#if defined(RT_FINISH_TWOPASS)
// A result from the accumulator of its `n` elements that begin at element `begin` of the input.
// Mappings that stream elements across segments (flat) map each with its index in the input; an
// op that reads the index (argmax) takes it back to the segment's (rt_rebase).
__device__ __forceinline__ rt_result_type rt_segment_result(A a, long long begin, rt_size n) {
#if defined(RT_MAP_INDEXED) && defined(RT_PROBLEM_SEGMENTS)
  a = rt_rebase(a, rt_size(begin));
#else
  (void)begin;
#endif
  return rt_result_post(a, n);
}
#endif
