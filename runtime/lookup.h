// reduce-tune: configuration lookup. A pure function of the store's contents and the device, so
// every grade can be tested on fixtures without a GPU.
#pragma once

#include "db/store.h"
#include "reduce_tune/reducer.h"
#include "runtime/store_rows.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace reduce_tune {

namespace cuda {
struct DeviceInfo;
}
struct Target; // kernels/catalogue.h
struct UserOp; // kernels/user_op.h

/// What the chosen configuration must satisfy, besides being valid on the device.
struct Requirements {
  bool deterministic = false;  ///< no floating-point atomic finish
  bool allow_in_place = false; ///< admit in-place variants (they run on a scratch copy)
  bool device_result = false;  ///< the result must end in device memory: no host finish
  bool wide_result = false;    ///< bf16/f16: the result is written as float32 (Target::wide_result)
  /// A user reduction (Target::user): rows and defaults are checked against its rules (no
  /// atomic, host, in-place or redux path; a non-commutative combine's order).
  const UserOp* user = nullptr;
};

/// The device a lookup is for: its identity in the store and what configurations are checked
/// against.
struct DeviceKey {
  std::string uuid;
  std::string name;             ///< the GPU model, e.g. "NVIDIA H100 80GB HBM3" (shipped tuning)
  int cc_major = 0, cc_minor = 0;
  int max_block = 1024;
  int sm_count = 0;
  std::int64_t l2_bytes = 0;    ///< L2 cache size
  double peak_gbps = 0;         ///< theoretical memory bandwidth (memory clock x bus width)
};

/// The lookup's key for a GPU of this machine.
DeviceKey device_key(const cuda::DeviceInfo& info);
/// The lookup's key for a GPU as a store describes it (query --lookup --uuid, coverage).
DeviceKey device_key(const db::DeviceRecord& record);

/// Where a call's shape is looked up: each dimension at the lower end of its size bucket
/// [2^k, 2^(k+1)) (the sweeps measure powers of two); a count of 0 as 1, a length of 0 (offsets
/// whose lengths are not known) as 0. The Reducer looks up and caches per bucket.
Shape lookup_point(Shape shape);

/// The configuration a row measured for `from` gives a call of `to`: its vector width scaled to
/// load the same bytes (float32 v4: float64 v2, bf16 v8) where that is a whole number of
/// elements. The related grade and the built-in defaults (runtime/defaults.h) use it.
Config translated(Config c, DType from, DType to);

/// What a configuration is checked against for a call on `device`.
Target target_of(const DeviceKey& device, DType dtype, Op op, Problem problem, const Requirements& req);

/// Why configuration `c` cannot serve a call on `t` under `req`: invalid there, measured only
/// with a float32 result where the call's has the element type, not deterministic, in place, or a
/// host finish for a device result; nullopt where it can. The lookup's rule for its rows, and the
/// first-use tuning's for what it measures.
std::optional<std::string> config_unusable(const Config& c, const Target& t, const Requirements& req);

/// How unlike two GPUs are, for carrying tuning across models: |log2| of the ratio of their SM
/// counts, plus that of their memory bandwidths, plus that of their L2 sizes (each factor of 2
/// counts 1; an unknown figure counts 1), plus 1 per compute-capability major version apart, or
/// 0.25 for another minor version. An H100 80GB HBM3 and an H200 (same SMs, 1.44x the bandwidth,
/// 1.2x the L2): 0.79; an H100 and an A100 40GB: about 1.9.
double gpu_distance(const DeviceKey& a, const db::DeviceRecord& b);

/// The best stored configuration for (dtype, op, problem, shape) on `device`, graded: the
/// fastest valid row measured at this shape on this device (exact); else at the nearest tuned
/// shape on this device (db::nearer: log space of length and count); else the same over the
/// other devices of the same compute capability; else (related) rows of another op or dtype, as
/// below; else the built-in default. Rows are
/// re-validated (their key must parse and be valid for the device and problem) and must meet
/// `req`; a row that does not is passed over for the next fastest at the same shape, then the
/// next shape, before the grade drops. Never throws for lack of tuning. A shape length of 0
/// (segments: lengths unknown on the host) grades by the count alone and is exact when the count
/// matches; a count of 0 is looked up as 1.
Choice lookup(const db::Store& store, const DeviceKey& device, DType dtype, Op op, Problem problem,
              Shape shape, const Requirements& req);
/// The same over the user's store (may be null) and the tuning shipped with the library (may be
/// null), graded: the user's own GPU (exact, nearest_size), then the shipped rows of the same GPU
/// model and SM count (shipped; a GPU whose model the shipped tuning holds only at another SM
/// count, e.g. one limited to part of its SMs, takes none of the shipped rows: the built-in
/// defaults are derived per SM and served it better), then other GPUs of the same compute capability in either (same_arch), then
/// (related) the problem's rows tuned for another op of the dtype, another dtype of its size, then
/// the nearest other sizes (segmented problems only), their vector width scaled to load the same
/// bytes, from those devices in the same order, another op's only where its accumulator on this
/// dtype has the size of this op's (kernels/ops.h accumulator_bytes: argmax never takes sum's); then the built-in default. After same_arch:
/// (carried) the rows of GPUs of other compute capabilities, the most similar (gpu_distance)
/// first, rows invalid here passed over; `related` reaches those GPUs last too. `why_none` says why the
/// built-in default is used when neither store is there.
Choice lookup(const db::Store* store, const db::Store* shipped, const DeviceKey& device, DType dtype,
              Op op, Problem problem, Shape shape, const Requirements& req,
              const std::string& why_none = "no tuning store");
/// The same over stores' rows read into memory (runtime/store_rows.h): the same choice, without a
/// query a call.
Choice lookup_rows(const StoreRows* store, const StoreRows* shipped, const DeviceKey& device, DType dtype,
                   Op op, Problem problem, Shape shape, const Requirements& req,
                   const std::string& why_none = "no tuning store");
/// The rows stored under `op` alone (a user reduction's, db::OpKey::user), graded as lookup()
/// grades a call's own rows: this GPU's in the user's store (exact, nearest_size), the same
/// model's in the shipped tuning (shipped), other GPUs of the compute capability in either
/// (same_arch). nullopt where none is usable: the caller goes on to related rows and defaults.
std::optional<Choice> lookup_own(const db::Store* store, const db::Store* shipped, const DeviceKey& device,
                                 DType dtype, const db::OpKey& op, Problem problem, Shape shape,
                                 const Requirements& req);
/// The array problem of n elements (n = 0 is looked up as 1).
Choice lookup(const db::Store& store, const DeviceKey& device, DType dtype, Op op,
              std::uint64_t n, const Requirements& req);


} // namespace reduce_tune
