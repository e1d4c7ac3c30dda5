// reduce-tune: the sweeps' next input, made on a thread while the GPU measures the current one.
// Made in line, a 1 GiB input (and its prefix sums or references) kept the GPU idle while the host
// wrote it; made ahead, a sweep waits only for the upload and for what is not ready yet.
#pragma once

#include "tuner/check_data.h"
#include "tuner/sum_prefix.h"

#include <cstdint>
#include <future>
#include <optional>
#include <utility>
#include <vector>

namespace reduce_tune {

/// What a sweep needs of one input on the host: make_input's data, the second input of an op of
/// two (dot: second_input_seed), its prefix sums and the reference of the whole input (the array
/// sweep's) for the ops asked for.
struct PreparedInput {
  HostArray data, data2;
  SumPrefix prefix;
  bool prefix_built = false;
  std::uint64_t hash = 0, hash2 = 0; ///< input_hash of data and data2 (the input check's)
  std::vector<std::pair<Op, Reference>> references;
  /// reference(data, op), made with the input where it was asked for, else nullopt.
  std::optional<Reference> reference_of(Op op) const;
};

/// Which input: make_input(dtype, elements, seed) or a supplied one, with a second input and prefix sums or not.
struct InputSpec {
  DType dtype = DType::f32;
  std::uint64_t elements = 0, seed = 0;
  bool two = false, sum_prefix = false;
  std::vector<Op> references; ///< ops of one input whose reference(data, op) is made with it
  /// A supplied input (load_check_input) in place of make_input's; its check data outlives the sweep.
  const CheckPoint* supplied = nullptr;
  bool operator==(const InputSpec&) const = default;
};

/// Makes the input of `spec` on the calling thread.
PreparedInput prepare_input(const InputSpec& spec);

/// One input made ahead on a thread. take() returns the input asked for: the one made ahead if it
/// is that one (waiting for it to finish), else one made there and then; the same data either way.
class InputAhead {
public:
  InputAhead() = default;
  InputAhead(const InputAhead&) = delete;
  InputAhead& operator=(const InputAhead&) = delete;
  ~InputAhead();
  /// Starts making `spec` on a thread (one at a time: an earlier one not taken is dropped).
  void start(const InputSpec& spec);
  PreparedInput take(const InputSpec& spec);
  /// Frees `done` (an input that has served its shapes) on a thread: unmapping up to 1 GiB, and
  /// its prefix sums, took tens of ms of the sweep's own thread. One at a time: waits for the last.
  void retire(PreparedInput&& done);
  /// Inputs take() found made ahead.
  std::size_t ahead() const { return ahead_; }

private:
  void drop();
  std::future<PreparedInput> next_;
  std::future<void> retired_;
  InputSpec spec_;
  std::size_t ahead_ = 0;
};

} // namespace reduce_tune
