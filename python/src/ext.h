// What the files of the extension reduce_tune._ext share: the per-GPU reducers, the table of warm
// calls, the counters stats() reports, and the conversions of the Python ints the calls take.
// Internal to the extension (python/src/); never installed.
//
// One Reducer per GPU, created on first use and kept for the life of the process (never destroyed:
// at interpreter exit the CUDA driver may already be shutting down; set_record replaces them with
// new ones and keeps the old). A second one per GPU, never tuning on first use, serves the user
// reductions whose first-use tuning the package does itself (checked by their NumPy check).
#pragma once

#include "reduce_tune/reducer.h"

#include "kernels/driver.h"

#include <nanobind/nanobind.h>

#include <atomic>
#include <bit>
#include <cstdint>
#include <exception>
#include <string>
#include <utility>
#include <vector>

namespace nb = nanobind;

namespace reduce_tune::pyext {

/// Pointers and stream handles as the Python package passes them: ints.
using Ptr = std::uintptr_t;

// ---- what the calls did: counters the tests read (ext.cpp) -----------------------------------

/// Counted since import: Reducers created, SQLite statements run by the library's connections (the
/// tuning store and the shipped tuning: a lookup), and the extension's own allocations, stream
/// waits and pointer queries (stats() adds the library's: runtime/counters.h). A warm call of the
/// package does none of these.
struct Stats {
  std::atomic<std::uint64_t> reducers{0}, store_statements{0}, allocations{0}, stream_waits{0},
      pointer_queries{0}, result_blocks{0};
};
extern Stats g_stats;

/// Counts the statements of every SQLite connection opened from now on (sqlite3_auto_extension).
void count_store_statements();

// ---- NVRTC and the reducers (reducers.cpp) ----------------------------------------------------

/// The NVRTC the reducers open: "" for the library's own choice, else the path of a pip wheel's.
std::string reducers_nvrtc_path();

/// An NVRTC that cannot be loaded, said with what would provide one; other errors rethrown as they are.
[[noreturn]] void rethrow_nvrtc(const std::exception& e);

/// The NVRTC the reducers use: its path, version and targets; with `arch` ("sm_90"), a small kernel
/// compiled for it too. Needs no driver or GPU.
nb::dict nvrtc_info(const std::string& arch);

/// NVRTC libraries of pip wheels to open, in order, where the build's own is not found.
void set_nvrtc_candidates(std::vector<std::string> paths);

/// The package's copy of the shipped tuning, for reducers created from now on.
void set_shipped_path(const std::string& path);
std::string shipped_path();

constexpr int kFastGpus = 64;
/// The reducers of the first kFastGpus GPUs, read without the lock by every call.
extern std::atomic<Reducer*> g_fast[kFastGpus];

/// The Reducer of GPU `ordinal`, created under the lock. Throws std::runtime_error (no driver or
/// GPU) or std::invalid_argument (no such GPU).
Reducer& create_reducer(int ordinal);

/// The Reducer of GPU `ordinal`, created on first use. Throws RuntimeError (no driver or GPU)
/// or ValueError (no such GPU). Inline: every call of the package starts here.
inline Reducer& reducer(int ordinal) {
  if (unsigned(ordinal) < unsigned(kFastGpus))
    if (Reducer* r = g_fast[ordinal].load(std::memory_order_acquire)) return *r;
  return create_reducer(ordinal);
}

/// GPU `ordinal`'s reducer that never tunes on first use, for the user reductions the package
/// tunes itself; created on first use (after reducer(ordinal), whose checks it shares).
Reducer& own_reducer(int ordinal);

/// A new own_reducer for GPU `ordinal` (the old one kept alive, as set_record keeps its): it opens
/// the store again, which a tuning that created the store after the old one was made needs.
void renew_own_reducer(int ordinal);

/// Options::record for the reducers from now on: the existing ones are replaced by new ones with
/// the setting (Options are fixed at construction).
void set_record(bool on);
/// (Options::record as set_record left it, whether $REDUCE_TUNE_RECORD asks for recording).
std::pair<bool, bool> record_setting();

/// Options::autotune for the reducers from now on, as set_record does for recording.
void set_autotune(bool on);
/// (Options::autotune as set_autotune left it, whether $REDUCE_TUNE_AUTOTUNE asks for it).
std::pair<bool, bool> autotune_setting();

// ---- calls with or without the GIL (the table: hot.cpp) ---------------------------------------

/// The calls known to be warm: a call of that kind, GPU, dtype, op, result and size buckets (the
/// Reducer's: [2^k, 2^(k+1)) in each extent) returned before, so its configuration is looked up and
/// loaded and the call only enqueues work. Those run holding the GIL, which costs less than
/// letting it go and taking it back; a first call, which may compile for a second, lets other
/// threads run. A direct-mapped table of exact keys: a key pushed out by another is just cold again.
class WarmCalls {
public:
  static std::uint64_t key(int kind, int dev, int dtype, int op, std::uint64_t a, std::uint64_t b,
                           int result) {
    return 1 + (std::uint64_t(kind & 3) | std::uint64_t(dev & 0xff) << 2 |
                std::uint64_t(dtype & 0x3f) << 10 | std::uint64_t(op & 0x3f) << 16 |
                std::uint64_t(std::bit_width(a)) << 22 | std::uint64_t(std::bit_width(b)) << 29 |
                std::uint64_t(result & 0x3f) << 36);
  }
  /// Runs f, without the GIL unless `k` is warm; `k` is warm after f returns.
  template <typename F> void run(std::uint64_t k, F&& f) {
    std::atomic<std::uint64_t>& slot = slots_[(k * 0x9E3779B97F4A7C15ull) >> (64 - kBits)];
    if (slot.load(std::memory_order_relaxed) == k) {
      f();
      return;
    }
    {
      nb::gil_scoped_release nogil;
      f();
    }
    slot.store(k, std::memory_order_relaxed);
  }
  /// Every call cold again (the reducers were replaced: their first calls load kernels).
  void clear() {
    for (auto& slot : slots_) slot.store(0, std::memory_order_relaxed);
  }

private:
  static constexpr int kBits = 12;
  std::atomic<std::uint64_t> slots_[std::size_t(1) << kBits] = {};
};
extern WarmCalls g_warm;

enum CallKind { kArray = 0, kRows = 1, kColumns = 2, kSegments = 3 };

inline DType to_dtype(int v) { return static_cast<DType>(v); }
inline Op to_op(int v) { return static_cast<Op>(v); }
inline const void* in_ptr(Ptr p) { return reinterpret_cast<const void*>(p); }
inline void* out_ptr(Ptr p) { return reinterpret_cast<void*>(p); }
inline CUstream to_stream(Ptr s) { return reinterpret_cast<CUstream>(s); }

/// A Choice as the package reads it: a dict of its fields (ext.cpp).
nb::dict choice_dict(const Choice& c);

// ---- the eager torch call's entry (hot.cpp) ---------------------------------------------------

/// Adds `hot`, the METH_FASTCALL entry of the eager torch call, to the module.
void add_hot(nb::module_& m);

// ---- the eager torch call's small results (results.cpp) -------------------------------------

constexpr std::size_t kResultMaxDims = 8;

/// The eager torch call's results of one kind (DLPack dtype code and bits, shape, device): tensors of
/// their own carved from blocks that `allocate(nbytes)` makes (a torch tensor of nbytes, made on
/// the current stream), handed to torch by `import_(capsule)` (torch's DLPack import). Results lie
/// stride() bytes apart (their size rounded up to 16), as many to a block as fit in `block_bytes`
/// (one at least, kResultsPerBlock at most). One block at a time per stream; a block is released
/// to torch when its last result is gone. Used with the GIL held.
class ResultPool {
public:
  static constexpr std::size_t kResultsPerBlock = 64;
  ResultPool(int device_type, int device, int code, int bits, std::vector<std::int64_t> shape,
             std::size_t block_bytes, nb::object allocate, nb::object import_);
  ~ResultPool();
  ResultPool(const ResultPool&) = delete;
  ResultPool& operator=(const ResultPool&) = delete;
  /// A new result tensor whose memory was allocated on `stream`, its data pointer in *data; nullptr
  /// with the Python error set where torch failed.
  PyObject* take(std::uintptr_t stream, std::uintptr_t* data);
  std::size_t stride() const { return stride_; }
  std::size_t per_block() const { return per_block_; }
  /// The streams it holds a block for.
  std::size_t streams() const { return current_.size(); }

private:
  struct Current {
    std::uintptr_t stream;
    void* block;
  };
  int device_type_, device_, code_, bits_;
  std::vector<std::int64_t> shape_;
  std::size_t stride_ = 0, per_block_ = 0;
  nb::object allocate_, import_;
  std::vector<Current> current_;
};

/// Defines ResultPool on the module.
void bind_results(nb::module_& m);

// ---- user reductions (user.cpp) ---------------------------------------------------------------

/// Defines reduction_name ... config_for_user and renew_own_reducer on the module.
void bind_reductions(nb::module_& m);

// ---- streams, pointers and device memory (streams.cpp) ----------------------------------------

/// GPU `ordinal`'s primary context made current for a scope (the caller's restored after). The
/// Reducer, created first, keeps the context retained for the life of the process.
class InPrimary {
public:
  explicit InPrimary(int ordinal);
  ~InPrimary();
  InPrimary(const InPrimary&) = delete;
  InPrimary& operator=(const InPrimary&) = delete;

private:
  CUcontext caller_ = nullptr;
};

/// Whether `stream` belongs to GPU `ordinal`'s primary context (the special handles always do).
bool stream_on_device(int ordinal, Ptr stream);
/// Makes `consumer` wait on the device for the work enqueued so far on `producer`.
void stream_wait(int ordinal, Ptr consumer, Ptr producer);
/// Whether `stream` (of GPU `ordinal`'s primary context) is being captured into a CUDA graph.
bool stream_capturing(int ordinal, Ptr stream);
/// (CU_MEMORYTYPE or 0, device ordinal or -1, managed) of a pointer.
nb::tuple pointer_info(Ptr p);
/// Device memory on GPU `ordinal` (cuMemAlloc), for results of frameworks without an allocator we know.
Ptr alloc(int ordinal, std::uint64_t bytes);
void release(int ordinal, Ptr p);
/// Copies len(dst) bytes from device memory after `stream`'s work, and waits.
void copy_to_host(int ordinal, Ptr src, nb::bytearray dst, Ptr stream);

// ---- DLPack (dlpack.cpp) ----------------------------------------------------------------------

/// What a DLPack capsule describes, read without consuming it.
nb::tuple dlpack_view(nb::handle capsule);

// ---- the bench's reference: host times of the C++ call (timing.cpp) ---------------------------

std::pair<double, double> time_calls(int ordinal, int dtype, int op, Ptr in, std::uint64_t n,
                                     Ptr out, Ptr stream, int calls);
double time_calls_idle(int ordinal, int dtype, int op, Ptr in, std::uint64_t n, Ptr out, Ptr stream,
                       int calls);
nb::dict time_queries(int ordinal, Ptr ptr, Ptr stream, int calls);

} // namespace reduce_tune::pyext
