// Tuning stores for tests of the Reducer's lookup on the GPU: rows "measured" on this GPU, written
// as the tuner writes them (one finished run), so the Reducer finds them as tuned.
#pragma once

#include "db/store.h"
#include "kernels/driver.h"
#include "runtime/lookup.h"

#include <string>
#include <vector>

namespace reduce_tune::testing {

/// A valid row of configuration `key` for (dtype, op, problem, shape) that took `us`.
inline db::Measurement stored_row(const std::string& key, DType dtype, Op op, double us,
                                  Problem problem = Problem::array,
                                  Shape shape = {1, std::uint64_t(1) << 20}) {
  db::Measurement m;
  m.key = key;
  m.variant = key.substr(0, key.find('.'));
  m.dtype = dtype, m.op = op, m.problem = problem, m.count = shape.count, m.n = shape.length;
  m.median_us = m.min_us = m.max_us = us;
  m.reps = 1;
  m.valid = true;
  return m;
}

/// The store at `path` with `rows` measured on the GPU `info` describes.
inline void write_gpu_store(const std::string& path, const cuda::DeviceInfo& info,
                            const std::vector<db::Measurement>& rows) {
  db::Store s(path);
  db::DeviceRecord d;
  d.uuid = info.uuid, d.name = info.name, d.cc_major = info.cc_major, d.cc_minor = info.cc_minor;
  d.sm_count = info.sm_count;
  s.upsert_device(d);
  db::RunRecord run;
  run.device_uuid = info.uuid, run.tool_version = "test", run.nvrtc_version = "13.0";
  run.timing_method = "fixture";
  const auto id = s.begin_run(run);
  s.add_measurements(id, rows);
  s.end_run(id, "done");
}

/// An H100 (132 SMs, sm_90) as the lookup knows a GPU, with `uuid`.
inline DeviceKey h100(const std::string& uuid) {
  DeviceKey k;
  k.uuid = uuid, k.name = "NVIDIA H100 80GB HBM3", k.cc_major = 9, k.sm_count = 132;
  return k;
}

/// `rows` as one finished run of the H100 `uuid` (h100) in `s`.
inline void add(db::Store& s, const std::string& uuid, const std::vector<db::Measurement>& rows) {
  db::DeviceRecord d;
  d.uuid = uuid, d.name = "NVIDIA H100 80GB HBM3", d.cc_major = 9, d.sm_count = 132;
  s.upsert_device(d);
  db::RunRecord run;
  run.device_uuid = uuid, run.tool_version = "test", run.nvrtc_version = "13.0";
  const auto id = s.begin_run(run);
  s.add_measurements(id, rows);
  s.end_run(id, "done");
}

} // namespace reduce_tune::testing
