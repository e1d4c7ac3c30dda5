// reduce-tune: a sweep's input check on the device (tuner/input_hash.h): the 64-bit hash of an
// input's bytes, so the host compares one word with the hash it computed when it made the input
// instead of reading the input back. The hash is the sum mod 2^64 of mix(w_k ^ k K) over the
// input's 8-byte little-endian words w_k (the last one padded with zeros): a sum, so any thread
// may add any word; and a changed word changes its term alone (mix is a bijection), so the sum.
//
// *hash: set to 0 by the host before the launch. No CUDA header is needed.

typedef unsigned long long rt_u64;

__device__ __forceinline__ rt_u64 rt_mix(rt_u64 x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// `data` is a device allocation's start (aligned to 256 bytes): its whole words load as words.
extern "C" __global__ void rt_input_hash(const unsigned char* data, rt_u64 bytes, rt_u64* hash) {
  const rt_u64 whole = bytes / 8, words = (bytes + 7) / 8;
  const rt_u64* w = (const rt_u64*)data;
  rt_u64 sum = 0;
  for (rt_u64 k = (rt_u64)blockIdx.x * blockDim.x + threadIdx.x; k < words; k += (rt_u64)gridDim.x * blockDim.x) {
    rt_u64 v = 0;
    if (k < whole) {
      v = w[k];
    } else { // the last, partial word
      for (rt_u64 b = 8 * k; b < bytes; ++b) v |= (rt_u64)data[b] << (8 * (b - 8 * k));
    }
    sum += rt_mix(v ^ (k * 0xd6e8feb86659fd93ull));
  }
  for (int off = 16; off > 0; off /= 2) sum += __shfl_down_sync(0xffffffffu, sum, off);
  if ((threadIdx.x & 31u) == 0 && sum) atomicAdd(hash, sum);
}
