// reduce-tune: a sweep's time, phase by phase (`tune --profile`).
#include "tuner/sweep.h"

#include <algorithm>
#include <cstdio>

namespace reduce_tune {

std::string profile_text(const SweepTimes& t) {
  const double measuring = t.load_s + t.validate_s + t.timing_s;
  const double accounted = t.setup_s + t.compile_s + t.seeds_s + t.input_s + t.reference_s + measuring +
                           t.store_s + t.input_check_s + t.check_setup_s;
  std::string out;
  char line[512]; // the check and input rows name their paths and figures
  const auto row = [&](const char* what, double s, const std::string& note) {
    std::snprintf(line, sizeof line, "  %-13s %8.2f s %5.1f %%%s%s\n", what, s, t.total_s > 0 ? 100 * s / t.total_s : 0.0,
                  note.empty() ? "" : "  ", note.c_str());
    out += line;
  };
  const auto per = [](double s, std::size_t n, const char* unit) {
    if (!n) return std::string();
    char b[80];
    std::snprintf(b, sizeof b, "%.2f ms a %s", 1e3 * s / double(n), unit);
    return std::string(b);
  };
  std::snprintf(line, sizeof line, "profile: %.2f s, %zu points, %zu measurements, %zu inputs\n", t.total_s, t.points,
                t.measured, t.inputs);
  out += line;
  row("setup", t.setup_s, "context, NVRTC, store, run");
  row("compile", t.compile_s, "every valid configuration through the compile cache");
  row("seeds", t.seeds_s, per(t.seeds_s, t.points, "point"));
  std::string figures; // of the input row
  if (t.upload_bytes) {
    const auto mib = [](std::uint64_t b) { return double(b) / (1 << 20); };
    char how[96], b[200];
    if (t.upload_staged_bytes == t.upload_bytes) std::snprintf(how, sizeof how, "through pinned staging buffers");
    else if (t.upload_staged_bytes == 0) std::snprintf(how, sizeof how, "from pageable memory");
    else std::snprintf(how, sizeof how, "%.0f MiB through pinned staging buffers, the rest from pageable memory",
                       mib(t.upload_staged_bytes));
    std::snprintf(b, sizeof b, "; %.0f MiB uploaded in %.2f s, %.1f GB/s, %s", mib(t.upload_bytes), t.upload_s,
                  t.upload_s > 0 ? double(t.upload_bytes) / t.upload_s / 1e9 : 0.0, how);
    figures = b;
  }
  if (t.input_wait_s > 0) {
    char b[80];
    std::snprintf(b, sizeof b, "; %.2f s of it making inputs or waiting for those made ahead", t.input_wait_s);
    figures += b;
  }
  if (t.layouts) { // the segmented sweeps' shapes: offsets drawn (or taken, drawn ahead) and uploaded
    char b[160];
    std::snprintf(b, sizeof b, "; %.2f s of it the layouts of %zu shapes (offsets drawn, %zu of them ahead, and uploaded)",
                  t.layout_s, t.layouts, t.layouts_ahead);
    figures += b;
  }
  row("input", t.input_s,
      per(t.input_s - t.layout_s, t.inputs, "input") + (t.layouts ? " and the layouts" : "") + " (generated, uploaded, offsets" +
          (t.inputs_ahead ? "; " + std::to_string(t.inputs_ahead) + " generated ahead, while the one before was measured" : "") +
          figures + ")");
  // Points whose GPU check data came straight from the prefix sums: their References were made only
  // for a CPU check.
  const std::string straight =
      t.prefix_straight ? ", " + std::to_string(t.prefix_straight) +
                              " of them made from the prefix sums straight into the GPU check's data, their References "
                              "made only where the CPU checked their results (" +
                              std::to_string(t.references_on_demand) + ")"
                        : "";
  row("reference", t.reference_s,
      per(t.reference_s, t.points, "point") +
          (t.prefix_points ? " (" + std::to_string(t.prefix_points) + " from their input's prefix sums" + straight + ")"
                           : "") +
          (t.references_ahead ? " (" + std::to_string(t.references_ahead) +
                                    " made while the shape before was measured)" : ""));
  row("load", t.load_s, per(t.load_s, t.measured, "measurement") + " (modules, first use)");
  const std::string paths = t.gpu_checked + t.cpu_checked == 0 ? "" :
      ": " + std::to_string(t.gpu_checked) + " passed on the GPU, " + std::to_string(t.cpu_checked) +
      " read back and checked on the CPU (" + std::to_string(t.cpu_after_gpu) + " after a GPU failure)";
  row("check", t.validate_s, per(t.validate_s, t.measured, "measurement") + " (checked launch, result compared" + paths + ")");
  if (t.check_setups || t.check_setup_s > 0)
    row("check setup", t.check_setup_s,
        per(t.check_setup_s, t.check_setups, "point") +
            " (the GPU check's data, made from the references where not made before, uploaded" +
            (t.check_staged ? "; " + std::to_string(t.check_staged) +
                                  " made while the shape before was measured, with the references or from the prefix sums"
                            : "") +
            (t.prefix_straight ? "; those made from the prefix sums on this thread count as the reference's time" : "") +
            ")");
  row("timing", t.timing_s,
      per(t.timing_s, t.measured, "measurement") +
          (t.held_batches ? " (" + std::to_string(t.held_batches) + " batches held until queued; " +
                                std::to_string(t.hold_reruns) + " queued again after the hold timed out, " +
                                std::to_string(t.hold_unprotected) + " of them unprotected again)"
                          : ""));
  row("store", t.store_s, per(t.store_s, t.points, "point") + " (one transaction a point)");
  row("input check", t.input_check_s, (t.input_checks ? std::to_string(t.input_checks) + " " : std::string()) + "input(s) " +
      (t.inputs_hashed ? "checked: " + std::to_string(t.inputs_hashed) + " by their hash on the GPU, the rest read back" : "read back and compared"));
  row("other", std::max(0.0, t.total_s - accounted), "progress, plans, the search itself");
  return out;
}

} // namespace reduce_tune
