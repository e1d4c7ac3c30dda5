// reduce-tune: the GPU's fast pass of a segmented sweep's checked launch (tuner/fast_check.h).
#include "tuner/fast_check.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <thread>

namespace reduce_tune {
namespace {

// The unsigned integer C type of a result's size: the kernels compare and load results as bits.
const char* bits_type(DType d) {
  switch (size_of(d)) {
  case 1: return "unsigned char";
  case 2: return "unsigned short";
  case 4: return "unsigned";
  default: return "unsigned long long";
  }
}

const char* float_macro(DType d) {
  switch (d) {
  case DType::f32: return "RT_CHECK_F32";
  case DType::f64: return "RT_CHECK_F64";
  case DType::bf16: return "RT_CHECK_BF16";
  case DType::f16: return "RT_CHECK_F16";
  default: return nullptr;
  }
}

// The integer bits of a user reduction's integer result `want` (a double from its CPU
// evaluation), or nullopt where no result of dtype `d` has exactly that value.
std::optional<std::uint64_t> integer_bits(double want, DType d) {
  if (!std::isfinite(want) || want != std::floor(want)) return std::nullopt;
  switch (d) {
  case DType::i32:
    if (want < -0x1p31 || want >= 0x1p31) return std::nullopt;
    return std::uint64_t(std::uint32_t(std::int32_t(want)));
  case DType::u32:
    if (want < 0 || want >= 0x1p32) return std::nullopt;
    return std::uint64_t(std::uint32_t(want));
  case DType::i64:
    if (want < -0x1p63 || want >= 0x1p63) return std::nullopt;
    return std::uint64_t(std::int64_t(want));
  case DType::u8:
    if (want < 0 || want >= 256) return std::nullopt;
    return std::uint64_t(want);
  default: return std::nullopt;
  }
}

// Grows `v` to n elements, its memory page-locked by `pin` (registered again where it moves), so
// that an upload runs at the copy engine's speed: 16M results are 192 MB.
template <typename T>
void staged(std::vector<T>& v, std::size_t n, std::unique_ptr<cuda::HostRegistration>& pin) {
  if (n > v.capacity()) {
    pin.reset(); // before the memory it covers is freed
    v.reserve(n);
  }
  v.resize(n);
  if (!pin && v.capacity()) pin = std::make_unique<cuda::HostRegistration>(v.data(), v.capacity() * sizeof(T));
}

} // namespace

std::string render_compare(DType result) {
  std::string s = "// reduce-tune: compare " + std::string(name(result)) + " results\n";
  s += "typedef " + std::string(bits_type(result)) + " B;\n";
  if (const char* m = float_macro(result)) s += "#define " + std::string(m) + " 1\n";
  s += check_template_source("check/compare.cu");
  return s;
}

// Calls at(i) for i in [0, n) on one thread a core from 2^20 results on (16M references take
// a core the better part of a second); returns whether every call returned true.
template <typename F> bool FastCheck::fill(std::uint64_t n, F&& at) {
  const unsigned threads = n < (1u << 20) ? 1 : std::max(1u, std::thread::hardware_concurrency());
  std::atomic<bool> ok{true};
  auto run = [&](std::uint64_t lo, std::uint64_t hi) {
    for (std::uint64_t i = lo; i < hi && ok.load(std::memory_order_relaxed); ++i)
      if (!at(i)) ok = false;
  };
  if (threads == 1) {
    run(0, n);
  } else {
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < threads; ++t) pool.emplace_back(run, n * t / threads, n * (t + 1) / threads);
    for (std::thread& th : pool) th.join();
  }
  return ok;
}

void FastCheck::upload(DType result, FastForm form) {
  const std::size_t want_bytes = n_ * (form == FastForm::exact ? size_of(result) : sizeof(double));
  if (want_.size() < want_bytes) want_ = cuda::Buffer(), want_ = cuda::Buffer(want_bytes);
  cuda::upload_sync(want_.get(), want_host_.data(), want_bytes);
  if (form != FastForm::exact) {
    if (scale_.size() < n_ * sizeof(float)) scale_ = cuda::Buffer(), scale_ = cuda::Buffer(n_ * sizeof(float));
    cuda::upload_sync(scale_.get(), scale_host_.data(), n_ * sizeof(float));
  }
  function(result, form); // compiled and loaded here, not in a measurement
  ready_ = true;
}

