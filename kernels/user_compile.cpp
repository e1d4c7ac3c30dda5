// reduce-tune: compile_reduction (reduce_tune/reduction.h): a user reduction compiled with NVRTC
// through the catalogue's templates, without a GPU, so that a description that does not compile
// is reported before any call.
#include "kernels/catalogue.h"
#include "kernels/nvrtc.h"
#include "kernels/user_op.h"

#include <algorithm>

namespace reduce_tune {

void compile_reduction(const Reduction& r, DType dtype, const std::string& arch,
                       const std::string& nvrtc_path) {
  const std::shared_ptr<const UserOp> user = make_user_op(r);
  user->result_dtype(dtype); // throws for a dtype it does not take
  const Nvrtc nvrtc(nvrtc_path);
  if (nvrtc.archs().empty()) throw std::runtime_error("NVRTC " + nvrtc.version() + " targets no architecture");
  const ArchTarget target =
      arch.empty() ? ArchTarget{"sm_" + std::to_string(nvrtc.archs().back()), true} : nvrtc.parse_target(arch);
  Target t;
  t.dtype = dtype;
  t.cc = target.number();
  t.user = user.get();
  // The first valid configuration of each problem: the pieces of the description meet every
  // template the same way, so one kernel a problem finds what does not compile.
  for (Problem problem : {Problem::array, Problem::rows, Problem::columns, Problem::segments}) {
    t.problem = problem;
    for (const Variant& v : variants(problem)) {
      const std::vector<Config> configs = space(v);
      const auto valid = std::find_if(configs.begin(), configs.end(),
                                      [&](const Config& c) { return !invalid_reason(c, t); });
      if (valid == configs.end()) continue;
      try {
        nvrtc.compile(render(*valid, dtype, *user), "reduce_tune.cu", target);
      } catch (const CompileError& e) {
        throw ReductionError("reduce_tune: the reduction " + user->name + " does not compile for " +
                                 std::string(name(dtype)) + " elements: " + e.what(),
                             e.log());
      }
      break;
    }
  }
}

} // namespace reduce_tune
