// reduce-tune: the Reducer's workspaces for eager calls.
#include "runtime/leases.h"

namespace reduce_tune::detail {

using cuda::driver;

std::unique_ptr<Lease> LeasePool::take(capture::Home& home) {
  {
    std::lock_guard lock(mu_);
    if (!idle_.empty()) {
      std::unique_ptr<Lease> l = std::move(idle_.front());
      idle_.pop_front();
      return l;
    }
  }
  auto l = std::make_unique<Lease>();
  if (std::optional<Workspace> ws = home.take()) l->ws = std::move(*ws); // a graph's, idle
  return l;
}

void LeasePool::give(std::unique_ptr<Lease> lease) {
  std::lock_guard lock(mu_);
  idle_.push_back(std::move(lease));
}

void LeasePool::wait_idle() {
  std::lock_guard lock(mu_);
  for (const auto& l : idle_)
    if (l->pending) driver().cuEventSynchronize(l->done.get());
}

Borrowed::Borrowed(LeasePool& pool, capture::Home& home, CUstream stream)
    : pool_(pool), lease_(pool.take(home)) {
  if (lease_->pending && lease_->stream != stream)
    RT_CU(cuStreamWaitEvent(stream, lease_->done.get(), 0));
}

Borrowed::~Borrowed() { pool_.give(std::move(lease_)); }

void Borrowed::synchronize(CUstream stream) noexcept {
  driver().cuStreamSynchronize(stream); // best effort: the first error is the one to report
}

} // namespace reduce_tune::detail
