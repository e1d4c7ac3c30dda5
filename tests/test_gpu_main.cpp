// The GPU tests' main: where there is no CUDA driver or GPU, say so and exit 4, which CTest
// reports as skipped (never as passed or failed).
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "kernels/driver.h"

#include <cstdio>
#include <cstdlib>
#include <string>

int main(int argc, char** argv) {
  bool listing = false;
  for (int i = 1; i < argc; ++i) listing |= std::string(argv[i]).rfind("--list", 0) == 0;
  std::string why;
  if (!listing && !reduce_tune::cuda::available(&why)) {
    std::printf("SKIPPED: GPU tests need a GPU: %s\n", why.c_str());
    return 4;
  }
  // The tests set up the tuning they look up: the tuning shipped with the library stays out unless
  // a test names it.
  setenv("REDUCE_TUNE_SHIPPED_DB", "", 0);
  return Catch::Session().run(argc, argv);
}
