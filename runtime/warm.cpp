// reduce-tune: the thread's table of warm calls.
#include "runtime/warm.h"

#include <cstddef>

namespace reduce_tune::detail {
namespace {

/// Four ways in each of eight sets, a set by the key's hash, replaced in turn: a few calls that
/// alternate never push each other out. Constant-initialised and trivially destructible: no guard
/// on access, nothing to run at thread exit. 32 calls of ~220 bytes.
struct Table {
  static constexpr int kSetBits = 3, kWays = 4;
  WarmCall slots[(1 << kSetBits) * kWays] = {};
  unsigned char next[1 << kSetBits] = {}; ///< the way each set replaces next
};
constinit thread_local Table t_table;

std::size_t set_of(const WarmKey& k) {
  std::uint64_t h = k.reducer;
  for (std::uint64_t v : {k.a, k.b, k.c,
                          std::uint64_t(k.problem) | std::uint64_t(k.dtype) << 8 |
                              std::uint64_t(k.op) << 16 | std::uint64_t(k.result) << 24})
    h = (h ^ v) * 0x9E3779B97F4A7C15ull;
  return std::size_t(h >> (64 - Table::kSetBits));
}

} // namespace

const WarmCall* find_warm(const WarmKey& key) {
  const WarmCall* set = &t_table.slots[set_of(key) * Table::kWays];
  for (int i = 0; i < Table::kWays; ++i)
    if (set[i].entry && set[i].key == key) return &set[i];
  return nullptr;
}

void remember_warm(const WarmCall& call) {
  const std::size_t s = set_of(call.key);
  WarmCall* set = &t_table.slots[s * Table::kWays];
  for (int i = 0; i < Table::kWays; ++i)
    if (set[i].entry && set[i].key == call.key) {
      set[i] = call;
      return;
    }
  unsigned char& next = t_table.next[s];
  set[next] = call;
  next = (next + 1) % Table::kWays;
}

bool needs_workspace(const LaunchPlan& p) {
  if (p.scratch || p.host_finish) return true;
  return p.grid > 1 && (p.partials || p.counter);
}

bool needs_workspace(const SegmentedPlan& p) {
  return p.work_bytes != 0 || p.post_bytes != 0 || p.ticket_bytes != 0;
}

} // namespace reduce_tune::detail
