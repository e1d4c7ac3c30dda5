// Probe behind design choices of the finish and the load (docs/PERFORMANCE.md, "The probe"): how
// the finish of a single-pass reduction, the load kind and the way L2 is flushed change the time
// of a float32 sum of 2^10..2^24 elements on one GPU. Built with the bench, run by hand on a GPU:
//   build/bench/probe_finishes
// Contestants (one kernel body, float4 loads, warp-shuffle block reduce): the result set by
// cudaMemsetAsync, cuStreamWriteValue32 or a one-thread kernel, then one atomicAdd per block
// ("atomic"; and, to price the initialisation, none at all: a wrong result, marked so); a ticket
// counter whose last block reads a device accumulator ("ticket", no init); the last block
// combining per-block partials ("last"); plain, L2::256B-prefetch and evict-first (ldcs) loads;
// data-sized grids (u = loads per thread) or grids of occupancy x SMs; programmatic dependent
// launch (sm_90+): a one-thread init kernel the reduction may overlap ("pdl initk"), a copy of a
// device accumulator ("acc+pdl copy") and the two-pass finish's second kernel ("twopass pdl",
// beside it launched plainly); the self-initialising ("first-block") atomic finish in five forms
// (see SelfState) and, for the preferred shared-memory carveout, empty kernels with shared memory
// and one first-block form with the carveout at 0 and 100 %; CUB's DeviceReduce::Sum
// and an empty kernel (the launch floor) beside them. Flushes: none (hot), a memset of 2 x L2
// (nvbench's way; leaves L2 full of dirty lines), and that memset followed by a read of another
// 2 x L2 buffer. Timing as in bench/bench.cu: a 40 us spin kernel, events around the call, median
// of 50 after 3 warm-ups; each result is checked (except the marked one). Modes: none (all), "pdl",
// "self" (the memset baselines, the first-block finish and the carveout, memset flush, twice).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cub/cub.cuh>
#include <cuda.h>
#include <functional>
#include <random>
#include <string>
#include <vector>
#define CK(x)                                                                                      \
  do {                                                                                             \
    cudaError_t e = (x);                                                                           \
    if (e != cudaSuccess) {                                                                        \
      printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e));                             \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

__global__ void spin(unsigned long long ns) {
  unsigned long long t0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  for (;;) {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    if (t - t0 > ns)
      break;
  }
}
__global__ void readflush(const int4 *p, size_t n, int *sink) {
  int acc = 0;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x) {
    int4 v = __ldcg(p + i);
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x12345678)
    *sink = acc;
}
__global__ void empty_k(float *out) {
  if (threadIdx.x == 0)
    *out = 1.f;
}
__global__ void init_k(float *out) { *out = 0.f; }
// An empty kernel with dynamic shared memory (C only makes distinct functions, whose preferred
// carveout is set apart): does a change of the L1/shared split between kernels cost time?
template <int C> __global__ void empty_smem_k(float *out) {
  extern __shared__ float sm[];
  sm[threadIdx.x] = 1.f;
  __syncwarp();
  if (threadIdx.x == 0)
    *out = sm[1];
}

