// reduce-tune: the Reducer's entries, one per (problem, shape bucket, dtype, op, result): the
// configuration looked up for the bucket and its kernel, loaded once (Reducer::Impl::choice and
// ready fill them; entry_cache.cpp). The 1-D calls are the array problem of Shape{1, n}, so they
// and the segmented calls share one cache. Not installed.
#pragma once

#include "kernels/runner.h"
#include "reduce_tune/reducer.h"

#include <array>
#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

namespace reduce_tune::detail {

/// Values of the enums a call may name (runtime/arguments.h checks them before any entry).
constexpr int kProblems = 4, kDTypes = 7, kOps = 18;
static_assert(int(Problem::segments) + 1 == kProblems && int(DType::f16) + 1 == kDTypes &&
              int(Op::dot) + 1 == kOps);

/// Where a call's result goes, which is what its configuration must allow: the host (sum, min,
/// max: any finish), device memory as the element type (reduce_async and every segmented call: no
/// host finish), or device memory as float32 (reduce_async of bf16/f16 with DType::f32).
enum class Result { host, device, wide };
constexpr int kResults = 3;

/// What an entry answers for. `at` is where the bucket is looked up: lookup_point of the call's
/// shape (runtime/lookup.h), the lower end of [2^i, 2^(i+1)) in count and in length.
struct EntryKey {
  Problem problem = Problem::array;
  DType dtype = DType::f32;
  Op op = Op::sum;
  Result result = Result::device;
  Shape at{1, 1};
};
/// The key of a call of `shape` (Shape says what count and length are; the array problem is
/// {1, n}, its n = 0 looked up as 1).
EntryKey entry_key(Problem problem, DType dtype, Op op, Shape shape, Result result);

/// One key's answer: made empty, then the choice is looked up and the kernel loaded under `mu`.
struct Entry {
  std::mutex mu;                  ///< held while looking up and loading
  std::optional<Choice> choice;   ///< set under mu
  Kernel kernel;                  ///< set under mu, before ready
  std::atomic<bool> ready{false}; ///< choice and kernel set: read without the lock from then on
  /// With autotune on, what a capturing call or a question takes at a point not tuned yet: the
  /// store's answer, loaded, while the entry waits for a call that tunes it. Set under mu.
  std::unique_ptr<Entry> provisional;
  /// The point was sent to the tuning worker, whatever came of it: once an entry, so that a
  /// user reduction whose kernel then fails to compile (its calls throw, the entry is never
  /// ready) is not searched again by every call. Set under mu.
  bool tune_asked = false;
};

/// The entries by key, made on first use and kept for the cache's life. Finding one that exists
/// takes two atomic loads: no lock, no allocation. Thread-safe.
class EntryCache {
public:
  /// The entry of `key` (its enums within range). The same object for every key of one bucket.
  Entry& at(const EntryKey& key);
  /// How many entries were made.
  std::size_t size() const;

private:
  /// bit_width of a bucket's lower end: 0 (a length of 0: offsets whose lengths are not known)
  /// to 64.
  static constexpr std::size_t kBuckets = 65;
  /// One table of slots per (problem, dtype, op, result): kBuckets lengths for the array problem
  /// (its count is 1), kBuckets counts x kBuckets lengths for the others. Made on first use.
  std::array<std::atomic<std::atomic<Entry*>*>, kProblems * kDTypes * kOps * kResults> tables_{};
  mutable std::mutex mu_; ///< held while making a table or an entry
  std::vector<std::unique_ptr<std::atomic<Entry*>[]>> owned_tables_;
  std::vector<std::unique_ptr<Entry>> owned_;
};

} // namespace reduce_tune::detail
