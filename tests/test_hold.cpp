// The timed batches' hold without a GPU (tuner/hold.h, templates/check/hold.cu): the kernel
// compiles with NVRTC for the architectures the tuner targets, and a hold that is off queues and
// waits for a batch once, counting nothing, with no CUDA call.
#include <catch2/catch.hpp>

#include "tuner/fast_check.h"
#include "tuner/hold.h"

#include <string>

using namespace reduce_tune;

TEST_CASE("hold: the hold kernel compiles with NVRTC", "[hold][nvrtc]") {
  Nvrtc nvrtc;
  const std::string source(check_template_source("check/hold.cu"));
  const Compiled ptx = nvrtc.compile(source, "hold.cu", nvrtc.parse_target("compute_90"));
  CHECK(ptx.image.find(".entry rt_hold") != std::string::npos);
  // It reads the GPU's global timer for its timeout, and sleeps between reads where it can.
  CHECK(ptx.image.find("%globaltimer") != std::string::npos);
  CHECK(ptx.image.find("nanosleep") != std::string::npos);
  for (int cc : {75, 90}) CHECK_FALSE(nvrtc.compile(source, "hold.cu", nvrtc.target_for(cc)).image.empty());
}

TEST_CASE("hold: a hold that is off runs a batch once and counts nothing", "[hold]") {
  Nvrtc nvrtc;
  CompileCache cache(""); // none
  Hold h(nvrtc, cache, nvrtc.parse_target("compute_90"), Hold::kTimeoutS, false);
  CHECK_FALSE(h.on());
  int queued = 0, waited = 0;
  h.batch(nullptr, [&] { ++queued; }, [&] { ++waited; });
  CHECK(queued == 1);
  CHECK(waited == 1);
  CHECK_FALSE(h.timed_out());
  CHECK(h.holds() == 0);
  CHECK(h.reruns() == 0);
  CHECK(h.unprotected() == 0);
}
