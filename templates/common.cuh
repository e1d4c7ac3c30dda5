// reduce-tune: what every reduction template shares, whatever the op. Rendered after the header
// (T, RT_DTYPE_*, RT_TAIL_*, RT_FINISH_*, RT_BLOCK where compile-time, RT_UNROLL, RT_VEC),
// element.cuh and the op's description (kernels/ops.cpp), which defines the accumulator A, the
// result type R, rt_identity(), rt_map(x, i) (element i of its segment as an accumulator),
// rt_combine(a, b),
// rt_post(a, count) (an accumulator of `count` elements as the result) and its traits:
// RT_ATOMIC_ADD / RT_ATOMIC_MIN / RT_ATOMIC_MAX (the atomic its accumulator combines with, none
// for the others; RT_ATOMIC_KEY: atomicMax of its ordered keys, rt_key, in a segmented post
// pass; RT_ATOMIC_SHIFTED: atomicAdd of its float64 sums about a shift, rt_shift, in the columns'
// post pass), RT_REDUX_ADD / _MIN / _MAX (the __reduce_*_sync of its combine) and
// RT_ACC_I32 / _U32 / _I64 / _F32 / _F64 (its scalar accumulator's type). Every kernel has the
// same signature:
//   rt_reduce(in, work, partials, out, n, counter)   (ops of two inputs: then in2, below)
// `work` is a scratch copy of `in` for in-place variants; `partials` holds one value per block (of
// type A); `out` is the final value; `counter` points at 16 zeroed bytes for the last-block and
// first-block finishes, which leave them as they need them for the next launch.
//
// For bf16 and f16 the scalar ops' accumulator is float: every element is widened exactly as it
// is mapped, partials, shared memory and shuffles are float, and the result is rounded once where
// it is written (rt_post): sums accumulate in float32, min and max stay exact. With
// RT_WIDE_RESULT, R is A: the result is the float32 accumulator itself, not rounded, so the atomic
// finishes may add into it.

// Ops of two inputs of one shape (RT_TWO_INPUTS: dot) take the second, `in2`, as every kernel's
// last parameter; element i of the problem is then in[i] and in2[i]. Templates fetch an element
// through rt_pair_map(x, y, i): rt_map(x, i) for one input, where y is never compiled (in2 and
// what is loaded from it exist only with two inputs), rt_map2(x, y, i) for two. Helpers that read
// elements take the second input's pointer through RT_IN2_DECL / RT_IN2_ARG, which vanish for
// one input. Vector loads of in2 need it at the same offset from a vector boundary as `in`: where
// it is not, the vector paths read scalars (the catalogue admits no variant that cannot).
#if defined(RT_TWO_INPUTS)
#define RT_IN2_PARAM , const T *__restrict__ in2
#define RT_IN2_DECL(p) , const T *__restrict__ p
#define RT_IN2_ARG(p) , (p)
#define RT_IN2_ONLY(...) __VA_ARGS__
#define rt_pair_map(x, y, i) rt_map2(x, y, i)
#define rt_pair_map_unindexed(x, y) rt_map2(x, y, 0)
#else
#define RT_IN2_PARAM
#define RT_IN2_DECL(p)
#define RT_IN2_ARG(p)
#define RT_IN2_ONLY(...)
#define rt_pair_map(x, y, i) rt_map(x, i)
#define rt_pair_map_unindexed(x, y) rt_map_unindexed(x)
#endif

// The one signature of every reduction kernel.
#define RT_REDUCE_PARAMS                                                                          \
  const T *__restrict__ in, T *__restrict__ work, A *__restrict__ partials, R *__restrict__ out, \
      rt_size n, unsigned *counter RT_IN2_PARAM

