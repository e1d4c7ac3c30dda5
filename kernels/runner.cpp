// reduce-tune: the one compile-and-launch path.
#include "kernels/runner.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <stdexcept>
#include <thread>

namespace reduce_tune {

Compiled KernelLoader::compile(const Config& c, DType dtype, Op op, bool wide_result) {
  return cache_.get(nvrtc_, render(c, dtype, op, wide_result), target_);
}

namespace {

// A user reduction's compile error as the user's: ReductionError, with NVRTC's log.
[[noreturn]] void rethrow_user(const CompileError& e, const UserOp& user, DType dtype) {
  throw ReductionError("reduce_tune: the reduction " + user.name + " does not compile for " +
                           std::string(name(dtype)) + " elements: " + e.what(),
                       e.log());
}

} // namespace

Compiled KernelLoader::compile(const Config& c, DType dtype, const std::shared_ptr<const UserOp>& user) {
  try {
    return cache_.get(nvrtc_, render(c, dtype, *user), target_);
  } catch (const CompileError& e) {
    rethrow_user(e, *user, dtype);
  }
}

Kernel KernelLoader::load(const Config& c, DType dtype, const std::shared_ptr<const UserOp>& user) {
  Kernel k;
  try {
    k = load_source(render(c, dtype, *user), c, dtype);
  } catch (const CompileError& e) {
    rethrow_user(e, *user, dtype);
  }
  k.user = user;
  return k;
}

Kernel KernelLoader::load(const Config& c, DType dtype, Op op, bool wide_result) {
  Kernel k = load_source(render(c, dtype, op, wide_result), c, dtype);
  k.op = op;
  k.wide_result = wide_result;
  return k;
}

Kernel KernelLoader::load_source(const std::string& source, const Config& c, DType dtype) {
  std::shared_ptr<const cuda::Module> module;
  Resources res;
  {
    std::lock_guard lock(mu_);
    if (auto it = modules_.find(source); it != modules_.end())
      std::tie(module, res) = it->second;
  }
  if (!module) {
    Compiled compiled = cache_.get(nvrtc_, source, target_);
    module = std::make_shared<const cuda::Module>(compiled.image);
    res = compiled.resources;
    std::lock_guard lock(mu_);
    modules_.emplace(source, std::make_pair(module, res));
  }
  Kernel k;
  k.config = c;
  k.dtype = dtype;
  k.module = module;
  if (find_variant(c.variant)->problem == Problem::array) {
    k.reduce = module->function("rt_reduce");
  } else {
    k.reduce = module->function("rt_segmented");
    k.fill = module->function("rt_fill_identity");
    if (source.find("rt_segmented_chunks") != std::string::npos)
      k.chunks = module->function("rt_segmented_chunks");
    if (source.find("rt_segmented_partition") != std::string::npos)
      k.partition = module->function("rt_segmented_partition");
    // Rendered with a post pass (the atomic finish's or the ordered one's): the columns and flat
    // templates spell rt_segmented_post in every source, compiled only with the ordered finish.
    if (source.find("#define RT_POST_PASS 1") != std::string::npos)
      k.post = module->function("rt_segmented_post");
  }
  k.combine = module->function("rt_combine_partials");
  k.resources = res;
  static const bool pdl_off = [] {
    const char* e = std::getenv("REDUCE_TUNE_NO_PDL");
    return e && *e && std::string(e) != "0";
  }();
  k.programmatic = !pdl_off && target_.number() >= 90 && cuda::programmatic_launch();
  return k;
}

std::vector<CompileOutcome> compile_all(KernelLoader& loader, const std::vector<CompileJob>& jobs,
                                        unsigned threads,
                                        const std::function<void(std::size_t, std::size_t)>& done) {
  std::map<std::string, std::size_t> first; // source -> first job with it
  std::vector<std::size_t> source_of(jobs.size());
  std::vector<std::size_t> todo;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    const CompileJob& j = jobs[i];
    auto [it, inserted] = first.emplace(
        j.user ? render(j.config, j.dtype, *j.user) : render(j.config, j.dtype, j.op, j.wide_result), i);
    if (inserted) todo.push_back(i);
    source_of[i] = it->second;
  }
  std::vector<CompileOutcome> out(jobs.size());
  std::atomic<std::size_t> next{0}, finished{0};
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t)
    pool.emplace_back([&] {
      for (std::size_t k; (k = next++) < todo.size(); ++finished) {
        const CompileJob& j = jobs[todo[k]];
        try {
          out[todo[k]].compiled = j.user ? loader.compile(j.config, j.dtype, j.user)
                                         : loader.compile(j.config, j.dtype, j.op, j.wide_result);
        } catch (const std::exception& e) {
          out[todo[k]].error = e.what();
        }
      }
    });
  while (done && finished < todo.size()) {
    done(finished, todo.size());
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  for (auto& th : pool) th.join();
  for (std::size_t i = 0; i < jobs.size(); ++i)
    if (source_of[i] != i) out[i] = out[source_of[i]];
  return out;
}

