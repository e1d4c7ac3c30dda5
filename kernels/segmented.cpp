// reduce-tune: the catalogue of the segmented problems (rows, columns, offsets segments): their
// variants, the sweep's space, and the rules that leave configurations out (segmented_invalid,
// pointless). The validity rules they share are the array catalogue's (kernels/catalogue.cpp),
// which read a variant's parameters from its entry. Their launch geometry and rounding depth are
// kernels/segmented_plan.cpp's.
#include "kernels/catalogue.h"
#include "kernels/segmented.h"
#include "kernels/segmented_geometry.h"
#include "kernels/ops.h"

#include <algorithm>

namespace reduce_tune {
using namespace segmented_geometry;
namespace {

constexpr int kU124[] = {1, 2, 4};
// columns_tile of a few rows: a thread reads every row of its stripe, 8 in flight in one round
// (on an H100 float32 matrices of 8-32 rows took 1.04-1.27x less time with u8 than with u4).
constexpr int kU1248[] = {1, 2, 4, 8};
constexpr int kItems[] = {4, 8, 16}; // merge: items per thread
constexpr Tail kShfl[] = {Tail::shfl};
constexpr Finish kDirect[] = {Finish::direct};
constexpr Finish kAtomic[] = {Finish::atomic};
// The split mappings whose blocks can also leave partials for an ordered post pass (twopass:
// templates/segmented/segmented.cuh): every op, user reductions and non-commutative ones included.
constexpr Finish kAtomicOrdered[] = {Finish::atomic, Finish::twopass};
// columns_split also takes the ordered finish in one kernel (lastblock: the block that takes a
// stripe's last ticket folds its partials in order; templates/segmented/columns.cu).
constexpr Finish kColumnsSplitFinishes[] = {Finish::atomic, Finish::twopass, Finish::lastblock};

constexpr unsigned kGroup = P_BLOCK | P_WIDTH | P_UNROLL | P_VEC | P_FINISH;
constexpr unsigned kBlock = P_BLOCK | P_UNROLL | P_VEC | P_FINISH;
constexpr unsigned kSplit = P_BLOCK | P_UNROLL | P_VEC | P_GRID | P_FINISH;
constexpr unsigned kBinned = kGroup | P_GRID;
constexpr unsigned kMergeParams = P_BLOCK | P_UNROLL | P_GRID | P_FINISH;

constexpr std::string_view kContiguous = "segmented/contiguous.cu";

// Grouped by problem. The block size is compile-time in every segmented template.
constexpr Variant kRowsGroup = {
    "rows_group", "a group of w lanes of a warp per row (w = 1: a thread, 32: a warp)", kGroup,
    kU124, kShfl, kDirect, true, false, 32, kContiguous, "RT_MAP_GROUP", Problem::rows};
constexpr Variant kRowsBlock = {"rows_block", "a block per row", kBlock, kU124, kShfl, kDirect,
                                true, false, 32, kContiguous, "RT_MAP_BLOCK", Problem::rows};
constexpr Variant kRowsSplit = {
    "rows_split", "g blocks per SM spread over the rows, several per long row, combined atomically",
    kSplit, kU124, kShfl, kAtomic, true, false, 32, kContiguous, "RT_MAP_SPLIT", Problem::rows};
constexpr Variant kColumnsTile = {
    "columns_tile",
    "a tile of threads per stripe of columns (v per thread) walks every row; narrow matrices get "
    "tall tiles",
    kBlock, kU1248, kShfl, kDirect, true, false, 32, "segmented/columns.cu", {}, Problem::columns};
constexpr Variant kColumnsSplit = {
    "columns_split",
    "column stripes x row slices (g blocks per SM), combined atomically, or as partials that a "
    "post pass (twopass) or the last block of each stripe (lastblock) combines in order",
    kSplit, kU1248, kShfl, kColumnsSplitFinishes, true, false, 32, "segmented/columns.cu", {},
    Problem::columns};
// The tile mapping with stripes of 1 to 8 threads across: where columns_tile covers a matrix of a
// few hundred to a few thousand columns with a handful of wide stripes (a block each), these give
// many blocks in one kernel, where columns_split needs the fill and atomics. The widest of 8, 4, 2
// and 1 threads that still makes kNarrowStripes stripes (kernels/segmented_geometry.h): on an
// H100, 64-256 columns were fastest with 1 thread a stripe, 512-1024 with 2, 2048 and more with 8
// (docs/history/).
constexpr Variant kColumnsNarrow = {
    kColumnsNarrowName,
    "columns_tile with stripes of 8 threads across or fewer (256 stripes where the columns "
    "allow), the rest of the block down the rows: many blocks in one kernel",
    kBlock, kU124, kShfl, kDirect, true, false, 32, "segmented/columns.cu", {}, Problem::columns};
constexpr Variant kSegmentsGroup = {"segments_group", "a group of w lanes of a warp per segment",
                                    kGroup, kU124, kShfl, kDirect, true, false, 32, kContiguous,
                                    "RT_MAP_GROUP", Problem::segments};
constexpr Variant kSegmentsBlock = {"segments_block", "a block per segment", kBlock, kU124, kShfl,
                                    kDirect, true, false, 32, kContiguous, "RT_MAP_BLOCK",
                                    Problem::segments};
constexpr Variant kSegmentsSplit = {
    "segments_split", "g blocks per SM spread over the segments, combined atomically", kSplit,
    kU124, kShfl, kAtomic, true, false, 32, kContiguous, "RT_MAP_SPLIT", Problem::segments};
constexpr Variant kSegmentsBinned = {
    "segments_binned",
    "load-balanced: short segments by a group of w lanes, long ones cut into chunks that g "
    "blocks per SM share (two kernels)",
    kBinned, kU124, kShfl, kAtomic, true, false, 32, kBinnedSource, {}, Problem::segments};
constexpr Variant kSegmentsMerge = {
    "segments_merge",
    "merge path: segment ends and elements split evenly over g blocks per SM, tiles of u items "
    "per thread staged in shared memory, cut segments combined atomically (two kernels)",
    kMergeParams, kItems, kShfl, kAtomic, true, false, 32, kMergeSource, {}, Problem::segments,
    false, true};
constexpr Variant kSegmentsFlat = {
    "segments_flat",
    "the elements as one flat stream: tiles of b x u x v elements shared evenly by g blocks per SM, "
    "segment heads marked in shared memory, a segmented scan per tile, cut segments combined "
    "atomically",
    kSplit, kU124, kShfl, kAtomic, true, false, 32, kFlatSource, {}, Problem::segments};
constexpr Variant kSegmentsStaged = {
    "segments_staged",
    "b x u consecutive segments a block, their offsets and (where they fit) elements copied into "
    "shared memory at once, a thread per segment from there; a block with a long segment lists "
    "its chunks for g blocks per SM (two kernels)",
    kSplit, kU124, kShfl, kAtomic, true, false, 32, kBinnedSource, kStaged, Problem::segments,
    false, true};
constexpr Variant kSegmentsFlatCarry = {
    "segments_flat_carry",
    "segments_flat without the fill of every result: a segment's value carried from tile to tile "
    "of a block, only those cut between blocks set to the identity first and combined atomically "
    "or (twopass) left as pieces that a post pass combines in block order",
    kSplit, kU124, kShfl, kAtomicOrdered, true, false, 32, kFlatSource, kFlatCarry,
    Problem::segments};

// The evict-first twin of a plain mapping (`name` is the plain one's + "_streaming"): the same
// entry, its vector loads ld.global.cs (rt_load with RT_EVICT_FIRST, as the array's `streaming`).
// On an H100 with a dirty L2 they were 11-21 % faster at 2^24 elements for rows and up to 23 %
// slower at some 2^20 shapes (same configurations, docs/history/), so the sweep picks per
// shape. Every problem's twins come after its plain variants: the sweep measures a twin only where
// its plain configuration is among the fastest of the shape (evict_first_twin_of, TwinFilter).
constexpr Variant evict_first(Variant plain, std::string_view name, std::string_view summary) {
  plain.name = name;
  plain.summary = summary;
  plain.evict_first = true;
  return plain;
}

constexpr Variant kRows[] = {
    kRowsGroup,
    kRowsBlock,
    kRowsSplit,
    evict_first(kRowsGroup, "rows_group_streaming", "rows_group with evict-first loads"),
    evict_first(kRowsBlock, "rows_block_streaming", "rows_block with evict-first loads"),
    evict_first(kRowsSplit, "rows_split_streaming", "rows_split with evict-first loads"),
};
constexpr Variant kColumns[] = {
    kColumnsTile,
    kColumnsSplit,
    kColumnsNarrow,
    evict_first(kColumnsTile, "columns_tile_streaming", "columns_tile with evict-first loads"),
    evict_first(kColumnsSplit, "columns_split_streaming", "columns_split with evict-first loads"),
};
constexpr Variant kSegments[] = {
    kSegmentsGroup,
    kSegmentsBlock,
    kSegmentsSplit,
    kSegmentsBinned,
    kSegmentsMerge,
    kSegmentsFlat,
    kSegmentsFlatCarry,
    kSegmentsStaged,
    evict_first(kSegmentsGroup, "segments_group_streaming", "segments_group with evict-first loads"),
    evict_first(kSegmentsBlock, "segments_block_streaming", "segments_block with evict-first loads"),
    evict_first(kSegmentsSplit, "segments_split_streaming", "segments_split with evict-first loads"),
    evict_first(kSegmentsBinned, "segments_binned_streaming",
                "segments_binned with evict-first loads"),
    evict_first(kSegmentsFlat, "segments_flat_streaming", "segments_flat with evict-first loads"),
    evict_first(kSegmentsFlatCarry, "segments_flat_carry_streaming",
                "segments_flat_carry with evict-first loads"),
};

// The sweep's values (a subset of what the validity rules admit).
constexpr int kWidths[] = {1, 2, 4, 8, 16, 32};
constexpr int kGroupBlocks[] = {256};
constexpr int kBlockBlocks[] = {128, 256, 512};
constexpr int kSplitBlocks[] = {256, 512};
constexpr int kVecs[] = {1, 2, 4};
constexpr int kSplitVecs[] = {2, 4};
constexpr int kSplitGrids[] = {2, 4, 8};
// columns_split with the ordered finishes (twopass, lastblock) also in fewer, taller row slices: one
// block per SM of 512 or 1024 threads, two of 1024, and u8 rows in flight. Those finishes fold every
// slice's partials of a column in order, so their cost grows with the slices, the struct
// accumulators' (argmax, var, logsumexp: 16-byte partials, twice the registers) most. On an H100 at
// 2^24 float32 elements of 64, 256 and 1024 columns (two rounds) those ops took 37.5-38.4 us in them
// against 38.2-39.8 us in the slices of before. Only the ops without an atomic finish sweep them
// (unswept): sum's twopass took 33.7-34.9 us there, its atomic finish 32.5.
constexpr int kColumnsSplitBlocks[] = {256, 512, 1024};
constexpr int kColumnsSplitGrids[] = {1, 2, 4, 8};
// Whether a columns_split point lies outside the atomic finish's space (kSplitBlocks, kSplitGrids,
// u1-u4): in the taller row slices only the ordered finish takes.
constexpr bool taller_slices(int block, int unroll, int grid) { return block > 512 || grid < 2 || unroll > 4; }
// The atomic finish of the struct accumulators (argmax's keys, var's shifted sums: their fold of an
// element is long) also takes u8, in its own blocks and grids and in one block of 512 per SM: on an
// H200 at 2^24 float32 elements of 16-1024 columns (two rounds), argmax took 27.4-28.6 us in the
// u8 rows it was tuned to against 28.1-30.5 in the u4 rows before, var of 16 and 1024 columns
// 29.1-30.0 in b512.u8.v1.g2 against 31.0-31.3 in the ordered finish's best. The scalar atomics'
// sweeps leave them out (unswept): their rows were not tuned with them.
constexpr bool struct_atomic_slices(int block, int unroll, int grid) {
  return unroll == 8 && block <= 512 && (grid >= 2 || block == 512);
}
constexpr int kBinnedWidths[] = {1, 8, 32}; // 1: a thread per segment of a mean length near 1
constexpr int kBinnedGrids[] = {4, 8};
constexpr int kMergeBlocks[] = {128, 256};
constexpr int kMergeGrids[] = {2, 4, 8};
// Flat: 128- and 256-thread blocks in 4 to 32 blocks per SM. An H100 holds 4 of 256 or 8 of 128
// (62-64 registers), so the larger grids run in waves: each freed SM takes the next block, which
// evens out runs of short segments (more work than their elements) and the tail. On an H100 the
// sweep took 128 threads (u4.v4: the only 128-thread tile of 2048 elements or more) with 16-32 per
// SM at 26 of its 34 shapes; 512-thread blocks had won 2 of 34 before, by a few per cent
// (docs/history/performance-2026-11.md).
constexpr int kFlatBlocks[] = {128, 256};
constexpr int kFlatUnrolls[] = {2, 4};
constexpr int kFlatGrids[] = {4, 8, 16, 32};
// The carry variant wins only where results are many (means of 1-4 elements at 2^22-2^24 segments
// on an H100: b128.u4.v4 and b256.u2.v4 at 32 blocks per SM), and loses 8-13 % elsewhere: a
// narrower space keeps the default offsets sweep under its 120 s.
constexpr int kFlatCarryVecs[] = {4};
constexpr int kFlatCarryGrids[] = {8, 32};
// Staged: the two block sizes of segments a block (512 and 1024 of u4) that were fastest at means of
// 1-2 elements in a prototype on an H100; v4 for the chunks of long segments.
constexpr int kStagedBlocks[] = {128, 256};
constexpr int kStagedUnrolls[] = {4};
constexpr int kStagedVecs[] = {4};
constexpr int kStagedGrids[] = {8};
// Columns past which the last-block finish is not measured (pointless).
constexpr std::uint64_t kLastBlockColumns = 64;
constexpr int kNone[] = {0};
constexpr int kOne[] = {1}; // merge: no vector loads (elements go through shared memory)

// The staged mapping's shared memory: b x u segments' offsets (and two more), 4 elements a
// segment and one 16-byte piece more (templates/segmented/binned.cu), static: at most 48 KiB.
std::uint64_t staged_bytes(const Config& c, DType dtype) {
  const std::uint64_t segs = std::uint64_t(c.block) * c.unroll, es = size_of(dtype);
  return (segs + 2) * sizeof(std::int64_t) + (4 * segs + 16 / es) * es;
}
constexpr std::uint64_t kStaticSharedBytes = 48 * 1024;
// Staged blocks stage 4 elements a segment: where segments average more, many blocks' elements
// do not fit and take the slower path (on an H100: 1.5-1.9x the flat mappings' time at a mean of 8,
// 1.9-2.3x at 16; 1.05-1.2x at 4, which the sweep still measures).
constexpr std::uint64_t kStagedMaxMean = 4;

// The flat tile's head entries (flat_tile, kernels/segmented_geometry.h) in shared memory.
constexpr std::uint64_t kFlatTileBytes = 32 * 1024;
// Each tile pays an offsets pass, barriers and a scan (about 260 instructions a warp); below 2048
// elements that outweighs its elements: 1024-element tiles were never the fastest of a sweep and
// 1.5-2x slower than 4096 at 2^24 elements on an H100.
constexpr std::uint64_t kFlatMinTile = 2048;
// The merge tile's items and bytes (merge_tile_bytes, kernels/segmented_geometry.h).
constexpr std::uint64_t kMergeTileItems = 4096, kMergeTileBytes = 40 * 1024;
// Resident threads per SM the merge kernel is compiled for (templates/segmented/merge.cu: at most 64
// registers a thread); every GPU of the catalogue holds them.
constexpr std::uint64_t kResidentThreads = 1024;

// Fewer lanes than this leave most of any GPU of the catalogue idle (an H100 keeps 270K resident).
constexpr std::uint64_t kFewLanes = 16384;
// Blocks enough to fill any GPU of the catalogue twice (an H100 holds 4 of 512 threads on each
// of its 132 SMs).
constexpr std::uint64_t kManyStripes = 1024;
// Elements one lane may loop over before a mapping counts as serialising the work (~0.1 ms).
constexpr std::uint64_t kLongLane = std::uint64_t(1) << 16;

} // namespace

std::span<const Variant> segmented_variants(Problem problem) {
  switch (problem) {
  case Problem::rows: return kRows;
  case Problem::columns: return kColumns;
  case Problem::segments: return kSegments;
  case Problem::array: break;
  }
  return {};
}

std::vector<Config> segmented_space(const Variant& v) {
  const bool merge = is_merge(v);
  const bool group = takes(v, P_WIDTH) && !takes(v, P_GRID);
  const bool binned = takes(v, P_WIDTH) && takes(v, P_GRID);
  const bool flat = is_flat(v);
  const bool staged = is_staged(v);
  const bool split = takes(v, P_GRID) && !binned && !merge && !flat && !staged;
  const std::span<const int> blocks = staged            ? std::span<const int>(kStagedBlocks)
                                      : group || binned ? std::span<const int>(kGroupBlocks)
                                      : split        ? std::span<const int>(kSplitBlocks)
                                      : merge        ? std::span<const int>(kMergeBlocks)
                                      : flat         ? std::span<const int>(kFlatBlocks)
                                                     : std::span<const int>(kBlockBlocks);
  const std::span<const int> widths = group    ? std::span<const int>(kWidths)
                                      : binned ? std::span<const int>(kBinnedWidths)
                                               : std::span<const int>(kNone);
  const std::span<const int> unrolls = flat     ? std::span<const int>(kFlatUnrolls)
                                       : staged ? std::span<const int>(kStagedUnrolls)
                                                : v.unrolls;
  const std::span<const int> vecs = merge            ? std::span<const int>(kOne)
                                    : staged           ? std::span<const int>(kStagedVecs)
                                    : is_flat_carry(v) ? std::span<const int>(kFlatCarryVecs)
                                    : flat || (split && v.problem != Problem::columns)
                                        ? std::span<const int>(kSplitVecs)
                                        : std::span<const int>(kVecs);
  const std::span<const int> grids = binned  ? std::span<const int>(kBinnedGrids)
                                     : staged ? std::span<const int>(kStagedGrids)
                                     : split ? std::span<const int>(kSplitGrids)
                                     : merge ? std::span<const int>(kMergeGrids)
                                     : is_flat_carry(v) ? std::span<const int>(kFlatCarryGrids)
                                     : flat  ? std::span<const int>(kFlatGrids)
                                             : std::span<const int>(kNone);
  // Each finish the variant takes over the same points, the first (atomic) ones ahead. The flat
  // carry's ordered finish adds v2: it is the load-balanced offsets mapping of the struct
  // accumulators, and 8-byte elements take no v4.
  // columns_split with an ordered finish adds one block of 512 or 1024 threads per SM, two of 1024
  // (kColumnsSplitGrids; 1024 with v1 and v2: 1024 x v4 struct accumulators exceed the shared
  // memory) and u8; with the atomic finish it keeps kSplitBlocks, kSplitGrids and u1-u4 and adds
  // u8 (struct_atomic_slices).
  const bool columns_split = split && v.problem == Problem::columns;
  auto kept = [&](Finish f, int b, int u, int x, int g) {
    if (!columns_split) return true;
    if (f == Finish::atomic) return !taller_slices(b, u, g) || struct_atomic_slices(b, u, g);
    return b == 1024 ? g <= 2 && x <= 2 : (g >= 2 || b == 512); // 1024 x v4: too many accumulators
  };
  std::vector<Config> out;
  for (Finish f : v.finishes)
    for (int b : columns_split ? std::span<const int>(kColumnsSplitBlocks) : blocks)
      for (int w : widths)
        for (int u : unrolls)
          for (int x : is_flat_carry(v) && f == Finish::twopass ? std::span<const int>(kSplitVecs) : vecs)
            for (int g : columns_split ? std::span<const int>(kColumnsSplitGrids) : grids) {
              if (!kept(f, b, u, x, g)) continue;
              Config c{std::string(v.name), b, u, x, g, v.tails.front(), f};
              c.width = w;
              out.push_back(c);
            }
  return out;
}

std::optional<std::string> unswept(const Config& c, const Target& t) {
  const Variant* v = find_variant(c.variant);
  if (!v || v->problem != Problem::columns || !takes(*v, P_GRID)) return std::nullopt;
  if (!taller_slices(c.block, c.unroll, c.grid)) return std::nullopt;
  if (c.finish == Finish::atomic) {
    if (!t.user && struct_atomic(describe(t.op).traits.atomic)) return std::nullopt;
    return "u8 in the atomic finish serves the struct accumulators' atomics (argmax's keys, var's sums)";
  }
  // var's and std's atomic finish adds two float64 sums a column and slice (OpAtomic::shifted):
  // the taller slices stay measured beside it.
  if (!t.user && describe(t.op).traits.atomic == OpAtomic::shifted) return std::nullopt;
  Config atomic = c;
  atomic.finish = Finish::atomic;
  if (invalid_reason(atomic, t)) return std::nullopt;
  return (t.user ? std::string("the reduction") : std::string(name(t.op))) +
         " finishes atomically: the ordered finish's taller row slices serve the ops that cannot";
}

std::optional<std::string> segmented_invalid(const Config& c, const Target& t) {
  const Variant& v = *find_variant(c.variant);
  if (is_flat(v)) {
    const std::uint64_t bytes = flat_tile(c) * sizeof(std::uint32_t);
    if (bytes > kFlatTileBytes)
      return "a tile of " + std::to_string(flat_tile(c)) + " elements (" + std::to_string(bytes) +
             " bytes of head entries in shared memory) exceeds " + std::to_string(kFlatTileBytes) +
             " bytes";
    return std::nullopt;
  }
  if (is_staged(v)) {
    const std::uint64_t bytes = staged_bytes(c, t.dtype);
    if (bytes > kStaticSharedBytes)
      return std::to_string(c.block * c.unroll) + " segments a block stage " +
             std::to_string(bytes) + " bytes of shared memory, above " +
             std::to_string(kStaticSharedBytes);
    return std::nullopt;
  }
  if (!is_merge(v)) return std::nullopt;
  const std::uint64_t items = std::uint64_t(c.block) * c.unroll, bytes = merge_tile_bytes(c, t.dtype);
  if (items > kMergeTileItems || bytes > kMergeTileBytes)
    return "a tile of " + std::to_string(items) + " items (" + std::to_string(bytes) +
           " bytes of shared memory) exceeds " + std::to_string(kMergeTileItems) + " items or " +
           std::to_string(kMergeTileBytes) + " bytes";
  return std::nullopt;
}

std::optional<std::string> shape_invalid(const Config& c, const Target& t, Shape shape) {
  if (c.finish == Finish::atomic && !t.user && t.problem == Problem::columns &&
      describe(t.op).traits.atomic == OpAtomic::key && shape.length > kKeyedMaxLength)
    return std::string(name(t.op)) + "'s atomic finish indexes rows in 32 bits: " +
           std::to_string(shape.length) + " rows exceed " + std::to_string(kKeyedMaxLength);
  return std::nullopt;
}

std::optional<std::string> pointless(const Config& c, Shape shape, std::uint64_t longest) {
  const Variant& v = *find_variant(c.variant);
  // Merge: every block loops over an equal share; blocks past the resident ones run in a second
  // wave after the first has finished its shares.
  if (is_merge(v)) {
    if (std::uint64_t(c.grid) * c.block > kResidentThreads)
      return std::to_string(c.grid) + " blocks of " + std::to_string(c.block) +
             " per SM exceed the " + std::to_string(kResidentThreads) +
             " resident threads: the blocks past them run their shares in a second wave";
    return std::nullopt;
  }
  // Flat: waves of blocks are meant (above); small tiles are not.
  if (is_flat(v)) {
    if (flat_tile(c) < kFlatMinTile)
      return "a tile of " + std::to_string(flat_tile(c)) + " elements: below " +
             std::to_string(kFlatMinTile) + " each tile's offsets pass, barriers and scan cost "
             "more than its elements";
    return std::nullopt;
  }
  if (is_staged(v)) {
    const std::uint64_t mean = shape.elements() / std::max<std::uint64_t>(shape.count, 1);
    if (mean > kStagedMaxMean)
      return "segments of mean " + std::to_string(mean) + " elements: a block stages 4 a segment, "
             "so many blocks' elements would not fit";
    return std::nullopt;
  }
  // Offsets: a block per segment (or several: split) whose segments average fewer elements than a
  // sixteenth of its threads leaves most of them idle; in an H100 sweep every such point took
  // 1.4x the shape's best or more, most of them 3-30x (milliseconds at 2^23 segments).
  if (v.problem == Problem::segments && !takes(v, P_WIDTH) && !is_flat(v) && !is_merge(v) &&
      !is_staged(v)) {
    const std::uint64_t mean = shape.elements() / std::max<std::uint64_t>(shape.count, 1);
    if (mean * 16 < std::uint64_t(c.block))
      return "a block of " + std::to_string(c.block) + " per segment for segments of mean " +
             std::to_string(mean) + " elements: most of its threads idle";
  }
  // Offsets: a mapping that gives each segment w lanes or a block keeps them on the longest
  // segment for longest / lanes elements each, while the binned and split mappings cut it.
  if (v.problem == Problem::segments && !takes(v, P_GRID)) {
    const std::uint64_t per_segment = std::uint64_t(takes(v, P_WIDTH) ? c.width : c.block);
    if (longest / per_segment > kLongLane)
      return "the longest segment (" + std::to_string(longest) + " elements) keeps " +
             std::to_string(per_segment) + " lanes for " + std::to_string(longest / per_segment) +
             " elements each";
  }
  // columns_narrow is columns_tile where that one's stripes are as narrow already, and adds
  // nothing where columns_tile has blocks enough to fill any GPU of the catalogue twice.
  if (is_narrow(c)) {
    const std::uint64_t tx = stripe_width(c.block, c.vec, shape.count); // columns_tile's
    const std::uint64_t tile_stripes = stripe_count(tx, c.vec, shape.count);
    if (tx <= tile_width(c, shape.count))
      return "columns_tile's stripes are " + std::to_string(tx) + " threads wide at " +
             std::to_string(shape.count) + " columns: the same tile";
    if (tile_stripes >= kManyStripes)
      return "columns_tile has " + std::to_string(tile_stripes) + " stripes (a block each) at " +
             std::to_string(shape.count) + " columns";
  }
  // Columns: the last-block finish folds every slice's partials of a stripe at the end of the
  // kernel; over the H100's columns grid of argmax, var, std and logsumexp it was the fastest at
  // 7 shapes, all of 32 columns or fewer, and at none of more than 64 columns (0.42-1.00x the
  // best of the other finishes at those 200 shapes and ops; 0.55-0.92x at 64).
  if (v.problem == Problem::columns && c.finish == Finish::lastblock && shape.count > kLastBlockColumns)
    return "the last-block finish at " + std::to_string(shape.count) + " columns: over " +
           std::to_string(kLastBlockColumns) + " its final folds cost more than the post pass";
  // Columns without row slices: a thread reads q = rows / TY rows, u at a time, the last round
  // predicated; where u / 2 >= q a smaller u reads them in one round as well.
  if (v.problem == Problem::columns && c.finish == Finish::direct && c.unroll > 1) {
    const std::uint64_t q = ceil_div(shape.length, c.block / tile_width(c, shape.count));
    if (std::uint64_t(c.unroll) / 2 >= q)
      return "a thread reads " + std::to_string(q) + " rows: u" + std::to_string(c.unroll / 2) +
             " reads them in one round as well";
  }
  // Any problem: a data-sized mapping (no grid) whose few lanes each loop over thousands of
  // elements while the GPU idles; the split mappings spread such work (a single long row costs
  // a thread-per-row mapping seconds). Offsets are skewed: the longest segments are far above
  // the mean, so they are cut earlier.
  if (!takes(v, P_GRID)) {
    std::uint64_t lanes = 0;
    if (v.problem == Problem::columns)
      lanes = stripe_count(tile_width(c, shape.count), c.vec, shape.count) * std::uint64_t(c.block);
    else
      lanes = shape.count * std::uint64_t(takes(v, P_WIDTH) ? c.width : c.block);
    const std::uint64_t per_lane = v.problem == Problem::segments ? 1024 : 4096;
    if (lanes < kFewLanes && shape.elements() / per_lane > lanes)
      return "only " + std::to_string(lanes) + " lanes for " + std::to_string(shape.elements()) +
             " elements: a split mapping spreads them";
  }
  if (v.problem == Problem::columns || v.problem == Problem::segments) return std::nullopt;
  // Rows: more lanes than twice the row's vectors leave most of them idle; a split of a row that
  // one block covers in one pass is the block mapping with an atomic.
  const std::uint64_t vectors = ceil_div(std::max<std::uint64_t>(shape.length, 1), c.vec);
  if (takes(v, P_WIDTH) && c.width > 1 && std::uint64_t(c.width) > 2 * vectors)
    return "w" + std::to_string(c.width) + " lanes for rows of " + std::to_string(shape.length) +
           " elements";
  if (!takes(v, P_WIDTH) && c.block > 32 && std::uint64_t(c.block) > 2 * vectors)
    return "a block of " + std::to_string(c.block) + " for rows of " +
           std::to_string(shape.length) + " elements";
  if (takes(v, P_GRID) && shape.length <= std::uint64_t(c.block) * c.vec * c.unroll)
    return "rows of " + std::to_string(shape.length) +
           " elements take one block-pass: rows_block does it without atomics";
  return std::nullopt;
}

std::optional<std::string> needs_mean(const Config& c) {
  const Variant* v = find_variant(c.variant);
  if (!v || !is_staged(*v)) return std::nullopt;
  return "tuned for segments of " + std::to_string(kStagedMaxMean) +
         " elements or fewer: taken where the call gives its element count";
}

namespace {
constexpr std::string_view kTwinSuffix = "_streaming"; ///< an evict-first twin's name: its plain one's + this
} // namespace

std::optional<Config> evict_first_twin_of(const Config& c) {
  const Variant* v = find_variant(c.variant);
  if (!v || !v->evict_first || !c.variant.ends_with(kTwinSuffix)) return std::nullopt;
  Config plain = c;
  plain.variant = c.variant.substr(0, c.variant.size() - kTwinSuffix.size());
  return plain;
}

std::optional<Config> evict_first_twin(const Config& c) {
  Config twin = c;
  twin.variant += kTwinSuffix;
  const Variant* v = find_variant(twin.variant);
  if (!v || !v->evict_first) return std::nullopt;
  return twin;
}

} // namespace reduce_tune
