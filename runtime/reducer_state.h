// reduce-tune: the Reducer's private state (Reducer::Impl) and the call path every call takes once
// its arguments are checked (runtime/arguments.h): entry -> lookup (once per entry) -> load ->
// plan -> launch. The bodies are in runtime/reducer_state.cpp (construction),
// runtime/entry_cache.cpp (an entry's configuration and kernel) and runtime/launch.cpp (plan and
// launch). Not installed.
#pragma once

#include "reduce_tune/reducer.h"

#include "db/store.h"
#include "kernels/catalogue.h"
#include "kernels/driver.h"
#include "kernels/nvrtc.h"
#include "kernels/runner.h"
#include "runtime/arguments.h"
#include "runtime/autotune.h"
#include "runtime/capture.h"
#include "runtime/entry_cache.h"
#include "runtime/leases.h"
#include "runtime/lookup.h"
#include "runtime/warm.h"

#include <atomic>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>

namespace reduce_tune {

using namespace detail;

struct Reducer::Impl {
  static std::uint64_t next_serial();
  Options options;
  cuda::DeviceInfo info;
  DeviceKey device;      ///< the lookup's key for this GPU
  cuda::Context context; // declared before everything that holds device resources
  CUcontext ctx = nullptr;
  int ordinal = 0;       ///< the GPU's ordinal
  /// Unique in the process (never reused): what the threads' warm calls know the reducer by.
  const std::uint64_t serial = next_serial();
  std::mutex store_mu;   ///< a Store is one SQLite connection: one user at a time
  std::unique_ptr<db::Store> store;
  std::string no_store;  ///< why there is no store
  std::unique_ptr<db::Store> shipped; ///< the tuning installed with the library (read-only)
  Nvrtc nvrtc;
  CompileCache cache;
  KernelLoader loader;

  bool record = false;   ///< Options::record or $REDUCE_TUNE_RECORD=1 (runtime/record.cpp)
  bool autotune = false; ///< Options::autotune or $REDUCE_TUNE_AUTOTUNE=1 (runtime/autotune.h)
  bool no_store_for_records = false; ///< the store could not be created for recording (store_mu)
  EntryCache entries;
  LeasePool leases;
  /// Where captured graphs' workspaces come back to (runtime/capture.h).
  std::shared_ptr<capture::Home> home = std::make_shared<capture::Home>();
  /// A warm call enqueued kernels without a lease (runtime/launch.cpp, run_warm): no event marks
  /// their end, so the destructor synchronizes the context before unloading the kernels.
  std::atomic<bool> unleased{false};
  std::mutex side_mu;
  std::optional<cuda::Stream> side; ///< zeroes a captured call's workspace, outside the graph

  /// Opens the store (if it exists), the shipped tuning and NVRTC for GPU `gpu`, whose primary
  /// context it leaves current.
  Impl(int gpu, Options opts);

  // ---- an entry's configuration (runtime/entry_cache.cpp) ------------------------------------
  /// The key's configuration, looked up on the entry's first use (no kernel loaded).
  Choice choice(const EntryKey& key);
  /// Why an entry is made ready: a call, a call on a capturing stream, or a question
  /// (config_for). With autotune on, only a call tunes a point on first use; the others take what
  /// the store has without marking the entry ready, so the next call still tunes it.
  using Use = EntryUse;
  /// The key's entry, its configuration looked up and its kernel loaded on first use (needs the
  /// context current). A stored configuration that no longer compiles or loads (another NVRTC or
  /// driver than the tuner's) is replaced by the built-in default, and the note says why.
  const Entry& ready(const EntryKey& key, Use use = Use::call);
  /// With autotune on: tunes the entry's point where its choice is not exact and the point can
  /// be searched (runtime/autotune.h), then looks it up again; a user reduction's (`user`) under
  /// its hash. e.mu held. Never throws.
  void tune_first(Entry& e, const EntryKey& key, const std::shared_ptr<const UserOp>& user = nullptr);

