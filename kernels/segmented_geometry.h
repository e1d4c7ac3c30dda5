// reduce-tune: what the segmented catalogue's rules (kernels/segmented.cpp) and its launch
// geometry (kernels/segmented_plan.cpp) both read: which mapping a variant is, and the tiles and
// column stripes its kernels cut the data into. Internal to those two files.
#pragma once

#include "kernels/catalogue.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <string_view>

namespace reduce_tune::segmented_geometry {

// The templates and defines that tell the mappings apart (the variants' `source` and `define`).
inline constexpr std::string_view kMergeSource = "segmented/merge.cu";
inline constexpr std::string_view kFlatSource = "segmented/flat.cu";
inline constexpr std::string_view kBinnedSource = "segmented/binned.cu";
inline constexpr std::string_view kStaged = "RT_STAGED";
inline constexpr std::string_view kFlatCarry = "RT_FLAT_CARRY";
inline constexpr std::string_view kColumnsNarrowName = "columns_narrow";

// columns_narrow: the widest of 8, 4, 2 and 1 threads a stripe that still makes kNarrowStripes
// stripes (kernels/segmented.cpp, kColumnsNarrow).
inline constexpr std::uint64_t kNarrowWidth = 8;
inline constexpr std::uint64_t kNarrowStripes = 256; // about two a SM on the catalogue's GPUs

inline std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return (a + b - 1) / b; }

inline bool takes(const Variant& v, Param p) { return (v.params & p) != 0; }
inline bool is_merge(const Variant& v) { return v.source == kMergeSource; }
inline bool is_flat(const Variant& v) { return v.source == kFlatSource; }
inline bool is_flat_carry(const Variant& v) { return is_flat(v) && v.define == kFlatCarry; }
inline bool is_staged(const Variant& v) { return v.define == kStaged; }
// binned and staged: a first kernel, then the chunks of long segments from a work list.
inline bool lists_chunks(const Variant& v) { return v.source == kBinnedSource; }

// The flat mapping's tile: block x unroll x vec elements, a 32-bit head entry each in shared
// memory (templates/segmented/flat.cu).
inline std::uint64_t flat_tile(const Config& c) {
  return std::uint64_t(c.block) * c.unroll * c.vec;
}

// The merge mapping's tile: block x u items, their elements and 32-bit segment ends in shared
// memory.
inline std::uint64_t merge_tile_bytes(const Config& c, DType dtype) {
  return std::uint64_t(c.block) * c.unroll * (size_of(dtype) + sizeof(std::int32_t));
}

// Columns: TX threads across the columns (a power of two: as many as the stripe needs, up to the
// block; columns_narrow: up to kNarrowWidth, halved while there are fewer than kNarrowStripes
// stripes), TY = block / TX down the rows. A stripe of TX threads covers TX x v columns.
inline std::uint64_t stripe_count(std::uint64_t tx, int vec, std::uint64_t cols) {
  return ceil_div(std::max<std::uint64_t>(cols, 1), tx * vec);
}
// The stripe width (threads) that `cols` columns take, at most `widest`: a thread a vector.
inline std::uint64_t stripe_width(std::uint64_t widest, int vec, std::uint64_t cols) {
  return std::min(widest, std::bit_ceil(stripe_count(1, vec, cols)));
}
inline bool is_narrow(const Config& c) { return c.variant == kColumnsNarrowName; }
inline unsigned tile_width(const Config& c, std::uint64_t cols) {
  std::uint64_t widest = c.block;
  if (is_narrow(c))
    for (widest = kNarrowWidth; widest > 1 && stripe_count(widest, c.vec, cols) < kNarrowStripes;)
      widest /= 2;
  return unsigned(stripe_width(widest, c.vec, cols));
}

} // namespace reduce_tune::segmented_geometry
