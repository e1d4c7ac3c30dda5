// reduce-tune store: claims on points tuned on first use (Options::autotune). The process that
// measures a point holds its claim in the store (Store::claim), so that several processes tuning
// into one store at once measure each point once: the others wait for its rows, or, where it takes
// too long, run with what the store has. A claim lapses when it expires or, on this host, when its
// owner's process is gone (a worker killed by a faulting kernel holds nothing).
#pragma once

#include "db/store.h"

#include <functional>
#include <string>

namespace reduce_tune::db {

/// The owner name of process `pid` of this host: "host:pid".
std::string claim_owner(long pid);
/// Whether a claim's owner is a process of this host that no longer runs (a lapsed claim).
bool owner_gone(const Claim& c);

/// What acquire_point found.
enum class Acquired {
  claimed, ///< `owner` holds the point's claim now: measure it, then release_claims
  tuned,   ///< `tuned()` said the point is tuned (another process stored it): nothing to measure
  busy,    ///< another process held the claim for all of `wait_s`
};

/// Takes `point`'s claim for `owner` (lease `lease_s`), first asking `tuned()`; while another
/// live process holds it, polls every 10 ms for up to `wait_s` seconds until it is tuned or the
/// claim is free. StoreError where the store cannot be written.
Acquired acquire_point(Store& store, const PointKey& point, const std::string& owner, double lease_s,
                       double wait_s, const std::function<bool()>& tuned);

} // namespace reduce_tune::db
