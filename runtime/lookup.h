// reduce-tune: configuration lookup. A pure function of the store's contents and the device, so
// every grade can be tested on fixtures without a GPU.
#pragma once

#include "db/store.h"
#include "reduce_tune/reducer.h"

#include <cstdint>
#include <memory>
#include <string>

namespace reduce_tune {

/// What the chosen configuration must satisfy, besides being valid on the device.
struct Requirements {
  bool deterministic = false;  ///< no floating-point atomic finish
  bool allow_in_place = false; ///< admit in-place variants (they run on a scratch copy)
  bool device_result = false;  ///< the result must end in device memory: no host finish
};

/// The device a lookup is for: its identity in the store and what configurations are checked
/// against.
struct DeviceKey {
  std::string uuid;
  int cc_major = 0, cc_minor = 0;
  int max_block = 1024;
  int sm_count = 0;
};

/// The built-in default for (dtype, n): the vectorized streaming kernel (16-byte loads), 256
/// threads, 4 loads in flight, shuffle tail, last-block finish (deterministic, one launch, result
/// on the device), so it meets every Requirements; a data-sized grid up to 2^20 elements, a
/// grid-stride one of 4 blocks per SM above.
Config builtin_config(DType dtype, std::uint64_t n);

/// The best stored configuration for (dtype, op, n) on `device`, graded: the fastest valid row
/// measured at n on this device (exact); else at the nearest tuned size on this device
/// (|log2 ratio|, ties to the larger size); else the same over the other devices of the same
/// compute capability; else the built-in default. Rows are re-validated (their key must parse and
/// be valid for the device) and must meet `req`; a row that does not is passed over for the next
/// fastest at the same size, then the next size, before the grade drops. Never throws for lack of
/// tuning; n = 0 is looked up as 1.
Choice lookup(const db::Store& store, const DeviceKey& device, DType dtype, Op op,
              std::uint64_t n, const Requirements& req);

/// The built-in default as a Choice, with `note` saying why it was used.
Choice builtin_choice(DType dtype, std::uint64_t n, std::string note);

/// Opens the store at `path` if the file exists; never creates one. Returns null, with the reason
/// in *why, when there is no file or it cannot be used (not a reduce-tune store, newer schema).
std::unique_ptr<db::Store> open_existing_store(const std::string& path, std::string* why);

} // namespace reduce_tune