  // ---- user reductions (runtime/reducer_user.cpp) ----------------------------------------------
  /// The reducer's UserOp of `r`: one per description (by hash), made and checked on first use.
  std::shared_ptr<const UserOp> user_op(const Reduction& r);
  /// The entry of a user reduction's call (key.op unused): looked up, tuned on first use and
  /// loaded as ready() does. Throws ReductionError where no variant serves it or it does not
  /// compile.
  const Entry& ready_user(const std::shared_ptr<const UserOp>& user, const EntryKey& key, Use use = Use::call);
  /// A user reduction's configuration for `key` (key.op unused), without loading it.
  Choice choose_user(const UserOp& user, const EntryKey& key);
  std::mutex user_mu; ///< guards the two maps below
  std::map<std::uint64_t, std::shared_ptr<const UserOp>> user_ops;
  std::map<std::tuple<std::uint64_t, Problem, DType, std::uint64_t, std::uint64_t>, std::unique_ptr<Entry>>
      user_entries;

  /// Notes the call point of an entry served without an exact tuning in the store (creating it
  /// where there is none), a user reduction's under its hash with its description kept; never
  /// throws: a store that cannot be written loses the note only.
  void note_point(const EntryKey& key, const Choice& choice, const UserOp* user = nullptr);

  // ---- plan and launch (runtime/launch.cpp) --------------------------------------------------
  /// Enqueues a checked call with a device result on `stream`, ordered after its earlier work: on
  /// a lease, or into the graph `stream` is being captured into (`cap`, the stream's state,
  /// queried before the call's arguments were checked). Needs the context current, in relaxed
  /// capture mode (as every public call has it). `warm`: the public call's key, under which the
  /// calling thread remembers the decision (not for a capturing stream).
  void run(const Call& call, CUstream stream, const capture::State& cap,
           const WarmKey* warm = nullptr);
  /// The call of `key` with these pointers on `stream`, where the calling thread made it before
  /// (find_warm), its pointers lie in allocations it checked before (checked_before) and the
  /// stream is not being captured: then it is enqueued with no other driver call than the
  /// current context (made the reducer's for the call where it is not), the stream's capture
  /// state and the launches (a workspace's lease where the plan needs one), and true is returned.
  /// Else false, having enqueued nothing: the full path takes the call.
  bool run_warm(const WarmKey& key, const void* in, void* out, CUstream stream);
  /// Runs a checked array call with a host result (Result::host, n > 0) on `stream` and waits for
  /// it. The same needs, on a stream that is not being captured.
  Scalar run_to_host(const Call& call, CUstream stream);

private:
  /// The lookup for an entry. A store that cannot be read gives the built-in default, as no
  /// store does.
  /// What a call's configuration must meet: the Options', and where its result goes.
  Requirements requirements(Result result) const;
  Choice choose(const EntryKey& key);
  /// Called while handling `err`, the failed load of e's stored choice: loads the built-in
  /// default for the key instead, under the same Options (deterministic), or rethrows when that
  /// was the one that failed.
  void fall_back(Entry& e, const EntryKey& key, const std::exception& err);
  /// Loads e's kernel for its choice (falling back to the built-in default, as ready does); a
  /// user reduction's kernel where `user` is set (no fall-back: ReductionError).
  void load(Entry& e, const EntryKey& key, const std::shared_ptr<const UserOp>& user = nullptr);
  /// ready()'s and ready_user()'s common part: e, not ready, made ready under e.mu (the choice
  /// looked up, the point tuned or noted as the first-use rule says, the kernel loaded).
  const Entry& make_ready(Entry& e, const EntryKey& key, Use use, const std::shared_ptr<const UserOp>& user);
  /// The device a call's plan is made for.
  Target target(DType dtype, Op op) const;
  /// Reserves a workspace (`reserve(ws, stream_to_zero_on)`) and enqueues the call with it
  /// (`enqueue(kernel, ws)`): on a lease, or, where `cap` is active, into the graph.
  template <typename Reserve, typename Enqueue>
  void launch(const Kernel& kernel, const capture::State& cap, CUstream stream, Reserve&& reserve,
              Enqueue&& enqueue_call);
  /// A call on a stream that is being captured into `graph` (see launch.cpp).
  template <typename Reserve, typename Enqueue>
  void captured(CUgraph graph, const Kernel& kernel, Reserve&& reserve, Enqueue&& enqueue_call);
};

} // namespace reduce_tune
