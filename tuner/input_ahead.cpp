// reduce-tune: inputs made ahead.
#include "tuner/input_ahead.h"

#include "tuner/input_hash.h"
#include "tuner/measure.h"

namespace reduce_tune {

PreparedInput prepare_input(const InputSpec& spec) {
  PreparedInput in;
  in.data = spec.supplied ? load_check_input(*spec.supplied) : make_input(spec.dtype, spec.elements, spec.seed);
  if (spec.two) in.data2 = make_input(spec.dtype, spec.elements, second_input_seed(spec.seed));
  in.hash = input_hash(in.data.bytes.data(), in.data.bytes.size());
  if (spec.two) in.hash2 = input_hash(in.data2.bytes.data(), in.data2.bytes.size());
  if (spec.sum_prefix) in.prefix = SumPrefix(in.data), in.prefix_built = true;
  for (Op op : spec.references) in.references.emplace_back(op, reference(in.data, op));
  return in;
}

std::optional<Reference> PreparedInput::reference_of(Op op) const {
  for (const auto& [o, r] : references)
    if (o == op) return r;
  return std::nullopt;
}

InputAhead::~InputAhead() {
  drop();
  if (retired_.valid()) retired_.wait();
}

void InputAhead::retire(PreparedInput&& done) {
  if (retired_.valid()) retired_.wait();
  // Freed in the thread's body: the callable itself is destroyed with the future, on this thread.
  retired_ = std::async(std::launch::async, [in = std::move(done)]() mutable { in = PreparedInput(); });
}

void InputAhead::drop() {
  if (!next_.valid()) return;
  try {
    next_.get(); // waits: the thread reads nothing of ours, but must end before we do
  } catch (...) {
    // Not taken: a failure to make it (out of memory) is reported if it is ever made again.
  }
}

void InputAhead::start(const InputSpec& spec) {
  drop();
  spec_ = spec;
  next_ = std::async(std::launch::async, [spec] { return prepare_input(spec); });
}

PreparedInput InputAhead::take(const InputSpec& spec) {
  if (next_.valid() && spec_ == spec) {
    ++ahead_;
    return next_.get(); // rethrows what making it threw
  }
  drop();
  return prepare_input(spec);
}

} // namespace reduce_tune
