// reduce-tune: what a thread remembers of its asynchronous calls, so that the same call again (the
// same arguments but for its pointers and stream) skips checking, looking up and planning: the
// call's decision (its Call, its entry and plan), found by the call's arguments in a small table
// of the thread's own (no lock). runtime/launch.cpp runs such a warm call; its pointers are taken
// on trust where the thread checked their allocations before (checked_before). Not installed.
#pragma once

#include "kernels/catalogue.h"
#include "runtime/arguments.h"
#include "runtime/entry_cache.h"

#include <cstdint>

namespace reduce_tune::detail {

/// A public asynchronous call's arguments but its pointers and stream: what decides its work.
struct WarmKey {
  std::uint64_t reducer = 0; ///< the Reducer's serial number (Reducer::Impl::serial), never reused
  std::uint64_t a = 0, b = 0, c = 0; ///< reduce_async: n; reduce_rows/columns: rows, cols, stride
  Problem problem = Problem::array;  ///< the call: array (reduce_async), rows or columns
  DType dtype = DType::f32;
  Op op = Op::sum;
  DType result = DType::f32;         ///< reduce_async's result dtype; the input's for the others
  bool operator==(const WarmKey&) const = default;
};

/// What the full path decided for a key: the checked call (its pointers not used), the entry of
/// its kernel (ready: kept for the reducer's life) and the plan for its size or shape.
struct WarmCall {
  WarmKey key;
  Call call;
  const Entry* entry = nullptr;
  LaunchPlan plan;             ///< the array problem's
  SegmentedPlan segmented;     ///< the rows' and columns'
  bool workspace = false;      ///< the plan needs a workspace (a lease): see needs_workspace
};

/// The calling thread's decision for `key`, or null. 32 calls in all, 4 of them per hash bucket:
/// a call pushed out by others is cold again.
const WarmCall* find_warm(const WarmKey& key);
/// Remembers `call` for its key on the calling thread.
void remember_warm(const WarmCall& call);

/// Whether the kernels of a plan touch a workspace: partials, the finish state, a scratch copy or
/// a host finish. One block of the two-pass, last-block and first-block finishes writes the result
/// itself and touches neither partials nor state (templates/common.cuh, rt_finish_block); an
/// atomic finish needs its result set first, which the call does.
bool needs_workspace(const LaunchPlan& p);
bool needs_workspace(const SegmentedPlan& p);

} // namespace reduce_tune::detail