// Programmatic dependent launch (sm_90+): a kernel launched with the programmatic-serialization
// attribute may start once every block of the kernel before it has issued launch_dependents (or
// exited); griddepcontrol.wait then blocks until that kernel has completed and its writes are
// visible. Without the attribute both are no-ops.
__device__ __forceinline__ void pdl_wait() {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
__device__ __forceinline__ void pdl_trigger() {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
// The init kernel lets the reduction start at once; the reduction waits only before its atomic.
__global__ void init_pdl_k(float *out) {
  pdl_trigger();
  *out = 0.f;
}
// After an ACC reduction: the accumulator (kept at zero between calls) into out, and reset.
__global__ void copy_pdl_k(float *out, float *acc) {
  pdl_wait();
  *out = __ldcg(acc);
  *acc = 0.f;
}
template <int B> __global__ void combine_pdl_k(const float *partials, unsigned count, float *out);

enum Fin { ATOMIC = 0, TICKET = 1, LAST = 2, ATOMIC_PDL = 3, ACC = 4, PARTIALS = 5, SELF = 6 };

// The self-initialising atomic finish: no init before the launch. `st` (zeroed once) holds a ticket
// word (generation << 32 | arrivals) and a ready word. Each block takes a ticket when it starts;
// the block that arrives first sets the result to the identity and publishes ready = generation + 1
// (release); the block that arrives last moves the word to the next generation with 0 arrivals.
// Every block waits for its generation's ready (acquire) before its atomic. The first block is
// running by definition, so no block waits on one that is not scheduled. Mode (M): 0 the first
// block initialises at once (thread 0 waits for its ticket before its loads); 1 after its loads;
// 2 as 0, with a relaxed read of ready issued before the block reduction (acquire re-read only if
// it was not yet set); 3 that early read an acquire; 4 relaxed, then a fence when it matched (an
// acquire pattern); 5 as 3, but thread 0 settles its ticket (init or generation bump) only once its
// first loads are issued, so they are not held up behind the contended ticket.
struct SelfState {
  unsigned long long ticket;
  unsigned ready;
};
__device__ __forceinline__ unsigned ld_acquire(const unsigned *p) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ unsigned ld_relaxed(const unsigned *p) {
  unsigned v;
  asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void st_release(unsigned *p, unsigned v) {
  asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
// After thread 0 took its ticket: the last to arrive moves the word to the next generation with no
// arrivals; the first sets the result and publishes ready.
__device__ __forceinline__ void self_settle(SelfState *st, unsigned long long old, float *out) {
  if (unsigned(old) == gridDim.x - 1)
    atomicAdd(&st->ticket, (1ull << 32) - gridDim.x);
  if (unsigned(old) == 0) {
    *out = 0.f;
    st_release(&st->ready, unsigned(old >> 32) + 1);
  }
}

template <int B> __device__ float block_sum(float v) {
  __shared__ float w[B / 32];
  for (int o = 16; o; o >>= 1)
    v += __shfl_xor_sync(~0u, v, o);
  if ((threadIdx.x & 31) == 0)
    w[threadIdx.x / 32] = v;
  __syncthreads();
  v = threadIdx.x < B / 32 ? w[threadIdx.x] : 0.f;
  if (threadIdx.x < 32)
    for (int o = 16; o; o >>= 1)
      v += __shfl_xor_sync(~0u, v, o);
  return v;
}
// Load hints: 0 __ldg; 1 the L2 256-byte prefetch hint; 2 streaming (evict-first) __ldcs.
template <int H> __device__ __forceinline__ float4 load(const float4 *p) {
  if constexpr (H == 1) {
    float4 v;
    asm volatile("ld.global.nc.L2::256B.v4.f32 {%0, %1, %2, %3}, [%4];"
                 : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
                 : "l"(p));
    return v;
  } else if constexpr (H == 2) {
    return __ldcs(p);
  } else {
    return __ldg(p);
  }
}

template <int B, int U, int F, int H = 0, int M = 0, int C = 0>
__global__ void __launch_bounds__(B) red(const float *__restrict__ in, size_t n, float *out,
                                         float *acc_ws, unsigned *counter, float *partials) {
  if (F == ACC || F == PARTIALS)
    pdl_trigger(); // the finishing kernel may be scheduled now; it waits for this one
  SelfState *st = reinterpret_cast<SelfState *>(counter);
  unsigned long long ticket = 0;
  if (F == SELF && threadIdx.x == 0 && gridDim.x > 1) {
    ticket = atomicAdd(&st->ticket, 1ull);
    if (M != 1 && M != 5)
      self_settle(st, ticket, out);
  }
  const float4 *vin = reinterpret_cast<const float4 *>(in);
  size_t nv = n / 4, stride = (size_t)gridDim.x * B, i = blockIdx.x * (size_t)B + threadIdx.x;
  float a = 0.f;
  bool settled = false; // M 5: thread 0 settles its ticket once its first loads are in flight
  for (; i + (U - 1) * stride < nv; i += U * stride) {
    float4 v[U];
#pragma unroll
    for (int u = 0; u < U; ++u)
      v[u] = load<H>(vin + i + u * stride);
    if (F == SELF && M == 5 && !settled) {
      settled = true;
      if (threadIdx.x == 0 && gridDim.x > 1)
        self_settle(st, ticket, out);
    }
#pragma unroll
    for (int u = 0; u < U; ++u)
      a += (v[u].x + v[u].y) + (v[u].z + v[u].w);
  }
  if (F == SELF && M == 5 && !settled && threadIdx.x == 0 && gridDim.x > 1)
    self_settle(st, ticket, out);
  for (; i < nv; i += stride) {
    float4 v = load<H>(vin + i);
    a += (v.x + v.y) + (v.z + v.w);
  }
  size_t tid = blockIdx.x * (size_t)B + threadIdx.x;
  if (tid < n - nv * 4)
    a += in[nv * 4 + tid];
  unsigned ready_seen = 0;
  if (F == SELF && threadIdx.x == 0 && gridDim.x > 1) {
    if (M == 1)
      self_settle(st, ticket, out);
    if (M == 2 || M == 4)
      ready_seen = ld_relaxed(&st->ready);
    if (M == 3 || M == 5)
      ready_seen = ld_acquire(&st->ready);
  }
  a = block_sum<B>(a);
  if (F == SELF) {
    if (threadIdx.x == 0) {
      if (gridDim.x == 1) {
        *out = a;
      } else {
        const unsigned ready_want = unsigned(ticket >> 32) + 1;
        if (M < 2 || ready_seen != ready_want)
          while (ld_acquire(&st->ready) != ready_want) {
          }
        else if (M == 4)
          asm volatile("fence.acq_rel.gpu;" ::: "memory"); // relaxed read + fence: acquire
        atomicAdd(out, a);
      }
    }
    return;
  }
  if (F == ATOMIC || F == ATOMIC_PDL) {
    if (threadIdx.x == 0) {
      if (F == ATOMIC_PDL)
        pdl_wait(); // the init kernel's store is visible
      atomicAdd(out, a);
    }
  } else if (F == ACC) {
    if (threadIdx.x == 0)
      atomicAdd(acc_ws, a);
  } else if (F == PARTIALS) {
    if (threadIdx.x == 0)
      partials[blockIdx.x] = a;
  } else if (F == TICKET) {
    if (threadIdx.x == 0) {
      atomicAdd(acc_ws, a);
      __threadfence();
      if (atomicAdd(counter, 1u) == gridDim.x - 1) {
        __threadfence();
        *out = atomicExch(acc_ws, 0.f);
        *counter = 0;
      }
    }
  } else {
    __shared__ bool last;
    if (threadIdx.x == 0) {
      partials[blockIdx.x] = a;
      __threadfence();
      last = atomicAdd(counter, 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (last) {
      __threadfence();
      float s = 0.f;
      for (unsigned k = threadIdx.x; k < gridDim.x; k += B)
        s += __ldcg(partials + k);
      s = block_sum<B>(s);
      if (threadIdx.x == 0) {
        *out = s;
        *counter = 0;
      }
    }
  }
}

template <int B> __global__ void combine_pdl_k(const float *partials, unsigned count, float *out) {
  pdl_wait();
  float s = 0.f;
  for (unsigned k = threadIdx.x; k < count; k += B)
    s += partials[k];
  s = block_sum<B>(s);
  if (threadIdx.x == 0)
    *out = s;
}

// Launches k with the programmatic-serialization attribute.
template <typename... P, typename... A>
void launch_pdl(void (*k)(P...), unsigned grid, unsigned block, cudaStream_t s, A... args) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(grid);
  cfg.blockDim = dim3(block);
  cfg.stream = s;
  cudaLaunchAttribute at[1] = {};
  at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  at[0].val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = at;
  cfg.numAttrs = 1;
  CK(cudaLaunchKernelEx(&cfg, k, args...));
}

int main(int argc, char **argv) {
  // probe_finishes [pdl|self]: "pdl" runs only the memset baseline and the PDL contestants, memset
  // flush; "self" the memset baselines and the self-initialising finish, memset flush, twice.
  const std::string mode = argc > 1 ? argv[1] : "";
  const bool pdl_only = mode == "pdl", self_only = mode == "self";
  printf("CUB: CCCL %d.%d.%d (CUB_VERSION %d)\n", CCCL_MAJOR_VERSION, CCCL_MINOR_VERSION,
         CCCL_PATCH_VERSION, CUB_VERSION);
  int sms;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  int l2;
  CK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0));
  size_t fb = 2ull * l2;
  void *flushA, *flushB;
  CK(cudaMalloc(&flushA, fb));
  CK(cudaMalloc(&flushB, fb));
  CK(cudaMemset(flushB, 1, fb));
  int *sink;
  CK(cudaMalloc(&sink, 4));
  float *out, *accws, *partials;
  unsigned *counter;
  CK(cudaMalloc(&out, 8));
  CK(cudaMalloc(&accws, 8));
  CK(cudaMalloc(&partials, 1 << 20));
  CK(cudaMalloc(&counter, 8));
  unsigned *selfst; // SelfState, zeroed once
  CK(cudaMalloc(&selfst, sizeof(SelfState)));
  CK(cudaMemset(selfst, 0, sizeof(SelfState)));
  CK(cudaMemset(accws, 0, 8));
  CK(cudaMemset(counter, 0, 8));
  size_t maxn = 1ull << 24;
  std::vector<float> h(maxn);
  std::mt19937 g(7);
  std::uniform_real_distribution<float> d(-1, 1);
  for (auto &x : h)
    x = d(g);
  float *in;
  CK(cudaMalloc(&in, maxn * 4));
  CK(cudaMemcpy(in, h.data(), maxn * 4, cudaMemcpyHostToDevice));
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CK(cudaFuncSetAttribute(empty_smem_k<1>, cudaFuncAttributePreferredSharedMemoryCarveout, 0));
  CK(cudaFuncSetAttribute(empty_smem_k<2>, cudaFuncAttributePreferredSharedMemoryCarveout, 100));
  CK(cudaFuncSetAttribute(red<256, 4, SELF, 2, 3, 1>, cudaFuncAttributePreferredSharedMemoryCarveout, 0));
  CK(cudaFuncSetAttribute(red<256, 4, SELF, 2, 3, 2>, cudaFuncAttributePreferredSharedMemoryCarveout, 100));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  std::vector<size_t> sizes = {1 << 10, 1 << 14, 1 << 16, 1 << 18, 1 << 20, 3 * (1 << 20) + 17,
                               1 << 22, 1 << 24};
  const char *flushes[] = {"hot", "memset", "clean"};
  for (size_t n : sizes) {
    double ref = 0;
    for (size_t k = 0; k < n; ++k)
      ref += h[k];
    size_t tb = 0;
    CK(cub::DeviceReduce::Sum(nullptr, tb, in, out, (int)n, s));
    void *tmp;
    CK(cudaMalloc(&tmp, tb + 1));
    auto occ = [&](auto kern, int B) {
      int b;
      CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&b, kern, B, 0));
      return b * sms;
    };
    struct C {
      const char *name;
      std::function<void()> f;
    };
    auto grid_of = [&](int B, int U, int cap) {
      size_t data = (n / 4 + (size_t)B * U - 1) / ((size_t)B * U);
      return (unsigned)std::max<size_t>(1, std::min<size_t>(data, cap));
    };
    int occ256 = occ(red<256, 4, ATOMIC>, 256);
    // Most contestants differ only in the kernel, its grid (u loads per thread, capped blocks) and
    // the finish state it is given; the memset's atomic finish sets the result first.
    auto plain = [&](auto kern, int u, int cap, unsigned *state) {
      return [&, kern, u, cap, state] {
        kern<<<grid_of(256, u, cap), 256, 0, s>>>(in, n, out, accws, state, partials);
      };
    };
    auto memset_atomic = [&](auto kern, int u, int cap) {
      return [&, launch = plain(kern, u, cap, counter)] {
        CK(cudaMemsetAsync(out, 0, 4, s));
        launch();
      };
    };
    std::vector<C> cs = {
        {"empty", [&] { empty_k<<<1, 32, 0, s>>>(out); }},
        {"cub",
         [&] {
           size_t b = tb;
           CK(cub::DeviceReduce::Sum(tmp, b, in, out, (int)n, s));
         }},
        {"ceil memset+atomic occ u4", memset_atomic(red<256, 4, ATOMIC>, 4, occ256)},
        {"ceil writevalue+atomic occ u4",
         [&] {
           if (cuStreamWriteValue32(s, reinterpret_cast<CUdeviceptr>(out), 0, 0) != CUDA_SUCCESS)
             std::abort();
           red<256, 4, ATOMIC>
               <<<grid_of(256, 4, occ256), 256, 0, s>>>(in, n, out, accws, counter, partials);
         }},
        {"no init atomic occ u4 (wrong result)", plain(red<256, 4, ATOMIC>, 4, occ256, counter)},
        {"ceil memset+atomic occ u4 L2::256B", memset_atomic(red<256, 4, ATOMIC, 1>, 4, occ256)},
        {"ceil memset+atomic occ u4 ldcs", memset_atomic(red<256, 4, ATOMIC, 2>, 4, occ256)},
        {"ceil memset+atomic data u1 L2::256B", memset_atomic(red<256, 1, ATOMIC, 1>, 1, 1 << 30)},
        {"ceil memset+atomic data u2", memset_atomic(red<256, 2, ATOMIC>, 2, 1 << 30)},
        {"ceil initk+atomic occ u4",
         [&] {
           init_k<<<1, 1, 0, s>>>(out);
           red<256, 4, ATOMIC>
               <<<grid_of(256, 4, occ256), 256, 0, s>>>(in, n, out, accws, counter, partials);
         }},
        {"pdl initk+atomic occ u4 ldcs",
         [&] {
           init_pdl_k<<<1, 1, 0, s>>>(out);
           launch_pdl(red<256, 4, ATOMIC_PDL, 2>, grid_of(256, 4, occ256), 256, s, in, n, out,
                      accws, counter, partials);
         }},
        {"pdl initk+atomic data u2 ldcs",
         [&] {
           init_pdl_k<<<1, 1, 0, s>>>(out);
           launch_pdl(red<256, 2, ATOMIC_PDL, 2>, grid_of(256, 2, 1 << 30), 256, s, in, n, out,
                      accws, counter, partials);
         }},
        {"acc+pdl copy occ u4 ldcs",
         [&] {
           red<256, 4, ACC, 2>
               <<<grid_of(256, 4, occ256), 256, 0, s>>>(in, n, out, accws, counter, partials);
           launch_pdl(copy_pdl_k, 1, 32, s, out, accws);
         }},
        {"twopass occ u4 ldcs",
         [&] {
           const unsigned g = grid_of(256, 4, occ256);
           red<256, 4, PARTIALS, 2><<<g, 256, 0, s>>>(in, n, out, accws, counter, partials);
           combine_pdl_k<256><<<1, 256, 0, s>>>(partials, g, out);
         }},
        {"twopass pdl occ u4 ldcs",
         [&] {
           const unsigned g = grid_of(256, 4, occ256);
           red<256, 4, PARTIALS, 2><<<g, 256, 0, s>>>(in, n, out, accws, counter, partials);
           launch_pdl(combine_pdl_k<256>, 1, 256, s, (const float *)partials, g, out);
         }},
        {"twopass pdl data u2 ldcs",
         [&] {
           const unsigned g = grid_of(256, 2, 1 << 30);
           red<256, 2, PARTIALS, 2><<<g, 256, 0, s>>>(in, n, out, accws, counter, partials);
           launch_pdl(combine_pdl_k<256>, 1, 256, s, (const float *)partials, g, out);
         }},
        {"self occ u4 ldcs", plain(red<256, 4, SELF, 2, 0>, 4, occ256, selfst)},
        {"self late occ u4 ldcs", plain(red<256, 4, SELF, 2, 1>, 4, occ256, selfst)},
        {"self early-poll occ u4 ldcs", plain(red<256, 4, SELF, 2, 2>, 4, occ256, selfst)},
        {"self early-acquire occ u4 ldcs", plain(red<256, 4, SELF, 2, 3>, 4, occ256, selfst)},
        {"self early-fence occ u4 ldcs", plain(red<256, 4, SELF, 2, 4>, 4, occ256, selfst)},
        {"self settle-after-loads occ u4 ldcs", plain(red<256, 4, SELF, 2, 5>, 4, occ256, selfst)},
        {"self settle-after-loads occ u2 ldcs",
         plain(red<256, 2, SELF, 2, 5>, 2, occ(red<256, 2, SELF, 2, 5>, 256), selfst)},
        {"self early-acquire occ u2 ldcs",
         plain(red<256, 2, SELF, 2, 3>, 2, occ(red<256, 2, SELF, 2, 3>, 256), selfst)},
        {"empty smem2k", [&] { empty_smem_k<0><<<1, 32, 2048, s>>>(out); }},
        {"empty smem2k carveout0", [&] { empty_smem_k<1><<<1, 32, 2048, s>>>(out); }},
        {"empty smem2k carveout100", [&] { empty_smem_k<2><<<1, 32, 2048, s>>>(out); }},
        {"self early-acquire occ u4 ldcs carveout0", plain(red<256, 4, SELF, 2, 3, 1>, 4, occ256, selfst)},
        {"self early-acquire occ u4 ldcs carveout100", plain(red<256, 4, SELF, 2, 3, 2>, 4, occ256, selfst)},
        {"self data u2 ldcs", plain(red<256, 2, SELF, 2, 0>, 2, 1 << 30, selfst)},
        {"self early-poll data u2 ldcs", plain(red<256, 2, SELF, 2, 2>, 2, 1 << 30, selfst)},
        {"ceil memset+atomic data u2 ldcs", memset_atomic(red<256, 2, ATOMIC, 2>, 2, 1 << 30)},
        {"memset+pdl atomic occ u4 ldcs",
         [&] {
           CK(cudaMemsetAsync(out, 0, 4, s));
           launch_pdl(red<256, 4, ATOMIC_PDL, 2>, grid_of(256, 4, occ256), 256, s, in, n, out,
                      accws, counter, partials);
         }},
        {"ticket occ u4", plain(red<256, 4, TICKET>, 4, occ256, counter)},
        {"last occ u4", plain(red<256, 4, LAST>, 4, occ256, counter)},
        {"ticket data u1", plain(red<256, 1, TICKET>, 1, 1 << 30, counter)},
        {"ticket data u2", plain(red<256, 2, TICKET>, 2, 1 << 30, counter)},
        {"ticket occ u2 b512",
         [&] {
           red<512, 2, TICKET><<<grid_of(512, 2, occ(red<512, 2, TICKET>, 512)), 512, 0, s>>>(
               in, n, out, accws, counter, partials);
         }},
        {"ticket 2xocc u4", plain(red<256, 4, TICKET>, 4, 2 * occ256, counter)},
        {"ticket occ/2 u4", plain(red<256, 4, TICKET>, 4, occ256 / 2, counter)},
        {"last data u2", plain(red<256, 2, LAST>, 2, 1 << 30, counter)},
    };
    for (int fl = 0; fl < (self_only ? 3 : 2) + 1; ++fl) {
      if ((pdl_only || self_only) && fl != 1 && !(self_only && fl == 3))
        continue;
      printf("n=%zu flush=%s\n", n, flushes[fl == 3 ? 1 : fl]);
      for (auto &c : cs) {
        const std::string name = c.name;
        if (pdl_only && name.find("pdl") == std::string::npos && name != "empty" &&
            name != "cub" && name.find("(wrong") == std::string::npos &&
            name != "ceil memset+atomic occ u4 ldcs" && name != "twopass occ u4 ldcs" &&
            name != "last occ u4")
          continue;
        if (self_only && name.find("self") == std::string::npos && name.find("empty") != 0 &&
            name != "cub" && name.find("(wrong") == std::string::npos &&
            name.find("memset+") == std::string::npos)
          continue;
        if (self_only && name.find("L2::256B") != std::string::npos)
          continue;
        std::vector<float> t;
        for (int r = 0; r < 53; ++r) {
          if (fl == 1 || fl == 3)
            CK(cudaMemsetAsync(flushA, r & 0xff, fb, s));
          if (fl == 2) {
            CK(cudaMemsetAsync(flushA, r & 0xff, fb, s));
            readflush<<<sms * 8, 256, 0, s>>>((const int4 *)flushB, fb / 16, sink);
          }
          spin<<<1, 1, 0, s>>>(40000);
          CK(cudaEventRecord(e0, s));
          c.f();
          CK(cudaEventRecord(e1, s));
          CK(cudaEventSynchronize(e1));
          float ms;
          CK(cudaEventElapsedTime(&ms, e0, e1));
          if (r >= 3)
            t.push_back(ms * 1000);
        }
        CK(cudaGetLastError());
        float got;
        CK(cudaMemcpy(&got, out, 4, cudaMemcpyDeviceToHost));
        std::sort(t.begin(), t.end());
        bool ok = std::string(c.name).rfind("empty", 0) == 0 ||
                  std::string(c.name).find("wrong") != std::string::npos ||
                  std::abs(got - ref) < 1e-4 * n;
        printf("  %-28s %8.2f us  min %8.2f  %s\n", c.name, (t[24] + t[25]) / 2, t[0],
               ok ? "ok" : "WRONG");
      }
    }
    cudaFree(tmp);
  }
}
