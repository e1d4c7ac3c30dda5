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

/// The staging buffers' size: a 1 GiB input is 32 chunks, so all but one chunk's host copy or
/// transfer overlaps the other, and each chunk's copy is spread over up to 8 threads of 4 MiB.
constexpr std::size_t kStageChunkBytes = std::size_t(32) << 20;
constexpr unsigned kStageSlots = 2;

/// Uploads through pinned staging buffers (allocated on first use, freed with this object) on a
/// copy stream of its own; needs a current context, which must outlive it. Where the driver
/// cannot pin them (out of pinned memory), uploads from pageable memory as cuda::upload_sync does.
/// Each upload is complete when the call returns, so none runs beside a timed repetition (the next
/// input is not uploaded during the current one's measurements: they alternate with its checks
/// candidate by candidate, leaving no phase free of timing to hide a copy in).
class StagedUpload {
public:
  explicit StagedUpload(std::size_t chunk_bytes = kStageChunkBytes, unsigned slots = kStageSlots);
  ~StagedUpload();
  StagedUpload(const StagedUpload&) = delete;
  StagedUpload& operator=(const StagedUpload&) = delete;

  /// Copies `bytes` of host memory to `dst` and returns once they are there. The copy starts after
  /// the work queued on `after` so far (0: none), which may still read `dst`'s old contents.
  void operator()(CUdeviceptr dst, const void* src, std::size_t bytes, CUstream after = nullptr);

  /// What has been uploaded, and the seconds the calls took (host copies, transfers and waits).
  std::uint64_t bytes() const { return bytes_; }
  double seconds() const { return seconds_; }
  /// Whether the uploads so far went through pinned staging buffers (false: from pageable memory).
  bool pinned() const { return pinned_; }

private:
  struct Staging;
  std::size_t chunk_bytes_;
  unsigned slots_;
  std::unique_ptr<Staging> staging_; // made on first use
  bool tried_ = false, pinned_ = false;
  std::uint64_t bytes_ = 0;
  double seconds_ = 0;
};

} // namespace reduce_tune