// rt_map(x, i) takes the element's index i within its segment (the array: within it), for ops
// that read it (RT_MAP_INDEXED). The flat and merge mappings stream elements across segments and
// do not track it: they map with rt_map_unindexed, which ops that read the index do not define,
// so such a pair does not compile (the catalogue admits none with an atomic finish, and ops that
// read the index have no atomic). The flat mapping's ordered finish maps them with the element's
// index in the input instead and the post pass takes it back to the segment's: ops that read the
// index then define rt_rebase(a, begin) (built-in ones; a user map that reads `i` gets no flat
// mapping).
#if !defined(RT_MAP_INDEXED) && !defined(RT_TWO_INPUTS)
__device__ __forceinline__ A rt_map_unindexed(T x) { return rt_map(x, 0); }
#endif

// rt_fold(a, x, i): the element x at index i folded into the accumulator a, the same as
// rt_combine(a, rt_map(x, i)) (within the op's error bound; argmax and argmin exactly) but
// cheaper where the op gives its own (RT_FOLD: var's Welford update, logsumexp's one exp, argmax
// keeping ties without comparing indices). Precondition: a is the identity or holds only elements
// of i's segment at indices below i (a thread's loop over a segment in increasing order, from the
// identity); where elements come otherwise (a head read after the body), combine their maps. Ops
// of two inputs fold through rt_fold2(a, x, y, i); templates call rt_pair_fold, as rt_pair_map.
// User reductions define no fold: the default below. Folded today: the columns, the vector loop
// (rt_vec_accumulate: the array's vectorized kernel, rows and offsets through rt_lanes_reduce)
// and its tails, rt_load_unrolled, multi_seq and binned's per-thread segments.
#if !defined(RT_FOLD)
#if defined(RT_TWO_INPUTS)
__device__ __forceinline__ A rt_fold2(A a, T x, T y, rt_size i) { return rt_combine(a, rt_map2(x, y, i)); }
#else
__device__ __forceinline__ A rt_fold(A a, T x, rt_size i) { return rt_combine(a, rt_map(x, i)); }
#endif
#endif
#if defined(RT_TWO_INPUTS)
#define rt_pair_fold(a, x, y, i) rt_fold2(a, x, y, i)
#else
#define rt_pair_fold(a, x, y, i) rt_fold(a, x, i)
#endif

// An accumulator as the result of an atomic finish (the identity it starts from, the value it
// combines into): the post-map of ops whose post-map is the plain conversion, the only ones the
// catalogue admits there.
__device__ __forceinline__ R rt_result(A v) { return rt_post(v, 0); }

// Whether V is a scalar the shuffle and load intrinsics take (a compound accumulator, a struct,
// goes 32-bit word by word instead, whatever its size).
template <typename V> struct rt_is_scalar { static constexpr bool value = false; };
template <> struct rt_is_scalar<int> { static constexpr bool value = true; };
template <> struct rt_is_scalar<unsigned> { static constexpr bool value = true; };
template <> struct rt_is_scalar<long long> { static constexpr bool value = true; };
template <> struct rt_is_scalar<unsigned long long> { static constexpr bool value = true; };
template <> struct rt_is_scalar<float> { static constexpr bool value = true; };
template <> struct rt_is_scalar<double> { static constexpr bool value = true; };

// Shuffles of any accumulator: a scalar as itself, a struct 32-bit word by word.
template <typename V> __device__ __forceinline__ V rt_shfl_down(V v, unsigned offset, int width = 32) {
  if constexpr (rt_is_scalar<V>::value) {
    return __shfl_down_sync(0xffffffffu, v, offset, width);
  } else {
    static_assert(sizeof(V) % 4 == 0, "accumulators of whole 32-bit words");
    unsigned w[sizeof(V) / 4];
    memcpy(w, &v, sizeof(V));
#pragma unroll
    for (int i = 0; i < int(sizeof(V) / 4); ++i) w[i] = __shfl_down_sync(0xffffffffu, w[i], offset, width);
    memcpy(&v, w, sizeof(V));
    return v;
  }
}
template <typename V> __device__ __forceinline__ V rt_shfl_up(V v, unsigned offset, int width = 32) {
  if constexpr (rt_is_scalar<V>::value) {
    return __shfl_up_sync(0xffffffffu, v, offset, width);
  } else {
    static_assert(sizeof(V) % 4 == 0, "accumulators of whole 32-bit words");
    unsigned w[sizeof(V) / 4];
    memcpy(w, &v, sizeof(V));
#pragma unroll
    for (int i = 0; i < int(sizeof(V) / 4); ++i) w[i] = __shfl_up_sync(0xffffffffu, w[i], offset, width);
    memcpy(&v, w, sizeof(V));
    return v;
  }
}