namespace {

/// Zeroes new state: see Workspace::reserve.
void zero_state(CUdeviceptr p, std::size_t bytes, CUstream fill_on) {
  RT_CU(cuMemsetD8Async(p, 0, bytes, fill_on));
  if (!fill_on) RT_CU(cuCtxSynchronize());
}

} // namespace

void Workspace::reserve(const LaunchPlan& p, DType dtype, std::uint64_t n, CUstream fill_on) {
  const std::size_t es = size_of(dtype);
  // Partials are the op's accumulators (float32 for bf16 and f16 sums).
  const std::size_t ps = p.accumulator_bytes;
  if (out_.size() < 8) out_ = cuda::Buffer(8);
  if (p.partials && partials_.size() < p.grid * ps) partials_ = cuda::Buffer(p.grid * ps);
  if (p.counter && counter_.size() < kFinishStateBytes) {
    counter_ = cuda::Buffer(kFinishStateBytes);
    counter_zeroed_ = false;
  }
  if (p.counter && !counter_zeroed_) {
    zero_state(counter_.get(), kFinishStateBytes, fill_on);
    counter_zeroed_ = true;
  }
  if (p.scratch && scratch_.size() < n * es) scratch_ = cuda::Buffer(n * es);
  if (p.host_finish && host_partials_.bytes.size() < p.grid * ps) {
    host_partials_.bytes.resize(p.grid * ps);
  }
}

void Workspace::reserve(const SegmentedPlan& p, CUstream fill_on) {
  if (accumulators_.size() < p.post_bytes) accumulators_ = cuda::Buffer(p.post_bytes);
  if (p.work_bytes && segmented_.size() < p.work_bytes) {
    segmented_ = cuda::Buffer(p.work_bytes);
    segmented_zeroed_ = false;
  }
  if (p.work_bytes && !segmented_zeroed_) {
    zero_state(segmented_.get(), p.work_bytes, fill_on);
    segmented_zeroed_ = true;
  }
  // Zeroed whole: the counters lie ahead of the partials, whose values need no zero.
  if (p.ticket_bytes && tickets_.size() < p.ticket_bytes) {
    tickets_ = cuda::Buffer(p.ticket_bytes);
    tickets_zeroed_ = false;
  }
  if (p.ticket_bytes && !tickets_zeroed_) {
    zero_state(tickets_.get(), tickets_.size(), fill_on);
    tickets_zeroed_ = true;
  }
}

void prepare(const Kernel& k, const LaunchPlan& p, CUdeviceptr in, std::uint64_t n, Workspace& w,
             CUstream s) {
  if (p.scratch) RT_CU(cuMemcpyDtoDAsync(w.scratch(), in, n * size_of(k.dtype), s));
}

/// Sets `out` to the identity before an atomic finish. A memset: on the H100 it adds ~0.7 us to a
/// call, a one-thread init kernel ~1.7 us, cuStreamWriteValue32 ~1.8 us. An init kernel that lets
/// the reduction launch programmatically measured 0.1-0.2 us under the memset in the probe, but it
/// makes the call two kernels, and two-kernel calls paid ~0.9 us more in some runs of calls, which
/// a memset and one kernel never did, so it is not used (bench/probes/finishes.cu;
/// docs/METHOD.md, "Four chunks, the lowest median"). 8-byte identities are two 32-bit
/// words; out is aligned to its element.
void set_identity(CUdeviceptr out, DType dtype, Op op, CUstream s) {
  set_value(out, identity(dtype, op), s);
}

void set_value(CUdeviceptr out, Scalar v, CUstream s) {
  const DType dtype = v.dtype;
  const std::uint64_t bits = v.bits;
  const unsigned lo = unsigned(bits), hi = unsigned(bits >> 32);
  if (size_of(dtype) == 1) {
    RT_CU(cuMemsetD8Async(out, static_cast<unsigned char>(lo), 1, s));
  } else if (size_of(dtype) == 2) {
    RT_CU(cuMemsetD16Async(out, static_cast<unsigned short>(lo), 1, s));
  } else if (size_of(dtype) == 4) {
    RT_CU(cuMemsetD32Async(out, lo, 1, s));
  } else if (lo == hi) {
    RT_CU(cuMemsetD32Async(out, lo, 2, s));
  } else {
    RT_CU(cuMemsetD32Async(out, lo, 1, s));
    RT_CU(cuMemsetD32Async(out + 4, hi, 1, s));
  }
}

