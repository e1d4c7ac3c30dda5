// reduce-tune: the GPU's fast pass of a segmented sweep's checked launch (tuner/fast_check.h).
#include "tuner/fast_check.h"

#include "tuner/parallel.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>

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

// Calls at(i) for i in [0, n) on one thread a core, 2^15 results a thread at least (16M references
// take a core the better part of a second); returns whether every call returned true.
template <typename F> bool FastCheck::fill_ranges(std::uint64_t n, std::uint64_t most, F&& at) {
  std::atomic<bool> ok{true};
  parallel_for(n, std::uint64_t(1) << 15, [&](std::uint64_t lo, std::uint64_t hi) {
    for (std::uint64_t b = lo; b < hi && ok.load(std::memory_order_relaxed); b += most)
      if (!at(b, std::min(hi, b + most))) ok = false;
  });
  return ok;
}

template <typename F> bool FastCheck::fill(std::uint64_t n, F&& at) {
  return fill_ranges(n, 256, [&](std::uint64_t lo, std::uint64_t hi) {
    for (std::uint64_t i = lo; i < hi; ++i)
      if (!at(i)) return false;
    return true;
  });
}

bool FastCheck::classify(const Segmentation& s, bool& by_class, LengthClasses& classes) {
  by_class = s.problem == Problem::segments;
  if (!by_class) return true;
  std::optional<LengthClasses> c =
      length_classes(s, std::size_t(std::max<std::uint64_t>(1, s.shape.count / kResultsPerLength)));
  if (!c) return false;
  classes = std::move(*c);
  return true;
}

void FastCheck::upload(DType result, FastForm form, const void* want, const float* scale,
                       const std::uint32_t* classes) {
  if (by_class_ && form != FastForm::exact) {
    const std::size_t bytes = n_ * sizeof(std::uint32_t);
    if (class_.size() < bytes) class_ = cuda::Buffer(), class_ = cuda::Buffer(bytes);
    cuda::upload_sync(class_.get(), classes, bytes);
  }
  const std::size_t want_bytes = n_ * (form == FastForm::exact ? size_of(result) : sizeof(double));
  if (want_.size() < want_bytes) want_ = cuda::Buffer(), want_ = cuda::Buffer(want_bytes);
  cuda::upload_sync(want_.get(), want, want_bytes);
  if (form != FastForm::exact) {
    if (scale_.size() < n_ * sizeof(float)) scale_ = cuda::Buffer(), scale_ = cuda::Buffer(n_ * sizeof(float));
    cuda::upload_sync(scale_.get(), scale, n_ * sizeof(float));
  }
  function(result, form, by_class_); // compiled and loaded here, not in a measurement
  ready_ = true;
}

FastForm FastCheck::form_of(const Reference* front, std::uint64_t size, const Segmentation& s, Op op, DType result,
                            std::uint64_t min_results) {
  // Rows and columns: every result has one length, so one depth a measurement; offsets segments:
  // one a distinct length.
  if (s.problem == Problem::array) return FastForm::none;
  const std::uint64_t n = s.shape.count;
  if (n < std::max<std::uint64_t>(min_results, 1) || size != n || !front) return FastForm::none;
  // A float32 result of a bf16 or f16 reduction has another bound and min/max rule.
  if (front->value.dtype != result) return FastForm::none;
  return fast_form(op, result);
}

namespace {

// Result i's expected value (and scale) from its Reference `r`, into want and scale; false where
// `r` does not fit the point (another dtype; another count than its bound's).
bool fill_one(const Reference& r, std::uint64_t i, Op op, DType result, FastForm form, bool by_class,
              const LengthClasses& classes, double count, unsigned char* want, float* scale) {
  if (r.value.dtype != result) return false;
  if (form == FastForm::exact) {
    const std::size_t rs = size_of(result);
    std::memcpy(want + i * rs, &r.value.bits, rs); // little-endian: the low bytes
    return true;
  }
  // The bound's count (mean, var, float64 sumsq) is one for the measurement (rows, columns) or
  // its length class's (offsets): every segment's.
  const double c = by_class ? double(classes.lengths[classes.of[i]]) : count;
  if (r.count != c) return false;
  const double value = fast_want(r);
  std::memcpy(want + i * sizeof(double), &value, sizeof value);
  scale[i] = scale_down(fast_scale(op, r));
  return true;
}

} // namespace