bool FastCheck::prepare(const std::vector<Reference>& refs, const Segmentation& s, Op op, DType result) {
  ready_ = false;
  // Rows and columns only: every result has one length, so one depth a measurement.
  if (s.problem != Problem::rows && s.problem != Problem::columns) return false;
  const std::uint64_t n = s.shape.count;
  if (n < std::max<std::uint64_t>(min_results_, 1) || refs.size() != n) return false;
  // A float32 result of a bf16 or f16 reduction has another bound and min/max rule.
  if (refs.front().value.dtype != result) return false;
  const FastForm form = fast_form(op, result);
  if (form == FastForm::none) return false;
  form_ = form, op_ = op, result_ = result, user_ = nullptr, n_ = n;
  count_ = refs.front().count;
  const std::size_t rs = size_of(result);
  bool filled = false;
  if (form == FastForm::exact) {
    staged(want_host_, n * rs, want_pin_);
    filled = fill(n, [&](std::uint64_t i) {
      if (refs[i].value.dtype != result) return false;
      std::memcpy(want_host_.data() + i * rs, &refs[i].value.bits, rs); // little-endian: the low bytes
      return true;
    });
  } else {
    staged(want_host_, n * sizeof(double), want_pin_);
    staged(scale_host_, n, scale_pin_);
    auto* want = reinterpret_cast<double*>(want_host_.data());
    filled = fill(n, [&](std::uint64_t i) {
      // The bound's count (mean, var, float64 sumsq) is one for the measurement: every segment's.
      if (refs[i].count != count_ || refs[i].value.dtype != result) return false;
      want[i] = fast_want(refs[i]);
      scale_host_[i] = scale_down(fast_scale(op, refs[i]));
      return true;
    });
  }
  if (!filled) return false;
  upload(result, form);
  return true;
}

bool FastCheck::prepare(const UserOp& u, DType dtype, const UserExpected& e, const Segmentation& s) {
  ready_ = false;
  if (!e.checked || (s.problem != Problem::rows && s.problem != Problem::columns)) return false;
  const std::uint64_t n = s.shape.count;
  if (n < std::max<std::uint64_t>(min_results_, 1) || e.value.size() != n || e.magnitude.size() != n)
    return false;
  const DType result = u.result_dtype(dtype);
  const bool floats = is_float(result);
  form_ = floats ? FastForm::bound : FastForm::exact;
  op_ = Op::sum, result_ = result, dtype_ = dtype, user_ = &u, n_ = n;
  count_ = double(s.shape.length);
  const std::size_t rs = size_of(result);
  bool filled = false;
  if (!floats) {
    // check_user compares an integer result as a double with the evaluation: where the evaluation
    // is that integer, its bits are the one result that passes.
    staged(want_host_, n * rs, want_pin_);
    filled = fill(n, [&](std::uint64_t i) {
      const std::optional<std::uint64_t> bits = integer_bits(e.value[i], result);
      if (bits) std::memcpy(want_host_.data() + i * rs, &*bits, rs);
      return bits.has_value();
    });
  } else {
    staged(want_host_, n * sizeof(double), want_pin_);
    staged(scale_host_, n, scale_pin_);
    auto* want = reinterpret_cast<double*>(want_host_.data());
    filled = fill(n, [&](std::uint64_t i) {
      want[i] = e.value[i];
      scale_host_[i] = scale_down(std::fabs(e.magnitude[i]));
      return true;
    });
  }
  if (!filled) return false;
  upload(result, form_);
  return true;
}

CUfunction FastCheck::function(DType result, FastForm form) {
  auto it = modules_.find(result);
  if (it == modules_.end()) {
    const Compiled c = cache_.get(nvrtc_, render_compare(result), target_);
    it = modules_.emplace(result, std::make_unique<cuda::Module>(c.image)).first;
  }
  return it->second->function(form == FastForm::exact  ? "rt_check_exact"
                              : form == FastForm::root ? "rt_check_root"
                                                       : "rt_check_bound");
}

std::optional<FastVerdict> FastCheck::run(CUdeviceptr results, std::uint64_t depth, CUstream s) {
  if (!ready_) return std::nullopt;
  FastBound b;
  if (form_ != FastForm::exact) {
    const std::optional<FastBound> f = user_ ? fast_user_bound(*user_, dtype_, depth)
                                             : fast_bound(op_, result_, depth, count_);
    if (!f) return std::nullopt;
    b = *f;
  }
  const CUfunction f = function(result_, form_);
  if (!verdict_.get()) verdict_ = cuda::Buffer(2 * sizeof(std::uint64_t));
  RT_CU(cuMemsetD32Async(verdict_.get(), 0, 2, s));
  RT_CU(cuMemsetD32Async(verdict_.get() + 8, 0xffffffffu, 2, s));
  CUdeviceptr want = want_.get(), scale = scale_.get(), verdict = verdict_.get();
  std::uint64_t n = n_;
  constexpr unsigned kBlock = 256;
  const auto grid = unsigned(std::min<std::uint64_t>((n + kBlock - 1) / kBlock, 4096));
  if (form_ == FastForm::bound) {
    void* args[] = {&results, &want, &scale, &n, &b.a, &b.b, &b.c, &verdict};
    cuda::launch(f, grid, kBlock, 0, s, args);
  } else if (form_ == FastForm::root) {
    void* args[] = {&results, &want, &scale, &n, &b.a, &b.b, &b.u, &b.uh, &b.sub, &verdict};
    cuda::launch(f, grid, kBlock, 0, s, args);
  } else {
    void* args[] = {&results, &want, &n, &verdict};
    cuda::launch(f, grid, kBlock, 0, s, args);
  }
  std::uint64_t host[2] = {0, 0};
  RT_CU(cuMemcpyDtoHAsync(host, verdict, sizeof host, s));
  RT_CU(cuStreamSynchronize(s));
  return FastVerdict{host[0], host[1]};
}

} // namespace reduce_tune
