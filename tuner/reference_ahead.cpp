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
  ops_ = std::move(ops);
  refs_.resize(std::max(refs_.size(), ops_.size())); // their memory is kept from shape to shape
  from_prefix_.assign(ops_.size(), 0);
  straight_.assign(ops_.size(), 0);
  error_ = nullptr;
  thread_ = std::thread([this, segmentation = std::move(segmentation), &data, data2, prefix, then = std::move(then)] {
    try {
      seg_ = segmentation();
      for (std::size_t i = 0; i < ops_.size(); ++i) {
        if (prefix && then.straight && then.straight(ops_[i], *prefix, seg_)) {
          refs_[i].clear(); // not made: nothing of another shape's is taken for them
          from_prefix_[i] = straight_[i] = 1;
          continue;
        }
        from_prefix_[i] = point_references(data, data2, prefix, seg_, ops_[i], refs_[i]);
        if (then.made) then.made(ops_[i], refs_[i], seg_);
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
  if (error_) {
    started_ = false;
    std::rethrow_exception(std::exchange(error_, nullptr));
  }
  seg = std::move(seg_);
  return true;
}

bool ReferenceAhead::take(Op op, std::vector<Reference>& out, bool& from_prefix, bool& straight) {
  if (!started_ || thread_.joinable()) return false;
  const auto at = std::find(ops_.begin(), ops_.end(), op);
  if (at == ops_.end()) return false;
  const std::size_t i = std::size_t(at - ops_.begin());
  out.swap(refs_[i]);
  from_prefix = from_prefix_[i], straight = straight_[i];
  ops_.erase(at);
  from_prefix_.erase(from_prefix_.begin() + std::ptrdiff_t(i));
  straight_.erase(straight_.begin() + std::ptrdiff_t(i));
  // The caller's old memory, now at i, goes last (for the next start): refs_[k] stays ops_[k]'s.
  std::rotate(refs_.begin() + std::ptrdiff_t(i), refs_.begin() + std::ptrdiff_t(i) + 1, refs_.end());
  return true;
}

void ReferenceAhead::wait() {
  if (thread_.joinable()) thread_.join();
}

} // namespace reduce_tune