// An L2-cached load (ld.global.cg) of an accumulator another block wrote: a scalar as itself, a
// struct word by word.
template <typename V> __device__ __forceinline__ V rt_ldcg(const V* p) {
  if constexpr (rt_is_scalar<V>::value) {
    return __ldcg(p);
  } else {
    static_assert(sizeof(V) % 4 == 0, "accumulators of whole 32-bit words");
    unsigned w[sizeof(V) / 4];
#pragma unroll
    for (int i = 0; i < int(sizeof(V) / 4); ++i) w[i] = __ldcg(reinterpret_cast<const unsigned*>(p) + i);
    V v;
    memcpy(&v, w, sizeof(V));
    return v;
  }
}

// ---- vector loads ----------------------------------------------------------------------------

// RT_VEC elements loaded as one (16 bytes at most: 4 floats or ints, 2 doubles, 8 bf16).
static_assert(RT_VEC == 1 || RT_VEC == 2 || RT_VEC == 4 || RT_VEC == 8, "vector width 1, 2, 4 or 8");
static_assert(sizeof(T) * RT_VEC <= 16, "vectors of at most 16 bytes");
struct __align__(sizeof(T) * RT_VEC) rt_vec { T x[RT_VEC]; };

// A vector load of input read once. With RT_EVICT_FIRST (the `streaming` variant) it is
// ld.global.cs: the input's lines leave L2 first rather than push out others, dirty ones above
// all (whose write-back shares DRAM with the reads). On an H100 with L2 full of dirty lines that
// cut 2^22..2^24-element sums by 5-13 % but cost ~3 % at 2^28 (bench/probes/finishes.cu), so
// both are in the catalogue and the sweep picks.
__device__ __forceinline__ rt_vec rt_load(const rt_vec* p) {
#if defined(RT_EVICT_FIRST)
  rt_vec r;
  if constexpr (sizeof(rt_vec) == 16)
    *reinterpret_cast<int4*>(&r) = __ldcs(reinterpret_cast<const int4*>(p));
  else if constexpr (sizeof(rt_vec) == 8)
    *reinterpret_cast<int2*>(&r) = __ldcs(reinterpret_cast<const int2*>(p));
  else if constexpr (sizeof(rt_vec) == 4)
    *reinterpret_cast<int*>(&r) = __ldcs(reinterpret_cast<const int*>(p));
  else
    *reinterpret_cast<unsigned short*>(&r) = __ldcs(reinterpret_cast<const unsigned short*>(p));
  return r;
#else
  return *p;
#endif
}

// ---- atomics ---------------------------------------------------------------------------------

// Atomic combine of accumulators into global or shared memory. Native where the hardware has it,
// float min/max as integer atomics on the bit pattern (below), else a CAS loop on it (64-bit float
// sum before sm_60).
template <typename B>
__device__ __forceinline__ void rt_atomic_cas(A* addr, A v) {
  B* p = reinterpret_cast<B*>(addr);
  B old = *p, assumed;
  do {
    assumed = old;
    A cur;
    memcpy(&cur, &assumed, sizeof(A));
    A next = rt_combine(cur, v);
    B nb;
    memcpy(&nb, &next, sizeof(A));
    if (nb == assumed) return;
    old = atomicCAS(p, assumed, nb);
  } while (old != assumed);
}

