// reduce-tune: the GPU's fast pass of a segmented sweep's checked launch. Per point (an input, an
// op) the expected results and the scales of their bounds (tuner/fast_bound.h) are uploaded once;
// each checked launch is then followed by a compare kernel (templates/check/compare.cu) that
// counts the results outside their bounds, and the host reads back two words instead of every
// result. Where the count is not 0 the caller reads the results back and the CPU check decides,
// as it does where the fast pass does not apply (a float32 result of a bf16 or f16 reduction; few
// results, where reading them back is as quick; offsets segments of more distinct lengths than
// the bounds of a measurement are cheap to make for; a reduction without a CPU evaluation).
// Offsets segments' results differ in length and so in depth and count: their bounds are made a
// measurement for each distinct length (tuner/length_classes.h) and looked up by class. Every result of every measurement is
// checked either way, and only the CPU check ever names a wrong result.
#pragma once

#include "kernels/driver.h"
#include "kernels/nvrtc.h"
#include "tuner/fast_bound.h"
#include "tuner/length_classes.h"
#include "tuner/reference.h"
#include "tuner/sum_prefix.h"
#include "tuner/user_check.h"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace reduce_tune {

/// The text of a tuner-only template (templates/check/compare.cu), embedded at build time.
std::string_view check_template_source(std::string_view name);
/// The compare kernels' source for results of dtype `result`: rt_check_exact for every dtype,
/// rt_check_bound and rt_check_root too for the float ones.
std::string render_compare(DType result);

/// What the compare kernel found: the failing results and the lowest failing index (~0: none).
struct FastVerdict {
  std::uint64_t failures = 0, first = ~0ull;
  bool passed() const { return failures == 0; }
};

/// A point's expected results and the scales of their bounds on the host, made by
/// FastCheck::stage, which needs nothing of the GPU: a sweep makes the next shape's while the
/// current one is measured, and FastCheck::prepare(const FastStage&) uploads them.
struct FastStage {
  bool applies = false; ///< whether the fast pass applies to the point
  /// Where it does not: whether it refuses the point whatever References it is made from (too few
  /// results, no fast form for the op and dtype, too many distinct lengths), so that staging the
  /// point again from other References would refuse it too.
  bool decided = false;
  Shape shape{0, 0};
  Op op = Op::sum;
  DType result = DType::f32;
  FastForm form = FastForm::none;
  double count = 0;         ///< elements a result (rows, columns)
  std::uint64_t length = 0; ///< the segment length (rows, columns)
  bool by_class = false;    ///< offsets segments: bounds by length class
  LengthClasses classes;
  std::vector<unsigned char> want; ///< the expected results: their bits (exact) or doubles
  std::vector<float> scale;        ///< bounded forms: the scales
};

class FastCheck {
public:
  /// Below this many results reading them back and checking them on the CPU (one thread, tens of
  /// ns a result) costs about what a compare launch, its wait and the point's upload do.
  static constexpr std::uint64_t kMinResults = 1 << 12;
  /// Offsets segments: at most one distinct length in this many results (each costs the host a
  /// depth and a bound a measurement, the CPU check tens of ns a result).
  static constexpr std::uint64_t kResultsPerLength = 32;
  /// Compiles with `nvrtc` for `target` through `cache` (as the sweep's kernels) and loads into
  /// the current context, on first use of each result dtype.
  FastCheck(const Nvrtc& nvrtc, CompileCache& cache, ArchTarget target, std::uint64_t min_results = kMinResults)
      : nvrtc_(nvrtc), cache_(cache), target_(std::move(target)), min_results_(min_results) {}

