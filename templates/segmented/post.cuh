// The post pass of a segmented atomic finish (kernels/catalogue.h, atomic_post_pass) and of the
// ordered finish (Finish::twopass: partials in a workspace, combined in block order). The op's
// description was rendered with R and rt_post renamed to rt_result_type and rt_result_post; from
// here on R is the accumulator and rt_post keeps it, so every write of the mapping (the fill, its
// direct stores, its atomics) goes to an accumulator (`out` is A*: the results themselves where
// the accumulator is their type, else a workspace), and rt_segmented_post then writes the results.
#undef R
#undef rt_post
#undef RT_HALF_RESULT // the accumulators are combined as themselves; the post-map rounds once
#if defined(RT_ATOMIC_KEY)
// A keyed op's atomic finish (argmax, argmin: OpAtomic::key) combines the accumulators' ordered
// keys (the op's rt_key), which atomicMax takes: the workspace holds keys.
typedef unsigned long long R;
__device__ __forceinline__ R rt_post(A a, rt_size) { return rt_key(a); }
__device__ __forceinline__ A rt_slot(R k, rt_size) { return rt_unkey(k); }
#elif defined(RT_ATOMIC_SHIFTED)
// A shifted op's atomic finish (var, std: OpAtomic::shifted) adds the accumulators' float64 sums
// about their column's first element (the op's rt_shift; the columns template gives it,
// rt_atomic_shifted): the workspace holds sums, which the post pass takes back to an accumulator
// of the column's rows. rt_post gives an accumulator's sums about 0 (the fill's zeros).
typedef rt_sums R;
__device__ __forceinline__ R rt_post(A a, rt_size) { return rt_shift(a, 0.0); }
__device__ __forceinline__ A rt_slot(R s, rt_size n) { return rt_unshift(s, n); }
#else
typedef A R;
__device__ __forceinline__ R rt_post(A a, rt_size) { return a; }
__device__ __forceinline__ A rt_slot(R a, rt_size) { return a; }
#endif

// result[i] = the op's post-map of acc[i] and the count of segment i (rows: their length;
// columns: the rows; offsets segments: from the offsets, an empty one for decreasing offsets).
// acc and result may be one buffer (no __restrict__): a thread reads each accumulator it writes
// over first.
// The ordered finish (RT_FINISH_TWOPASS) combines each result's partials first: its templates
// define their own rt_segmented_post (templates/segmented/segmented.cuh, rt_group_ordered).
#if !defined(RT_FINISH_TWOPASS)
extern "C" __global__ void rt_segmented_post(const R* acc, rt_result_type* result,
                                             const long long* __restrict__ offsets, rt_size count,
                                             rt_size length) {
  // Launched programmatically on sm_90+: until the kernel before it has completed (common.cuh's
  // rt_pdl_wait, which comes after this file).
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
  for (rt_size i = rt_size(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += rt_size(gridDim.x) * blockDim.x) {
#if defined(RT_PROBLEM_SEGMENTS)
    const long long b = offsets[i], e = offsets[i + 1];
    const rt_size n = e > b ? rt_size(e - b) : 0;
#else
    const rt_size n = length;
#endif
    const A a = rt_slot(acc[i], n);
    result[i] = rt_result_post(a, n);
  }
}
#endif
