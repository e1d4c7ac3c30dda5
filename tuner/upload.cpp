// reduce-tune: uploads through pinned staging buffers.
#include "tuner/upload.h"

#include "tuner/parallel.h"

#include <chrono>
#include <cstring>
#include <stdexcept>

namespace reduce_tune {

std::vector<StageChunk> stage_chunks(std::size_t bytes, std::size_t chunk_bytes, unsigned slots) {
  if (chunk_bytes == 0 || slots == 0) throw std::invalid_argument("a staged copy needs chunks of some bytes and a slot");
  std::vector<StageChunk> out;
  out.reserve((bytes + chunk_bytes - 1) / chunk_bytes);
  for (std::size_t at = 0, k = 0; at < bytes; at += chunk_bytes, ++k)
    out.push_back({at, std::min(chunk_bytes, bytes - at), unsigned(k % slots)});
  return out;
}

void staged_copy(std::size_t bytes, std::size_t chunk_bytes, unsigned slots, StagingSteps& steps) {
  const std::vector<StageChunk> chunks = stage_chunks(bytes, chunk_bytes, slots);
  if (chunks.empty()) return;
  for (std::size_t k = 0; k < chunks.size(); ++k) {
    if (k >= slots) steps.reuse(chunks[k].slot); // its slot last sent chunk k - slots
    steps.fill(chunks[k]);
    steps.send(chunks[k]);
  }
  steps.finish();
}

namespace {

/// The host copy of a chunk: 4 MiB or more a thread (a thread's start costs tens of microseconds;
/// one thread copies a few GB/s, short of the bus's bandwidth).
constexpr std::uint64_t kCopyBytesEach = std::uint64_t(4) << 20;

void parallel_copy(void* dst, const void* src, std::size_t bytes) {
  parallel_for(bytes, kCopyBytesEach, [&](std::uint64_t lo, std::uint64_t hi) {
    std::memcpy(static_cast<char*>(dst) + lo, static_cast<const char*>(src) + lo, hi - lo);
  });
}

/// Page-locked host memory from cuMemHostAlloc; null where the driver is out of it.
class PinnedHost {
public:
  explicit PinnedHost(std::size_t bytes) {
    const CUresult r = cuda::driver().cuMemHostAlloc(&p_, bytes, 0);
    if (r == CUDA_ERROR_OUT_OF_MEMORY) p_ = nullptr;
    else cuda::check(r, "cuMemHostAlloc(&p_, bytes, 0)");
  }
  ~PinnedHost() {
    if (p_) cuda::driver().cuMemFreeHost(p_);
  }
  PinnedHost(const PinnedHost&) = delete;
  PinnedHost& operator=(const PinnedHost&) = delete;
  char* get() const { return static_cast<char*>(p_); }

private:
  void* p_ = nullptr;
};

} // namespace

/// The staging buffers, their stream and an event a slot that marks its last transfer.
struct StagedUpload::Staging final : StagingSteps {
  Staging(std::size_t chunk_bytes, unsigned slots) : chunk(chunk_bytes), host(chunk_bytes * slots), sent(slots) {}
  ~Staging() override {
    // An upload cut short by an exception may have transfers in flight from the buffers freed here.
    if (host.get()) cuda::driver().cuStreamSynchronize(stream.get());
  }

  void reuse(unsigned slot) override { RT_CU(cuEventSynchronize(sent[slot].get())); }
  void fill(const StageChunk& c) override { parallel_copy(host.get() + c.slot * chunk, src + c.offset, c.bytes); }
  void send(const StageChunk& c) override {
    RT_CU(cuMemcpyHtoDAsync(dst + c.offset, host.get() + c.slot * chunk, c.bytes, stream.get()));
    sent[c.slot].record(stream.get());
  }
  void finish() override { stream.synchronize(); }

  std::size_t chunk;
  PinnedHost host;
  cuda::Stream stream;
  std::vector<cuda::Event> sent; // ordering only (no timing)
  // The copy in progress.
  CUdeviceptr dst = 0;
  const char* src = nullptr;
};

StagedUpload::StagedUpload(std::size_t chunk_bytes, unsigned slots, std::size_t min_bytes)
    : chunk_bytes_(chunk_bytes), min_bytes_(min_bytes), slots_(slots) {
  stage_chunks(0, chunk_bytes, slots); // throws for a chunk of 0 bytes or no slots
}

StagedUpload::~StagedUpload() = default;

StagedUpload::Staging* StagedUpload::staging(std::size_t want) {
  if ((staging_ && staging_->chunk >= want) || out_of_pinned_) return staging_.get();
  auto s = std::make_unique<Staging>(want, slots_);
  if (s->host.get()) staging_ = std::move(s);
  else out_of_pinned_ = true; // the smaller buffers, if any, serve in smaller chunks
  return staging_.get();
}

void StagedUpload::operator()(CUdeviceptr dst, const void* src, std::size_t bytes, CUstream after) {
  if (bytes == 0) return;
  const auto t0 = std::chrono::steady_clock::now();
  constexpr std::size_t MiB = std::size_t(1) << 20;
  // Buffers of a quarter of the upload (whole MiB, up to chunk_bytes): four chunks or more, so
  // most of each host copy overlaps a transfer.
  const std::size_t quarter = (bytes + 3) / 4;
  Staging* s = bytes >= min_bytes_ ? staging(std::min(chunk_bytes_, (quarter + MiB - 1) / MiB * MiB)) : nullptr;
  if (s) {
    // The copy stream waits for what `after` holds so far (a kernel still reading the old input).
    if (after) {
      const cuda::Event queued(false);
      queued.record(after);
      RT_CU(cuStreamWaitEvent(s->stream.get(), queued.get(), 0));
    }
    s->dst = dst, s->src = static_cast<const char*>(src);
    staged_copy(bytes, s->chunk, slots_, *s);
    staged_bytes_ += bytes;
  } else {
    if (after) RT_CU(cuStreamSynchronize(after));
    cuda::upload_sync(dst, src, bytes);
  }
  bytes_ += bytes;
  seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

} // namespace reduce_tune
