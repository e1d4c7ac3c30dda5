// reduce-tune: the next shape's references, made ahead (tuner/reference_ahead.h).
#include "tuner/reference_ahead.h"

#include "kernels/ops.h"
#include "tuner/sum_reference.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

namespace reduce_tune {

bool point_references(const HostArray& data, const HostArray* data2, const SumPrefix* prefix,
                      const Segmentation& seg, Op op, std::vector<Reference>& out) {
  if (describe(op).traits.two_inputs) {
    if (!data2) throw std::invalid_argument(std::string(name(op)) + " reads two inputs; the second is missing");
    out = segmented_reference(data, *data2, seg, op);
    return false;
  }
  if (prefix && prefix->serves(seg, op)) {
    prefix->reference(seg, out);
    return true;
  }
  if (!sum_reference(data, seg, op, out)) segmented_reference(data, seg, op, out);
  return false;
}

void ReferenceAhead::start(Shape shape, std::function<Segmentation()> segmentation, const HostArray& data,
                           const HostArray* data2, const SumPrefix* prefix, std::vector<Op> ops, Then then) {
  if (thread_.joinable()) thread_.join();
  started_ = true;
  shape_ = shape;
  Made& next = making_;
  next.ops = std::move(ops);
  next.refs.resize(std::max(next.refs.size(), next.ops.size())); // their memory is kept from shape to shape
  next.from_prefix.assign(next.ops.size(), 0);
  next.straight.assign(next.ops.size(), 0);
  error_ = nullptr;
  thread_ = std::thread([this, segmentation = std::move(segmentation), &data, data2, prefix, then = std::move(then)] {
    Made& m = making_;
    try {
      seg_ = segmentation();
      for (std::size_t i = 0; i < m.ops.size(); ++i) {
        if (prefix && then.straight && then.straight(m.ops[i], *prefix, seg_)) {
          m.refs[i].clear(); // not made: nothing of another shape's is taken for them
          m.from_prefix[i] = m.straight[i] = 1;
          continue;
        }
        m.from_prefix[i] = point_references(data, data2, prefix, seg_, m.ops[i], m.refs[i]);
        if (then.made) then.made(m.ops[i], m.refs[i], seg_);
      }
    } catch (...) {
      error_ = std::current_exception(); // thrown where the shape takes them
    }
  });
}

bool ReferenceAhead::take_segmentation(Shape shape, Segmentation& seg) {
  if (!started_ || !(shape_ == shape)) return false;
  if (thread_.joinable()) thread_.join();
  shape_ = Shape{0, 0}; // taken once
  taken_.ops.clear();   // the shape taken before: what its caller left is not this one's
  if (error_) {
    started_ = false;
    std::rethrow_exception(std::exchange(error_, nullptr));
  }
  seg = std::move(seg_);
  std::swap(making_, taken_);
  return true;
}

bool ReferenceAhead::take(Op op, std::vector<Reference>& out, bool& from_prefix, bool& straight) {
  Made& m = taken_;
  const auto at = std::find(m.ops.begin(), m.ops.end(), op);
  if (at == m.ops.end()) return false;
  const std::size_t i = std::size_t(at - m.ops.begin());
  out.swap(m.refs[i]);
  from_prefix = m.from_prefix[i], straight = m.straight[i];
  m.ops.erase(at);
  m.from_prefix.erase(m.from_prefix.begin() + std::ptrdiff_t(i));
  m.straight.erase(m.straight.begin() + std::ptrdiff_t(i));
  // The caller's old memory, now at i, goes last (for a later start): refs[k] stays ops[k]'s.
  std::rotate(m.refs.begin() + std::ptrdiff_t(i), m.refs.begin() + std::ptrdiff_t(i) + 1, m.refs.end());
  return true;
}

void ReferenceAhead::wait() {
  if (thread_.joinable()) thread_.join();
}

} // namespace reduce_tune
