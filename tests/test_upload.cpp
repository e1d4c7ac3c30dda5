// The staged upload's chunking and order (tuner/upload.h), on the host: the chunks cover a copy
// exactly, and a copy through a fake transfer that completes late lands every byte, never refills
// a slot whose chunk is still in transit, and keeps the other slot's transfer going while it fills;
// the profile reports the upload.
#include <catch2/catch.hpp>

#include "tuner/sweep.h"
#include "tuner/upload.h"

#include <cstring>
#include <deque>
#include <numeric>
#include <stdexcept>

using namespace reduce_tune;

TEST_CASE("upload: chunks cover the copy in order, the last one the rest, none for 0 bytes", "[upload]") {
  CHECK(stage_chunks(0, 8, 2).empty());
  CHECK(stage_chunks(1, 8, 2) == std::vector<StageChunk>{{0, 1, 0}});
  CHECK(stage_chunks(8, 8, 2) == std::vector<StageChunk>{{0, 8, 0}});
  CHECK(stage_chunks(9, 8, 2) == std::vector<StageChunk>{{0, 8, 0}, {8, 1, 1}});
  CHECK(stage_chunks(27, 8, 2) == std::vector<StageChunk>{{0, 8, 0}, {8, 8, 1}, {16, 8, 0}, {24, 3, 1}});
  CHECK(stage_chunks(24, 8, 3) == std::vector<StageChunk>{{0, 8, 0}, {8, 8, 1}, {16, 8, 2}});
  CHECK(stage_chunks(17, 8, 1) == std::vector<StageChunk>{{0, 8, 0}, {8, 8, 0}, {16, 1, 0}});
  // 64 MiB + 3 in the default chunks: two full ones and a 3-byte tail.
  const auto big = stage_chunks((std::size_t(64) << 20) + 3, kStageChunkBytes, kStageSlots);
  REQUIRE(big.size() == 3);
  CHECK(big[2].offset == std::size_t(64) << 20);
  CHECK(big[2].bytes == 3);
  for (std::size_t bytes : {std::size_t(1), std::size_t(1000), std::size_t(4097), std::size_t(1) << 16}) {
    for (std::size_t chunk : {std::size_t(1), std::size_t(7), std::size_t(4096)}) {
      const auto cs = stage_chunks(bytes, chunk, 2);
      std::size_t at = 0;
      for (const StageChunk& c : cs) {
        CHECK(c.offset == at);
        CHECK(c.bytes > 0);
        CHECK(c.bytes <= chunk);
        at += c.bytes;
      }
      CHECK(at == bytes);
    }
  }
  CHECK_THROWS_AS(stage_chunks(10, 0, 2), std::invalid_argument);
  CHECK_THROWS_AS(stage_chunks(10, 8, 0), std::invalid_argument);
}

namespace {

/// Transfers that land only when their slot is reused or the copy finishes, as an asynchronous
/// copy may; checks the order rules on the way.
struct FakeSteps final : StagingSteps {
  FakeSteps(const std::vector<unsigned char>& src, std::size_t chunk, unsigned slots)
      : src(src), dst(src.size(), 0xEE), staging(slots, std::vector<unsigned char>(chunk)), busy(slots, false) {}

  void land(unsigned slot) {
    for (auto it = in_flight.begin(); it != in_flight.end();)
      if (it->slot == slot) {
        std::memcpy(dst.data() + it->offset, staging[slot].data(), it->bytes);
        busy[slot] = false;
        it = in_flight.erase(it);
      } else {
        ++it;
      }
  }
  void reuse(unsigned slot) override {
    ++reuses;
    land(slot);
  }
  void fill(const StageChunk& c) override {
    if (busy[c.slot]) ++refilled_in_flight; // would overwrite bytes not yet sent
    if (!in_flight.empty()) ++filled_during_transfer;
    std::memcpy(staging[c.slot].data(), src.data() + c.offset, c.bytes);
    ++fills;
  }
  void send(const StageChunk& c) override {
    busy[c.slot] = true;
    in_flight.push_back(c);
    max_in_flight = std::max(max_in_flight, in_flight.size());
  }
  void finish() override {
    for (unsigned s = 0; s < staging.size(); ++s) land(s);
    ++finishes;
  }