// Float min/max as one integer atomic on the bit pattern (S/U: the signed/unsigned integer of its
// size), with no CAS loop: non-negative floats order as signed integers, negative ones in reverse as
// unsigned ones. A NaN becomes the one pattern that wins either way (max: 0x7f..f, the largest
// signed; min: 0xff..f, the largest unsigned), so it propagates as rt_combine's does; -0.0 orders
// below +0.0, as there.
template <typename S, typename U>
__device__ __forceinline__ void rt_atomic_float_minmax(A* addr, A v) {
  static_assert(sizeof(S) == sizeof(A) && sizeof(U) == sizeof(A), "the float's own size");
  U bits;
  memcpy(&bits, &v, sizeof(A));
  constexpr U sign = U(1) << (sizeof(U) * 8 - 1);
#if defined(RT_ATOMIC_MAX)
  if (v != v) bits = U(~sign);
  if (bits & sign) atomicMin(reinterpret_cast<U*>(addr), bits);
  else atomicMax(reinterpret_cast<S*>(addr), S(bits));
#else
  if (v != v) bits = U(~U(0));
  if (bits & sign) atomicMax(reinterpret_cast<U*>(addr), bits);
  else atomicMin(reinterpret_cast<S*>(addr), S(bits));
#endif
}

__device__ __forceinline__ void rt_atomic_combine(A* addr, A v) {
#if defined(RT_ATOMIC_ADD) && (defined(RT_ACC_I32) || defined(RT_ACC_U32) || defined(RT_ACC_F32))
  atomicAdd(addr, v);
#elif defined(RT_ATOMIC_ADD) && defined(RT_ACC_F64) && __CUDA_ARCH__ >= 600
  atomicAdd(addr, v);
#elif defined(RT_ATOMIC_ADD) && defined(RT_ACC_I64)
  atomicAdd(reinterpret_cast<unsigned long long*>(addr), (unsigned long long)v);
#elif defined(RT_ATOMIC_MIN) && (defined(RT_ACC_I32) || defined(RT_ACC_U32))
  atomicMin(addr, v);
#elif defined(RT_ATOMIC_MAX) && (defined(RT_ACC_I32) || defined(RT_ACC_U32))
  atomicMax(addr, v);
#elif defined(RT_ATOMIC_MIN) && defined(RT_ACC_I64)
  atomicMin(reinterpret_cast<long long*>(addr), (long long)v);
#elif defined(RT_ATOMIC_MAX) && defined(RT_ACC_I64)
  atomicMax(reinterpret_cast<long long*>(addr), (long long)v);
#elif (defined(RT_ATOMIC_MIN) || defined(RT_ATOMIC_MAX)) && defined(RT_ACC_F32)
  rt_atomic_float_minmax<int, unsigned int>(addr, v);
#elif (defined(RT_ATOMIC_MIN) || defined(RT_ATOMIC_MAX)) && defined(RT_ACC_F64)
  rt_atomic_float_minmax<long long, unsigned long long>(addr, v);
#else
  // A float64 sum before sm_60, or an op with no atomic of its own (the catalogue admits no
  // atomic finish for those; a CAS loop keeps the source compiling where the size allows).
  if constexpr (sizeof(A) == 8) rt_atomic_cas<unsigned long long>(addr, v);
  else if constexpr (sizeof(A) == 4) rt_atomic_cas<unsigned int>(addr, v);
  else __trap();
#endif
}

