// Time of the CPU references and the GPU check's staging per rows/columns shape, min, 2^24.
#include "tuner/reference.h"
#include "tuner/fast_check.h"
#include "kernels/ops.h"
#include <chrono>
#include <cstdio>
using namespace reduce_tune;
int main(int argc, char** argv) {
  DType dt = argc > 1 && std::string(argv[1]) == "f64" ? DType::f64 : DType::f32;
  Op op = argc > 2 && std::string(argv[2]) == "sum" ? Op::sum : Op::min;
  std::vector<Reference> out;
  FastStage st;
  HostArray a = make_input(dt, 1ull << 24, 7);
  double tr = 0, ts = 0;
  for (Problem p : {Problem::rows, Problem::columns})
    for (int lg = 0; lg <= 24; ++lg) {
      std::uint64_t len = 1ull << lg;
      Segmentation s; s.problem = p; s.shape = {(1ull << 24) / len, len};
      s.stride = p == Problem::rows ? len : (1ull << 24) / len;
      double r = 0, g = 0;
      for (int k = 0; k < 2; ++k) {
        auto t0 = std::chrono::steady_clock::now();
        segmented_reference(a, s, op, out);
        auto t1 = std::chrono::steady_clock::now();
        FastCheck::stage(out, s, op, dt, FastCheck::kMinResults, st);
        auto t2 = std::chrono::steady_clock::now();
        r = std::chrono::duration<double, std::milli>(t1 - t0).count();
        g = std::chrono::duration<double, std::milli>(t2 - t1).count();
      }
      tr += r, ts += g;
      std::printf("%s %8llu x %8llu  ref %7.1f ms  stage %7.1f ms %s\n", p == Problem::rows ? "rows" : "cols",
                  (unsigned long long)s.shape.count, (unsigned long long)len, r, g, st.applies ? "fast" : "");
    }
  std::printf("total ref %.0f stage %.0f ms\n", tr, ts);
}