void enqueue(const Kernel& k, const LaunchPlan& p, CUdeviceptr in, std::uint64_t n, Workspace& w,
             CUstream s, CUdeviceptr out, CUdeviceptr in2) {
  if (!out || p.host_finish) out = w.out();
  CUdeviceptr partials = w.partials(), work = w.scratch(), counter = w.counter();
  if (p.init_out) set_identity(out, k.result_dtype(), k.op, s);
  unsigned long long count = n;
  // in2 is the last parameter of the kernels of an op of two inputs (templates/common.cuh); the
  // others have one parameter fewer and never read the last entry.
  void* args[] = {&in, &work, &partials, &out, &count, &counter, &in2};
  cuda::launch(k.reduce, p.grid, p.block, p.smem_bytes, s, args);
  if (p.second_pass) {
    unsigned long long parts = p.grid;
    void* args2[] = {&partials, &out, &parts, &count}; // count: the elements, for the post-map
    cuda::launch(k.combine, 1, p.block, p.smem_bytes, s, args2, k.programmatic);
  }
}

void enqueue(const Kernel& k, const SegmentedPlan& p, const SegmentedArgs& a, Workspace& w,
             CUstream s) {
  CUdeviceptr in = a.in, offsets = a.offsets, result = a.out, in2 = a.in2;
  CUdeviceptr work = p.ticket_bytes ? w.tickets() : w.segmented_state();
  // With the post pass the kernels below write accumulators: into the results when they are of
  // their type (post_bytes 0), else into the workspace.
  CUdeviceptr out = p.post && p.post_bytes ? w.accumulators() : result;
  unsigned long long count = a.shape.count, length = a.shape.length, stride = a.stride,
                     aux = p.aux;
  // The fill and the post pass: one thread per result up to a grid of 2^16 blocks; a grid-stride
  // loop past that.
  const unsigned per_result = std::max(
      unsigned(std::min<unsigned long long>((count + 255) / 256, 1u << 16)), 1u);
  if (p.fill) {
    void* fill_args[] = {&out, &count};
    cuda::launch(k.fill, per_result, 256, 0, s, fill_args);
  }
  void* args[] = {&in, &offsets, &out, &count, &length, &stride, &aux, &work, &in2}; // as above
  // A kernel that follows another of the same call (the main kernel after the fill or the merge
  // mapping's partition, the binned mapping's chunks) starts programmatically where
  // k.programmatic: it waits in the kernel (rt_pdl_wait) for what the first wrote, so its launch
  // and its loads overlap the first.
  if (p.partition_grid) cuda::launch(k.partition, p.partition_grid, p.block, 0, s, args);
  cuda::launch(k.reduce, p.grid, p.block, p.smem_bytes, s, args,
               k.programmatic && (p.partition_grid != 0 || p.fill));
  if (p.chunk_grid)
    cuda::launch(k.chunks, p.chunk_grid, p.block, p.chunk_smem_bytes, s, args, k.programmatic);
  if (p.post) {
    // Programmatic where k.programmatic: its launch overlaps the kernel before it (the split
    // columns' two-pass main kernel lets it start at once), and it waits in the kernel
    // (rt_pdl_wait) until that one has completed and its stores are visible.
    if (!k.post) throw std::logic_error(key(k.config) + ": the plan has a post pass its module lacks");
    // The ordered finish's post pass also reads `in` (the flat mapping's tiles start at its
    // vector alignment) and aux; the atomic finish's takes the first five.
    void* post_args[] = {&out, &result, &offsets, &count, &length, &in, &aux};
    cuda::launch(k.post, p.post_grid ? p.post_grid : per_result, 256, 0, s, post_args, k.programmatic);
  }
}

Scalar result(const Kernel& k, const LaunchPlan& p, Workspace& w, CUstream s) {
  const std::size_t es = size_of(k.result_dtype());
  if (p.host_finish) {
    HostArray& partials = w.host_partials();
    partials.dtype = accumulator_dtype(k.op, k.dtype);
    RT_CU(cuMemcpyDtoHAsync(partials.bytes.data(), w.partials(), p.grid * p.accumulator_bytes, s));
    RT_CU(cuStreamSynchronize(s));
    return combine_on_host(partials, p.grid, k.op, k.result_dtype());
  }
  Scalar r;
  r.dtype = k.result_dtype();
  RT_CU(cuMemcpyDtoHAsync(&r.bits, w.out(), es, s));
  RT_CU(cuStreamSynchronize(s));
  return r;
}

Scalar reduce_once(const Kernel& k, const LaunchPlan& p, CUdeviceptr in, std::uint64_t n,
                   Workspace& w, CUstream s, CUdeviceptr in2) {
  prepare(k, p, in, n, w, s);
  enqueue(k, p, in, n, w, s, 0, in2);
  return result(k, p, w, s);
}

} // namespace reduce_tune