// Atomic combine of an accumulator into a result element. For a bf16 or f16 result
// (RT_HALF_RESULT) a 16-bit CAS loop (sm_70+) that combines in float and rounds: exact for min and
// max, which is all the catalogue admits (a sum would round at every block,
// kernels/catalogue.cpp); a result of the accumulator's own type (float32 for a wide result) is
// combined as it.
__device__ __forceinline__ void rt_atomic_out(R* addr, A v) {
#if defined(RT_ATOMIC_KEY) // the workspace of keys (templates/segmented/post.cuh)
  atomicMax(addr, rt_key(v));
#elif defined(RT_ATOMIC_SHIFTED) // the columns' alone, with the column's shift: rt_atomic_shifted
  __trap();
#elif defined(RT_HALF_RESULT)
  unsigned short old = *reinterpret_cast<volatile unsigned short*>(addr), assumed;
  do {
    assumed = old;
    const unsigned short next = rt_narrow(rt_combine(rt_widen(assumed), v));
    if (next == assumed) return;
    old = atomicCAS(addr, assumed, next);
  } while (old != assumed);
#else
  // Results of another type than the accumulator have no atomic finish (kernels/catalogue.cpp).
  if constexpr (sizeof(R) == sizeof(A)) rt_atomic_combine(reinterpret_cast<A*>(addr), v);
  else __trap();
#endif
}

#if defined(RT_ATOMIC_SHIFTED)
// A shifted op's atomic finish (var, std; templates/segmented/post.cuh): the partial's float64 sums
// about `shift`, its column's first element (rt_shift), added field by field. A partial of no
// elements, or of elements all equal to the shift, adds nothing.
__device__ __forceinline__ void rt_atomic_shifted(R* addr, A v, double shift) {
  const R s = rt_shift(v, shift);
  if (s.s1 == 0.0 && s.s2 == 0.0) return;
  atomicAdd(&addr->s1, s.s1);
  atomicAdd(&addr->s2, s.s2);
}
#endif

// ---- programmatic dependent launch (sm_90+) ------------------------------------------------

// On sm_90 and later the host launches the two-pass finish's second kernel with programmatic
// serialization: it may start as soon as every block of the reduction has issued rt_pdl_trigger,
// and waits (rt_pdl_wait: until the reduction has completed and its stores are visible) before it
// reads the partials. Both are no-ops for a kernel launched without that attribute, and compiled
// out before sm_90, where the host launches plainly (kernels/runner.cpp keys both on the compile
// target).
__device__ __forceinline__ void rt_pdl_wait() {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
__device__ __forceinline__ void rt_pdl_trigger() {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// ---- warp level ---------------------------------------------------------------------------

// Reduces v across the 32 lanes of a full warp; lane 0 gets the result.
__device__ __forceinline__ A rt_warp_reduce(A v) {
#if defined(RT_TAIL_REDUX) && defined(RT_REDUX_ADD)
  return A(__reduce_add_sync(0xffffffffu, (unsigned)v));
#elif defined(RT_TAIL_REDUX) && defined(RT_REDUX_MIN)
  return __reduce_min_sync(0xffffffffu, v);
#elif defined(RT_TAIL_REDUX) && defined(RT_REDUX_MAX)
  return __reduce_max_sync(0xffffffffu, v);
#else
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1)
    v = rt_combine(v, rt_shfl_down(v, offset));
  return v;
#endif
}

// The last warp of a shared-memory tree: smem[0..63] hold partials, called by threads 0..31.
// Returns the block's value in thread 0.
__device__ __forceinline__ A rt_warp_tail(A* smem, unsigned tid) {
#if defined(RT_TAIL_VOLATILE)
  // The material's warp-synchronous form: relies on lock-step execution, which independent
  // thread scheduling (sm_70+) does not guarantee.
  volatile A* vs = smem;
  vs[tid] = rt_combine(vs[tid], vs[tid + 32]);
  vs[tid] = rt_combine(vs[tid], vs[tid + 16]);
  vs[tid] = rt_combine(vs[tid], vs[tid + 8]);
  vs[tid] = rt_combine(vs[tid], vs[tid + 4]);
  vs[tid] = rt_combine(vs[tid], vs[tid + 2]);
  vs[tid] = rt_combine(vs[tid], vs[tid + 1]);
  return vs[0];
#elif defined(RT_TAIL_SYNCWARP)
  // Read, barrier, write, barrier: no lane overwrites a value another lane has yet to read.
  A v = rt_combine(smem[tid], smem[tid + 32]);
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) {
    __syncwarp();
    smem[tid] = v;
    __syncwarp();
    v = rt_combine(v, smem[tid + offset]);
  }
  return v;
#else // shfl, redux
  return rt_warp_reduce(rt_combine(smem[tid], smem[tid + 32]));
#endif
}