  const std::vector<unsigned char>& src;
  std::vector<unsigned char> dst;
  std::vector<std::vector<unsigned char>> staging;
  std::vector<bool> busy;
  std::deque<StageChunk> in_flight;
  std::size_t fills = 0, reuses = 0, finishes = 0, refilled_in_flight = 0, filled_during_transfer = 0,
              max_in_flight = 0;
};

} // namespace

TEST_CASE("upload: a staged copy lands every byte and refills a slot only after its transfer", "[upload]") {
  for (unsigned slots : {1u, 2u, 3u}) {
    for (std::size_t bytes : {std::size_t(0), std::size_t(1), std::size_t(63), std::size_t(64),
                              std::size_t(65), std::size_t(64 * 5 + 3)}) {
      INFO(slots << " slot(s), " << bytes << " bytes");
      std::vector<unsigned char> src(bytes);
      std::iota(src.begin(), src.end(), static_cast<unsigned char>(bytes));
      FakeSteps f(src, 64, slots);
      staged_copy(bytes, 64, slots, f);
      const std::size_t chunks = (bytes + 63) / 64;
      CHECK(f.dst == src);
      CHECK(f.fills == chunks);
      CHECK(f.refilled_in_flight == 0);
      CHECK(f.in_flight.empty());
      CHECK(f.finishes == (bytes ? 1u : 0u)); // 0 bytes: nothing at all
      CHECK(f.reuses == (chunks > slots ? chunks - slots : 0));
      CHECK(f.max_in_flight == std::min<std::size_t>(chunks, slots));
      // Two slots or more: every fill after the first overlaps a transfer in flight.
      if (slots > 1 && chunks > 1) CHECK(f.filled_during_transfer == chunks - 1);
    }
  }
}

TEST_CASE("upload: the profile's input line says what was uploaded, how fast, from what memory, and the wait for inputs", "[upload][profile]") {
  SweepTimes t;
  t.total_s = 10, t.input_s = 1, t.inputs = 20;
  CHECK_THAT(profile_text(t), !Catch::Contains("uploaded in")); // nothing uploaded: no figure
  t.upload_s = 0.5, t.upload_bytes = std::uint64_t(3) << 30, t.upload_staged_bytes = t.upload_bytes;
  CHECK_THAT(profile_text(t), Catch::Contains("; 3072 MiB uploaded in 0.50 s, 6.4 GB/s, through pinned staging buffers)"));
  t.upload_staged_bytes = std::uint64_t(3) << 29; // half of it
  CHECK_THAT(profile_text(t), Catch::Contains("6.4 GB/s, 1536 MiB through pinned staging buffers, the rest from pageable memory)"));
  t.upload_staged_bytes = 0;
  CHECK_THAT(profile_text(t), Catch::Contains("uploaded in 0.50 s, 6.4 GB/s, from pageable memory)"));
  t.input_wait_s = 0.25;
  CHECK_THAT(profile_text(t), Catch::Contains("from pageable memory; 0.25 s of it making inputs or waiting for those made ahead)"));
  CHECK_THAT(profile_text(t), Catch::Contains("50.00 ms a input (")); // 1 s over 20 inputs
  // The offsets sweep's layouts are named apart, and an input's time is its own: (1 - 0.4) s over 20.
  t.layout_s = 0.4, t.layouts = 52, t.layouts_ahead = 51;
  const std::string text = profile_text(t);
  CHECK_THAT(text, Catch::Contains("30.00 ms a input and the layouts ("));
  CHECK_THAT(text, Catch::Contains("made ahead; 0.40 s of it the layouts of 52 shapes (offsets drawn, 51 of them ahead, and uploaded))"));
}
