// reduce-tune: tuning on first use (Options::autotune), the library's side. A call at a point with
// no exact tuning asks the process's tuning worker (`reduce-tune autotune-worker`, spawned once per
// process and kept) to search the point and store the result in the user's store; the library then
// reads the store again. Measuring out of process keeps a faulting kernel from touching the
// caller's CUDA context, and keeps the sweep, the CPU reference and the timing in the tuner
// (the installed library never includes tuner/). Never throws: where the worker cannot be found,
// dies or takes too long, the call runs with what the lookup has. Not installed.
#pragma once

#include "db/op_key.h"
#include "reduce_tune/reducer.h"

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace reduce_tune {
struct UserOp; // kernels/user_op.h
}

namespace reduce_tune::detail {

/// Why an entry of the Reducer is made ready: a call, a call on a stream being captured into a
/// CUDA graph, or a question (config_for).
enum class EntryUse { call, capture, query };
/// What the first use of an entry does, given its lookup's grade.
enum class FirstUse {
  as_is,       ///< take the lookup's answer (autotune off, an exact tuning, or nothing to search:
               ///< offsets looked up by their count alone)
  provisional, ///< take it for this use only, record the point, leave the entry to the next call
  tune,        ///< tune the point first, then look it up again
};
/// The rule: only a call tunes; a capture or a question never does (a capture must not wait on
/// a search, nor may a question measure).
/// A user reduction's entry takes the same rule: its grade is `exact` only for its own rows
/// (runtime/user_lookup.h), so one served by a related op's rows or the defaults is tuned.
FirstUse first_use(bool autotune, Match match, EntryUse use, Problem problem, Shape at);

/// Whether $REDUCE_TUNE_AUTOTUNE asks for first-use tuning ("1", "true", "yes" or "on").
bool autotune_from_env();
/// The time a point's tuning may take, in ms: $REDUCE_TUNE_AUTOTUNE_MS where it is a positive
/// number, else `option` (Options::autotune_ms), else 300.
double autotune_budget_ms(double option);

/// The reduce-tune executable that serves first-use tuning: $REDUCE_TUNE_WORKER where set (empty:
/// none), else `reduce-tune` beside the object the library is linked into (the same folder, its
/// bin/, or ../bin/: an install's lib/ and bin/, the Python package's reduce_tune/bin), else the
/// install prefix's bin/ and the build tree's. nullopt, with the reason in *why, where none is
/// there or it lies where others may replace it.
std::optional<std::string> find_worker(std::string* why = nullptr);

/// A point to tune, as the Reducer's entry knows it.
struct TuneRequest {
  std::string device_uuid;
  DType dtype = DType::f32;
  Op op = Op::sum;
  /// A user reduction's point (op is then Op::sum, in whose place its kernels are rendered): the
  /// worker tunes it as `tune --reduction` does, under its hash. Null: the built-in op's.
  std::shared_ptr<const UserOp> user;
  Problem problem = Problem::array;
  Shape shape{1, 1};
  /// What the call's configuration must allow (runtime/entry_cache.h: Result).
  bool device_result = false, wide_result = false, deterministic = false, allow_in_place = false;
  double budget_ms = 300;
  std::string store_path;
  std::string nvrtc_path;

  /// The op as the store names it: the built-in op's, or the user reduction's under its hash.
  db::OpKey op_key() const;
};

/// The protocol's fields of a line, split at its tabs.
std::vector<std::string> split_tabs(const std::string& line);
/// A request as the worker reads it, one line: "tune" and 13 tab-separated fields (the op as
/// the store names it: "sum", or a user reduction's "user:<hash>"; the result as host, device or
/// wide; the flags as 0 or 1; paths without a tab or newline; last, a user reduction's
/// description, to_text's lines in lower-case hex, empty for a built-in op).
std::string request_line(const TuneRequest& r);
/// The request of a "tune ..." line, or nullopt with the reason in *why. A user reduction's
/// description is decoded, parsed and checked (make_user_op) and must have the hash its op
/// field names.
std::optional<TuneRequest> parse_request_line(const std::string& line, std::string* why = nullptr);

struct TuneOutcome {
  enum class Status {
    tuned,       ///< the worker searched the point and stored the result
    tuned_elsewhere, ///< another process stored it meanwhile (it held the point's claim)
    busy,        ///< another process held the point's claim for longer than the wait
    failed,      ///< the worker reported a failure or died (a faulting kernel: recorded as failed)
    unavailable, ///< no worker (not found, cannot start, disabled after repeated deaths)
  };
  Status status = Status::unavailable;
  std::string note;          ///< why, where it did not tune
  double ms = 0;             ///< the request's wall time in this process
  std::size_t measured = 0;  ///< measurements the worker made
};
std::string_view name(TuneOutcome::Status);

/// Tunes a point in the process's worker (started on first use; restarted after a death, once
/// more for the same point); serialized over the process. Never throws.
TuneOutcome autotune_point(const TuneRequest& request);

/// Ends the process's worker, if one runs; the next request starts a new one, which reads the
/// environment afresh (tests change $REDUCE_TUNE_WORKER and the test variants this way).
void stop_autotune_worker();

/// The protocol's version: the worker's first line is "rt-autotune <version> ready".
/// 2: the op field may name a user reduction, whose description is the request's last field.
inline constexpr int kAutotuneProtocol = 2;

} // namespace reduce_tune::detail