// ---- loading ------------------------------------------------------------------------------

// The material's first step: each thread combines RT_UNROLL elements one data block apart
// (`block` = the block size), starting at its own element of block `blockIdx.x`'s group. Elements
// past n count as the identity, so a last group shorter than RT_UNROLL blocks is read whole.
__device__ __forceinline__ A rt_load_unrolled(const T* __restrict__ in, rt_size n,
                                              unsigned block RT_IN2_DECL(in2)) {
  const rt_size base = rt_size(blockIdx.x) * block * RT_UNROLL + threadIdx.x;
  A v = rt_identity();
#pragma unroll
  for (int k = 0; k < RT_UNROLL; ++k) {
    const rt_size idx = base + rt_size(k) * block;
    if (idx < n) v = rt_pair_fold(v, in[idx], in2[idx], idx);
  }
  return v;
}

// Vectors body[i + k * spacing] (k < RT_UNROLL) for i = first, first + stride, ... below nvec,
// folded into acc[k] (rt_fold: acc[k] comes in as the identity, its indices increase): whole
// chunks with their RT_UNROLL loads issued before any is used, then this thread's last, partial
// chunk. The vector kernels' main loop (a grid, or lanes of a segment).
// `at`: the index of body[0]'s first element in its segment (the head read as scalars before it).
// `body2_elems`: with two inputs, the second input's element at body[0] (its vectors are read at
// body's offsets).
__device__ __forceinline__ void rt_vec_accumulate(const rt_vec* __restrict__ body, rt_size nvec,
                                                  rt_size first, rt_size spacing, rt_size stride,
                                                  A (&acc)[RT_UNROLL],
                                                  rt_size at RT_IN2_DECL(body2_elems)) {
  RT_IN2_ONLY(const rt_vec* __restrict__ body2 = reinterpret_cast<const rt_vec*>(body2_elems);)
  rt_size i = first;
  for (; i + rt_size(RT_UNROLL - 1) * spacing < nvec; i += stride) {
    rt_vec r[RT_UNROLL];
    RT_IN2_ONLY(rt_vec r2[RT_UNROLL];)
#pragma unroll
    for (int k = 0; k < RT_UNROLL; ++k) {
      r[k] = rt_load(body + i + rt_size(k) * spacing);
      RT_IN2_ONLY(r2[k] = rt_load(body2 + i + rt_size(k) * spacing);)
    }
#pragma unroll
    for (int k = 0; k < RT_UNROLL; ++k)
#pragma unroll
      for (int e = 0; e < RT_VEC; ++e)
        acc[k] = rt_pair_fold(acc[k], r[k].x[e], r2[k].x[e], at + (i + rt_size(k) * spacing) * RT_VEC + e);
  }
#pragma unroll
  for (int k = 0; k < RT_UNROLL; ++k) {
    const rt_size j = i + rt_size(k) * spacing;
    if (j < nvec) {
      const rt_vec r = rt_load(body + j);
      RT_IN2_ONLY(const rt_vec r2 = rt_load(body2 + j);)
#pragma unroll
      for (int e = 0; e < RT_VEC; ++e)
        acc[k] = rt_pair_fold(acc[k], r.x[e], r2.x[e], at + j * RT_VEC + e);
    }
  }
}

// Whether p2 (the second input) lies at p's offset from a vector boundary, so that both can be
// read as vectors from the same element on.
__device__ __forceinline__ bool rt_same_misalign(const T* p, const T* p2) {
  return (reinterpret_cast<rt_size>(p) / sizeof(T)) % RT_VEC ==
         (reinterpret_cast<rt_size>(p2) / sizeof(T)) % RT_VEC;
}

