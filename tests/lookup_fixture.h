// Stores for the lookup's tests (test_lookup*.cpp): rows as the tuner writes them, on in-memory
// stores, and the devices they were measured on. The stores of the GPU tests: store_fixture.h.
#pragma once

#include "kernels/catalogue.h"
#include "runtime/lookup.h"

#include <cstdint>
#include <string>
#include <vector>

namespace reduce_tune::testing::lookup_fixture {

constexpr std::uint64_t k20 = 1ull << 20, k24 = 1ull << 24;

/// A device record of 132 SMs (the store's devices table).
inline db::DeviceRecord device(const std::string& uuid, const std::string& name, int major, int minor) {
  db::DeviceRecord d;
  d.uuid = uuid;
  d.name = name;
  d.cc_major = major;
  d.cc_minor = minor;
  d.sm_count = 132;
  d.driver_version = 13000;
  return d;
}

/// A measured row; the parameter columns follow the key where it parses (as the tuner writes them).
inline db::Measurement row(const std::string& key, std::uint64_t n, double median_us,
                           DType dtype = DType::f32, Op op = Op::sum) {
  db::Measurement m;
  m.key = key;
  if (const auto c = parse_key(key)) {
    m.variant = c->variant;
    m.block = c->block;
    m.unroll = c->unroll;
    m.vec = c->vec;
    m.grid = c->grid;
    m.tail = std::string(name(c->tail));
    m.finish = std::string(name(c->finish));
  } else {
    m.variant = key.substr(0, key.find('.'));
    m.tail = "none";
    m.finish = "host";
  }
  m.dtype = dtype;
  m.op = op;
  m.n = n;
  m.median_us = m.min_us = m.max_us = median_us;
  m.reps = 20;
  m.gbps = double(n) * 4 / (median_us * 1e3);
  m.valid = true;
  m.seed = 1;
  return m;
}

/// A row of a segmented problem (offsets where not named): `k` measured at `shape` (count x length).
inline db::Measurement seg(const std::string& k, Problem p, Shape shape, double us) {
  db::Measurement m = row(k, shape.length, us);
  m.problem = p;
  m.count = shape.count;
  return m;
}
inline db::Measurement seg(const std::string& k, Shape shape, double us) {
  return seg(k, Problem::segments, shape, us);
}

/// `rows` as one finished run of device `uuid` in `s` (the device's record is the caller's to add).
inline void add(db::Store& s, const std::string& uuid, const std::vector<db::Measurement>& rows) {
  db::RunRecord r;
  r.device_uuid = uuid;
  r.tool_version = "0.1.0";
  r.nvrtc_version = "13.0";
  r.timing_method = "fixture";
  const auto run = s.begin_run(r);
  s.add_measurements(run, rows);
  s.end_run(run, "done");
}

inline DeviceKey key_of(const std::string& uuid, int major, int minor) {
  DeviceKey k;
  k.uuid = uuid;
  k.cc_major = major;
  k.cc_minor = minor;
  k.sm_count = 132;
  return k;
}

inline const DeviceKey A = key_of("GPU-a", 9, 0), B = key_of("GPU-b", 9, 0), C = key_of("GPU-c", 8, 0);

// The fastest rows at A, 2^20, float32 sum, of test_lookup.cpp's fixture(), in order: a failed
// check, then four rows each unusable under some requirement, then two that are always usable.
inline const std::string kAtomic = "atomic_shared.b256.atomic";          // float atomic finish
inline const std::string kInPlace = "neighbored_gmem.b256.host";         // works in place
inline const std::string kUnknown = "warp_magic.b256.host";              // a variant of a later build
inline const std::string kUnsafe = "unroll_warps.b256.u4.volatile.host"; // invalid from sm_70
inline const std::string kHost = "unrolling.b512.u8.host";
inline const std::string kVector = "vectorized.b256.u4.v4.g0.shfl.lastblock";

inline std::string key_of(const Choice& c) { return key(c.config); }

} // namespace reduce_tune::testing::lookup_fixture