bool FastCheck::fill_point(const std::vector<Reference>& refs, Op op, DType result, FastForm form, bool by_class,
                           const LengthClasses& classes, double count, unsigned char* want, float* scale) {
  return fill(refs.size(), [&](std::uint64_t i) {
    return fill_one(refs[i], i, op, result, form, by_class, classes, count, want, scale);
  });
}

bool FastCheck::prepare(const std::vector<Reference>& refs, const Segmentation& s, Op op, DType result) {
  ready_ = false;
  const FastForm form = form_of(refs.empty() ? nullptr : &refs.front(), refs.size(), s, op, result, min_results_);
  if (form == FastForm::none) return false;
  if (form != FastForm::exact && !classify(s, by_class_, classes_)) return false;
  if (form == FastForm::exact) by_class_ = false; // the bits alone decide
  form_ = form, op_ = op, result_ = result, user_ = nullptr, n_ = s.shape.count;
  count_ = refs.front().count, length_ = s.shape.length;
  staged(want_host_, n_ * (form == FastForm::exact ? size_of(result) : sizeof(double)), want_pin_);
  if (form != FastForm::exact) staged(scale_host_, n_, scale_pin_);
  if (!fill_point(refs, op, result, form, by_class_, classes_, count_, want_host_.data(), scale_host_.data()))
    return false;
  upload(result, form, want_host_.data(), scale_host_.data(), classes_.of.data());
  return true;
}

bool FastCheck::begin_stage(const Reference* front, std::uint64_t size, const Segmentation& s, Op op, DType result,
                            std::uint64_t min_results, FastStage& st) {
  st.applies = st.decided = false;
  st.shape = s.shape, st.op = op, st.result = result;
  st.form = form_of(front, size, s, op, result, min_results);
  if (st.form == FastForm::none) {
    st.decided = front && size == s.shape.count; // the References' dtype and count: any References'
    return false;
  }
  if (st.form != FastForm::exact && !classify(s, st.by_class, st.classes)) {
    st.decided = true; // too many distinct lengths
    return false;
  }
  if (st.form == FastForm::exact) st.by_class = false;
  st.count = front->count, st.length = s.shape.length;
  const std::uint64_t n = s.shape.count;
  st.want.resize(n * (st.form == FastForm::exact ? size_of(result) : sizeof(double)));
  st.scale.resize(st.form == FastForm::exact ? 0 : n);
  return true;
}

bool FastCheck::stage(const std::vector<Reference>& refs, const Segmentation& s, Op op, DType result,
                      std::uint64_t min_results, FastStage& st) {
  if (!begin_stage(refs.empty() ? nullptr : &refs.front(), refs.size(), s, op, result, min_results, st)) return false;
  st.applies = fill_point(refs, op, result, st.form, st.by_class, st.classes, st.count, st.want.data(), st.scale.data());
  return st.applies;
}

bool FastCheck::stage(const SumPrefix& prefix, const Segmentation& s, Op op, DType result, std::uint64_t min_results,
                      FastStage& st) {
  // The References prefix.reference(s) would make: s.shape.count of them, the first made here.
  Reference front;
  const bool served = op == Op::sum && s.shape.count > 0 && prefix.references(s, 0, 1, &front);
  if (!begin_stage(served ? &front : nullptr, s.shape.count, s, op, result, min_results, st)) return false;
  // A block of References a time, in the thread's cache (40 bytes each), not every result's.
  constexpr std::uint64_t kBlock = 512;
  st.applies = fill_ranges(s.shape.count, kBlock, [&](std::uint64_t lo, std::uint64_t hi) {
    thread_local std::vector<Reference> block;
    block.resize(kBlock);
    if (!prefix.references(s, lo, hi, block.data())) return false;
    for (std::uint64_t i = lo; i < hi; ++i)
      if (!fill_one(block[i - lo], i, op, result, st.form, st.by_class, st.classes, st.count, st.want.data(),
                    st.scale.data()))
        return false;
    return true;
  });
  return st.applies;
}

bool FastCheck::prepare(const FastStage& st) {
  ready_ = false;
  if (!st.applies) return false;
  form_ = st.form, op_ = st.op, result_ = st.result, user_ = nullptr, n_ = st.shape.count;
  count_ = st.count, length_ = st.length, by_class_ = st.by_class;
  classes_.lengths = st.classes.lengths; // run() reads the lengths; the classes are uploaded
  upload(st.result, st.form, st.want.data(), st.scale.data(), st.classes.of.data());
  return true;
}

