// reduce-tune: the sweeps' inputs uploaded through pinned staging buffers.
// A copy from pageable memory (cuMemcpyHtoD of a std::vector) runs at a fraction of the bus's
// bandwidth: the driver stages it through its own small pinned buffers on one host thread. Here the
// host copies a chunk into one of two pinned buffers of our own (on several threads), while the
// DMA of the chunk before it runs from the other, on a stream of its own. Pinning the inputs
// themselves instead (cuMemHostRegister) costs about as much per input as the copy it saves.
#pragma once

#include "kernels/driver.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace reduce_tune {

/// One piece of a staged copy: bytes [offset, offset + bytes) of the source and the destination,
/// through staging buffer `slot`.
struct StageChunk {
  std::size_t offset = 0, bytes = 0;
  unsigned slot = 0;
  bool operator==(const StageChunk&) const = default;
};

/// The chunks of a copy of `bytes`: pieces of `chunk_bytes` (the last one the rest), through
/// `slots` staging buffers in turn; none for 0 bytes. Throws std::invalid_argument for a chunk of 0
/// bytes or no slots.
std::vector<StageChunk> stage_chunks(std::size_t bytes, std::size_t chunk_bytes, unsigned slots);

/// The steps of a staged copy, apart from how they are done (a GPU's, or a test's on the host).
class StagingSteps {
public:
  virtual ~StagingSteps() = default;
  /// Waits until the last chunk sent from `slot` has been read out of it.
  virtual void reuse(unsigned slot) = 0;
  /// Copies the chunk's source bytes into its slot.
  virtual void fill(const StageChunk& c) = 0;
  /// Starts the chunk's transfer from its slot to the destination; returns without waiting for it.
  virtual void send(const StageChunk& c) = 0;
  /// Waits until every chunk sent is at the destination.
  virtual void finish() = 0;
};

/// Copies `bytes` in the chunks of stage_chunks: each slot is filled only once the chunk sent from
/// it before has left it, so the host fills one slot while the chunk in the other is in transit.
/// Returns after finish(); does nothing for 0 bytes.
void staged_copy(std::size_t bytes, std::size_t chunk_bytes, unsigned slots, StagingSteps& steps);

/// The staging buffers' largest size: a 1 GiB input is 32 chunks, so all but one chunk's host copy
/// or transfer overlaps the other, and each chunk's copy is spread over up to 8 threads of 4 MiB.
constexpr std::size_t kStageChunkBytes = std::size_t(32) << 20;
constexpr unsigned kStageSlots = 2;
/// Uploads below this go straight from pageable memory: they take microseconds either way, and a
/// sweep of small inputs alone (a point tuned on first use) pins nothing.
constexpr std::size_t kStageMinBytes = std::size_t(1) << 20;

/// Uploads through pinned staging buffers on a copy stream of its own; needs a current context,
/// which must outlive it. The buffers are allocated at the first upload of `min_bytes` or more,
/// each a quarter of it (in whole MiB, up to `chunk_bytes`), grown for a larger one, and freed
/// with this object. Smaller uploads, and any where the driver cannot pin the buffers (out of pinned
/// memory), go from pageable memory as cuda::upload_sync does.
/// Each upload is complete when the call returns, so none runs beside a timed repetition (the next
/// input is not uploaded during the current one's measurements: they alternate with its checks
/// candidate by candidate, leaving no phase free of timing to hide a copy in).
class StagedUpload {
public:
  explicit StagedUpload(std::size_t chunk_bytes = kStageChunkBytes, unsigned slots = kStageSlots,
                        std::size_t min_bytes = kStageMinBytes);
  ~StagedUpload();
  StagedUpload(const StagedUpload&) = delete;
  StagedUpload& operator=(const StagedUpload&) = delete;

  /// Copies `bytes` of host memory to `dst` and returns once they are there. The copy starts after
  /// the work queued on `after` so far (0: none), which may still read `dst`'s old contents.
  void operator()(CUdeviceptr dst, const void* src, std::size_t bytes, CUstream after = nullptr);

  /// What has been uploaded, and the seconds the calls took (host copies, transfers and waits).
  std::uint64_t bytes() const { return bytes_; }
  double seconds() const { return seconds_; }
  /// Of bytes(), those that went through the pinned staging buffers.
  std::uint64_t staged_bytes() const { return staged_bytes_; }

private:
  struct Staging;
  // Staging buffers of at least `want` bytes a slot, where the driver can pin them; else null.
  Staging* staging(std::size_t want);
  std::size_t chunk_bytes_, min_bytes_;
  unsigned slots_;
  std::unique_ptr<Staging> staging_;
  bool out_of_pinned_ = false; // an allocation failed: stay with the buffers there are, if any
  std::uint64_t bytes_ = 0, staged_bytes_ = 0;
  double seconds_ = 0;
};

} // namespace reduce_tune
