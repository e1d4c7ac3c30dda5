// The CPU references' time: every one-input op over 2^24 elements as rows and columns of several
// lengths, each timed on its second call (the output's memory reused).
#include "tuner/reference.h"
#include "kernels/ops.h"
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
using namespace reduce_tune;
int main() {
  std::vector<Reference> out;
  const Op ops[] = {Op::sum, Op::min, Op::max, Op::mean, Op::sumsq, Op::norm1, Op::norm2, Op::count_nonzero,
                    Op::any, Op::all, Op::argmax, Op::argmin, Op::logsumexp, Op::var, Op::std_,
                    Op::var_population, Op::std_population};
  std::printf("dtype,problem,length,op,ms\n");
  for (DType dt : {DType::f32, DType::f64, DType::i32, DType::bf16}) {
    HostArray a = make_input(dt, 1ull << 24, 7);
    for (std::uint64_t len : {1ull, 16ull, 4096ull, 1ull << 20})
      for (Problem p : {Problem::rows, Problem::columns}) {
        Segmentation s;
        s.problem = p;
        s.shape = {(1ull << 24) / len, len};
        s.stride = p == Problem::rows ? len : (1ull << 24) / len;
        for (Op op : ops) {
          if (op_unsupported(op, dt)) continue;
          double ms = 0;
          for (int k = 0; k < 2; ++k) {
            auto t0 = std::chrono::steady_clock::now();
            segmented_reference(a, s, op, out);
            ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
          }
          std::printf("%s,%s,%llu,%s,%.2f\n", std::string(name(dt)).c_str(), p == Problem::rows ? "rows" : "columns",
                      (unsigned long long)len, std::string(name(op)).c_str(), ms);
        }
      }
  }
}
