// Which configurations an NVRTC test compiles. A configuration's source differs from its siblings'
// by template parameters; the code a compile can fail on is chosen by the variant, tail, finish,
// vector width and lanes per segment, by the unroll only as 1 or more (no template tests its value
// but `RT_UNROLL > 1`; the others are loop bounds and array sizes), and by the block only where it
// is a single warp or the largest block (their own reduction steps). So a test compiles one configuration of each such code
// path and spends its time on the dtypes and ops instead. The 1-D sum's every configuration is compiled
// for sm_75 and sm_90 by the catalogue's own tests; REDUCE_TUNE_COMPILE_ALL=1 makes these tests
// compile every configuration too.
#pragma once

#include "reduce_tune/config.h"

#include <cstdlib>
#include <set>
#include <string>
#include <tuple>

namespace reduce_tune::test {

inline bool compile_every_configuration() {
  const char* e = std::getenv("REDUCE_TUNE_COMPILE_ALL");
  return e && *e && std::string(e) != "0";
}

class CodePaths {
public:
  /// True the first time a configuration of this code path is offered (always, with
  /// REDUCE_TUNE_COMPILE_ALL=1).
  bool first(const Config& c) {
    const int block_class = c.block <= 32 ? 0 : c.block >= 1024 ? 2 : 1;
    const int unroll_class = c.unroll > 1;
    return seen_.insert({c.variant, c.tail, c.finish, c.vec, c.width, unroll_class, block_class}).second || every_;
  }

private:
  bool every_ = compile_every_configuration();
  std::set<std::tuple<std::string, Tail, Finish, int, int, int, int>> seen_;
};

} // namespace reduce_tune::test