// ---- block level --------------------------------------------------------------------------

// Shared memory of the launch: blockDim.x accumulators (and a word for flags).
extern __shared__ __align__(16) unsigned char rt_smem_raw[];
__device__ __forceinline__ A* rt_smem() { return reinterpret_cast<A*>(rt_smem_raw); }

// Reduces one value per thread over the block; thread 0 gets the result. Every thread calls it.
// With a shuffle-family tail: warp partials through shared memory, then one warp. Otherwise the
// interleaved tree in shared memory down to 64, then the warp tail (or the barrier loop to 1).
__device__ __forceinline__ A rt_block_reduce(A v) {
  A* smem = rt_smem();
  const unsigned tid = threadIdx.x;
#if defined(RT_TAIL_SHFL) || defined(RT_TAIL_REDUX)
  const unsigned warps = blockDim.x / 32;
  v = rt_warp_reduce(v);
  if (warps == 1) return v;
  if ((tid & 31) == 0) smem[tid / 32] = v;
  __syncthreads();
  v = tid < warps ? smem[tid] : rt_identity();
  if (tid < 32) v = rt_warp_reduce(v);
  __syncthreads(); // smem may be reused by the caller
  return v;
#else
  smem[tid] = v;
  __syncthreads();
#if defined(RT_TAIL_NONE)
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    if (tid < s) smem[tid] = rt_combine(smem[tid], smem[tid + s]);
    __syncthreads();
  }
  v = smem[0];
#else
  for (unsigned s = blockDim.x / 2; s > 32; s >>= 1) {
    if (tid < s) smem[tid] = rt_combine(smem[tid], smem[tid + s]);
    __syncthreads();
  }
  if (tid < 32) v = rt_warp_tail(smem, tid);
#endif
  __syncthreads();
  return v;
#endif
}

// ---- finishing: one value per block becomes the result ------------------------------------

// The first-block finish: an atomic finish that sets the result itself, so nothing runs before the
// launch (a memset of the result costs ~0.7 us of a ~7 us call on an H100). `counter` holds a ticket
// word (generation << 32 | blocks arrived) and a ready word. Thread 0 of each block takes a ticket
// as the block starts; the first to arrive sets the result to the identity and publishes
// ready = generation + 1; the last to arrive moves the word on to the next generation with none
// arrived, so the state is ready for the next launch whatever its grid, with no host step. Before
// its atomic each block waits until ready holds its generation's value: it only waits on the first
// block, which is running (it took a ticket), so any grid size is safe. Other finishes compile the
// ticket away.
struct rt_ticket {
  unsigned long long word; // the ticket word as this block found it
  unsigned ready;          // ready as last read
};
#if defined(RT_FINISH_FIRSTBLOCK)
struct rt_first_state {
  unsigned long long ticket;
  unsigned ready;
};
__device__ __forceinline__ rt_first_state* rt_first(unsigned* counter) {
  return reinterpret_cast<rt_first_state*>(counter);
}
__device__ __forceinline__ unsigned rt_load_acquire(const unsigned* p) {
#if __CUDA_ARCH__ >= 700
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
#else
  const unsigned v = *reinterpret_cast<const volatile unsigned*>(p);
  __threadfence();
  return v;
#endif
}
__device__ __forceinline__ void rt_store_release(unsigned* p, unsigned v) {
#if __CUDA_ARCH__ >= 700
  asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
#else
  __threadfence();
  *reinterpret_cast<volatile unsigned*>(p) = v;
#endif
}
#endif