  /// Prepares the point whose results `refs` are (a built-in op, results of dtype `result`):
  /// uploads what its compare needs. Returns whether the fast pass applies; false: run() is not
  /// to be called until the next prepare.
  bool prepare(const std::vector<Reference>& refs, const Segmentation& s, Op op, DType result);
  /// What prepare(refs, s, op, result) computes on the host, for a check of `min_results` results
  /// or more, into `st` (its memory reused); on any thread. Returns st.applies.
  static bool stage(const std::vector<Reference>& refs, const Segmentation& s, Op op, DType result,
                    std::uint64_t min_results, FastStage& st);
  /// The same for a sum over rows or offsets segments whose References `prefix` makes (where
  /// prefix.serves(s, op)), made from the prefix sums a few thousand results at a time without
  /// holding every result's Reference: the same FastStage, byte for byte, as stage() makes from
  /// prefix.reference(s). False (st.applies) where the fast pass does not apply or the prefix
  /// sums do not serve the point; the caller then makes the References.
  static bool stage(const SumPrefix& prefix, const Segmentation& s, Op op, DType result,
                    std::uint64_t min_results, FastStage& st);
  /// Prepares a point staged by stage(): uploads it (from pageable memory). Returns st.applies.
  bool prepare(const FastStage& st);
  std::uint64_t min_results() const { return min_results_; }
  /// The same for a user reduction on elements of `dtype`.
  bool prepare(const UserOp& u, DType dtype, const UserExpected& e, const Segmentation& s);
  /// Forgets the prepared point.
  void clear() { ready_ = false; }
  bool ready() const { return ready_; }

  /// Compares the prepared point's results at `results` (device memory), written by a
  /// configuration whose rounding depth at a segment length `len` is `depth(len)`, on `s`, and
  /// waits for the verdict. nullopt where a depth has no linear bound (the CPU decides). `depth`
  /// may be called from several threads at once.
  std::optional<FastVerdict> run(CUdeviceptr results, const std::function<std::uint64_t(std::uint64_t)>& depth,
                                 CUstream s);
  /// The same with one depth for every length (rows and columns have one length).
  std::optional<FastVerdict> run(CUdeviceptr results, std::uint64_t depth, CUstream s) {
    return run(results, [depth](std::uint64_t) { return depth; }, s);
  }

private:
  CUfunction function(DType result, FastForm form, bool classes);
  // at(lo, hi) over [0, n) in ranges of at most `most`, on every core; false if any call is.
  template <typename F> static bool fill_ranges(std::uint64_t n, std::uint64_t most, F&& at);
  template <typename F> static bool fill(std::uint64_t n, F&& at);
  // Whether the results of `s` differ in length (offsets), and if so their length classes (into
  // `classes`); false where there are too many of them for the fast pass.
  static bool classify(const Segmentation& s, bool& by_class, LengthClasses& classes);
  // The form of a built-in op's point of `size` results, the first `front` (null: none), or
  // none where the fast pass does not apply (before classes).
  static FastForm form_of(const Reference* front, std::uint64_t size, const Segmentation& s, Op op, DType result,
                          std::uint64_t min_results);
  // stage()'s fields but the values and scales (sized for them), from the point's first
  // Reference; false where nothing is to be filled.
  static bool begin_stage(const Reference* front, std::uint64_t size, const Segmentation& s, Op op, DType result,
                          std::uint64_t min_results, FastStage& st);
  // The expected values (bits or doubles) and scales of `refs` into want and scale (n each).
  static bool fill_point(const std::vector<Reference>& refs, Op op, DType result, FastForm form, bool by_class,
                         const LengthClasses& classes, double count, unsigned char* want, float* scale);
  // Uploads a point (n_ results of `result`, in `form`; classes: n_ of them where by class) and
  // makes it ready.
  void upload(DType result, FastForm form, const void* want, const float* scale, const std::uint32_t* classes);

  const Nvrtc& nvrtc_;
  CompileCache& cache_;
  ArchTarget target_;
  std::uint64_t min_results_;
  std::map<DType, std::unique_ptr<cuda::Module>> modules_;
  // The prepared point.
  bool ready_ = false;
  FastForm form_ = FastForm::none;
  Op op_ = Op::sum;
  DType result_ = DType::f32, dtype_ = DType::f32;
  const UserOp* user_ = nullptr;
  double count_ = 0; // elements a result (rows, columns)
  std::uint64_t length_ = 0; // the segment length (rows, columns)
  bool by_class_ = false; // offsets segments: bounds by length class
  LengthClasses classes_;
  std::uint64_t n_ = 0;
  // Host staging and device copies: the expected results (their bits for exact results, doubles
  // for bounded ones) and the bounds' scales.
  std::vector<unsigned char> want_host_;
  std::vector<float> scale_host_;
  std::unique_ptr<cuda::HostRegistration> want_pin_, scale_pin_;
  std::vector<double> coef_host_; // a measurement's (a, b, c) a class
  cuda::Buffer want_, scale_, class_, coef_, verdict_;
};

} // namespace reduce_tune
