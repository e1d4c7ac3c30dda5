// reduce-tune: compile, load and launch a configuration. The tuner and the library both reduce
// through this one path, so what was measured is exactly what runs.
#pragma once

#include "kernels/catalogue.h"
#include "kernels/driver.h"
#include "kernels/nvrtc.h"
#include "kernels/user_op.h"
#include "kernels/values.h"

#include <functional>
#include <map>
#include <memory>
#include <mutex>

namespace reduce_tune {

/// A configuration compiled and loaded for one (dtype, op) in the current context.
struct Kernel {
  Config config;
  DType dtype = DType::f32;
  Op op = Op::sum;
  std::shared_ptr<const cuda::Module> module; // shared by configurations with the same source
  CUfunction reduce = nullptr, combine = nullptr;
  /// Segmented variants: rt_segmented (in `reduce`), rt_fill_identity, the binned variant's
  /// rt_segmented_chunks and the merge variant's rt_segmented_partition (null for the others).
  CUfunction fill = nullptr, chunks = nullptr, partition = nullptr;
  /// The post pass of the atomic or the ordered finish, rt_segmented_post (SegmentedPlan::post;
  /// null without one).
  CUfunction post = nullptr;
  Resources resources;
  /// The second kernel of a call (the two-pass finish's combine, the merge mapping's main kernel
  /// after its partition, the binned mapping's chunks) is launched programmatically (compiled for
  /// sm_90+, the driver has cuLaunchKernelEx, REDUCE_TUNE_NO_PDL unset): templates/common.cuh's
  /// rt_pdl_wait is compiled in exactly then.
  bool programmatic = false;
  /// bf16/f16: the result is written as the float32 accumulator (Target::wide_result).
  bool wide_result = false;
  /// A user reduction in place of `op` (kept alive by the kernel).
  std::shared_ptr<const UserOp> user;
  /// The dtype of the result (kernels/ops.h): for sum, min and max the element type, or float32
  /// for a wide result.
  DType result_dtype() const {
    return user ? user->result_dtype(dtype) : ::reduce_tune::result_dtype(op, dtype, wide_result);
  }
};

/// Renders, compiles (through the disk cache) and loads kernels for one device; modules with the
/// same source are loaded once. Thread-safe.
class KernelLoader {
public:
  KernelLoader(const Nvrtc& nvrtc, CompileCache& cache, ArchTarget target)
      : nvrtc_(nvrtc), cache_(cache), target_(std::move(target)) {}
  /// Compiles without loading (any thread; no context needed). `wide_result`: see Kernel.
  Compiled compile(const Config& c, DType dtype, Op op, bool wide_result = false);
  /// Compiles if needed and loads into the current context.
  Kernel load(const Config& c, DType dtype, Op op, bool wide_result = false);
  /// The same for a user reduction. A description that does not compile throws ReductionError
  /// with NVRTC's log.
  Compiled compile(const Config& c, DType dtype, const std::shared_ptr<const UserOp>& user);
  Kernel load(const Config& c, DType dtype, const std::shared_ptr<const UserOp>& user);
  const ArchTarget& target() const { return target_; }
  CompileCache& cache() { return cache_; }

private:
  Kernel load_source(const std::string& source, const Config& c, DType dtype);
  const Nvrtc& nvrtc_;
  CompileCache& cache_;
  ArchTarget target_;
  std::mutex mu_;
  std::map<std::string, std::pair<std::shared_ptr<const cuda::Module>, Resources>> modules_;
};

/// One kernel to compile.
struct CompileJob {
  Config config;
  DType dtype = DType::f32;
  Op op = Op::sum;
  bool wide_result = false; ///< see Kernel
  std::shared_ptr<const UserOp> user = nullptr; ///< a user reduction in place of `op`
};
/// Its outcome: the compiled module, or the error (a CompileError's text carries the log).
struct CompileOutcome {
  Compiled compiled;
  std::string error;
};
/// Compiles `jobs` on `threads` threads (0 = one per core), each distinct source once; outcomes
/// are in the order of `jobs`. `done` (optional) is called with the count of finished sources.
std::vector<CompileOutcome> compile_all(KernelLoader& loader, const std::vector<CompileJob>& jobs,
                                        unsigned threads,
                                        const std::function<void(std::size_t, std::size_t)>& done = {});

/// Device memory one reduction needs besides its input, grown on demand and reused.
class Workspace {
public:
  /// Makes room for `p` on a dtype, and for a scratch copy of n elements when p.scratch.
  /// Finish state that must start zeroed is zeroed when first made (or after forget_state): on
  /// the null stream, then the context is synchronised (the workspace may be used on any stream
  /// next), or, with `fill_on`, enqueued on that stream without waiting (ordered before the
  /// caller's next work there; no legacy stream, no context-wide wait: what a call may do while
  /// another thread captures a graph).
  void reserve(const LaunchPlan& p, DType dtype, std::uint64_t n, CUstream fill_on = nullptr);
  CUdeviceptr partials() const { return partials_.get(); }
  CUdeviceptr out() const { return out_.get(); }
  /// The last-block and first-block finishes' state: zeroed once, then kept by the kernels.
  CUdeviceptr counter() const { return counter_.get(); }
  CUdeviceptr scratch() const { return scratch_.get(); }
  HostArray& host_partials() { return host_partials_; }
  /// Makes room for a segmented plan's state (zeroed when first made or forgotten, as above; the
  /// kernels reset it).
  void reserve(const SegmentedPlan& p, CUstream fill_on = nullptr);
  CUdeviceptr segmented_state() const { return segmented_.get(); }
  /// The columns' last-block finish's counters and partials (SegmentedPlan::ticket_bytes): zeroed
  /// when first made, grown or forgotten; the kernels leave the counters at 0. A buffer of its own:
  /// other mappings leave data in segmented_state() where these counters would lie.
  CUdeviceptr tickets() const { return tickets_.get(); }
  /// The post pass's accumulators (SegmentedPlan::post_bytes; reserved with the plan, never
  /// zeroed: every call fills them).
  CUdeviceptr accumulators() const { return accumulators_.get(); }
  /// The self-resetting state's contents are unknown (its last user may have stopped half-way,
  /// e.g. a graph that was captured but never ran): the next reserve zeroes it. No CUDA call.
  void forget_state() { counter_zeroed_ = segmented_zeroed_ = tickets_zeroed_ = false; }

private:
  static constexpr std::size_t kFinishStateBytes = 16; // templates/common.cuh, rt_first_state
  cuda::Buffer partials_, out_, counter_, scratch_, segmented_, accumulators_, tickets_;
  bool counter_zeroed_ = false, segmented_zeroed_ = false, tickets_zeroed_ = false;
  HostArray host_partials_;
};

/// Copies the input to the scratch buffer for in-place variants (outside any timed region).
void prepare(const Kernel& k, const LaunchPlan& p, CUdeviceptr in, std::uint64_t n, Workspace& w,
             CUstream s);
/// Enqueues one reduction: the identity into the result (atomic finish), the kernel, the second
/// pass. The result goes to `out` when given (device-side finishes only), else to the workspace.
/// With k.programmatic, the second pass is launched programmatically: it starts while the
/// reduction runs and waits for it before reading the partials (~1 us less per call on an H100).
/// `in2`: the second input of an op of two (dot), n elements too; 0 for the others.
void enqueue(const Kernel& k, const LaunchPlan& p, CUdeviceptr in, std::uint64_t n, Workspace& w,
             CUstream s, CUdeviceptr out = 0, CUdeviceptr in2 = 0);
/// Sets one element at `out` to the identity of (dtype, op) on `s`: one or two 32-bit memsets
/// (capturable in a CUDA graph, unlike a copy from host memory). `out` is aligned to its element.
void set_identity(CUdeviceptr out, DType dtype, Op op, CUstream s);
/// Sets one element at `out` to `v` (of v.dtype) the same way.
void set_value(CUdeviceptr out, Scalar v, CUstream s);
/// Waits for the stream and returns the result: copied from the device, or, for the host finish,
/// the partials copied back and combined here.
Scalar result(const Kernel& k, const LaunchPlan& p, Workspace& w, CUstream s);

/// Where a segmented reduction reads and writes (Shape says what count and length are).
struct SegmentedArgs {
  CUdeviceptr in = 0, offsets = 0, out = 0;
  Shape shape;
  std::uint64_t stride = 0;   ///< rows and columns: elements between row starts
  /// The second input of an op of two (dot): the same shape and layout as `in`; 0 for the others.
  CUdeviceptr in2 = 0;
};
/// Enqueues one segmented reduction: the fill, the merge partition, rt_segmented, the binned
/// chunks, the post pass (p.post: the kernels before it write accumulators, into the results or
/// the workspace's); with k.programmatic the kernel after a partition and the chunks start
/// programmatically. All on `s`, no host wait. The workspace must have been reserved for the plan.
void enqueue(const Kernel& k, const SegmentedPlan& p, const SegmentedArgs& a, Workspace& w,
             CUstream s);

/// prepare + enqueue + result.
Scalar reduce_once(const Kernel& k, const LaunchPlan& p, CUdeviceptr in, std::uint64_t n,
                   Workspace& w, CUstream s, CUdeviceptr in2 = 0);

} // namespace reduce_tune