// Called by every thread as the block starts.
__device__ __forceinline__ rt_ticket rt_finish_start(R* out, unsigned* counter) {
  rt_ticket t = {0, 0};
#if defined(RT_FINISH_FIRSTBLOCK)
  if (threadIdx.x == 0 && gridDim.x > 1) {
    rt_first_state* st = rt_first(counter);
    t.word = atomicAdd(&st->ticket, 1ull);
    if (unsigned(t.word) == gridDim.x - 1) atomicAdd(&st->ticket, (1ull << 32) - gridDim.x);
    if (unsigned(t.word) == 0) {
      *out = rt_result(rt_identity());
      rt_store_release(&st->ready, unsigned(t.word >> 32) + 1);
    }
  }
#endif
  return t;
}

// Called by every thread before the block reduction, whose time hides the read of ready (the first
// block has long published it by then, except in the smallest grids).
__device__ __forceinline__ rt_ticket rt_finish_peek(rt_ticket t, unsigned* counter) {
#if defined(RT_FINISH_FIRSTBLOCK)
  if (threadIdx.x == 0 && gridDim.x > 1)
    t.ready = rt_load_acquire(&rt_first(counter)->ready);
#endif
  return t;
}

// Called by every thread of every block with the block's value in thread 0.
// `ticket` is the first-block finish's (rt_finish_start, rt_finish_peek); other finishes ignore it.
__device__ __forceinline__ void rt_finish_block(A v, A* partials, R* out, unsigned* counter,
                                                rt_size n, rt_ticket ticket = rt_ticket{0, 0}) {
#if defined(RT_FINISH_ATOMIC)
  if (threadIdx.x == 0) rt_atomic_out(out, v);
#elif defined(RT_FINISH_FIRSTBLOCK)
  if (threadIdx.x != 0) return;
  if (gridDim.x == 1) { // one block: its value is the result, the state is left untouched
    *out = rt_post(v, n);
    return;
  }
  const unsigned want = unsigned(ticket.word >> 32) + 1;
  if (ticket.ready != want)
    while (rt_load_acquire(&rt_first(counter)->ready) != want) {
    }
  rt_atomic_out(out, v);
#elif defined(RT_FINISH_HOST)
  if (threadIdx.x == 0) partials[blockIdx.x] = v;
#elif defined(RT_FINISH_TWOPASS)
  // One block: its value is the result and there is no second pass (LaunchPlan::second_pass).
  if (threadIdx.x == 0) {
    if (gridDim.x == 1) *out = rt_post(v, n);
    else partials[blockIdx.x] = v;
  }
#elif defined(RT_FINISH_LASTBLOCK)
  // Publish the partial, then take a ticket; the block that takes the last ticket sees every
  // partial (the fence orders each block's store before its ticket) and combines them in a fixed
  // order, so the result does not depend on which block came last.
  __shared__ bool rt_is_last;
  if (gridDim.x == 1) { // one block: its value is the result (small n: no fence, no ticket)
    if (threadIdx.x == 0) *out = rt_post(v, n);
    return;
  }
  if (threadIdx.x == 0) {
    partials[blockIdx.x] = v;
    __threadfence();
    rt_is_last = atomicAdd(counter, 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (rt_is_last) {
    __threadfence();
    A acc = rt_identity();
    for (unsigned i = threadIdx.x; i < gridDim.x; i += blockDim.x)
      acc = rt_combine(acc, rt_ldcg(partials + i));
    acc = rt_block_reduce(acc);
    if (threadIdx.x == 0) {
      *out = rt_post(acc, n);
      *counter = 0; // ready for the next launch
    }
  }
#endif
}

// The one-block second pass of the two-pass finish (also used by host code paths that want a
// device-side combine). Deterministic: a fixed assignment of partials to threads.
extern "C" __global__ void rt_combine_partials(const A* __restrict__ partials, R* __restrict__ out,
                                               rt_size count, rt_size n) {
  rt_pdl_wait();
  A acc = rt_identity();
  for (rt_size i = threadIdx.x; i < count; i += blockDim.x) acc = rt_combine(acc, partials[i]);
  acc = rt_block_reduce(acc);
  if (threadIdx.x == 0) *out = rt_post(acc, n);
}
