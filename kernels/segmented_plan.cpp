// reduce-tune: the launch geometry of the segmented problems' variants (segmented_plan: grids,
// shared memory, workspaces, post passes) and the rounding depth of one segment's result under
// each (segment_depth). The variants and the rules that admit a configuration are
// kernels/segmented.cpp's.
#include "kernels/catalogue.h"
#include "kernels/ops.h"
#include "kernels/segmented.h"
#include "kernels/segmented_geometry.h"
#include "kernels/user_op.h"

#include <algorithm>
#include <bit>
#include <stdexcept>

namespace reduce_tune {
using namespace segmented_geometry;
namespace {

std::uint64_t log2_ceil(std::uint64_t x) { return x <= 1 ? 0 : std::bit_width(x - 1); }

// The flat mapping numbers segments within a tile in 32 bits (RT_NO_HEAD is 2^32 - 1).
constexpr std::uint64_t kFlatMaxSegments = 0xffffffffull;

unsigned checked_grid(const Config& c, std::uint64_t grid, Shape shape) {
  if (grid > 0x7fffffffull)
    throw std::invalid_argument(key(c) + ": " + std::to_string(shape.count) + " x " +
                                std::to_string(shape.length) +
                                " needs more than 2^31-1 blocks");
  return unsigned(std::max<std::uint64_t>(grid, 1));
}

// Blocks per segment of rows_split / segments_split: g blocks per SM shared by the segments,
// at most one per block-pass of a row (rows: the length is known).
std::uint64_t blocks_per_segment(const Config& c, const Target& t, Shape shape) {
  std::uint64_t bps = ceil_div(std::uint64_t(c.grid) * t.sm_count, std::max<std::uint64_t>(shape.count, 1));
  if (t.problem == Problem::rows)
    bps = std::min(bps, ceil_div(std::max<std::uint64_t>(shape.length, 1), std::uint64_t(c.block) * c.vec * c.unroll));
  return std::max<std::uint64_t>(bps, 1);
}

// Row slices of columns_split: g blocks per SM over the column stripes, each slice at least
// TY * unroll rows.
std::uint64_t row_slices(const Config& c, const Target& t, Shape shape, std::uint64_t stripes) {
  if (c.finish == Finish::direct) return 1;
  const std::uint64_t ty = c.block / tile_width(c, shape.count);
  const std::uint64_t want = ceil_div(std::uint64_t(c.grid) * t.sm_count, stripes);
  return std::max<std::uint64_t>(1, std::min(want, ceil_div(std::max<std::uint64_t>(shape.length, 1), ty * c.unroll)));
}

// Blocks of 256 threads for `threads` threads of a post pass, up to 2^16 (its loops stride past).
unsigned post_blocks(std::uint64_t threads) {
  return unsigned(std::clamp<std::uint64_t>(ceil_div(threads, 256), 1, 1u << 16));
}

// The columns' last-block finish: its counters ahead of the partials (templates/segmented/columns.cu,
// RT_TICKETS), a stripe's own and one a group of about sqrt(slices) row slices each. A fixed
// count, so that the partials of any earlier launch never lie where a counter is now.
constexpr std::uint64_t kTicketCounters = 65536;
// Row slices a group of the last-block finish: the least g with g * g >= slices.
std::uint64_t ticket_group(std::uint64_t slices) {
  std::uint64_t g = 1;
  while (g * g < slices) ++g;
  return g;
}

// The binned variant's chunk list: enough for 2^18 chunks (2^32 elements in the default chunks);
// past it, segments are reduced by their group (templates/segmented/binned.cu).
constexpr std::uint64_t kChunkCapacity = 1u << 18;

// Longest rounding chain of one lane reading `len` elements among `lanes`: its elements (at most
// a share plus a head and a tail), folded from `unroll` accumulators.
std::uint64_t lane_chain(const Config& c, std::uint64_t len, std::uint64_t lanes) {
  return ceil_div(len, lanes) + 2 * std::uint64_t(c.vec) + c.unroll;
}

} // namespace

SegmentedPlan segmented_plan(const Config& c, const Target& t, Shape shape) {
  const Variant& v = *find_variant(c.variant);
  SegmentedPlan p;
  p.block = unsigned(c.block);
  p.smem_bytes = unsigned(std::uint64_t(c.block) * c.vec * accumulator_bytes(t));
  p.fill = c.finish == Finish::atomic && !lists_chunks(v);
  // The post pass: accumulators in a workspace unless they have the result's type (then the
  // results are they); a struct's (var's float64 sums) never.
  p.post = c.finish == Finish::atomic && atomic_post_pass(t);
  const bool in_results = t.user ? t.user->accumulator_dtype(t.dtype) == t.user->result_dtype(t.dtype)
                                 : !describe(t.op).traits.compound &&
                                       accumulator_dtype(t.op, t.dtype) == result_dtype(t.op, t.dtype);
  if (p.post && !in_results) p.post_bytes = std::max<std::uint64_t>(shape.count, 1) * accumulator_bytes(t);
  // The ordered finish: partials in the workspace, always a post pass (and no fill).
  const bool ordered = c.finish == Finish::twopass;
  const std::uint64_t acc_bytes = accumulator_bytes(t);
  const std::uint64_t results = std::max<std::uint64_t>(shape.count, 1);
  if (t.problem == Problem::columns) {
    if (auto why = shape_invalid(c, t, shape)) throw std::invalid_argument(key(c) + ": " + *why);
    const std::uint64_t tx = tile_width(c, shape.count);
    const std::uint64_t stripes = stripe_count(tx, c.vec, shape.count);
    const std::uint64_t slices = row_slices(c, t, shape, stripes);
    p.grid = checked_grid(c, stripes * slices, shape);
    p.aux = slices << 11 | tx;
    if (ordered) { // a partial per column and slice; a group of lanes per column, up to a warp
      p.post = true;
      p.post_bytes = results * slices * acc_bytes;
      p.post_grid = post_blocks(results * std::min<std::uint64_t>(std::bit_ceil(slices), 32));
    }
    if (c.finish == Finish::lastblock && slices > 1) { // one slice: the block writes its columns
      const std::uint64_t groups = ceil_div(slices, ticket_group(slices));
      if (stripes * (groups + 1) > kTicketCounters)
        throw std::invalid_argument(key(c) + ": " + std::to_string(stripes) + " stripes of " +
                                    std::to_string(slices) + " row slices need more than " +
                                    std::to_string(kTicketCounters) + " finish counters");
      p.ticket_bytes = kTicketCounters * sizeof(std::uint32_t) + results * slices * acc_bytes;
    }
    return p;
  }
  if (is_flat(v)) { // the fill, then g blocks per SM over the tiles
    if (shape.count >= kFlatMaxSegments)
      throw std::invalid_argument(key(c) + ": " + std::to_string(shape.count) +
                                  " segments: the flat mapping numbers them in 32 bits");
    p.grid = unsigned(std::uint64_t(c.grid) * t.sm_count);
    p.smem_bytes = unsigned(flat_tile(c) * sizeof(std::uint32_t));
    if (is_flat_carry(v)) { // not the fill: a warp per block of the main kernel (whose grid is aux)
                            // sets the segments cut between blocks to the identity
      p.fill = false;
      p.aux = p.grid;
      p.partition_grid = unsigned(ceil_div(std::uint64_t(p.grid) * 32, c.block));
    }
    if (ordered && is_flat_carry(v)) { // no partition: an accumulator per segment, then two
                                       // pieces a block; a thread per segment, a warp per block
      p.partition_grid = 0;
      p.post = true;
      p.post_bytes = (results + 2 * std::uint64_t(p.grid)) * acc_bytes;
      p.post_grid = post_blocks(std::max<std::uint64_t>(results, std::uint64_t(p.grid) * 32));
    }
    return p;
  }
  if (is_merge(v)) { // the partition kernel, a warp per split point, then the shares
    p.grid = unsigned(std::uint64_t(c.grid) * t.sm_count);
    p.aux = p.grid;
    p.smem_bytes = unsigned(merge_tile_bytes(c, t.dtype));
    p.fill = false;
    p.partition_grid = unsigned(ceil_div((p.aux + 1) * 32, c.block));
    p.work_bytes = (p.aux + 1) * 2 * sizeof(std::int64_t);
    return p;
  }
  if (lists_chunks(v)) { // binned and staged: the first kernel, then the listed chunks
    p.grid = checked_grid(c, is_staged(v) ? ceil_div(shape.count, std::uint64_t(c.block) * c.unroll)
                                          : ceil_div(shape.count * c.width, c.block),
                          shape);
    p.aux = kChunkCapacity;
    p.chunk_grid = unsigned(std::uint64_t(c.grid) * t.sm_count);
    // Only the chunk kernel's block reduce uses dynamic shared memory: the first kernel reduces
    // with shuffles (binned) or stages in static memory (staged), whose blocks per SM it would cut.
    p.chunk_smem_bytes = p.smem_bytes;
    p.smem_bytes = 0;
    p.work_bytes = (2 + kChunkCapacity) * sizeof(std::uint64_t);
  } else if (takes(v, P_WIDTH)) { // group
    p.grid = checked_grid(c, ceil_div(shape.count * c.width, c.block), shape);
  } else if (takes(v, P_GRID)) { // split
    p.aux = blocks_per_segment(c, t, shape);
    p.grid = checked_grid(c, shape.count * p.aux, shape);
  } else { // a block per segment
    p.grid = checked_grid(c, shape.count, shape);
  }
  return p;
}

std::uint64_t segment_depth(const Config& c, const Target& t, Shape shape, std::uint64_t len) {
  const Variant& v = *find_variant(c.variant);
  const std::uint64_t log_block = log2_ceil(c.block);
  if (t.problem == Problem::columns) {
    const std::uint64_t tx = tile_width(c, shape.count), ty = c.block / tx;
    const std::uint64_t slices = row_slices(c, t, shape, stripe_count(tx, c.vec, shape.count));
    // The slices: atomically in turn, by the ordered post pass (a run of them a lane, then a
    // shuffle tree), or by the last blocks in two levels (a group's slices, then the groups; at
    // most a run of each a lane and a tree of up to 5 levels).
    const std::uint64_t group = ticket_group(slices);
    const std::uint64_t finish = c.finish == Finish::twopass     ? ceil_div(slices, 32) + 5
                                 : c.finish == Finish::lastblock ? group + ceil_div(slices, group) + 10
                                                                 : slices;
    return ceil_div(ceil_div(len, slices), ty) + log2_ceil(ty) + finish + 1;
  }
  if (is_flat(v)) { // a thread's elements, the scan (warps, then warp totals), one combine per
                    // tile the segment crosses (carry: and one per block, atomically)
    const std::uint64_t tile = flat_tile(c), runs = std::uint64_t(c.grid) * t.sm_count;
    const std::uint64_t cut = c.finish == Finish::twopass ? ceil_div(runs, 32) + 5 : runs;
    return std::uint64_t(c.unroll) * c.vec + 5 + c.block / 32 + ceil_div(len, tile) + 2 +
           (is_flat_carry(v) ? cut : 0);
  }
  if (is_merge(v)) { // a thread's items, the scan, one combine per tile, one per block cut
    const std::uint64_t tile = std::uint64_t(c.block) * c.unroll;
    return std::uint64_t(c.unroll) + 2 * log_block + ceil_div(len, tile) +
           std::uint64_t(c.grid) * t.sm_count + 4;
  }
  if (lists_chunks(v)) { // binned: a group (short, or the list was full); staged: a thread (staged,
                         // short, or the list was full); or chunks of a block each
    const std::uint64_t chunk = std::uint64_t(c.block) * c.vec * c.unroll * (is_staged(v) ? 2 : 8);
    const std::uint64_t width = is_staged(v) ? 1 : std::uint64_t(c.width);
    const std::uint64_t group = lane_chain(c, len, width) + log2_ceil(width) + 1;
    return std::max(group, lane_chain(c, chunk, c.block) + log_block + ceil_div(len, chunk) + 1);
  }
  if (takes(v, P_WIDTH)) return lane_chain(c, len, c.width) + log2_ceil(c.width) + 1;
  if (takes(v, P_GRID)) {
    const std::uint64_t bps = blocks_per_segment(c, t, shape);
    return lane_chain(c, len, bps * c.block) + log_block + bps + 1;
  }
  return lane_chain(c, len, c.block) + log_block + 1;
}

} // namespace reduce_tune
