// reduce-tune: the offsets sweep's next layout, drawn on a thread while the GPU measures the
// current shape. Drawn in line, each shape's segment lengths (a pow each, 2^24 of them at the
// largest count; for a small shape the heaviest of several draws) kept the GPU idle while the
// host drew them; drawn ahead, a shape waits only for their upload.
#pragma once

#include "reduce_tune/config.h"

#include <cstddef>
#include <cstdint>
#include <future>
#include <vector>

namespace reduce_tune {

/// The seed of a shape's lengths. Offsets below db::kCountOnlyMinTotal elements: of kHeavyDraws
/// draws from `seed` on, the one whose longest segment holds the most elements. There a mapping
/// that gives a segment to one block or group wins or loses by its longest segment, whose share
/// varies most from draw to draw where segments are few (2^9 segments of mean 2^7: 6 % in one
/// draw, a third in another); tuned on the heaviest, its pick holds for heavy mixes too. Other
/// problems: `seed`.
std::uint64_t shape_seed(Problem problem, Shape shape, std::uint64_t seed);

/// A shape's layout on the host: the offsets of skewed_offsets from shape_seed(problem, shape,
/// seed) for Problem::segments (none for rows and columns), and its longest segment.
struct DrawnLayout {
  std::vector<std::int64_t> offsets;
  std::uint64_t longest = 0;
};

/// Draws the layout of (problem, shape, seed) on the calling thread (and the host's cores).
DrawnLayout draw_layout(Problem problem, Shape shape, std::uint64_t seed);

/// One layout drawn ahead on a thread. take() returns the layout asked for: the one drawn ahead
/// if it is that one (waiting for it), else one drawn there and then; the same offsets either way.
class LayoutAhead {
public:
  LayoutAhead() = default;
  LayoutAhead(const LayoutAhead&) = delete;
  LayoutAhead& operator=(const LayoutAhead&) = delete;
  ~LayoutAhead();
  /// Starts drawing (problem, shape, seed) on a thread (one at a time: one not taken is dropped).
  void start(Problem problem, Shape shape, std::uint64_t seed);
  DrawnLayout take(Problem problem, Shape shape, std::uint64_t seed);
  /// Layouts take() found drawn ahead.
  std::size_t ahead() const { return ahead_; }

private:
  void drop();
  std::future<DrawnLayout> next_;
  Problem problem_ = Problem::segments;
  Shape shape_;
  std::uint64_t seed_ = 0;
  std::size_t ahead_ = 0;
};

} // namespace reduce_tune