bool FastCheck::prepare(const UserOp& u, DType dtype, const UserExpected& e, const Segmentation& s) {
  ready_ = false;
  if (!e.checked || s.problem == Problem::array) return false;
  const std::uint64_t n = s.shape.count;
  if (n < std::max<std::uint64_t>(min_results_, 1) || e.value.size() != n || e.magnitude.size() != n)
    return false;
  const DType result = u.result_dtype(dtype);
  const bool floats = is_float(result);
  form_ = floats ? FastForm::bound : FastForm::exact;
  if (floats && !classify(s, by_class_, classes_)) return false;
  if (!floats) by_class_ = false;
  op_ = Op::sum, result_ = result, dtype_ = dtype, user_ = &u, n_ = n;
  count_ = double(s.shape.length), length_ = s.shape.length;
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
  upload(result, form_, want_host_.data(), scale_host_.data(), classes_.of.data());
  return true;
}

CUfunction FastCheck::function(DType result, FastForm form, bool classes) {
  auto it = modules_.find(result);
  if (it == modules_.end()) {
    const Compiled c = cache_.get(nvrtc_, render_compare(result), target_);
    it = modules_.emplace(result, std::make_unique<cuda::Module>(c.image)).first;
  }
  if (form == FastForm::exact) return it->second->function("rt_check_exact");
  if (form == FastForm::root) return it->second->function(classes ? "rt_check_root_classes" : "rt_check_root");
  return it->second->function(classes ? "rt_check_bound_classes" : "rt_check_bound");
}

std::optional<FastVerdict> FastCheck::run(CUdeviceptr results,
                                          const std::function<std::uint64_t(std::uint64_t)>& depth, CUstream s) {
  if (!ready_) return std::nullopt;
  FastBound b;
  const bool classes = by_class_ && form_ != FastForm::exact;
  if (classes) {
    // Each distinct length's coefficients, (a, b, c) a class (std: the dtype's u, uh and sub are
    // every class's).
    const std::optional<std::vector<FastBound>> bounds =
        user_ ? bounds_by_length(classes_.lengths,
                                 [&](std::uint64_t len) { return fast_user_bound(*user_, dtype_, depth(len)); })
              : fast_bounds(op_, result_, classes_.lengths, depth);
    if (!bounds || bounds->empty()) return std::nullopt;
    b = bounds->front();
    coef_host_.resize(3 * bounds->size());
    for (std::size_t k = 0; k < bounds->size(); ++k)
      coef_host_[3 * k] = (*bounds)[k].a, coef_host_[3 * k + 1] = (*bounds)[k].b, coef_host_[3 * k + 2] = (*bounds)[k].c;
    const std::size_t bytes = coef_host_.size() * sizeof(double);
    if (coef_.size() < bytes) coef_ = cuda::Buffer(), coef_ = cuda::Buffer(bytes);
    RT_CU(cuMemcpyHtoDAsync(coef_.get(), coef_host_.data(), bytes, s)); // pageable: copied before it returns
  } else if (form_ != FastForm::exact) {
    const std::uint64_t d = depth(length_);
    const std::optional<FastBound> f = user_ ? fast_user_bound(*user_, dtype_, d) : fast_bound(op_, result_, d, count_);
    if (!f) return std::nullopt;
    b = *f;
  }
  const CUfunction f = function(result_, form_, classes);
  if (!verdict_.get()) verdict_ = cuda::Buffer(2 * sizeof(std::uint64_t));
  RT_CU(cuMemsetD32Async(verdict_.get(), 0, 2, s));
  RT_CU(cuMemsetD32Async(verdict_.get() + 8, 0xffffffffu, 2, s));
  CUdeviceptr want = want_.get(), scale = scale_.get(), cls = class_.get(), coef = coef_.get(),
              verdict = verdict_.get();
  std::uint64_t n = n_;
  constexpr unsigned kBlock = 256;
  const auto grid = unsigned(std::min<std::uint64_t>((n + kBlock - 1) / kBlock, 4096));
  if (classes && form_ == FastForm::bound) {
    void* args[] = {&results, &want, &scale, &cls, &coef, &n, &verdict};
    cuda::launch(f, grid, kBlock, 0, s, args);
  } else if (classes) {
    void* args[] = {&results, &want, &scale, &cls, &coef, &n, &b.u, &b.uh, &b.sub, &verdict};
    cuda::launch(f, grid, kBlock, 0, s, args);
  } else if (form_ == FastForm::bound) {
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
