// reduce-tune: the CPU references of a segmented sweep's next shape, made on a thread of their
// own while the GPU measures the current one. They need only the next shape's input (the current
// one, or the next, taken early from the input thread) and its offsets, which are made there too:
// nothing the current shape's measurements make. The main thread then finds them ready instead of
// making them while the GPU waits. They are made by the same functions as on the main thread, so
// they are the same bits.
#pragma once

#include "tuner/reference.h"
#include "tuner/sum_prefix.h"

#include <exception>
#include <functional>
#include <thread>
#include <vector>

namespace reduce_tune {

/// The references of `op` over `seg` of `data` (`data2`: the second input, read by an op of two), as
/// the sweep makes them: from the input's prefix sums where they serve (`prefix` may be null),
/// else the sum reference, else the general one. Returns whether the prefix sums served.
bool point_references(const HostArray& data, const HostArray* data2, const SumPrefix* prefix,
                      const Segmentation& seg, Op op, std::vector<Reference>& out);

class ReferenceAhead {
public:
  ReferenceAhead() = default;
  ReferenceAhead(const ReferenceAhead&) = delete;
  ReferenceAhead& operator=(const ReferenceAhead&) = delete;
  ~ReferenceAhead() { wait(); }

  /// What is made on the thread besides an op's references (the GPU check's data), each part
  /// may be empty. `straight`, where there are prefix sums, first: made from them; where it
  /// returns true the op's references are not made (take() says so: the caller makes them where
  /// its CPU check needs them). `made`: from the references, where they were made.
  struct Then {
    std::function<bool(Op, const SumPrefix&, const Segmentation&)> straight;
    std::function<void(Op, const std::vector<Reference>&, const Segmentation&)> made;
  };
  /// Starts making the segmentation of `shape` (`segmentation()`, on the thread) and the
  /// references of each of `ops` over it, each with `then`, after waiting for what was started
  /// before. `data`, `data2` (may be null) and `prefix` (may be null), and what `then` writes,
  /// must stay untouched until take_segmentation(), wait() or the next start().
  void start(Shape shape, std::function<Segmentation()> segmentation, const HostArray& data,
             const HostArray* data2, const SumPrefix* prefix, std::vector<Op> ops, Then then = {});
  /// Whether start() was last called for `shape`; if so, waits for it and moves its segmentation
  /// into `seg` (or throws what making them threw).
  bool take_segmentation(Shape shape, Segmentation& seg);
  /// After take_segmentation() for the shape, also once the next shape's start() has been
  /// called: swaps the references of `op` into `out` (whose memory a later start() reuses), says
  /// whether they came from the prefix sums and whether they were left unmade (`straight`:
  /// then.straight made the op's GPU check data instead; `out` is then empty), and returns true;
  /// false where `op` was not started for the shape last taken, or was taken already.
  bool take(Op op, std::vector<Reference>& out, bool& from_prefix, bool& straight);
  /// Waits for the thread (before the inputs it reads change); what it made is still taken for
  /// its shape.
  void wait();

private:
  std::thread thread_;
  bool started_ = false;
  Shape shape_{0, 0};
  Segmentation seg_;
  /// A shape's references, per op of `ops`.
  struct Made {
    std::vector<Op> ops;
    std::vector<std::vector<Reference>> refs;
    std::vector<char> from_prefix, straight;
  };
  /// The shape the thread makes (start()) and the one taken (take_segmentation()), whose ops the
  /// caller takes while the next shape's are made. They swap at take_segmentation(), so the
  /// memory of references taken before is reused.
  Made making_, taken_;
  std::exception_ptr error_;
};

} // namespace reduce_tune
